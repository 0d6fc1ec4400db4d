"""locallens: local-first chat with your files."""

__version__ = "0.1.0"
