"""What a run's transcript says: each agent's event stream parsed into one ``Transcript``
(the signals, the tool calls, the final answer, the skills the agent listed) and the audit
of what the agent did with the skill (invoked? misused? did it help?).

Below ``run/`` (which writes them), ``report/`` and ``view/`` (which read them): the numbers
and the viewer never import the engine. Import-free on purpose, like every ``__init__``.
"""
