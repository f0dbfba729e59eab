"""The command groups of ``knowledge``, one module each, each adding its own subcommands."""
