"""The ``skilllift`` command: one module per subcommand, on top of the layering."""
