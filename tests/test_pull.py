"""`pull`, `models`, `doctor`, and that nothing but `pull` touches the network.

Downloads go to a fake hub on 127.0.0.1 (tests/fake_hub.py; the hub client honours HF_ENDPOINT):
a tiny model repository, a download broken mid-file and resumed, a checksum mismatch refused,
no network (one line, exit 6), then a pulled GGUF used by its catalogue name."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from locallens.errors import UsageError
from locallens.pull import parse_target

from .fake_hub import FakeHub
from .helpers import cli, cli_json, write_corpus

BIG = os.urandom(16 * 1024 * 1024)  # over the hub client's 10 MB read chunk: a drop mid-file resumes
GGUF = b"GGUF" + os.urandom(4096)
REPOS = {
    "tiny/embed": {
        "config.json": b'{"architectures": ["BertModel"], "hidden_size": 8}',
        "modules.json": b"[]",
        "model.safetensors": BIG,
        "onnx/model.onnx": b"an export for another runtime" * 100,
    },
    "Qwen/Qwen2.5-0.5B-Instruct-GGUF": {"qwen2.5-0.5b-instruct-q4_k_m.gguf": GGUF, "README.md": b"readme"},
}


@pytest.fixture()
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    fake = FakeHub(REPOS)
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    yield fake
    fake.close()


def cache() -> Path:
    return Path(os.environ["HF_HOME"]) / "hub"


def test_pull_a_model_repository_resumes_a_dropped_download(hub: FakeHub) -> None:
    hub.break_once.add("model.safetensors")
    data = cli_json("pull", "tiny/embed")
    assert data["kind"] == "embedding" and data["use"] == "--model tiny/embed"
    assert {f["name"] for f in data["files"]} == {"config.json", "modules.json", "model.safetensors"}  # no ONNX
    weights = Path(data["path"]) / "model.safetensors"
    assert weights.read_bytes() == BIG
    checksum = next(f["checksum"] for f in data["files"] if f["name"] == "model.safetensors")
    assert checksum == f"sha256:{hashlib.sha256(BIG).hexdigest()}"
    gets = [r for r in hub.requests if r[0] == "GET" and r[1].endswith("/model.safetensors")]
    assert len(gets) == 2 and gets[1][2] is not None and gets[1][2].startswith("bytes=")  # resumed, not restarted
    assert int(gets[1][2].removeprefix("bytes=").rstrip("-")) > 0
    # A second pull finds everything in the cache: no file is downloaded again.
    before = len([r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]])
    cli_json("pull", "tiny/embed")
    assert len([r for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1]]) == before
    listed = cli_json("models")
    assert any(m["name"] == "tiny/embed" and m["kind"] == "embedding" and m["usable"] for m in listed)


def test_a_checksum_mismatch_is_refused(hub: FakeHub) -> None:
    hub.corrupt.add("model.safetensors")
    result = cli("pull", "tiny/embed")
    assert result.exit_code == 6
    assert "checksum mismatch" in result.stderr and "removed" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(cache().rglob("model.safetensors"))  # the bad file is not left in the cache


def test_no_network_is_one_line_and_exit_6(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    result = cli("pull", "qwen-1.5b")
    assert result.exit_code == 6
    assert len(result.stderr.strip().splitlines()) == 1
    assert "cannot be reached" in result.stderr and "Traceback" not in result.stderr


def test_pull_a_gguf_then_ask_with_it_by_name(hub: FakeHub, fake_models: Any, tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", str(db))
    result = cli("ask", "How long is parental leave?", "--llm", "qwen-0.5b", "--db", str(db))
    assert result.exit_code == 6 and "locallens pull qwen-0.5b" in result.stderr  # not pulled yet
    data = cli_json("pull", "qwen-0.5b")
    assert data["kind"] == "llm" and data["use"] == "--llm qwen-0.5b"
    assert Path(data["path"]).read_bytes() == GGUF
    assert not any(r[1].endswith("README.md") for r in hub.requests if r[0] == "GET")  # the one file only
    answer = cli_json("ask", "How long is parental leave?", "--llm", "qwen-0.5b", "--db", str(db))
    assert answer["models"]["llm"] == "qwen2.5-0.5b-instruct-q4_k_m.gguf"
    assert Path(fake_models.llm.path) == Path(data["path"])
    # The hub id of the file names it too.
    answer = cli_json(
        "ask", "How long is parental leave?", "--db", str(db),
        "--llm", "Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    )  # fmt: skip
    assert answer["models"]["llm"] == "qwen2.5-0.5b-instruct-q4_k_m.gguf"


def test_pull_targets() -> None:
    assert parse_target("bge-m3").repo_id == "BAAI/bge-m3"
    assert parse_target("qwen-3b").filename == "qwen2.5-3b-instruct-q4_k_m.gguf"
    t = parse_target("owner/repo/sub/model-q8_0.gguf")
    assert (t.repo_id, t.filename, t.kind) == ("owner/repo", "sub/model-q8_0.gguf", "llm")
    assert parse_target("BAAI/bge-small-en-v1.5").filename is None
    url = parse_target("https://" + "huggingface.co/owner/repo/resolve/main/m.gguf")
    assert (url.repo_id, url.revision, url.filename) == ("owner/repo", "main", "m.gguf")
    for bad in ("not a model", "https://example.com/m.gguf", "bge-tiny"):
        with pytest.raises(UsageError):
            parse_target(bad)


def test_other_commands_never_touch_the_network(
    hub: FakeHub, fake_models: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index, ask, trim, status, models and doctor, with a hub that would answer: no connection at all."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError("network use in a test that must stay offline")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(
        socket, "create_connection", lambda *a, **k: attempts.append(a) or connect(socket.socket(), a[0])
    )
    db = str(tmp_path / "index.db")
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", db, "--model", "bge-small")
    for extra in ([], ["--extractive"]):
        assert cli("ask", "How long is parental leave?", "--db", db, "--json", *extra).exit_code in (0, 4)
    cli_json("trim", "parental leave", "--db", db)
    cli_json("status", "--db", db)
    cli_json("models", "--db", db)
    doctor = cli_json("doctor", "--db", db)
    assert doctor["store"]["exists"] and doctor["sqlite"]["extensions_ok"]
    assert attempts == [] and hub.requests == []


def test_models_and_doctor_say_where_things_come_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf at all")
    config = tmp_path / "config.toml"
    config.write_text(f'[ask]\nllm = "{broken}"\n', encoding="utf-8")
    monkeypatch.setenv("LOCALLENS_CONFIG", str(config))
    monkeypatch.setenv("LOCALLENS_TOP_K", "7")
    models = json.loads(cli("models", "--json").stdout)
    packaged = {m["kind"] for m in models if m["source"] == "packaged"}
    assert packaged == {"embedding", "llm"}
    named = next(m for m in models if m["path"] == str(broken))
    assert not named["usable"] and named["source"].startswith("config file") and "[ask]" in named["source"]
    doctor = cli_json("doctor")
    settings = {s["name"]: s for s in doctor["settings"]}
    assert settings["LOCALLENS_TOP_K"] == {"name": "LOCALLENS_TOP_K", "value": "7", "source": "environment"}
    assert settings["ask.llm"]["source"] == "config file [ask]"
    assert set(doctor["versions"]) >= {"locallens", "python", "torch", "llama-cpp-python", "huggingface_hub"}
    text = cli("doctor").stdout
    assert "sqlite:" in text and "models:" in text and "settings:" in text
