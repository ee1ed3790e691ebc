"""One module per scorecard section: ``build(ctx)`` (numbers → its scorecard.json keys) and
``render(card)`` (scorecard.json → its markdown lines).  ``report/card.py`` lists them in
order.  Kept import-free."""
