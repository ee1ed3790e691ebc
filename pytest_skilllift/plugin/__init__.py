"""The pytest glue: hooks, options, fixtures, collection, run state and CI verdicts."""
