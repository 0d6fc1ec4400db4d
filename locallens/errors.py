"""Typed errors. The core raises them; the CLI turns each into one line on stderr and its exit code.

Exit codes are part of the public interface (docs/guide.md, "Exit codes") and never change meaning.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_NO_INDEX = 3
EXIT_NOTHING_FOUND = 4
EXIT_LOCKED = 5
EXIT_MODEL_UNAVAILABLE = 6
EXIT_SKIPPED = 7
EXIT_DB_UNREACHABLE = 8
EXIT_DB_AUTH = 9
EXIT_DB_UNSUPPORTED = 10
EXIT_INTERRUPTED = 130  # Ctrl-C: committed work is kept


class LocallensError(Exception):
    """Base of every error a user can cause or fix. ``str(err)`` is the one-line message."""

    exit_code: int = EXIT_UNEXPECTED


class UsageError(LocallensError):
    """Bad flags or arguments (chunk_size <= chunk_overlap, a question that cannot fit, ...)."""

    exit_code = EXIT_USAGE


class NoIndexError(LocallensError):
    """No database, or no such brain in it."""

    exit_code = EXIT_NO_INDEX


class NothingFoundError(LocallensError):
    """The index answered, but nothing relevant came back."""

    exit_code = EXIT_NOTHING_FOUND


class LockedError(LocallensError):
    """Another `index` run holds the write lock and did not finish within --wait."""

    exit_code = EXIT_LOCKED


class ModelUnavailableError(LocallensError):
    """An embedding model or GGUF cannot be loaded (missing offline, truncated, wrong format)."""

    exit_code = EXIT_MODEL_UNAVAILABLE


class ModelMismatchError(UsageError):
    """A brain was built with another embedding model or dimension."""


class StoreError(LocallensError):
    """The database cannot be opened or written (read-only folder, disk full, corrupt file)."""

    exit_code = EXIT_UNEXPECTED


class DatabaseUnreachableError(StoreError):
    """A PostgreSQL server cannot be reached (refused, unknown host, timeout)."""

    exit_code = EXIT_DB_UNREACHABLE


class DatabaseAuthError(StoreError):
    """A PostgreSQL server refused the login: wrong password, unknown role or database, no privilege."""

    exit_code = EXIT_DB_AUTH


class DatabaseUnsupportedError(StoreError):
    """A PostgreSQL server without pgvector, or psycopg not installed."""

    exit_code = EXIT_DB_UNSUPPORTED
