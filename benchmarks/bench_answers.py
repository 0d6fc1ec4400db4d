"""Answers a person can trust: fact accuracy, printed-sentence support, citations and refusals.

Two question sets, each with questions whose answer is in no document:
- sample: tests/data/questions.jsonl (20) + benchmarks/data/sample_unanswerable.jsonl (12), over
  sample_docs/;
- pydoc: benchmarks/data/pydoc_questions.jsonl (40 + 12), over the Python language reference
  topics that ship with every CPython (`pydoc_data`, written out by benchmarks/corpora.py).
  These questions were written apart from the answer check, and never used to tune it.

Modes, all on the same retrieval (top 5, vector search) and the default models:
- before: the model's raw answer, printed as it came (what `ask` printed before the check);
- check: the same generation after the answer check, falling back to the extractive answer when
  nothing of it is supported (what `ask` prints now);
- grammar: generation constrained so that every sentence ends with a citation, then the check;
- extractive: no LLM, the excerpts' most relevant sentences (`ask --extractive`).

Figures per set and mode: fact accuracy (answerable questions whose printed answer states an
expected answer, `contains_answer`), false refusals (answerable questions refused), citation
coverage (printed sentences carrying a valid citation), refusals (unanswerable questions answered
with the plain refusal or exit 4; for `before`, a raw answer that says the excerpts lack it),
and the claim check's cost per answer. `--dump FILE` writes every printed sentence with its
evidence, for labelling by hand (precision: the share a person calls backed by the excerpts).

Generations are cached in `--workdir` (keyed by question and mode), so re-running the check with
other thresholds costs no generation: `--min-support 0.75 --min-relevance 0.3` studies the check
alone (without the extractive fallback of `ask`). Delete the folder after changing generation.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import _common as c
from corpora import write_pydoc_corpus

ROOT = c.ROOT
DATA = Path(__file__).resolve().parent / "data"
SETS = {
    "sample": (c.SAMPLE_DOCS, [ROOT / "tests/data/questions.jsonl", DATA / "sample_unanswerable.jsonl"]),
    "pydoc": (None, [DATA / "pydoc_questions.jsonl"]),
}
MODES = ("before", "check", "grammar", "extractive")
# How a raw answer says the excerpts lack the answer (only to credit `before` with its refusals).
_SELF_REFUSAL = re.compile(
    r"\b(not (?:mentioned|provided|specified|stated|given|found|available|included|in the (?:provided )?(?:source )?excerpts)"
    r"|no (?:information|mention)|does not (?:say|mention|specify|contain)|do not (?:say|mention|specify|contain)"
    r"|cannot (?:find|answer)|can't (?:find|answer)|unable to)\b"
    r"|no (?:se )?(?:menciona|indica|especifica)|no está en",
    re.I,
)


@dataclass
class Row:
    question: str
    answerable: bool
    expected: list[str]
    printed: str
    refused: bool
    sentences: list[dict] = field(default_factory=list)  # printed sentences with evidence
    check_ms: float | None = None


def load_set(name: str) -> list[dict]:
    rows = []
    for path in SETS[name][1]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                rows.append(json.loads(line))
    return rows


def build_index(name: str, workdir: Path) -> Path:
    from locallens.indexer import IndexRequest, index

    db = workdir / f"{name}.db"
    docs = SETS[name][0]
    if docs is None:
        docs = write_pydoc_corpus(workdir / "pydoc-corpus")
    index(IndexRequest(paths=[docs], db=db))  # incremental: a second run costs a walk
    return db


def raw_sentences(answer: str, n_excerpts: int) -> list[dict]:
    """The raw answer's sentences with their citations, as `before` printed them."""
    from locallens.claims import claim_text, move_citations_before_stops
    from locallens.prompt import parse_citations
    from locallens.sentences import split_sentences

    out = []
    for unit in split_sentences(move_citations_before_stops(answer)):
        if re.search(r"\w", claim_text(unit)):
            cites = parse_citations(unit, n_excerpts)
            out.append({"text": unit, "cited": bool(cites.cited), "evidence": None, "score": None})
    return out


def run(args: argparse.Namespace) -> None:
    from locallens.answer import checked_answer, generate_grounded
    from locallens.claims import check_answer
    from locallens.embedding import load_embedder
    from locallens.extractive import extractive_answer
    from locallens.llm import LocalLLM, resolve_llm_path
    from locallens.retrieval import SentenceEncoder, retrieve
    from locallens.storage.sqlite import Store

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cache_path = workdir / "generations.jsonl"
    cache: dict[str, dict] = {}
    if cache_path.exists():
        for line in cache_path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            cache[item["key"]] = item
    llm = None
    dump = []
    warm_ms: list[float] = []
    results: dict[tuple[str, str], list[Row]] = {}
    for set_name in args.sets:
        db = build_index(set_name, workdir)
        questions = load_set(set_name)
        with Store(db, create=False) as store:
            brain = store.get_brain("default")
            embedder = load_embedder(brain.model)
            encode = SentenceEncoder(embedder, store)
            for q in questions:
                text = q["question"]
                answerable = q.get("answerable", True)
                expected = q.get("answers") or []
                r = retrieve(store, brain, embedder, text, args.top_k)
                for mode in args.modes:
                    if mode == "extractive":
                        checked = extractive_answer(
                            text,
                            r.hits,
                            r.query_vector,
                            encode,
                            max_tokens=args.max_tokens,
                            **({"min_relevance": args.min_relevance} if args.min_relevance else {}),
                        )
                        row = Row(
                            text,
                            answerable,
                            expected,
                            checked.answer,
                            checked.refused,
                            [
                                {"text": cl.text, "cited": True, "evidence": cl.evidence, "score": cl.relevance}
                                for cl in checked.claims
                            ],
                            checked.check_ms,
                        )
                        results.setdefault((set_name, mode), []).append(row)
                        continue
                    grammar = mode == "grammar"
                    key = json.dumps([set_name, text, grammar, args.max_tokens, args.top_k])
                    if key not in cache:
                        if llm is None:
                            llm = LocalLLM(resolve_llm_path(args.llm), n_ctx=4096)
                        started = time.perf_counter()
                        gen = generate_grounded(llm, text, r.hits, max_tokens=args.max_tokens, cite_grammar=grammar)
                        cache[key] = {
                            "key": key,
                            "answer": gen.answer,
                            "kept": len(gen.kept),
                            "seconds": time.perf_counter() - started,
                        }
                        with cache_path.open("a", encoding="utf-8") as handle:
                            handle.write(json.dumps(cache[key], ensure_ascii=False) + "\n")
                        print(
                            f"  [{set_name}/{'grammar' if grammar else 'plain'}] {cache[key]['seconds']:.1f}s {text[:60]}",
                            file=sys.stderr,
                            flush=True,
                        )
                    item = cache[key]
                    kept = r.hits[: item["kept"]]
                    if mode == "before":
                        answer = item["answer"]
                        row = Row(
                            text,
                            answerable,
                            expected,
                            answer,
                            bool(_SELF_REFUSAL.search(answer)),
                            raw_sentences(answer, len(kept)),
                        )
                    else:
                        if args.min_support is None and args.min_relevance is None:
                            checked = checked_answer(
                                item["answer"], kept, text, r.query_vector, encode, max_tokens=args.max_tokens
                            )
                            warm = checked_answer(
                                item["answer"], kept, text, r.query_vector, encode, max_tokens=args.max_tokens
                            )
                            warm_ms.append(warm.check_ms)
                        else:  # a threshold study: the check alone, without the extractive fallback
                            checked = check_answer(
                                item["answer"],
                                kept,
                                r.query_vector,
                                encode,
                                question=text,
                                min_support=args.min_support or 0.8,
                                min_relevance=args.min_relevance or 0.6,
                            )
                        printed = [cl for cl in checked.claims if cl.supported] if not checked.refused else []
                        row = Row(
                            text,
                            answerable,
                            expected,
                            checked.answer,
                            checked.refused,
                            [
                                {
                                    "text": cl.text,
                                    "cited": bool(cl.citations),
                                    "evidence": cl.evidence,
                                    "score": cl.score,
                                    "source_text": kept[cl.source - 1].content if cl.source else None,
                                }
                                for cl in printed
                            ],
                            checked.check_ms,
                        )
                        for cl in checked.claims:
                            dump.append(
                                {
                                    "set": set_name,
                                    "mode": mode,
                                    "question": text,
                                    "answerable": answerable,
                                    "printed": cl.supported and not checked.refused,
                                    "sentence": cl.claim,
                                    "score": round(cl.score, 4),
                                    "relevance": round(cl.relevance, 4),
                                    "facts_missing": cl.facts_missing,
                                    "evidence": cl.evidence,
                                }
                            )
                    results.setdefault((set_name, mode), []).append(row)
    if llm is not None:
        llm.close()
    if args.dump:
        Path(args.dump).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump), encoding="utf-8")
    report(results, args)
    if warm_ms:
        print(
            f"\nanswer check with the sentence cache warm (the same answer checked again): median "
            f"{statistics.median(warm_ms):.1f} ms, p95 {c.percentile(warm_ms, 95):.1f} ms over {len(warm_ms)} answers"
        )


def report(results: dict[tuple[str, str], list[Row]], args: argparse.Namespace) -> None:
    from locallens.claims import MIN_RELEVANCE, MIN_SUPPORT
    from locallens.evaluation.metrics import contains_answer

    print(
        f"\nmin_support {args.min_support or MIN_SUPPORT}, min_relevance {args.min_relevance or MIN_RELEVANCE}, "
        f"top_k {args.top_k}, max_tokens {args.max_tokens}"
        + (" (check alone, no extractive fallback)" if args.min_support or args.min_relevance else "")
    )
    header = f"{'set':<7} {'mode':<10} {'fact acc.':>10} {'false ref.':>10} {'cited':>12} {'refusals':>9} {'sentences':>9} {'check ms':>9}"
    print(header)
    print("-" * len(header))
    for (set_name, mode), rows in results.items():
        answerable = [r for r in rows if r.answerable]
        unanswerable = [r for r in rows if not r.answerable]
        correct = sum(1 for r in answerable if not r.refused and contains_answer(r.printed, r.expected))
        false_refusals = sum(1 for r in answerable if r.refused)
        printed = [s for r in rows if not r.refused for s in r.sentences]
        cited = sum(1 for s in printed if s["cited"])
        refusals = sum(1 for r in unanswerable if r.refused)
        costs = [r.check_ms for r in rows if r.check_ms is not None]
        print(
            f"{set_name:<7} {mode:<10} {correct:>4}/{len(answerable):<5} {false_refusals:>4}/{len(answerable):<5} "
            f"{cited:>5}/{len(printed):<6} {refusals:>3}/{len(unanswerable):<5} {len(printed):>9} "
            f"{(statistics.median(costs) if costs else float('nan')):>9.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="sample,pydoc")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--workdir",
        default=str(ROOT / ".bench-answers"),
        help="indexes and cached generations (default .bench-answers/)",
    )
    parser.add_argument("--llm", default=None, help="GGUF (default: the packaged SmolLM2)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--min-support", type=float, default=None)
    parser.add_argument("--min-relevance", type=float, default=None)
    parser.add_argument("--dump", default=None, help="write every checked sentence as JSONL")
    args = parser.parse_args()
    args.sets = args.sets.split(",")
    args.modes = args.modes.split(",")
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("Answer benchmark", quick=False)
    run(args)
    c.print_end(started)


if __name__ == "__main__":
    main()
