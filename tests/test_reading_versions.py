"""A newer reader or chunking reaches files that did not change (docs/guide.md, "After an upgrade").

Each document is stored with the reader and version that made its text and the chunking
version that cut it (`indexer.document_reading`: "html_page/2+chunks/1"); `index` reads again,
and writes anew, every unchanged file an older version made, embedding only the chunks whose
embedded text changed. A document stored before readings were recorded ('') counts as made by
version 1 of its reader and of chunking.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from locallens import indexer
from locallens.indexer import document_reading, read_as_now
from locallens.readers import registry
from locallens.readers.base import Extracted
from locallens.readers.registry import reading_of
from locallens.storage.sqlite import Store

from .helpers import FakeModels, cli, cli_json, stdout_json

PAGE = """<html><head><title>Boiler room</title></head><body>
<p><a href="index.html">Home</a> | <a href="rooms.html">Rooms</a></p>
<h1>Boiler room</h1>
<p>The boiler is serviced every October by the facilities team.</p>
</body></html>
"""


def test_a_reading_names_the_reader_the_chunking_and_their_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = registry.reader_for(".html")
    assert spec is not None
    assert reading_of("manual/page.HTML") == f"html_page/{spec.version}"
    assert reading_of("notes.org") == "org/1"
    assert reading_of("data.weird") == reading_of("notes.md")  # --include'd: read as text
    assert document_reading("org/1") == f"org/1+chunks/{indexer.CHUNKING_VERSION}"
    assert read_as_now(document_reading(reading_of("a.html")), "b.htm")
    assert not read_as_now("", "notes.org")  # stored before readings: chunking version 1, not today's
    monkeypatch.setattr(indexer, "CHUNKING_VERSION", 1)
    assert read_as_now("", "notes.org")  # ... which was version 1 of both
    assert not read_as_now("", "page.html")  # the HTML reader has changed since
    assert not read_as_now(document_reading("text/2"), "page.html")  # another reader made it
    assert not read_as_now("org/1", "notes.org")  # no chunking version: not this release's


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "boiler.html").write_text(PAGE, encoding="utf-8")
    (root / "keys.org").write_text("* Keys\nThe spare keys hang in the porter's lodge.\n", encoding="utf-8")
    return root


def _now(path: str, html_version: int | None = None) -> str:
    reader = reading_of(path) if html_version is None else f"html_page/{html_version}"
    return document_reading(reader)


def _readings(db: Path) -> dict[str, str]:
    with Store(db, create=False) as store:
        return dict(store.execute("SELECT relative_path, reading FROM documents"))


def test_an_index_from_before_readings_reads_again_only_formats_read_otherwise_since(
    folder: Path, tmp_path: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the release that recorded no readings chunked: chunking version 1 (a later chunking
    # reads every such file again, which the next test shows).
    monkeypatch.setattr(indexer, "CHUNKING_VERSION", 1)
    db = tmp_path / "index.db"
    cli_json("index", str(folder), "--db", str(db))
    assert _readings(db) == {"boiler.html": _now("boiler.html"), "keys.org": _now("keys.org")}
    # As the previous release left it: no `reading` column, schema step 7.
    with Store(db) as store, store.transaction():
        store.conn.execute("ALTER TABLE documents DROP COLUMN reading")
        store.conn.execute("PRAGMA user_version=7")
    assert stdout_json(cli("status", "--db", str(db), "--json"))["brains"][0]["stale"] == 1
    embedded = len(fake_models.embedder.passages)
    report = cli_json("index", str(folder), "--db", str(db))
    assert report["files"] == {
        "new": 0,
        "changed": 0,
        "unchanged": 1,
        "removed": 0,
        "skipped": 0,
        "read_again": 1,
    }
    assert report["chunks"]["embedded"] == 0 and len(fake_models.embedder.passages) == embedded
    # the org file was not read again: '' is its reader's version 1, the one it has now
    assert _readings(db) == {"boiler.html": _now("boiler.html"), "keys.org": ""}
    assert cli_json("index", str(folder), "--db", str(db))["files"]["read_again"] == 0
    assert stdout_json(cli("status", "--db", str(db), "--json"))["brains"][0]["stale"] == 0


def test_a_newer_reader_rewrites_an_unchanged_file_and_embeds_only_what_changed(
    folder: Path, tmp_path: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "index.db"
    cli_json("index", str(folder), "--db", str(db))
    from locallens.readers import html_page

    read = html_page.read

    def newer(data: bytes, ext: str) -> Extracted:  # a reader that now finds one more sentence
        extracted = read(data, ext)
        return replace(extracted, text=extracted.text + "\n\nIt was last serviced in 2025.")

    monkeypatch.setattr(html_page, "read", newer)
    spec = registry.reader_for(".html")
    assert spec is not None
    monkeypatch.setitem(registry._READERS, ".html", replace(spec, version=spec.version + 1))
    dry = cli_json("index", str(folder), "--db", str(db), "--dry-run")
    assert dry["files"]["read_again"] == 1 and _readings(db)["boiler.html"] == _now("boiler.html", spec.version)
    embedded = len(fake_models.embedder.passages)
    report = cli_json("index", str(folder), "--db", str(db))
    assert report["files"]["read_again"] == 1 and report["files"]["unchanged"] == 1
    assert report["files"]["changed"] == 0
    assert _readings(db)["boiler.html"] == _now("boiler.html", spec.version + 1)
    new_passages = fake_models.embedder.passages[embedded:]
    assert new_passages and all("2025" in p for p in new_passages)
    out = stdout_json(cli("ask", "When was the boiler last serviced?", "--db", str(db), "--context-only", "--json"))
    assert any("last serviced in 2025" in s["content"] for s in out["sources"])


def test_newer_chunking_rechunks_every_file_and_embeds_only_what_changed(
    folder: Path, tmp_path: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "index.db"
    first = cli_json("index", str(folder), "--db", str(db))
    monkeypatch.setattr(indexer, "CHUNKING_VERSION", indexer.CHUNKING_VERSION + 1)
    assert stdout_json(cli("status", "--db", str(db), "--json"))["brains"][0]["stale"] == 2
    embedded = len(fake_models.embedder.passages)
    report = cli_json("index", str(folder), "--db", str(db))
    assert report["files"]["read_again"] == 2 and report["chunks"]["embedded"] == 0
    assert report["chunks"]["total"] == first["chunks"]["total"]
    assert len(fake_models.embedder.passages) == embedded
    assert set(_readings(db).values()) == {
        f"html_page/{registry.reader_for('.html').version}+chunks/{indexer.CHUNKING_VERSION}",
        f"org/1+chunks/{indexer.CHUNKING_VERSION}",
    }  # type: ignore[union-attr]


def test_postgres_reads_again_after_its_schema_5_step(
    folder: Path, fake_models: FakeModels, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.setattr(indexer, "CHUNKING_VERSION", 1)  # as the release before readings chunked
    cli_json("index", str(folder), "--db", pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as schema 4 left them
        conn.execute("ALTER TABLE locallens.documents DROP COLUMN reading")
        conn.execute("UPDATE locallens.meta SET value = '4' WHERE key = 'schema_version'")
    embedded = len(fake_models.embedder.passages)
    report = cli_json("index", str(folder), "--db", pg_url)
    assert (report["files"]["read_again"], report["files"]["unchanged"]) == (1, 1)
    assert report["chunks"]["embedded"] == 0 and len(fake_models.embedder.passages) == embedded
    assert cli_json("index", str(folder), "--db", pg_url)["files"]["read_again"] == 0


# -- the guard: a reader's output does not change under the same version --------------------------


def _digest_script() -> dict[str, object]:
    import runpy

    return runpy.run_path(str(Path(__file__).resolve().parent.parent / "scripts" / "reading_digests.py"))


def test_every_readers_output_is_recorded_under_its_version() -> None:
    """`scripts/reading_digests.py --check`: what each reader (and chunking) makes of the
    repository's own files is the digest recorded for its version. When this fails, a change of
    output needs its version raised, or people's indexes would keep the old reading."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "reading_digests.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_guard_names_a_reader_whose_output_changed_under_the_same_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from locallens.readers import html_page

    script = _digest_script()
    recorded = json.loads((Path(__file__).resolve().parent / "data" / "reading_digests.json").read_text())
    read = html_page.read
    monkeypatch.setattr(html_page, "read", lambda data, ext: replace(read(data, ext), text=read(data, ext).text + " x"))
    now = script["digests"]()  # type: ignore[operator]
    assert script["changed_without_a_new_version"](now, recorded) == [reading_of("page.html")]  # type: ignore[operator]
    spec = registry.reader_for(".html")
    assert spec is not None
    monkeypatch.setitem(registry._READERS, ".html", replace(spec, version=spec.version + 1))
    monkeypatch.setitem(registry._READERS, ".htm", replace(spec, version=spec.version + 1))
    raised = script["digests"]()  # type: ignore[operator]
    assert script["changed_without_a_new_version"](raised, recorded) == []  # type: ignore[operator]


def test_the_guard_names_chunking_when_its_output_changed_under_the_same_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = _digest_script()
    recorded = json.loads((Path(__file__).resolve().parent / "data" / "reading_digests.json").read_text())
    chunk_headers = indexer.chunk_headers
    monkeypatch.setattr(
        indexer, "chunk_headers", lambda doc, contents: [h.upper() for h in chunk_headers(doc, contents)]
    )
    now = script["digests"]()  # type: ignore[operator]
    assert script["changed_without_a_new_version"](now, recorded) == [f"chunks/{indexer.CHUNKING_VERSION}"]  # type: ignore[operator]
