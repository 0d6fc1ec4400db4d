"""`index` and `status` with the fake embedder: incrementality, stable ids, pruning, pinning, JSON shapes.

The fast counterparts of the index tests that run the real model (test_index.py,
test_hardening_index.py): the same pipeline, with `FakeEmbedder` recording what it was asked
to embed, so that "embeds nothing" is checked at the encoder, not only in the report.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from locallens.indexer import IndexRequest, index
from locallens.storage.sqlite import Store

from .helpers import CORPUS, DEFAULT_MODEL, FakeModels, cli, cli_json, snapshot, table_counts, write_corpus

# The file counts of a second run over the unchanged corpus: every file unchanged, nothing else.
CORPUS_UNCHANGED = {"new": 0, "changed": 0, "unchanged": len(CORPUS), "removed": 0, "skipped": 0, "read_again": 0}


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "docs")


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


def _long_file(path: Path, paragraphs: int = 12) -> None:
    """A file long enough for several chunks, one topic word per paragraph."""
    path.write_text(
        "\n\n".join(
            f"Paragraph {i} is about topic{i}. " + f"Filler words for topic{i} go here. " * 12
            for i in range(paragraphs)
        )
        + "\n",
        encoding="utf-8",
    )


def test_index_json_shape_counts_and_what_was_embedded(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    out = cli_json("index", str(corpus), "--db", str(db))
    assert set(out) >= {"brain", "db", "model", "files", "chunks", "skipped", "seconds"}
    assert set(out["files"]) == {"new", "changed", "unchanged", "removed", "skipped", "read_again"}
    assert set(out["chunks"]) >= {"embedded", "reused", "total"}
    assert out["brain"] == "default" and out["model"] == DEFAULT_MODEL
    assert out["files"] == {
        "new": len(CORPUS),
        "changed": 0,
        "unchanged": 0,
        "removed": 0,
        "skipped": 0,
        "read_again": 0,
    }
    assert out["chunks"]["embedded"] == out["chunks"]["total"] >= len(CORPUS) and out["chunks"]["reused"] == 0
    # The encoder saw each stored chunk exactly once.
    assert sorted(fake_models.embedder.passages) == sorted(c for c, _ in snapshot(db).values())
    documents, chunks, vectors, fts = table_counts(db)
    assert documents == len(CORPUS) and chunks == vectors == fts == out["chunks"]["total"]
    with Store(db, create=False) as store:
        assert store.integrity_check() == "ok"
        store.fts_integrity_check()


def test_vectors_stored_are_the_embedders(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    import numpy as np

    cli_json("index", str(corpus), "--db", str(db))
    embedder = fake_models.embedder
    for content, blob in snapshot(db).values():
        stored = np.frombuffer(blob, dtype=np.float32)
        # The chunk's own vector, or, with a header in front of it, one close to it.
        assert abs(float(np.linalg.norm(stored)) - 1.0) < 1e-5 and float(stored @ embedder.vector(content)) > 0.5


def test_chunk_ids_are_stable_and_follow_the_checksum(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    from locallens.readers import sha256_text

    cli_json("index", str(corpus), "--db", str(db))
    snap = snapshot(db)
    rel = "engineering/staging.md"
    checksum = sha256_text((corpus / rel).read_text(encoding="utf-8").replace("\r\n", "\n").strip())
    ids = sorted((k[2], k[1]) for k in snap if k[0] == rel)
    assert ids == [(i, f"{checksum[:12]}-{i}") for i in range(len(ids))]
    other = db.parent / "other.db"
    cli_json("index", str(corpus), "--db", str(other))
    assert set(snapshot(other)) == set(snap)


def test_unchanged_reindex_reads_and_embeds_nothing(
    corpus: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cli_json("index", str(corpus), "--db", str(db))
    calls = len(fake_models.embedder.calls)

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("an unchanged file was read")

    monkeypatch.setattr("locallens.readers.read_document", no_read)
    again = cli_json("index", str(corpus), "--db", str(db))
    assert again["files"] == CORPUS_UNCHANGED
    assert again["chunks"]["embedded"] == 0 and again["chunks"]["total"] == first["chunks"]["total"]
    assert len(fake_models.embedder.calls) == calls


def test_touched_file_with_the_same_text_is_unchanged(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    cli_json("index", str(corpus), "--db", str(db))
    target = corpus / "hr/leave.md"
    target.write_text(target.read_text(encoding="utf-8"), encoding="utf-8")
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    again = cli_json("index", str(corpus), "--db", str(db))
    assert again["files"]["changed"] == 0 and again["chunks"]["embedded"] == 0


def test_editing_one_paragraph_embeds_only_the_changed_chunks(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    long = corpus / "long.md"
    _long_file(long)
    cli_json("index", str(corpus), "--db", str(db))
    before = snapshot(db)
    n_long = sum(1 for k in before if k[0] == "long.md")
    assert n_long >= 4
    encoded_before = len(fake_models.embedder.passages)
    paragraphs = long.read_text(encoding="utf-8").rstrip().split("\n\n")
    paragraphs[-1] += " This sentence was added in an edit."
    long.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    out = cli_json("index", str(corpus), "--db", str(db))
    assert out["files"]["changed"] == 1 and out["files"]["new"] == 0
    assert 1 <= out["chunks"]["embedded"] <= 2 < n_long
    assert out["chunks"]["reused"] == out["chunks"]["total"] - out["chunks"]["embedded"] - (len(before) - n_long)
    fresh = fake_models.embedder.passages[encoded_before:]
    assert len(fresh) == out["chunks"]["embedded"] and any("added in an edit" in t for t in fresh)
    after = snapshot(db)
    assert not ({k for k in after if k[0] == "long.md"} & {k for k in before if k[0] == "long.md"})
    assert {k: v for k, v in after.items() if k[0] != "long.md"} == {
        k: v for k, v in before.items() if k[0] != "long.md"
    }


def test_rename_and_duplicate_embed_nothing(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    first = cli_json("index", str(corpus), "--db", str(db))
    (corpus / "hr/leave.md").rename(corpus / "hr/permisos.md")
    out = cli_json("index", str(corpus), "--db", str(db))
    assert out["files"]["new"] == 1 and out["files"]["removed"] == 1
    assert out["chunks"]["embedded"] == 0 and out["chunks"]["reused"] > 0
    assert table_counts(db)[1:] == (first["chunks"]["total"],) * 3
    shutil.copy(corpus / "hr/permisos.md", corpus / "hr/permisos-copia.md")
    dup = cli_json("index", str(corpus), "--db", str(db))
    assert dup["files"]["new"] == 1 and dup["chunks"]["embedded"] == 0


def test_deletion_prunes_chunks_vectors_and_fts_rows(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    cli_json("index", str(corpus), "--db", str(db))
    victim = "office/coffee.md"
    n_victim = sum(1 for k in snapshot(db) if k[0] == victim)
    documents0, chunks0, _, _ = table_counts(db)
    (corpus / victim).unlink()
    out = cli_json("index", str(corpus), "--db", str(db))
    assert out["files"]["removed"] == 1
    documents, chunks, vectors, fts = table_counts(db)
    assert documents == documents0 - 1 and chunks == vectors == fts == chunks0 - n_victim
    with Store(db, create=False) as store:
        store.fts_integrity_check()
        assert store.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'espresso'")[0][0] == 0


def test_a_single_file_run_keeps_its_siblings(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    first = cli_json("index", str(corpus), "--db", str(db))
    out = cli_json("index", str(corpus / "hr/leave.md"), "--db", str(db))
    assert out["files"]["removed"] == 0 and table_counts(db)[1] >= first["chunks"]["total"]


def test_missing_root_is_kept_unless_prune_missing(tmp_path: Path, db: Path, fake_models: FakeModels) -> None:
    a = write_corpus(tmp_path / "a", {"one.md": "# One\n\nAlpha bravo charlie.\n"})
    b = write_corpus(tmp_path / "b", {"two.md": "# Two\n\nDelta echo foxtrot.\n"})
    cli_json("index", str(a), str(b), "--db", str(db))
    shutil.rmtree(b)
    kept = cli_json("index", str(a), str(b), "--db", str(db))
    assert kept["files"]["removed"] == 0 and table_counts(db)[0] == 2
    pruned = cli_json("index", str(a), str(b), "--db", str(db), "--prune-missing")
    assert pruned["files"]["removed"] == 1 and table_counts(db)[0] == 1


def test_dry_run_embeds_and_writes_nothing(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    out = cli_json("index", str(corpus), "--db", str(db), "--dry-run")
    assert out["dry_run"] is True and out["files"]["new"] == len(CORPUS)
    assert not db.exists() and not fake_models.embedders


def test_chunk_settings_change_rechunks_everything(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    _long_file(corpus / "long.md")
    first = cli_json("index", str(corpus), "--db", str(db))
    out = cli_json("index", str(corpus), "--db", str(db), "--chunk-size", "48", "--chunk-overlap", "0")
    assert out["files"]["changed"] + out["files"]["unchanged"] == len(CORPUS) + 1
    assert out["chunks"]["total"] > first["chunks"]["total"]
    status = cli_json("status", "--db", str(db))["brains"][0]
    assert status["chunk_size"] == 48 and status["chunk_overlap"] == 0


def test_a_run_that_names_no_chunk_setting_keeps_the_brains(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    # A brain made with other sizes is not re-chunked to the defaults by a plain `index` (a cron
    # job, --watch, a --rebuild); a value named replaces only that value.
    _long_file(corpus / "long.md")
    made = cli_json("index", str(corpus), "--db", str(db), "--chunk-size", "48", "--chunk-overlap", "0")
    again = cli_json("index", str(corpus), "--db", str(db))
    assert again["files"]["changed"] == 0 and again["chunks"]["embedded"] == 0
    assert again["chunks"]["total"] == made["chunks"]["total"]
    rebuilt = cli_json("index", str(corpus), "--db", str(db), "--rebuild")
    assert rebuilt["chunks"]["total"] == made["chunks"]["total"]
    cli_json("index", str(corpus), "--db", str(db), "--chunk-overlap", "8")
    status = cli_json("status", "--db", str(db))["brains"][0]
    assert (status["chunk_size"], status["chunk_overlap"], status["chunker"]) == (48, 8, "paragraph")
    # Named so that the overlap reaches the brain's size: refused, the brain unchanged.
    assert cli("index", str(corpus), "--db", str(db), "--chunk-overlap", "48").exit_code == 2
    assert cli_json("status", "--db", str(db))["brains"][0]["chunk_overlap"] == 8


@pytest.mark.parametrize("strategy", ["percentile", "maxmin"])
def test_semantic_chunkers_use_the_embedder_and_are_pinned(
    corpus: Path, db: Path, fake_models: FakeModels, strategy: str
) -> None:
    out = cli_json("index", str(corpus), "--db", str(db), "--chunker", strategy)
    assert out["chunks"]["total"] > 0
    assert cli_json("status", "--db", str(db))["brains"][0]["chunker"] == strategy
    _, chunks, vectors, fts = table_counts(db)
    assert chunks == vectors == fts == out["chunks"]["total"]


def test_semantic_chunkers_embed_the_sentences_of_many_files_in_one_call(
    corpus: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from locallens import indexer

    monkeypatch.setattr(indexer, "COMMIT_SECONDS", 3600.0)  # no flush on the clock: one group
    grouped = cli_json("index", str(corpus), "--db", str(db), "--chunker", "maxmin")
    calls = fake_models.embedder.calls
    assert len(CORPUS) > 2 and len(calls) == 2  # every file's sentences, then every chunk
    # Chunked one file at a time (a group of one file), the chunks come out the same.
    monkeypatch.setattr(indexer, "CHUNK_GROUP_CHARS", 1)
    calls.clear()
    alone = cli_json("index", str(corpus), "--db", str(tmp_path / "alone.db"), "--chunker", "maxmin")
    assert len(calls) > 2
    assert alone["chunks"]["total"] == grouped["chunks"]["total"]
    with Store(db) as a, Store(tmp_path / "alone.db") as b:
        contents = "SELECT relative_path, chunk_index, content FROM chunks ORDER BY 1, 2"
        assert a.execute(contents) == b.execute(contents)


def test_model_mismatch_is_refused_with_advice_then_rebuild(
    corpus: Path, db: Path, fake_models: FakeModels, tmp_path: Path
) -> None:
    cli_json("index", str(corpus), "--db", str(db))
    other = tmp_path / "other-model"
    other.mkdir()
    (other / "config.json").write_text("{}", encoding="utf-8")
    result = cli("index", str(corpus), "--db", str(db), "--model", str(other))
    assert result.exit_code == 2 and "--rebuild" in result.stderr
    out = cli_json("index", str(corpus), "--db", str(db), "--model", str(other), "--rebuild")
    assert out["model"] == str(other.resolve()) and out["chunks"]["embedded"] == out["chunks"]["total"]
    assert cli_json("status", "--db", str(db))["brains"][0]["model"] == str(other.resolve())


def test_status_json_shape_and_staleness(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    cli_json("index", str(corpus), "--db", str(db))
    status = cli_json("status", "--db", str(db))
    assert {"db", "brains"} <= set(status)
    (brain,) = status["brains"]
    assert brain["name"] == "default" and brain["documents"] == len(CORPUS) and brain["dim"] == 384
    (corpus / "hr/leave.md").write_text("# Parental leave\n\nIt lasts twenty weeks now.\n", encoding="utf-8")
    stale = cli_json("status", "--db", str(db))["brains"][0]
    assert stale != brain


def test_status_and_ask_without_an_index_exit_3(tmp_path: Path, fake_models: FakeModels) -> None:
    assert cli("status", "--db", str(tmp_path / "none.db")).exit_code == 3
    assert cli("ask", "anything", "--db", str(tmp_path / "none.db"), "--context-only").exit_code == 3
    assert not fake_models.embedders


def test_empty_folder_makes_an_empty_brain_and_ask_finds_nothing(
    tmp_path: Path, db: Path, fake_models: FakeModels
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = cli_json("index", str(empty), "--db", str(db))
    assert out["chunks"]["total"] == 0
    result = cli("ask", "anything at all", "--db", str(db), "--json")
    assert result.exit_code == 4 and not fake_models.llms


def test_library_index_reports_like_the_cli(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    report = index(IndexRequest(paths=[corpus], db=db, brain="work"))
    assert report.brain == "work" and report.model == DEFAULT_MODEL
    assert report.new == len(CORPUS) and report.chunks_embedded == report.chunks_total > 0
    again = index(IndexRequest(paths=[corpus], db=db, brain="work"))
    assert (again.unchanged, again.chunks_embedded, again.chunks_total) == (len(CORPUS), 0, report.chunks_total)
    assert again.as_json()["files"] == CORPUS_UNCHANGED
    assert cli_json("status", "--db", str(db), "--brain", "work")["brains"][0]["documents"] == len(CORPUS)
    assert fake_models.embedder_loads == [DEFAULT_MODEL]  # the unchanged second run loaded no model


def test_the_summary_counts_the_files_that_are_not_documents(corpus: Path, db: Path, fake_models: FakeModels) -> None:
    """A folder of documents beside scripts and archives: the summary says how many files were
    not read, of which kinds, and how to read a kind; --json has them by extension."""
    for rel in ("bin/deploy.sh", "bin/backup.sh", "bin/Makefile", "old.tar.gz", "logo.svg", "a.bak", "b.bak"):
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text("x", encoding="utf-8")
    result = cli("index", str(corpus), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert (
        "other files: 7 not read (2 .bak, 2 .sh, 1 without extension, 2 more of 2 kinds); "
        "--include GLOB reads a kind as text\n" in result.stdout
    )
    out = cli_json("index", str(corpus), "--db", str(db))
    assert out["other_files"] == {".bak": 2, ".sh": 2, "": 1, ".gz": 1, ".svg": 1}
    # Read as text once included: no longer other files.
    out = cli_json("index", str(corpus), "--db", str(db), "--include", "*.sh")
    assert out["files"]["new"] == 2 and out["other_files"] == {".bak": 2, "": 1, ".gz": 1, ".svg": 1}


def test_the_summary_has_no_other_files_line_when_every_file_is_a_document(
    corpus: Path, db: Path, fake_models: FakeModels
) -> None:
    result = cli("index", str(corpus), "--db", str(db))
    assert result.exit_code == 0 and "other files" not in result.stdout
    assert cli_json("index", str(corpus), "--db", str(db))["other_files"] == {}
