"""The package version (one place: pyproject.toml holds the same string, tests/test_import.py checks)."""

__version__ = "0.1.0"
