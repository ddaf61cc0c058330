"""The command line: a thin click skin over the library, one module per command."""
