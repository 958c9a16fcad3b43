"""The package version (its own module so that no layer has to import the package root)."""

__version__ = "0.1.0"
