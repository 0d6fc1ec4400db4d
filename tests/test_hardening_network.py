"""A network that accepts the connection and never answers: every hub request gives up in
seconds (connect and read timeouts), `index` says exit 6, and no lock is held meanwhile.

The hub is a listener on 127.0.0.1 that accepts connections and never writes a byte, reached
through `HF_ENDPOINT`, as a captive portal or a stalled proxy would behave."""

from __future__ import annotations

import fcntl
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


def test_index_with_a_hub_model_exits_6_without_holding_the_lock(
    silent_hub: SilentListener, monkeypatch, tmp_path: Path
) -> None:
    import locallens.embedding

    class NetworkOnlyEmbedder:
        """What loading a hub model does first, without loading one (fast tier: no real models)."""

        def __init__(self, spec: locallens.embedding.ModelSpec, device: str = "auto") -> None:
            assert not spec.offline
            locallens.embedding._probe_hub(spec)
            raise AssertionError("the probe should not have reached the hub")

    monkeypatch.setattr(locallens.embedding, "Embedder", NetworkOnlyEmbedder)
    monkeypatch.setattr(hub, "PROBE_TIMEOUT_S", 1.0)
    docs = write_corpus(tmp_path / "docs")
    db = tmp_path / "data" / "index.db"
    outcome: dict[str, object] = {}

    def run() -> None:
        outcome["result"] = cli("index", str(docs), "--db", str(db), "--model", MODEL)

    worker = threading.Thread(target=run)
    started = time.perf_counter()
    worker.start()
    assert silent_hub.accepted.wait(30)
    # While it waits on the network, another writer can take the lock: it is not held.
    lock = Path(f"{db}.lock")
    if lock.exists():
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    worker.join(60)
    result = outcome["result"]
    assert result.exit_code == 6, result.output  # type: ignore[attr-defined]
    err = result.stderr.strip()  # type: ignore[attr-defined]
    assert MODEL in err and "cannot be reached" in err and len(err.splitlines()) == 1
    assert time.perf_counter() - started < 30
    assert not db.exists() and not lock.exists()


@pytest.mark.slow
def test_index_with_a_hub_model_behind_a_silent_network_exits_6_in_seconds(tmp_path: Path) -> None:
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
        docs = write_corpus(tmp_path / "docs")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "locallens", "index", str(docs), "--db", str(tmp_path / "i.db"), "--model", MODEL],
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
    assert elapsed < 60, elapsed  # the probe's timeout is seconds; generous for a loaded machine
