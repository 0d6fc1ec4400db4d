"""The answer check against sentences a capable model writes: false withholds and catches.

    .venv/bin/python benchmarks/bench_check.py [--split tune|held-out|fresh|fresh2|all] [--verbose]

Data: benchmarks/data/check_labelled.jsonl, one hand-written sentence a line, as a strong model
would write it given the numbered excerpts of a question:
    {"id", "split", "corpus", "question", "excerpts": [excerpt ids, numbered from 1],
     "sentence" (with its citations), "label": "supported" | "unsupported", "kind"}
and benchmarks/data/check_excerpts.jsonl, the excerpts' text by id (`corpus:file#chunk`, the
chunk's number under the default paragraph chunker). The corpora are sample_docs/ (the five
excerpts `ask` sent for the question from an index with the default settings), the
language-reference topics and the standard library's manual pages of benchmarks/corpora.py (the
five chunks a BM25 ranking put first: over the 79 topics, and over the pages of 27 modules); the
questions come from the project's question sets, and the text is stored so that a change of
chunker or retrieval does not change what a sentence is checked against.

Kinds of supported sentences: `close` (a light rewording), `paraphrase` (other words, the same
fact), `summary` (several statements of an excerpt in one sentence), `combined` (statements of two
excerpts, or of two distant sentences, joined). Kinds of unsupported ones: `swapped_number` (a
number, version or time changed, often for another one of the excerpts), `wrong_entity` (the fact
said of another subject), `invented_clause` (a true statement with an addition no excerpt makes),
`recombined` (the excerpts' own words and facts joined into a statement they do not make),
`negation` (the statement turned into its opposite).

The split is by question: a third of the questions (`held-out`) were not looked at while the
check's rules and thresholds were set; report them apart. benchmarks/data/check_fresh.jsonl (85
sentences, 11 more questions, the same fields, split `fresh`) was written before the check was
ever run on it, over other excerpts, and is never tuned on. benchmarks/data/check_fresh2.jsonl
(144 sentences, 72 backed and 72 not, split `fresh2`) was written the same way in a later round
over other corpora: the five chunks `ask --extractive` read (default settings, an index of the
corpus as bench_answers.py builds it) for 18 questions of the Borg, Postfix, Apache and Varnish
sets; never tuned on either.

Every sentence goes through `locallens.claims.check_answer` with the packaged embedder, exactly
as the default mode checks a model's answer. A sentence is *kept* when every claim it holds is
supported, *withheld* otherwise. Figures: false-withhold rate (supported sentences withheld;
target <= 10%), catch rate (unsupported sentences withheld; target >= 90%), by split and by kind,
and the citations printed with the kept supported sentences (do they name an excerpt the
sentence cites?). `--verbose` prints every miss with the check's reasons.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as c

DATA = Path(__file__).resolve().parent / "data"
LABELLED = DATA / "check_labelled.jsonl"
# Written later, before the check was ever run on them, in a capable model's voice over other
# excerpts of sample_docs/ and the language reference: held out entirely (split "fresh").
FRESH = DATA / "check_fresh.jsonl"
# Written in a later round the same way, before the check was ever run on them, over the five
# chunks `ask --extractive` read for 18 questions of the Borg, Postfix, Apache and Varnish sets
# (split "fresh2"): never tuned on either.
FRESH2 = DATA / "check_fresh2.jsonl"
EXCERPTS = DATA / "check_excerpts.jsonl"
TARGET_FALSE_WITHHOLD = 0.10
TARGET_CATCH = 0.90
SUPPORTED_KINDS = ("close", "paraphrase", "summary", "combined")
UNSUPPORTED_KINDS = ("swapped_number", "wrong_entity", "invented_clause", "recombined", "negation")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Outcome:
    record: dict[str, Any]
    kept: bool
    reasons: list[str] = field(default_factory=list)
    cited_right: bool | None = None  # kept and supported: a printed citation is one it cited


def memo_encoder(encode: Any) -> Any:
    """`encode` with every text's vector remembered (the check embeds the excerpts per sentence)."""
    import numpy as np

    seen: dict[str, Any] = {}

    def cached(texts: list[str]) -> Any:
        todo = list(dict.fromkeys(t for t in texts if t not in seen))
        if todo:
            seen.update(zip(todo, np.asarray(encode(todo))))
        return np.stack([seen[t] for t in texts]) if texts else np.asarray(encode([]))

    return cached


def run(records: list[dict[str, Any]], excerpts: dict[str, str], embedder: Any, encode: Any = None) -> list[Outcome]:
    """Check every record's sentence against its excerpts (`encode`: the sentence encoder, by
    default the embedder's through a memo)."""
    from locallens.claims import check_answer
    from locallens.domain import Chunk, Hit
    from locallens.prompt import CITATION_RE, citation_numbers
    from locallens.retrieval import SentenceEncoder

    encode = encode or memo_encoder(SentenceEncoder(embedder, None))
    questions: dict[str, Any] = {}
    outcomes = []
    for record in records:
        hits = []
        for ref in record["excerpts"]:
            path, _, chunk = ref.split(":", 1)[1].rpartition("#")
            hits.append(Hit(Chunk(ref, "default", path, int(chunk), excerpts[ref], "x" * 64), 0.5))
        question = record["question"]
        if question not in questions:
            questions[question] = embedder.encode_query(question)
        checked = check_answer(record["sentence"], hits, questions[question], encode, question=question)
        kept = bool(checked.claims) and all(claim.supported for claim in checked.claims)
        reasons = []
        for claim in checked.claims:
            if claim.supported:
                continue
            why = [f"score {claim.score:.2f}"]
            if claim.facts_missing:
                why.append(f"facts missing {claim.facts_missing}")
            if claim.words_missing:
                why.append(f"words missing {claim.words_missing}")
            if getattr(claim, "words_unaligned", None):
                why.append(f"not in its closest sentences {claim.words_unaligned}")
            why.extend(getattr(claim, "conflicts", []))  # the checks of later versions
            reasons.append("; ".join(why))
        cited_right = None
        if kept and record["label"] == "supported":
            asked = {n for m in CITATION_RE.finditer(record["sentence"]) for n in citation_numbers(m)}
            printed = {n for claim in checked.claims for n in claim.citations}
            cited_right = bool(printed & asked) if asked else bool(printed)
        outcomes.append(Outcome(record, kept, reasons, cited_right))
    return outcomes


def rate(outcomes: Iterable[Outcome], withheld: bool) -> tuple[int, int]:
    rows = list(outcomes)
    return sum(1 for o in rows if o.kept != withheld), len(rows)


def fmt(hits: int, total: int) -> str:
    return f"{hits}/{total} = {hits / total:.2f}" if total else "-"


def report(table: c.Table, outcomes: list[Outcome], label: str) -> None:
    good = [o for o in outcomes if o.record["label"] == "supported"]
    bad = [o for o in outcomes if o.record["label"] == "unsupported"]
    table.section(f"{label}: {len(good)} supported, {len(bad)} unsupported sentences")
    withheld, total = rate(good, withheld=True)
    table.add(
        "false withhold (supported sentences withheld)",
        fmt(withheld, total),
        f"<= {TARGET_FALSE_WITHHOLD:.2f}",
        bool(total) and withheld / total <= TARGET_FALSE_WITHHOLD,
    )
    caught, total_bad = rate(bad, withheld=True)
    table.add(
        "catch (unsupported sentences withheld)",
        fmt(caught, total_bad),
        f">= {TARGET_CATCH:.2f}",
        bool(total_bad) and caught / total_bad >= TARGET_CATCH,
    )
    for kind in SUPPORTED_KINDS:
        rows = [o for o in good if o.record["kind"] == kind]
        if rows:
            table.add(f"  withheld, {kind}", fmt(*rate(rows, withheld=True)))
    for kind in UNSUPPORTED_KINDS:
        rows = [o for o in bad if o.record["kind"] == kind]
        if rows:
            table.add(f"  caught, {kind}", fmt(*rate(rows, withheld=True)))
    for corpus in sorted({o.record["corpus"] for o in outcomes}):
        g = [o for o in good if o.record["corpus"] == corpus]
        b = [o for o in bad if o.record["corpus"] == corpus]
        table.add(
            f"  {corpus}: false withhold / catch",
            f"{fmt(*rate(g, withheld=True))} / {fmt(*rate(b, withheld=True))}",
        )
    cited = [o.cited_right for o in good if o.cited_right is not None]
    if cited:
        table.add(
            "kept supported sentences citing an excerpt they cited",
            fmt(sum(cited), len(cited)),
            note="a wrong citation is removed, a missing one added",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "held-out", "fresh", "fresh2", "all"), default="all")
    parser.add_argument("--verbose", action="store_true", help="print every miss with the check's reasons")
    args = parser.parse_args()
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("the answer check on hand-labelled sentences", False)
    from locallens.embedding import load_embedder

    records = read_jsonl(LABELLED) + read_jsonl(FRESH) + read_jsonl(FRESH2)
    excerpts = {row["id"]: row["text"] for row in read_jsonl(EXCERPTS)}
    if args.split != "all":
        records = [r for r in records if r["split"] == args.split]
    embedder = load_embedder(None)
    c.note(f"{len(records)} sentences, embedder {embedder.name}")
    checked_at = time.perf_counter()
    outcomes = run(records, excerpts, embedder)
    seconds = time.perf_counter() - checked_at
    table = c.Table(f"answer check: {len(records)} labelled sentences ({LABELLED.name})")
    by_split: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_split[outcome.record["split"]].append(outcome)
    for split in ("tune", "held-out"):
        if by_split.get(split):
            report(table, by_split[split], split)
    if by_split.get("tune") and by_split.get("held-out"):
        report(table, by_split["tune"] + by_split["held-out"], "all (tune + held-out)")
    if by_split.get("fresh"):
        report(table, by_split["fresh"], "fresh (never tuned on)")
    if by_split.get("fresh2"):
        report(table, by_split["fresh2"], "fresh2 (never tuned on)")
    table.section("time")
    table.add("check, per sentence", c.fmt_ms(seconds * 1000 / max(1, len(outcomes))), note="embedding included")
    table.print()
    if args.verbose:
        for o in outcomes:
            wrong = o.kept != (o.record["label"] == "supported")
            if wrong:
                what = "withheld" if not o.kept else "kept"
                print(f"{what:8} {o.record['split']:8} {o.record['kind']:15} {o.record['sentence']}")
                for reason in o.reasons:
                    print(f"         {reason}")
    c.print_end(started)


if __name__ == "__main__":
    main()
