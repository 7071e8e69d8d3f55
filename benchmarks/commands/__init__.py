"""The benchmark commands, one module each (``add_arguments(parser)``, ``run(args) -> int``)."""
