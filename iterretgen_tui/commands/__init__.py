"""One module per subcommand: ``add_parser(parser)`` and ``run(args) -> exit code``."""
