"""Where a Spanish question over English notes loses against the same question asked in English.

Each Spanish development question has the English a person would ask beside it
(benchmarks/data/*_es_gold_en.jsonl, written before any run, with the same files and answers).
Both go through `ask --extractive`'s pipeline (`bench_answers.question_context`, then
`extractive.extractive_answer`), and every answerable question that English states and Spanish
does not is put at the stage where it was lost:

- `retrieval`: the answer is in none of the Spanish question's 5 excerpts (English had it);
- `refusal`: the excerpts hold it, and the Spanish question is refused;
- `unit selection`: the excerpts hold it, another unit is printed. The signals (weight x
  difference) the answering unit lacks under the better of the Spanish question and its
  rendering against the English question (same units, same excerpts) name the cause: `terms`
  lost by the rendering, `cosine` of a poor rendering, `type_*` (the answer type not read from
  the Spanish wording).

Per question: the Spanish question, Apertium's rendering, the person's English, and the answer
type (`unit_scores.answer_type`) of each. Sets: es, es-given, pydoc-es, postfix-es, apache-es,
varnish-es, zsh-es, zsh-es2 (each with its gold English; es-given with the expected note's
chunks first).

    python benchmarks/bench_spanish.py --workdir W [--sets es,pydoc-es] [--save F.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import bench_answers as ba
from _common import states_answer

GOLD = {
    "es": "sample_es_gold_en.jsonl",
    "es-given": "sample_es_gold_en.jsonl",
    "pydoc-es": "pydoc_es_gold_en.jsonl",
    "postfix-es": "postfix_es_gold_en.jsonl",
    "apache-es": "apache_es_gold_en.jsonl",
    "varnish-es": "varnish_es_gold_en.jsonl",
    "zsh-es": "zsh_es_gold_en.jsonl",
    "zsh-es2": "zsh_es2_gold_en.jsonl",
    "borg-es": "borg_es_gold_en.jsonl",
    "stdlib-es": "stdlib_es_gold_en.jsonl",
    "adoc-es": "adoc_es_gold_en.jsonl",
}
STAGES = ("retrieval", "refusal", "unit selection")


def _gold(set_name: str) -> list[dict[str, Any]]:
    path = ba.DATA / GOLD[set_name]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _reading(
    row: dict[str, Any], set_name: str, db: Path, models: Any, english: tuple[str, Any] | None = None
) -> dict[str, Any] | None:
    """One question through `ask --extractive`'s pipeline: stated, refused, the answer held in
    the excerpts, the rendering and the question's vector; with `english` (the English question
    and its vector), the answering unit's `_deficits` when the answer is held and not stated."""
    from locallens.evaluation.metrics import contains_answer
    from locallens.extractive import extractive_answer, weighed_evidence

    with ba.question_context(row, set_name, db, models) as found:
        if found is None:
            return None
        checked = extractive_answer(
            row["question"], found.hits, found.vector, found.encode, term_counts=found.counts, rendering=found.rendering
        )
        evidence, signals = weighed_evidence(row["question"], found.hits, found.scored, found.counts, found.rendering)
        answers = row["answers"]
        out = {
            "question": row["question"],
            "stated": not checked.refused and contains_answer(checked.answer, answers),
            "refused": checked.refused,
            "held": contains_answer("\n".join(h.content for h in found.hits), answers),
            "evidence": round(float(evidence), 3),
            "signals": {k: round(float(v), 3) for k, v in signals.items()},
            "rendering": found.rendering,
            "vector": found.vector,
            "answer": checked.answer,
        }
        if english is not None and out["held"] and not out["stated"]:
            out["deficits"] = _deficits(found, row["question"], english[0], english[1], answers)
        return out


def _deficits(found: Any, es_question: str, en_question: str, en_vector: Any, answers: list[str]) -> list[str]:
    """The signals (weight x difference) that the answering unit of the Spanish question's
    excerpts gets from the English question and not from the better of the Spanish question and
    its rendering; the largest first."""
    import numpy as np

    from locallens.unit_scores import FEATURES, WEIGHTS, features, question_terms

    scored = found.scored
    units = scored.units
    positive = [i for i, u in enumerate(units) if states_answer(u, units, answers)]
    if not positive:
        return ["in no unit"]
    i = max(positive, key=lambda k: float(scored.scores[k]))
    paths = [h.chunk.relative_path for h in found.hits]
    retrieval = [h.score for h in found.hits]
    w = np.array([WEIGHTS[n] for n in FEATURES])
    readings = [(question_terms(es_question, found.counts), scored.vectors @ _unit(found.vector))]
    if found.rendering is not None and found.rendering.vector is not None:
        readings.append(
            (question_terms(found.rendering.text, found.counts), scored.vectors @ _unit(found.rendering.vector))
        )
    rows = [features(t, units, cos, paths, retrieval)[i] for t, cos in readings]
    best = max(rows, key=lambda r: float(r @ w))
    en = features(
        question_terms(en_question, found.counts), units, scored.vectors @ _unit(en_vector), paths, retrieval
    )[i]
    gap = w * (en - best)
    order = np.argsort(-gap)
    return [f"{FEATURES[k]} {gap[k]:+.2f}" for k in order[:3] if gap[k] > 0.05] or ["none"]


def _unit(vector: Any) -> Any:
    import numpy as np

    v = np.asarray(vector, dtype=np.float64).reshape(-1)
    return v / (np.linalg.norm(v) or 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(GOLD))
    parser.add_argument("--workdir", default=str(ba.ROOT / ".bench-answers"))
    parser.add_argument("--save", default=None, help="write one JSON row per question")
    parser.add_argument("--quiet", action="store_true", help="the tally only")
    args = parser.parse_args()
    from locallens.models import WarmModels
    from locallens.unit_scores import answer_type

    models = WarmModels()
    out: list[dict[str, Any]] = []
    tally: dict[str, dict[str, int]] = {}
    for set_name in args.sets.split(","):
        spanish = ba.load_set(set_name)
        gold = _gold(set_name)
        assert [g["question_es"] for g in gold] == [r["question"] for r in spanish], set_name
        db = ba.build_index(ba.SETS[set_name][0], Path(args.workdir))
        counts = tally.setdefault(set_name, dict.fromkeys(("asked", "es", "en", "es only", *STAGES), 0))
        for es_row, en_row in zip(spanish, gold, strict=True):
            if not es_row.get("answerable", True) or not es_row.get("answers"):
                continue
            if set_name == "es-given" and not es_row.get("files"):
                continue
            en = _reading({**es_row, "question": en_row["question"]}, set_name, db, models)
            english = (en_row["question"], en["vector"]) if en is not None else None
            es = _reading(es_row, set_name, db, models, english)
            if es is None or en is None:
                continue
            rendering = es["rendering"]
            counts["asked"] += 1
            counts["es"] += es["stated"]
            counts["en"] += en["stated"]
            stage = None
            if es["stated"] and not en["stated"]:
                counts["es only"] += 1
            if en["stated"] and not es["stated"]:
                stage = "retrieval" if not es["held"] else "refusal" if es["refused"] else "unit selection"
                counts[stage] += 1
            row = {
                "set": set_name,
                "es": es_row["question"],
                "rendering": rendering.text if rendering else None,
                "via": rendering.via if rendering else None,
                "en": en_row["question"],
                "wants": [
                    answer_type(es_row["question"]),
                    answer_type(rendering.text) if rendering else None,
                    answer_type(en_row["question"]),
                ],
                "es_stated": es["stated"],
                "en_stated": en["stated"],
                "es_refused": es["refused"],
                "en_refused": en["refused"],
                "es_held": es["held"],
                "en_held": en["held"],
                "stage": stage,
                "es_evidence": es["evidence"],
                "en_evidence": en["evidence"],
            }
            if "deficits" in es:
                row["deficits"] = es["deficits"]
            if stage == "refusal":
                row["es_signals"], row["en_signals"] = es["signals"], en["signals"]
            out.append(row)
            if not args.quiet and (stage or not es["stated"]):
                print(
                    f"[{set_name}] {stage or ('both lose' if not en['stated'] else '')}: {row['es']}\n"
                    f"    rendering ({row['via']}): {row['rendering']}\n    English: {row['en']}\n"
                    f"    wants es/rendering/en: {row['wants']}  held es/en: {es['held']}/{en['held']}"
                    f"  refused es/en: {es['refused']}/{en['refused']}  evidence es/en: {es['evidence']}/{en['evidence']}"
                    + (f"\n    answering unit lacks: {', '.join(row['deficits'])}" if "deficits" in row else ""),
                    file=sys.stderr,
                )
    models.close()
    print("\nSpanish against the same question in English (answerable): stated, and where Spanish lost")
    head = ("asked", "es", "en", "es only", *STAGES)
    print(f"  {'set':<12}" + "".join(f"{h:>16}" for h in head))
    total = dict.fromkeys(head, 0)
    for set_name, counts in tally.items():
        print(f"  {set_name:<12}" + "".join(f"{counts[h]:>16}" for h in head))
        for h in head:
            total[h] += counts[h]
    print(f"  {'all':<12}" + "".join(f"{total[h]:>16}" for h in head))
    if args.save:
        Path(args.save).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")


if __name__ == "__main__":
    main()
