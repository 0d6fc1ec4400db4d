"""A throwaway PostgreSQL server (with pgvector) for the tests of the PostgreSQL store.

`pgserver` ships a PostgreSQL build with pgvector as a wheel: it is started once per session in a
temporary folder, listening on a Unix socket only, and stopped when the session ends. Each test
gets a database of its own (`new_database`), so tests never see each other's schema or brains.

A test that needs the server fails (never skips) when it cannot start: the store's contract must
be checked on both stores wherever the tests run.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

# A role that logs in with a password (every other login on the test server is trusted), to check
# what a wrong password does. pg_hba.conf is read top down: its line goes before the trust lines.
PASSWORD_ROLE = "locallens_pw"
PASSWORD = "s3cret-Pw"
_HBA_LINE = f"local all {PASSWORD_ROLE} scram-sha-256\n"

_numbers = itertools.count(1)


@dataclass
class PgServer:
    """A running test server: `url(database)` is a URL for the superuser over the socket."""

    handle: Any  # pgserver.PostgresServer
    socket_dir: Path
    folder: Path  # holds the data folder; removed by stop()

    def url(self, database: str = "postgres", user: str = "postgres", password: str | None = None) -> str:
        login = user if password is None else f"{user}:{quote(password, safe='')}"
        return f"postgresql://{login}@/{database}?host={quote(str(self.socket_dir), safe='/')}"

    def stop(self) -> None:
        """Stop at once: the data is thrown away, so the shutdown checkpoint (seconds) is skipped."""
        from pgserver import pg_ctl  # type: ignore[attr-defined]

        try:
            pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.handle.pgdata, user=self.handle.system_user)
            with contextlib.suppress(Exception):  # gone already
                self.handle.get_postmaster_info().process.wait(10)
        finally:
            self.handle.cleanup()  # pgserver's own bookkeeping; the server is already down
            shutil.rmtree(self.folder, ignore_errors=True)


def start_server() -> PgServer:
    """Start PostgreSQL in a new temporary folder, with a password role for the auth tests.

    Not under pytest's temporary folder: when run as root, the server runs as another user
    (`pgserver`), and every pytest process that starts resets that folder's root to mode 0700,
    which would lock the running server out of its own data.
    """
    import psycopg

    with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset (CI, containers)
        warnings.simplefilter("ignore")
        import pgserver

    folder = Path(tempfile.mkdtemp(prefix="locallens-test-pg-"))
    try:
        handle = pgserver.get_server(folder / "data", cleanup_mode="stop")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    server = PgServer(handle, Path(handle.get_postmaster_info().socket_dir or folder / "data"), folder)
    try:
        hba = Path(handle.pgdata) / "pg_hba.conf"
        hba.write_text(_HBA_LINE + hba.read_text())
        with psycopg.connect(server.url(), autocommit=True) as conn:
            # The data is thrown away at the end: no need to wait for the disk.
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}'")
    except BaseException:
        server.stop()
        raise
    return server


def new_database(server: PgServer) -> str:
    """A new, empty database on `server` (no locallens schema, no pgvector yet); its URL."""
    import psycopg

    name = f"t_{next(_numbers)}"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return server.url(name)
