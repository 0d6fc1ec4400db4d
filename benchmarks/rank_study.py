"""Learning to rank the answer units, measured offline from a `bench_answers.py --diagnose --cache`
pickle (`bench_answers.py --replay F.pkl --rank-study`).

For every cached question whose excerpts hold an expected answer in some unit that the scoring
kept (read with what belongs to it, `extractive._passage`), those units are its positives. The
study prints recall@1/@2/@3 (a positive among the k best distinct texts) of the shipped score, and
of weights fitted leave-one-corpus-out (fitted on the other corpora, measured on the one left
out), on the shipped signals alone and joined or replaced by candidates:

- relative retrieval evidence: the excerpt's retrieval score's gap to the first (`gap`), the
  first excerpt as a flag (`first`);
- per-question and per-excerpt normalisation: a unit's cosine, terms or salient terms minus the
  question's best (`cos_rel`, `terms_rel`, `sal_rel`), minus its excerpt's best (`cos_exrel`,
  `sal_exrel`); its excerpt's best against the question's best (`ex_cos`, `ex_sal`);
- interactions: terms x type match, salient terms x type match, cosine x rank;
- the unit holds a specific token the question does not (an identifier, a number, a quoted
  literal: `new_specific`, and x terms), its length (`length`), its place in its excerpt
  (`early`).

Two fits: listwise (a conditional logit: a softmax over each question's units, the probability of
its positives maximised) and pairwise (a logistic regression on positive-minus-negative feature
differences, no bias), both L2-penalised, numpy only. `passage_grid` chooses the passage's
constants (`MAX_ANSWERING`, `MARGIN`, `OTHER_MARGIN`) the same way: per corpus left out, the
combination that states the most on the others, measured on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import states_answer

from locallens.broad import is_broad
from locallens.evaluation.metrics import contains_answer
from locallens.extractive import _printed, _text_key, count_tokens, passage_units
from locallens.unit_scores import _IDENT, FEATURES, WEIGHTS, key_terms

# A specific token: a quoted literal, a number, an identifier (`unit_scores._IDENT`).
_SPECIFIC = re.compile(r"`[^`\n]+`|\"[^\"\n]{1,40}\"|\b\d[\d.,:]*\b|" + _IDENT.pattern)

EXTRA: tuple[str, ...] = (
    "gap",
    "first",
    "cos_rel",
    "terms_rel",
    "sal_rel",
    "cos_exrel",
    "sal_exrel",
    "ex_cos",
    "ex_sal",
    "terms_x_type",
    "sal_x_type",
    "cos_x_rank",
    "new_specific",
    "spec_x_terms",
    "length",
    "early",
)
COLUMNS: tuple[str, ...] = (*FEATURES, *EXTRA)

_NO_RANK = [f for f in FEATURES if f != "rank"]
VARIANTS: dict[str, list[str]] = {
    "shipped signals": list(FEATURES),
    "without rank": _NO_RANK,
    "without rank, retrieval_share": [f for f in _NO_RANK if f != "retrieval_share"],
    "rank -> gap + first": [*_NO_RANK, "gap", "first"],
    "+ gap": [*FEATURES, "gap"],
    "+ per-question relative": [*FEATURES, "cos_rel", "terms_rel", "sal_rel"],
    "+ per-excerpt relative": [*FEATURES, "cos_exrel", "sal_exrel", "ex_cos", "ex_sal"],
    "rank -> excerpt evidence": [*_NO_RANK, "ex_cos", "ex_sal", "gap"],
    "+ interactions": [*FEATURES, "terms_x_type", "sal_x_type", "cos_x_rank"],
    "+ specific token, length, place": [*FEATURES, "new_specific", "spec_x_terms", "length", "early"],
    "every candidate": list(COLUMNS),
}


@dataclass
class RankCase:
    corpus: str
    rows: list[np.ndarray]  # one row of `COLUMNS` per unit, per reading (the question, its rendering)
    ok: np.ndarray  # units the scoring kept (not zeroed)
    y: np.ndarray  # kept units that state an expected answer
    keys: list[str]  # each unit's printed text, compared (overlapping chunks repeat units)


def extra_columns(x: np.ndarray, case: dict[str, Any], terms: Any) -> np.ndarray:
    """The `EXTRA` columns of one reading's feature rows `x` (columns `FEATURES`)."""
    col = {name: x[:, k] for k, name in enumerate(FEATURES)}
    units = case["units"]
    ok = ~np.asarray(case["zeroed"])
    excerpt = np.array([u.excerpt for u in units])

    def best(v: np.ndarray) -> float:
        return float(v[ok].max()) if ok.any() else 0.0

    def excerpt_best(v: np.ndarray) -> np.ndarray:
        out = np.zeros_like(v)
        for e in set(excerpt.tolist()):
            mask = (excerpt == e) & ok
            out[excerpt == e] = v[mask].max() if mask.any() else 0.0
        return out

    retrieval = case["retrieval"]
    top = retrieval[0] if retrieval else 0.0
    cos, terms_, sal, typed = col["cosine"], col["terms"], col["salient_terms"], col["type_match"]
    question = terms.terms if terms is not None else frozenset()
    specific = np.array(
        [float(any(key_terms(t) - question for t in _SPECIFIC.findall(f"{u.text} {u.term}"))) for u in units]
    )
    values = {
        "gap": np.array([top - retrieval[e - 1] if retrieval else 0.0 for e in excerpt]),
        "first": (excerpt == 1).astype(float),
        "cos_rel": cos - best(cos),
        "terms_rel": terms_ - best(terms_),
        "sal_rel": sal - best(sal),
        "cos_exrel": cos - excerpt_best(cos),
        "sal_exrel": sal - excerpt_best(sal),
        "ex_cos": excerpt_best(cos) - best(cos),
        "ex_sal": excerpt_best(sal) - best(sal),
        "terms_x_type": terms_ * typed,
        "sal_x_type": sal * typed,
        "cos_x_rank": cos * col["rank"],
        "new_specific": specific,
        "spec_x_terms": specific * terms_,
        "length": np.array([min(1.0, np.log1p(count_tokens(u.text)) / np.log(80)) for u in units]),
        "early": np.array([1.0 / (1 + u.index) for u in units]),
    }
    return np.column_stack([values[name] for name in EXTRA]) if len(units) else np.zeros((0, len(EXTRA)))


def rank_cases(cases: list[dict[str, Any]], corpus_of: dict[str, str]) -> list[RankCase]:
    """The cached questions as ranking cases (every one, positives or not)."""
    out = []
    for case in cases:
        units = case["units"]
        if not units:
            continue
        ok = ~np.asarray(case["zeroed"])
        y = np.array([states_answer(u, units, case["answers"]) for u in units])
        rows = []
        for x, terms in zip(case["x"], case["terms"]):
            x = np.pad(x, ((0, 0), (0, len(FEATURES) - x.shape[1])))
            rows.append(np.hstack([x, extra_columns(x, case, terms)]))
        keys = [_text_key(u) for u in units]
        out.append(RankCase(corpus_of[case["set"]], rows, ok, y & ok, keys))
    return out


def _scores(case: RankCase, w: np.ndarray, cols: list[int]) -> np.ndarray:
    """The better of the readings' linear scores; a unit the scoring left out below every other."""
    s = np.max([r[:, cols] @ w for r in case.rows], axis=0)
    return np.where(case.ok, s, -np.inf)


def recall_at(cases: list[RankCase], w: np.ndarray, cols: list[int], ks: tuple[int, ...] = (1, 2, 3)) -> np.ndarray:
    """Per k of `ks`, how many questions (of those with a positive) have one among the k best
    distinct texts."""
    hits = np.zeros(len(ks))
    for case in cases:
        if not case.y.any():
            continue
        s = _scores(case, w, cols)
        positives = {case.keys[i] for i in np.flatnonzero(case.y)}
        seen: list[str] = []
        for i in np.argsort(-s, kind="stable"):
            if not case.ok[i] or len(seen) >= max(ks):
                break
            if case.keys[i] not in seen:
                seen.append(case.keys[i])
        hits += [bool(positives & set(seen[:k])) for k in ks]
    return hits


def fit_listwise(cases: list[RankCase], cols: list[int], l2: float = 0.02, steps: int = 600) -> np.ndarray:
    """A conditional logit: the probability of each question's positives under a softmax over its
    kept units (the question's reading), maximised by gradient descent with momentum."""
    use = [c for c in cases if c.y.any()]
    x = np.vstack([c.rows[0][c.ok][:, cols] for c in use])
    y = np.concatenate([c.y[c.ok] for c in use]).astype(float)
    sizes = [int(c.ok.sum()) for c in use]
    starts = np.cumsum([0, *sizes[:-1]])
    segment = np.repeat(np.arange(len(use)), sizes)
    w = np.zeros(len(cols))
    velocity = np.zeros_like(w)
    for _ in range(steps):
        s = x @ w
        s = s - np.maximum.reduceat(s, starts)[segment]
        e = np.exp(s)
        p = e / np.add.reduceat(e, starts)[segment]
        ey = e * y
        r = ey / np.add.reduceat(ey, starts)[segment]
        grad = x.T @ (p - r) / len(use) + l2 * w
        velocity = 0.9 * velocity - 0.5 * grad
        w = w + velocity
    return w


def fit_pairwise(cases: list[RankCase], cols: list[int], l2: float = 1.0, iterations: int = 30) -> np.ndarray:
    """A logistic regression on (positive - negative) feature differences within each question
    (the question's reading), each question weighing the same, no bias; Newton's method."""
    diffs, weights = [], []
    for case in cases:
        r = case.rows[0][:, cols]
        pos = np.flatnonzero(case.y)
        neg = np.flatnonzero(case.ok & ~case.y)
        if not len(pos) or not len(neg):
            continue
        d = (r[pos][:, None, :] - r[neg][None, :, :]).reshape(-1, len(cols))
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / len(d)))
    x = np.vstack(diffs)
    sw = np.concatenate(weights)
    w = np.zeros(len(cols))
    for _ in range(iterations):
        # A difference is labelled 1; its mirror (-d, 0) gives the same terms, so one side suffices.
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (sw * (p - 1.0)) + l2 * w
        hess = (x * (sw * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(cols))
        w -= np.linalg.solve(hess, grad)
    return w


def loco(cases: list[RankCase], cols: list[int], fit: Any) -> tuple[np.ndarray, dict[str, int]]:
    """recall@1/2/3 summed over the corpora, each measured with weights fitted without it; and
    recall@1 per corpus."""
    total = np.zeros(3)
    per: dict[str, int] = {}
    for corpus in dict.fromkeys(c.corpus for c in cases):
        w = fit([c for c in cases if c.corpus != corpus], cols)
        hits = recall_at([c for c in cases if c.corpus == corpus], w, cols)
        total += hits
        per[corpus] = int(hits[0])
    return total, per


def study(cases: list[dict[str, Any]], corpus_of: dict[str, str]) -> None:
    """Print recall@1/2/3 of the shipped score and of every variant and fit, left out by corpus."""
    ranked = rank_cases(cases, corpus_of)
    n = sum(1 for c in ranked if c.y.any())
    corpora = list(dict.fromkeys(c.corpus for c in ranked))
    index = {name: k for k, name in enumerate(COLUMNS)}
    shipped_cols = [index[f] for f in FEATURES]
    shipped = np.array([WEIGHTS[f] for f in FEATURES])
    print(f"\nranking the units: {n} questions with a unit that states the answer (of {len(ranked)})")
    print("  cells: recall@1 / @2 / @3 over all corpora, each left out of its fit; then recall@1 per corpus")
    hits = recall_at(ranked, shipped, shipped_cols)
    per = {k: int(recall_at([c for c in ranked if c.corpus == k], shipped, shipped_cols)[0]) for k in corpora}
    print(f"  {'shipped weights':<34} {'':<9}" + _cells(hits, per, n))
    for name, columns in VARIANTS.items():
        cols = [index[f] for f in columns]
        for label, fit in (("listwise", fit_listwise), ("pairwise", fit_pairwise)):
            total, per = loco(ranked, cols, fit)
            print(f"  {name:<34} {label:<9}" + _cells(total, per, n), flush=True)


def _cells(hits: np.ndarray, per: dict[str, int], n: int) -> str:
    return (
        " / ".join(f"{int(h):>3}" for h in hits)
        + f"  ({hits[0] / n:.3f})   "
        + " ".join(f"{k} {v}" for k, v in per.items())
    )


PASSAGE_GRID = {
    "max_answering": (2, 3),
    "margin": (0.1, 0.15, 0.2),
    "other_margin": (0.3, 0.4, 0.5),
}
SHIPPED_PASSAGE = (2, 0.15, 0.3)


def passage_stated(case: dict[str, Any], scored: Any, **rules: Any) -> tuple[bool, int | None]:
    """Whether a cached question's printed answer states the expected one with the passage rules
    `rules` (`passage_units`' keywords); the printed words (None: a refusal or summary's live
    outcome kept)."""
    if case["refused"] or case["summary"]:
        return not case["refused"] and contains_answer(case["answer"], case["answers"]), None
    chosen = passage_units(scored, other_excerpts=not is_broad(case["question"]), **rules)
    text = "\n".join(_printed(u) for u, _ in chosen)
    return contains_answer(text, case["answers"]), len(text.split())


def first_positive_stated(cases: list[dict[str, Any]], corpus_of: dict[str, str], scored: list[Any]) -> None:
    """Stated per corpus as replayed, and with each question's best-scored unit that states the
    answer moved to the top (the passage rules as shipped): what a perfect ranking would print."""
    from locallens.extractive import Scored

    corpora = list(dict.fromkeys(corpus_of[c["set"]] for c in cases))
    as_is = dict.fromkeys(corpora, 0)
    first = dict.fromkeys(corpora, 0)
    for case, sc in zip(cases, scored):
        corpus = corpus_of[case["set"]]
        as_is[corpus] += passage_stated(case, sc)[0]
        scores = sc.scores.copy()
        units = case["units"]
        if not (case["refused"] or case["summary"]) and units:
            states = [i for i, u in enumerate(units) if scores[i] > 0 and states_answer(u, units, case["answers"])]
            if states:
                best = max(states, key=lambda i: scores[i])
                scores[best] = scores.max() + 0.01
        first[corpus] += passage_stated(case, Scored(units, scores, sc.cosines, sc.vectors))[0]
    print("\nstated as ranked, and with the best unit that states the answer ranked first:")
    print("  as ranked       " + " ".join(f"{k} {v}" for k, v in as_is.items()) + f"  all {sum(as_is.values())}")
    print("  positive first  " + " ".join(f"{k} {v}" for k, v in first.items()) + f"  all {sum(first.values())}")


def passage_grid(cases: list[dict[str, Any]], corpus_of: dict[str, str], scored: list[Any]) -> None:
    """Stated per corpus for every combination of `PASSAGE_GRID`, and per corpus left out the
    combination that states the most on the others (ties: the shipped one, then the first)."""
    import itertools
    import statistics

    corpora = list(dict.fromkeys(corpus_of[c["set"]] for c in cases))
    sets = list(dict.fromkeys(c["set"] for c in cases))
    grid = list(itertools.product(*PASSAGE_GRID.values()))
    table: dict[tuple[Any, ...], dict[str, int]] = {}
    print("\nthe passage's rules (MAX_ANSWERING, MARGIN, OTHER_MARGIN): stated per corpus, median words' worst set")
    for combo in grid:
        rules = dict(zip(PASSAGE_GRID, combo))
        per = dict.fromkeys(corpora, 0)
        words: dict[str, list[int]] = {s: [] for s in sets}
        for case, sc in zip(cases, scored):
            ok, n_words = passage_stated(case, sc, **rules)
            per[corpus_of[case["set"]]] += ok
            if n_words is not None:
                words[case["set"]].append(n_words)
        table[combo] = per
        worst = max(statistics.median(w) for w in words.values() if w)
        print(
            f"  {combo!s:<16} "
            + " ".join(f"{k} {v}" for k, v in per.items())
            + f"  all {sum(per.values())}  words {worst:.0f}"
        )
    before = after = 0
    for left in corpora:
        chosen = max(grid, key=lambda g: (sum(v for k, v in table[g].items() if k != left), g == SHIPPED_PASSAGE))
        print(f"  {left} left out: {chosen} states {table[chosen][left]} (shipped {table[SHIPPED_PASSAGE][left]})")
        before += table[SHIPPED_PASSAGE][left]
        after += table[chosen][left]
    print(f"  each corpus left out: {before} -> {after}")
