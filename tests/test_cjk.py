"""Chinese, Japanese and Korean notes: keyword search through the trigram index, token estimates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from locallens.errors import StoreError
from locallens.retrieval import hybrid_search
from locallens.storage import Brain, migrations
from locallens.storage import sqlite as store_module
from locallens.storage.sqlite import Store
from locallens.tokens import count_tokens, estimate_tokens

from .helpers import write_one_chunk_notes

ROOT = Path(__file__).resolve().parent.parent
CJK_DOCS = ROOT / "benchmarks" / "data" / "cjk" / "docs"

NOTES = {
    "zh.md": "# 打印机\n打印机位于三楼的复印室。打印文件前请先刷工卡。",
    "ja.md": "# プリンター\nプリンターは二階の会議室の隣にあります。VPNの設定は情報システム部へ。",
    "ko.md": "# 서버\n서버 주소는 10.20.0.15입니다. 서버가 매주 일요일에 재시작됩니다.",
    "en.md": "# Printer\nThe printer is on the second floor, next to the kitchen.",
}
DIM = 4
# Vectors that put the Japanese note first for every question (the dense side is wrong on purpose).
VECTORS = {"ja.md": [1, 0, 0, 0], "zh.md": [0.6, 0.8, 0, 0], "ko.md": [0, 0, 1, 0], "en.md": [0, 0, 0, 1]}


def write_notes(store: Store, brain: Brain, notes: dict[str, str] = NOTES) -> None:
    write_one_chunk_notes(store, brain, notes, {path: VECTORS.get(path, [1, 1, 1, 1]) for path in notes})


@pytest.fixture()
def notes(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
        write_notes(store, brain)
        yield store, brain


def paths(store: Store, ids: list[int]) -> list[str]:
    return [store.execute("SELECT relative_path FROM chunks WHERE id = ?", (i,))[0][0] for i in ids]


# -- keyword search ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("打印机在哪里", "zh.md"),  # where is the printer: no word of it is a unicode61 token
        ("打印", "zh.md"),  # a 2-character word: shorter than a trigram
        ("年假 打印", "zh.md"),  # several 2-character words, one absent
        ("プリンターはどこですか", "ja.md"),
        ("서버 주소", "ko.md"),  # Korean stems carry particles in the text (서버가, 주소는)
        ("서버가 언제 재시작돼요?", "ko.md"),
        ("VPN 設定", "ja.md"),  # a Latin word glued to Japanese text, and a 2-character word
    ],
)
def test_keyword_search_finds_words_inside_cjk_text(notes, query: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    assert paths(store, store.keyword_search(brain, query, 5))[:1] == [expected]


def test_a_query_without_cjk_ranks_as_the_word_index_alone(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    assert store.keyword_scores(brain, "where is the printer", 5) == store._word_search(
        brain, "where is the printer", 5
    )
    assert paths(store, store.keyword_search(brain, "printer kitchen", 5)) == ["en.md"]


def test_a_mixed_query_uses_both_indexes(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    found = paths(store, store.keyword_search(brain, "kitchen 打印机", 5))
    assert sorted(found) == ["en.md", "zh.md"]


def test_fts_syntax_in_a_cjk_query_cannot_break_it(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    for query in ['打印"机', "打印 NEAR 机*", "サーバー: -設定", '"", 打', "。、！"]:
        store.keyword_search(brain, query, 5)


def test_the_path_filter_applies_to_the_trigram_side(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    assert store.keyword_search(brain, "打印机", 5, path_glob="ja*") == []
    assert paths(store, store.keyword_search(brain, "打印机", 5, path_glob="zh*")) == ["zh.md"]


def test_hybrid_search_lifts_the_cjk_keyword_match(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    qvec = np.array([1, 0, 0, 0], dtype=np.float32)  # the dense side prefers the Japanese note
    assert store.knn(brain, qvec, 1)[0].chunk.relative_path == "ja.md"
    assert hybrid_search(store, brain, "打印机在哪里", qvec, 2)[0].chunk.relative_path == "zh.md"


def test_the_trigram_index_holds_only_cjk_chunks_and_follows_deletions(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    rows = lambda: sorted(paths(store, [r[0] for r in store.execute("SELECT id FROM chunks_trigram_docsize")]))  # noqa: E731
    assert rows() == ["ja.md", "ko.md", "zh.md"]
    write_notes(store, brain, {"zh.md": "# 打印机\n打印机搬到了五楼。"})  # rewritten: old rows out, new in
    assert rows() == ["ja.md", "ko.md", "zh.md"]
    assert paths(store, store.keyword_search(brain, "五楼", 5)) == ["zh.md"]
    assert store.keyword_search(brain, "三楼", 5) == []
    store.fts_integrity_check()
    other = store.create_brain("other", "synthetic", DIM, "paragraph", 220, 0)
    write_notes(store, other)
    assert store.keyword_search(other, "打印机", 5) and store.keyword_search(brain, "打印机", 5)
    assert len(set(store.keyword_search(brain, "打印机", 5)) & set(store.keyword_search(other, "打印机", 5))) == 0
    store.delete_brain(other)  # brain deletion (and --rebuild's swap) removes its trigram rows
    assert rows() == ["ja.md", "ko.md", "zh.md"]
    store.delete_documents(brain, [d.id for d in store.documents(brain).values()])
    assert rows() == []
    store.fts_integrity_check()


def test_the_integrity_check_sees_a_missing_trigram_row(notes) -> None:  # type: ignore[no-untyped-def]
    store, _ = notes
    store.fts_integrity_check()
    with store.transaction():
        store.conn.execute("DELETE FROM chunks_trigram WHERE rowid = (SELECT min(rowid) FROM chunks_trigram)")
    with pytest.raises(StoreError, match="trigram index"):
        store.fts_integrity_check()


def test_the_glob_class_and_the_query_pattern_agree() -> None:
    assert store_module.NO_SPACE_RUN.pattern == f"[{migrations.NO_SPACE_CLASS}]+"
    for text in ["打", "プ", "ｱ", "서", "ก", "ひらがな"]:
        assert store_module.NO_SPACE_RUN.fullmatch(text), text
    for text in ["a", "é", "。", "１", " "]:
        assert not store_module.NO_SPACE_RUN.search(text), text


# -- the schema upgrade ---------------------------------------------------------------------


def test_a_database_written_before_the_trigram_index_is_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = next(s for s in migrations.MIGRATIONS if s.name == "trigram_index")
    earlier = tuple(s for s in migrations.MIGRATIONS if s.version < step.version)
    db = tmp_path / "index.db"
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", earlier)
        patch.setattr(store_module, "SCHEMA_VERSION", earlier[-1].version)
        with Store(db) as store:
            brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
            with store.transaction():  # the columns today's writer fills (a later step adds them)
                migrations._chunk_locations(store.conn)
                migrations._reading_versions(store.conn)
            write_notes(store, brain)
            assert store.execute("PRAGMA user_version")[0][0] == step.version - 1
            assert not store.execute("SELECT name FROM sqlite_master WHERE name = 'chunks_trigram'")
    with Store(db) as store:
        assert store.execute("PRAGMA user_version")[0][0] == migrations.SCHEMA_VERSION
        brain = store.get_brain("default")
        assert paths(store, store.keyword_search(brain, "打印机在哪里", 5))[:1] == ["zh.md"]
        assert paths(store, store.keyword_search(brain, "서버 주소", 5))[:1] == ["ko.md"]
        store.fts_integrity_check()
        assert store.integrity_check() == "ok"


# -- token estimates --------------------------------------------------------------------------


def test_english_estimates_are_unchanged() -> None:
    assert estimate_tokens("one two three four") == 5
    assert estimate_tokens("Which port does the staging database listen on?") == round(8 * 1.3)
    assert estimate_tokens("") == 0


def test_cjk_estimates_count_characters() -> None:
    assert estimate_tokens("打印机在哪里") == round(6 * 1.1)
    assert estimate_tokens("서버 주소") == round(4 * 1.2)
    assert estimate_tokens("VPN 服务器") == round(1.3 + 3 * 1.1)


def test_cjk_estimates_are_close_to_tiktoken() -> None:
    for path in sorted(CJK_DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        exact = count_tokens(text)
        assert 0.8 * exact <= estimate_tokens(text) <= 1.2 * exact, (path.name, estimate_tokens(text), exact)
