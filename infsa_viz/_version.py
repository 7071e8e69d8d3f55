"""The package version (setuptools reads it; ``infsa-viz --version`` prints it)."""

__version__ = "0.1.0"
