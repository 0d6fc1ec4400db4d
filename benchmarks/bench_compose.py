"""How the default `ask` composes the model's checked answer with the excerpts' passage, measured.

Every question of the sets (`bench_answers.SETS`) is asked in the default mode exactly as `ask`
runs it (generations cached by prompt in `--workdir`, as bench_answers does), and also with
`--extractive`. The model's answer, its check and the passage are then composed each way of
`COMPOSITIONS` (`generation.compose`'s `model_alone` and `add`), from the very same generation,
so the figures differ only by the composition:

- before: the model's answer when one of its backed, relevant sentences rests on a unit of the
  passage, else the passage (the rule before `compose`);
- passage: always the passage (what `--extractive` prints from the same excerpts);
- covers: the model's answer only when it also states the passage's key facts, else the passage;
- add / add-same: the passage, then the model's backed sentences that add to it (from any
  excerpt / only from excerpts the passage cites);
- covers+add, covers+add-same: covers, else add / add-same (the shipped one: covers+add-same);
- facts+add-same: as covers+add-same, the model's answer needing only the literal facts (none of
  the rare words, `cover_share` 0).

Per set and composition: answerable questions whose printed answer states an expected answer
(`bench_answers.stated`), false refusals, unanswerable refused, median words, the questions whose
printed answer differs from the passage, and the median time of the check stage (check + passage
+ composition, `timings.check_ms`). `--save FILE` writes every question's answers as JSONL.
`--capable`: a capable model simulated by the labelled check set (`capable`), no LLM.

    python benchmarks/bench_compose.py --sets sample,broad,es,pydoc,stdlib,borg --workdir DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import _common as c
import bench_answers as b

# name -> (model_alone, add, cover_share), `generation.compose`'s options.
COMPOSITIONS: dict[str, tuple[str, str, float]] = {
    "before": ("agrees", "none", 0.5),
    "passage": ("never", "none", 0.5),
    "covers": ("covers", "none", 0.5),
    "add": ("never", "any", 0.5),
    "add-same": ("never", "same", 0.5),
    "covers+add": ("covers", "any", 0.5),
    "covers+add-same": ("covers", "same", 0.5),
    "facts+add-same": ("covers", "same", 0.0),
}


def composed_all(record: dict[str, Any]) -> Any:
    """A stand-in for `generation.checked_answer` that also composes every way of COMPOSITIONS
    (into `record`) and returns what `checked_answer` does."""
    from dataclasses import replace

    import locallens.generation as g
    from locallens.claims import check_answer, refusal
    from locallens.extractive import extractive_answer

    shipped = g.checked_answer

    def checked_answer(model_answer, kept, question, question_vector, encode, **kw):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        out = shipped(model_answer, kept, question, question_vector, encode, **kw)
        record["check_ms"] = (time.perf_counter() - started) * 1000
        checked = check_answer(
            model_answer,
            kept,
            question_vector,
            encode,
            show_unsupported=kw.get("show_unsupported", False),
            question=question,
        )
        passage = extractive_answer(
            question,
            kw.get("passage_from") or kept,
            question_vector,
            encode,
            max_tokens=kw["max_tokens"],
            term_counts=kw.get("term_counts"),
            rendering=kw.get("rendering"),
        )
        for name, (alone, add, share) in COMPOSITIONS.items():
            if passage.unanswered and not checked.refused:
                composed = replace(checked, answer=refusal(question), refused=True)
            elif passage.refused:
                composed = checked
            else:
                composed = g.compose(
                    checked,
                    passage,
                    question,
                    term_counts=kw.get("term_counts"),
                    model_alone=alone,  # type: ignore[arg-type]
                    add=add,  # type: ignore[arg-type]
                    cover_share=share,
                )
            record.setdefault("composed", {})[name] = composed
        return out

    return checked_answer


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    import locallens.generation as g
    from locallens.answer import ask
    from locallens.errors import NothingFoundError

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    models = b.cached_models(workdir)
    record: dict[str, Any] = {}
    g.checked_answer = composed_all(record)  # GenerateMode calls it by this name
    out = []
    save = Path(args.save) if args.save else None  # written as it goes
    if save is not None:
        save.write_text("", encoding="utf-8")
    try:
        for set_name in args.sets:
            db = b.build_index(b.SETS[set_name][0], workdir)
            for row in b.load_set(set_name):
                record.clear()
                answerable = row.get("answerable", True)
                try:
                    data = ask(b.request_for(row["question"], db, "default"), models).as_json()
                except NothingFoundError:
                    data = None
                try:
                    extractive = ask(b.request_for(row["question"], db, "extractive"), models).as_json()
                except NothingFoundError:
                    extractive = None
                item: dict[str, Any] = {
                    "set": set_name,
                    "question": row["question"],
                    "answerable": answerable,
                    "default": {"answer": (data or {}).get("answer"), "stated": bool(b.stated(row, data, set_name))},
                    "extractive": {
                        "answer": (extractive or {}).get("answer"),
                        "stated": bool(answerable and b.stated(row, extractive, set_name)),
                        "refused": extractive is None or bool(extractive.get("refused")),
                    },
                    "check_ms": record.get("check_ms"),
                    "composed": {},
                }
                for name, composed in record.get("composed", {}).items():
                    as_data = dict(data or {}, answer=composed.answer, refused=composed.refused)
                    as_data["citations"] = composed.citations
                    item["composed"][name] = {
                        "answer": composed.answer,
                        "refused": composed.refused,
                        "stated": bool(answerable and b.stated(row, as_data, set_name)),
                        "words": None if composed.refused else len(composed.answer.split()),
                    }
                out.append(item)
                if save is not None:
                    with save.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(item, ensure_ascii=False) + "\n")
                if args.verbose:
                    flags = " ".join(f"{n}={int(v['stated'])}" for n, v in item["composed"].items())
                    print(f"  [{set_name}] {flags} {row['question'][:60]}", file=sys.stderr)
    finally:
        models.close()
    return out


def report(items: list[dict[str, Any]]) -> None:
    sets = list(dict.fromkeys(i["set"] for i in items))
    header = (
        f"{'set':<8} {'composition':<16} {'stated':>8} {'false ref.':>10} {'unans. ref.':>11} "
        f"{'words p50':>9} {'not the passage':>15} {'check ms p50':>12}"
    )
    print(header)
    print("-" * len(header))
    for set_name in [*sets, "all"]:
        rows = [i for i in items if set_name == "all" or i["set"] == set_name]
        answerable = [i for i in rows if i["answerable"]]
        unanswerable = [i for i in rows if not i["answerable"]]
        check_ms = [i["check_ms"] for i in rows if i["check_ms"] is not None]
        ms = f"{statistics.median(check_ms):>12.1f}" if check_ms else f"{'':>12}"
        print(
            f"{set_name:<8} {'--extractive':<16} {sum(i['extractive']['stated'] for i in answerable):>3}/{len(answerable):<4} "
            f"{sum(i['extractive']['refused'] for i in answerable):>10} "
            f"{sum(i['extractive']['refused'] for i in unanswerable):>5}/{len(unanswerable):<5}"
        )
        for name in COMPOSITIONS:
            got = [i for i in rows if name in i["composed"]]
            words = [i["composed"][name]["words"] for i in got if i["composed"][name]["words"] is not None]
            differs = sum(1 for i in got if i["composed"][name]["answer"] != i["composed"]["passage"]["answer"])
            print(
                f"{'':<8} {name:<16} {sum(i['composed'][name]['stated'] for i in got if i['answerable']):>3}/{len(answerable):<4} "
                f"{sum(i['composed'][name]['refused'] for i in got if i['answerable']):>10} "
                f"{sum(i['composed'][name]['refused'] for i in got if not i['answerable']):>5}/{len(unanswerable):<5} "
                f"{(statistics.median(words) if words else 0):>9.0f} {differs:>15} {ms if name == 'covers+add-same' else ''}"
            )


def capable() -> None:
    """A capable model, simulated: each question of benchmarks/data/check_labelled.jsonl answered
    with all of its correct sentences (paraphrases, close copies, summaries, sentences combining
    two excerpts, as a good model writes them), checked and composed each way with the passage of
    its excerpts. Per composition: how often the model's answer is printed, the passage followed
    by model sentences, the passage alone, and how many of the model's sentences are printed."""
    import bench_check as bc

    from locallens.claims import check_answer
    from locallens.domain import Chunk, Hit
    from locallens.embedding import load_embedder
    from locallens.extractive import extractive_answer
    from locallens.generation import compose
    from locallens.retrieval import SentenceEncoder

    records = bc.read_jsonl(bc.DATA / "check_labelled.jsonl")
    excerpts = {r["id"]: r["text"] for r in bc.read_jsonl(bc.EXCERPTS)}
    embedder = load_embedder(None)
    encode = bc.memo_encoder(SentenceEncoder(embedder, None))
    by_question: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_question.setdefault(record["question"], []).append(record)
    counts = {name: {"model": 0, "added": 0, "passage": 0, "printed": 0} for name in COMPOSITIONS}
    words: dict[str, list[int]] = {name: [] for name in COMPOSITIONS}
    kept = answered = 0
    for question, rows in by_question.items():
        hits = []
        for ref in rows[0]["excerpts"]:
            path, _, chunk = ref.split(":", 1)[1].rpartition("#")
            hits.append(Hit(Chunk(ref, "default", path, int(chunk), excerpts[ref], "x" * 64), 0.5))
        vector = embedder.encode_query(question)
        model = "\n".join(r["sentence"] for r in rows if r["label"] == "supported")
        checked = check_answer(model, hits, vector, encode, question=question)
        kept += sum(claim.supported for claim in checked.claims)
        passage = extractive_answer(question, hits, vector, encode)
        if passage.refused:
            continue
        answered += 1
        for name, (alone, add, share) in COMPOSITIONS.items():
            composed = compose(checked, passage, question, model_alone=alone, add=add, cover_share=share)  # type: ignore[arg-type]
            printed = sum(1 for claim in composed.claims if claim.supported and not claim.extracted)
            kind = "model" if not composed.fallback else "added" if printed else "passage"
            counts[name][kind] += 1
            counts[name]["printed"] += printed
            words[name].append(len(composed.answer.split()))
    correct = sum(r["label"] == "supported" for r in records)
    print(
        f"{len(by_question)} questions ({answered} with a passage), {correct} correct sentences, {kept} kept by the check"
    )
    print(
        f"{'composition':<16} {'model':>6} {'passage+model':>13} {'passage':>8} {'model sentences printed':>23} {'words p50':>9}"
    )
    for name, n in counts.items():
        print(
            f"{name:<16} {n['model']:>6} {n['added']:>13} {n['passage']:>8} {n['printed']:>23} "
            f"{statistics.median(words[name]):>9.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="sample,broad,es,pydoc,stdlib,borg")
    parser.add_argument("--workdir", default=str(b.ROOT / ".bench-answers"), help="indexes and cached generations")
    parser.add_argument("--save", default=None, help="write every question's answers as JSONL")
    parser.add_argument(
        "--report", default=None, help="only print the report of a --save file (or several, comma-separated)"
    )
    parser.add_argument("--capable", action="store_true", help="a capable model simulated by the labelled check set")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    args.sets = args.sets.split(",")
    if args.report:
        report([json.loads(line) for path in args.report.split(",") for line in Path(path).read_text().splitlines()])
        return
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("Composing the default answer", quick=False)
    if args.capable:
        capable()
    else:
        report(run(args))
    c.print_end(started)


if __name__ == "__main__":
    main()
