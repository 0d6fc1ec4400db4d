"""The PostgreSQL store's keyword search: its lexemes (`tsvector_text`, `keyword_terms`) and BM25.

`chunks.tsv` is a tsvector with a GIN index. Its lexemes are computed here, not by the server's
text-search parser, with the tokenisation the SQLite store's queries use (words of `\\w`
characters, lower-cased, Latin diacritics removed), each word then stemmed as FTS5's `porter`
tokenizer stems it in the SQLite store (`locallens.stemming.porter_stem`: English suffix rules,
applied to words of every language in the text and in the query alike), so that a query and the
text it must find always agree, whatever the server's locale and text-search configurations.
Text in scripts written without spaces (Han, kana, Hangul, Thai) is indexed as its character
bigrams, unstemmed. Ranking is BM25 as FTS5 computes it (`KeywordIndex.scores`).

Part of the PostgreSQL backend (`storage.postgres` uses it; nothing outside the storage package
imports it).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from locallens.stemming import porter_stem
from locallens.storage.types import (
    BM25_B,
    BM25_K1,
    COMMON_WORD_FRACTION,
    KEYWORD_PRUNE_MIN_CHUNKS,
    Brain,
    fused_rankings,
    scan_condition,
    scanned_symbols,
    scanned_within,
    symbol_ranking,
    symbol_rows,
)
from locallens.storage.types import (
    POSTGRES_SCHEMA as SCHEMA,
)
from locallens.text import NO_SPACE_CLASS

# The brain's chunk count and mean length are read again after this many seconds (see
# KeywordIndex._stats).
KEYWORD_STATS_TTL_S = 60.0
KEYWORD_TERMS_KEPT = 10_000  # term counts kept a brain (see _term_counts)
PRUNE_MIN_CHUNKS = 5_000  # keyword search leaves common words out from this many chunks in a brain
# When a question's terms match more than this many (chunk, term) pairs, BM25 is computed only for
# the KEYWORD_CANDIDATES chunks (at least 5 k) with the largest sum of their matched terms' idf.
KEYWORD_EXACT_MATCHES = 20_000
KEYWORD_CANDIDATES = 1_000
# tsvector limits: a lexeme shorter than 2 KiB, positions 1..16383, at most 256 positions per
# lexeme, and lexemes totalling less than 1 MiB. Text beyond them is not keyword-indexed.
_TS_MAX_LEXEME_BYTES = 2046
_TS_MAX_POSITION = 16383
_TS_MAX_POSITIONS = 256
_TS_MAX_BYTES = 1_000_000

# A word of a space-separated script, or a run of a script written without spaces.
_TOKEN = re.compile(f"([{NO_SPACE_CLASS}]+)|([^\\W{NO_SPACE_CLASS}]+)")
# Latin letters with diacritics folded to their base letters (as FTS5's remove_diacritics does in
# the SQLite store): `canción` and `cancion` are the same keyword. Other scripts are left alone
# (a kana's voicing mark is part of the word).
_LATIN_FOLD = {
    code: "".join(ch for ch in unicodedata.normalize("NFKD", chr(code)) if not unicodedata.combining(ch))
    for code in range(0xC0, 0x250)
}
_LATIN_FOLD = {code: text for code, text in _LATIN_FOLD.items() if text and text != chr(code)}


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower().translate(_LATIN_FOLD)


def _pieces(run: str) -> list[str]:
    """A run of a script written without spaces as its keywords: its character bigrams (most
    Chinese words have two characters), or the character itself when it stands alone."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _quote(lexeme: str) -> str:
    """A lexeme as a quoted tsvector/tsquery literal: no text can be read as an operator."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_text(header: str, content: str) -> str:
    """The `chunks.tsv` of a chunk, in tsvector input syntax: header then text, one position per
    word (its stem) and per bigram of a run without spaces (positions let a query match a
    phrase)."""
    positions: dict[str, list[int]] = {}
    size = position = 0
    for match in _TOKEN.finditer(_normalise(f"{header}\n{content}" if header else content)):
        run, word = match.groups()
        for lexeme in _pieces(run) if run else [porter_stem(word)]:
            position = min(position + 1, _TS_MAX_POSITION)
            found = positions.get(lexeme)
            if found is None:
                length = len(lexeme.encode("utf-8"))
                if length > _TS_MAX_LEXEME_BYTES or size + length > _TS_MAX_BYTES:
                    continue
                size += length
                positions[lexeme] = [position]
            elif len(found) < _TS_MAX_POSITIONS and found[-1] != position:
                found.append(position)
    return " ".join(f"{_quote(lexeme)}:{','.join(map(str, found))}" for lexeme, found in positions.items())


def keyword_terms(query: str) -> tuple[list[str], list[str]]:
    """The words and other terms (phrases, bigrams) of a question, as tsquery operands.

    Like the SQLite store: one term per whitespace-separated token; a token with inner
    punctuation (an IP, a version, a policy number such as NWL-CY-22871) becomes a phrase of its
    parts, so it matches only that sequence; single letters are dropped. Words and the parts of
    phrases are stemmed as the text was (`porter_stem`). A run of a
    script written without spaces stands for its bigrams. Every lexeme is quoted, so no quote,
    `&`, `|`, `!`, `:*` or parenthesis in a question can make the query fail or mean something
    else.
    """
    words: list[str] = []
    others: list[str] = []
    for token in _normalise(query).split():
        parts = _TOKEN.findall(token)
        if any(run for run, _ in parts):
            for run, word in parts:
                if run:
                    others += [_quote(piece) for piece in _pieces(run)]
                elif len(word) > 1 or word.isdigit():
                    words.append(word)
        elif len(parts) > 1:
            others.append("(" + " <-> ".join(_quote(porter_stem(word)) for _, word in parts) + ")")
        elif parts and (len(parts[0][1]) > 1 or parts[0][1].isdigit()):
            words.append(parts[0][1])
    stems = [_quote(porter_stem(word)) for word in words]
    return list(dict.fromkeys(stems)), list(dict.fromkeys(others))


class KeywordIndex:
    """BM25 over a store's `chunks.tsv`, with the brain statistics it needs kept for a while.

    `execute(sql, params)` runs a read on the store's connection. The store calls `forget` when
    it writes.
    """

    def __init__(self, execute: Callable[..., list[Any]]) -> None:
        self.execute = execute
        self._stats_cache: dict[int, tuple[float, int, float]] = {}  # brain id -> (time, chunks, mean length)
        # brain id -> (time, {term: (chunks counted, the cap they were counted to)}); see _term_counts
        self._term_cache: dict[int, tuple[float, dict[str, tuple[int, int]]]] = {}

    def scores(self, brain: Brain, query: str, k: int, pattern: str | None) -> list[tuple[int, float]]:
        """(chunk id, score) for `query`, best (highest) first: its words' BM25 (`word_scores`), and
        when it names symbols ("$?", "<<<"; `text.symbols`), the chunks holding them as written
        (`symbol_scores`), the two rankings fused by reciprocal rank as in the SQLite store."""
        words = self.word_scores(brain, query, k, pattern)
        asked = scanned_symbols(query)
        if k <= 0 or not asked:
            return words
        return fused_rankings([words, self.symbol_scores(brain, asked, k, pattern)], k)

    def symbol_scores(self, brain: Brain, asked: list[str], k: int, pattern: str | None) -> list[tuple[int, float]]:
        """(chunk id, score) of `brain`'s chunks holding any of the symbols or shapes `asked`
        (`storage.types.scanned_symbols`, `symbol_ranking`): one scan of the brain's chunks with
        `strpos`, in a brain of at most SYMBOL_SCAN_MAX_CHUNKS chunks (`scanned_within`)."""
        total, _ = self._stats(brain)
        asked = scanned_within(asked, total)
        if not asked:
            return []
        held, pieces = scan_condition(asked, "strpos(c.content, %s) > 0")
        params: list[Any] = [brain.id, *pieces]
        where = ""
        if pattern is not None:
            where = f" AND c.document_id IN (SELECT d.id FROM {SCHEMA}.documents d WHERE d.relative_path ~ %s)"
            params.append(pattern)
        rows = self.execute(
            f"SELECT c.id, c.content FROM {SCHEMA}.chunks c WHERE c.brain_id = %s AND ({held}){where}", params
        )
        return symbol_ranking(symbol_rows([(int(r[0]), str(r[1])) for r in rows], asked), total, k)

    def word_scores(self, brain: Brain, query: str, k: int, pattern: str | None) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) for the terms of `query` (see keyword_terms), best (highest) first;
        with `pattern` (`postgres.glob_regex`), only the chunks of documents whose path matches it.

        BM25 as FTS5 computes it for the SQLite store (k1 = 1.2, b = 0.75, idf =
        log((N - df + 0.5) / (df + 0.5)), at least 1e-6), with two differences. A chunk's length
        is its number of distinct lexemes (what a tsvector holds). And a word found in more than
        COMMON_WORD_FRACTION of the brain's chunks is left out from PRUNE_MIN_CHUNKS chunks on
        (the SQLite store: from KEYWORD_PRUNE_MIN_CHUNKS): each term's matches are scored one by
        one here, so a word in most chunks makes a search score most of the brain for a weight
        near 0 (SciFact, 10,671 chunks: 53 ms a search with pruning, 192 ms without, the same
        nDCG@10). When every word is that common, the rarest stays; phrases are always kept. A
        term's frequency in a chunk is read with ts_rank_cd (0.1 per occurrence of an unweighted
        lexeme or phrase). Equal scores in id order. When the terms match more than
        KEYWORD_EXACT_MATCHES (chunk, term) pairs, only the KEYWORD_CANDIDATES chunks with the
        largest sum of their matched terms' idf are scored.
        """
        words, others = keyword_terms(query)
        if k <= 0 or not (words or others):
            return []
        total, mean_length = self._stats(brain)
        if total == 0:
            return []
        common = self._common_words(words)
        words = [w for w in words if w not in common]
        # Counting stops at `cap`: reaching it means "in more than the fraction" (a common word).
        cap = int(COMMON_WORD_FRACTION * total) + 1 if total >= PRUNE_MIN_CHUNKS else total + 1
        frequency = self._term_counts(brain, [*words, *others], cap)
        found = [w for w in words if w in frequency]
        kept = [w for w in found if frequency[w] < cap]
        if found and not kept:  # every word common: the rarest stays, weighed by its true count
            exact = self._term_counts(brain, found, total + 1) if len(found) > 1 else frequency
            rarest = min(found, key=exact.__getitem__)
            kept, frequency[rarest] = [rarest], exact[rarest]
        terms = kept + [o for o in others if o in frequency]
        if not terms:
            return []
        idf = [max(math.log((total - frequency[t] + 0.5) / (frequency[t] + 0.5)), 1e-6) for t in terms]
        where = ""
        filters: list[Any] = [brain.id]
        if pattern is not None:
            where = f" AND c.document_id IN (SELECT d.id FROM {SCHEMA}.documents d WHERE d.relative_path ~ %s)"
            filters.append(pattern)
        # The chunks to score, with each matched term: all of them, or the candidates (see below).
        matches = (
            "SELECT c.id, t.idf, c.tsv, t.term FROM unnest(%s::text[], %s::float8[]) AS t(term, idf)"
            f" JOIN {SCHEMA}.chunks c ON c.tsv @@ t.term::tsquery WHERE c.brain_id = %s{where}"
        )
        params: list[Any] = [terms, idf, *filters]
        if sum(frequency[t] for t in terms) > KEYWORD_EXACT_MATCHES:
            # Scoring reads each matched chunk's tsvector (stored out of line once it is large)
            # once per term: at 100,000 chunks a question's words can match 70,000 pairs, over a
            # second a search. Summing the matched terms' idf needs only the index and the row,
            # and the best BM25 scores are among the best of those sums (the same top 20 on the
            # questions of benchmarks/bench_pg.py): BM25 for those candidates only.
            matches = (
                "SELECT c.id, t.idf, c.tsv, t.term FROM ("
                f"SELECT m.id, sum(m.idf) AS weight FROM ({matches}) m"
                " GROUP BY m.id ORDER BY weight DESC, m.id LIMIT %s) top"
                f" JOIN {SCHEMA}.chunks c ON c.id = top.id"
                " JOIN unnest(%s::text[], %s::float8[]) AS t(term, idf) ON c.tsv @@ t.term::tsquery"
            )
            params += [max(KEYWORD_CANDIDATES, 5 * k), terms, idf]
        # Each pair's tf and length computed once (OFFSET 0 keeps the planner from inlining them
        # into the sum twice), and only (id, tf, length) reaches the aggregate.
        rows = self.execute(
            "SELECT id, sum(idf * tf * (%s + 1) / (tf + %s * (%s + %s * len / %s))) AS score FROM ("
            "SELECT id, idf, greatest(round(ts_rank_cd(tsv, term::tsquery, 0) * 10), 1) AS tf, length(tsv) AS len"
            f" FROM ({matches}) p OFFSET 0) s GROUP BY id ORDER BY score DESC, id LIMIT %s",
            [BM25_K1, BM25_K1, 1 - BM25_B, BM25_B, mean_length, *params, k],
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    def term_counts(self, brain: Brain, words: Sequence[str], cap: int) -> tuple[int, dict[str, int]]:
        """(the brain's chunks, how many of them hold each of `words`, counted up to `cap`).

        As in the SQLite store: a word is stemmed as a question's word is (`keyword_terms`); a
        word with inner punctuation counts the chunks holding its parts in sequence, a word of no
        letters or digits counts 0. Counts are kept as the search's are (`_term_counts`).
        """
        total, _ = self._stats(brain)
        terms: dict[str, str] = {}
        for word in dict.fromkeys(words):
            found, others = keyword_terms(word)
            term = (found or others or [""])[0]
            if term:
                terms[word] = term
        counted = self._term_counts(brain, list(dict.fromkeys(terms.values())), cap) if terms and cap > 0 else {}
        return total, {word: counted.get(terms[word], 0) if word in terms else 0 for word in dict.fromkeys(words)}

    def _term_counts(self, brain: Brain, terms: list[str], cap: int) -> dict[str, int]:
        """Chunks of `brain` matching each tsquery term, counted up to `cap`; unmatched terms left out.

        Counting reads every matching row (at 100,000 chunks a third of a search's time), and
        questions share words, so counts are kept as the brain's statistics are (_stats):
        for KEYWORD_STATS_TTL_S, forgotten when this store writes, at most KEYWORD_TERMS_KEPT
        terms a brain. A count that stopped at a lower cap than asked for is counted again.
        """
        now = time.monotonic()
        kept_at, known = self._term_cache.get(brain.id, (now, {}))
        if now - kept_at >= KEYWORD_STATS_TTL_S or len(known) > KEYWORD_TERMS_KEPT:
            kept_at, known = now, {}
        missing = [t for t in dict.fromkeys(terms) if t not in known or _recount(known[t], cap)]
        if missing:
            counted = self.execute(
                "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM"
                f" {SCHEMA}.chunks c WHERE c.brain_id = %s AND c.tsv @@ t.term::tsquery LIMIT %s) s)"
                " FROM unnest(%s::text[]) AS t(term)",
                (brain.id, cap, missing),
            )
            known.update((str(term), (int(n), cap)) for term, n in counted)
        self._term_cache[brain.id] = (kept_at, known)
        counts = {t: min(known[t][0], cap) for t in terms}
        return {t: n for t, n in counts.items() if n}

    def forget(self) -> None:
        """This store wrote: chunk counts, lengths and term counts are read again."""
        self._stats_cache.clear()
        self._term_cache.clear()

    def _stats(self, brain: Brain) -> tuple[int, float]:
        """(chunks, mean distinct lexemes per chunk) of `brain`, for BM25.

        Counting them reads every chunk of the brain (~10 ms per 10,000), so they are kept for
        KEYWORD_STATS_TTL_S, and forgotten when this store writes: another process's writes
        show after that delay at worst (a search then weighs words by slightly older counts).
        """
        kept = self._stats_cache.get(brain.id)
        if kept is not None and time.monotonic() - kept[0] < KEYWORD_STATS_TTL_S:
            return kept[1], kept[2]
        ((total, mean),) = self.execute(
            f"SELECT count(*), coalesce(avg(length(tsv)), 0) FROM {SCHEMA}.chunks WHERE brain_id = %s", (brain.id,)
        )
        self._stats_cache[brain.id] = (time.monotonic(), int(total), max(float(mean), 1.0))
        return int(total), max(float(mean), 1.0)

    def _common_words(self, words: list[str]) -> set[str]:
        """Words (quoted lexemes) found in more than COMMON_WORD_FRACTION of the chunks.

        As in the SQLite store: applied from KEYWORD_PRUNE_MIN_CHUNKS chunks on, phrases and
        bigrams always kept, and when every word is common the rarest one stays. Frequencies come
        from the planner's statistics of `chunks.tsv` (ANALYZE, which autovacuum runs): no scan.
        A word missing from them is not common.
        """
        if len(words) < 2:
            return set()
        ((total,),) = self.execute(f"SELECT reltuples FROM pg_class WHERE oid = '{SCHEMA}.chunks'::regclass")
        if total < max(KEYWORD_PRUNE_MIN_CHUNKS, 1):
            return set()
        rows = self.execute(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
            " WHERE schemaname = %s AND tablename = 'chunks' AND attname = 'tsv'",
            (SCHEMA,),
        )
        if not rows or rows[0][0] is None:
            return set()
        frequency = dict(zip(rows[0][0], rows[0][1]))
        share = {word: float(frequency.get(word[1:-1].replace("''", "'"), 0.0)) for word in words}
        common = {word for word in words if share[word] > COMMON_WORD_FRACTION}
        if common == set(words):
            common.discard(min(words, key=lambda word: share[word]))
        return common


def _recount(known: tuple[int, int], cap: int) -> bool:
    """Whether a kept term count (chunks, the cap it was counted to) cannot answer for `cap`:
    it stopped at its cap, and a higher one is asked for."""
    counted, counted_to = known
    return counted >= counted_to and cap > counted_to
