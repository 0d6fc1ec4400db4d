"""A network that accepts the connection and never answers: every hub request of `pull` gives
up in seconds (connect and read timeouts) with exit 6; `index` naming a model that is not
pulled never reaches the network at all.

The hub is a listener on 127.0.0.1 that accepts connections and never writes a byte, reached
through `HF_ENDPOINT`, as a captive portal or a stalled proxy would behave."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from locallens import hub
from locallens.errors import ModelUnavailableError

from .helpers import ROOT, cli, write_corpus

MODEL = "some-org/never-cached-model"


class SilentListener:
    """Accepts TCP connections on loopback and never answers them."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)
            self.accepted.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture()
def silent_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[SilentListener]:
    listener = SilentListener()
    monkeypatch.setenv("HF_ENDPOINT", listener.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache: the model must be downloaded
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    yield listener
    listener.close()


def test_the_probe_gives_up_on_a_hub_that_never_answers(silent_hub: SilentListener, monkeypatch) -> None:
    monkeypatch.setattr(hub, "PROBE_TIMEOUT_S", 0.5)
    started = time.perf_counter()
    with pytest.raises(ModelUnavailableError, match=r"cannot be reached .*no answer within 0.5 s"):
        hub.probe(MODEL, f"embedding model {MODEL} is not cached")
    assert silent_hub.accepted.is_set()  # it did connect: the read timeout is what ended it
    assert time.perf_counter() - started < 10


def test_every_hub_client_request_has_connect_and_read_timeouts(silent_hub: SilentListener, monkeypatch) -> None:
    import huggingface_hub.constants
    from huggingface_hub import get_session, set_client_factory
    from huggingface_hub.utils import _http

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the tests run offline
    monkeypatch.setattr(hub, "READ_TIMEOUT_S", 0.5)
    assert hub._capped({"connect": None, "read": 600.0}) == {"connect": 5.0, "read": 0.5, "write": 0.5, "pool": 0.5}
    hub.bounded_client()
    try:
        started = time.perf_counter()
        with pytest.raises(Exception) as exc:  # the hub library's own call style: timeout=None
            get_session().get(f"{silent_hub.url}/api/models/{MODEL}", timeout=None)
        assert "Timeout" in type(exc.value).__name__
        assert time.perf_counter() - started < 10
    finally:
        set_client_factory(_http.default_client_factory)


def test_index_with_a_model_not_pulled_exits_6_at_once_without_the_network(
    silent_hub: SilentListener, tmp_path: Path
) -> None:
    """Naming a hub model that is not in the cache never starts a download: one line saying to
    pull it, exit 6, before any lock or file is made, with no connection to the hub at all."""
    docs = write_corpus(tmp_path / "docs")
    db = tmp_path / "data" / "index.db"
    started = time.perf_counter()
    result = cli("index", str(docs), "--db", str(db), "--model", MODEL)
    assert result.exit_code == 6, result.output
    err = result.stderr.strip()
    assert f"run `locallens pull {MODEL}`" in err and "not present" in err and len(err.splitlines()) == 1
    assert time.perf_counter() - started < 5
    assert not silent_hub.accepted.is_set()
    assert not db.exists() and not Path(f"{db}.lock").exists()


def test_pull_from_a_hub_that_never_answers_exits_6_in_seconds(silent_hub: SilentListener, monkeypatch) -> None:
    monkeypatch.setattr(hub, "PROBE_TIMEOUT_S", 1.0)
    started = time.perf_counter()
    result = cli("pull", MODEL)
    assert result.exit_code == 6, result.output
    err = result.stderr.strip()
    assert MODEL in err and "cannot be reached" in err and len(err.splitlines()) == 1
    assert silent_hub.accepted.is_set() and time.perf_counter() - started < 10


@pytest.mark.slow
def test_pull_behind_a_silent_network_exits_6_in_seconds(tmp_path: Path) -> None:
    """The real command, with the real timeouts, in a process of its own."""
    listener = SilentListener()
    try:
        env = {
            **os.environ,
            "HF_ENDPOINT": listener.url,
            "HF_HOME": str(tmp_path / "hf-home"),
            "PYTHONPATH": str(ROOT),
        }
        for offline in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            env.pop(offline, None)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "locallens", "pull", MODEL],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        elapsed = time.perf_counter() - started
    finally:
        listener.close()
    assert done.returncode == 6, done.stderr
    assert MODEL in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert elapsed < 60, elapsed  # the probe's timeout is seconds; generous for a loaded machine
