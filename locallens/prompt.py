"""The grounded prompt (docs/behaviour.md#the-grounded-prompt), the citations in an answer, and fitting excerpts into a context.

Every question is its own round of evidence: `build_grounded_history` returns exactly two messages
(system rules, then the numbered excerpts and the question) and never carries earlier turns. The
model's `[N]` markers point back into the numbered excerpts; `parse_citations` reads them back and
sorts them into the ones that name a real excerpt and the ones that point at nothing, because a
135M-parameter model will sometimes invent `[7]` when it was shown three excerpts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from locallens.domain import ChatMessage, Hit
from locallens.errors import UsageError

# The five rules, joined by single spaces into one system message (docs/behaviour.md#the-grounded-prompt).
_SYSTEM_LINES: tuple[str, ...] = (
    "You are LocalLens, a local-first file chat assistant that answers questions strictly from "
    "the provided source excerpts.",
    "Rules:",
    "1. Only use facts that appear in the excerpts. If the answer is not in them, say so plainly.",
    "2. Refer to source excerpts inline using bracketed numbers, for example [1] or [2], when you use them.",
    "3. Answer in the same language as the user's question.",
    "4. Keep answers focused and concrete. No filler.",
    "5. Do not include hidden reasoning, chain-of-thought, or thinking tags.",
)
SYSTEM_PROMPT: str = " ".join(_SYSTEM_LINES)

NO_HITS_CONTEXT = "No matching chunks were found."
EXCERPT_SEPARATOR = "\n\n---\n\n"


def format_hit(number: int, hit: Hit) -> str:
    """One excerpt: `[N] {relative_path}#chunk-{chunk_index}\\n{content}`."""
    return f"[{number}] {hit.chunk.relative_path}#chunk-{hit.chunk.chunk_index}\n{hit.content}"


def format_hits(hits: Sequence[Hit]) -> str:
    """All excerpts, numbered from 1, joined by `\\n\\n---\\n\\n` ("" for no hits)."""
    return EXCERPT_SEPARATOR.join(format_hit(i, hit) for i, hit in enumerate(hits, start=1))


def _user_message(question: str, context: str) -> ChatMessage:
    return ChatMessage("user", f"Source excerpts:\n\n{context}\n\nQuestion:\n{question}")


def build_grounded_history(question: str, hits: Sequence[Hit]) -> list[ChatMessage]:
    """Exactly two messages, system then user; no earlier turns ever."""
    context = format_hits(hits) or NO_HITS_CONTEXT
    return [ChatMessage("system", SYSTEM_PROMPT), _user_message(question, context)]


# --------------------------------------------------------------------------------------------
# Citations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Citations:
    """The `[N]` markers of an answer. Both lists hold 1-based numbers in order of first appearance."""

    cited: list[int]  # numbers that name an excerpt (1..n_excerpts)
    invalid: list[int]  # numbers that point to no excerpt (0, or above n_excerpts)


# One bracket group: numbers or ranges separated by commas, e.g. [1], [1, 2], [1-3], [2–4, 6].
# Hyphen, en dash and em dash all make a range (models and typographers use all three).
# `(?!\()` rejects a markdown link `[1](https://...)`: its text is a label, not a citation.
# `(?<![^\W\d])(?<!-)` rejects a group glued to a word (a letter, `_` or `-` right before the
# bracket): `git-log[1]` and `printf[3]` are manual-page references, not citations. A digit or
# punctuation before it is fine (`port 5433[1]`, `done.[2]`).
# Anything else inside the brackets (`[a]`, `[see 1]`, `[1.2]`) makes the group no citation at all.
_NUMBER_OR_RANGE = r"\d+(?:\s*[-\u2013\u2014]\s*\d+)?"
CITATION_RE = re.compile(rf"(?<![^\W\d])(?<!-)\[\s*({_NUMBER_OR_RANGE}(?:\s*,\s*{_NUMBER_OR_RANGE})*)\s*\](?!\()")
_RANGE_SPLIT_RE = re.compile(r"\s*[-\u2013\u2014]\s*")
# A "range" wider than this is not a citation but something like a year span `[1990-2020]`;
# refusing it also keeps a hostile `[1-999999999]` from expanding into a billion numbers.
MAX_RANGE_SPAN = 100


def _expand(item: str) -> list[int]:
    parts = _RANGE_SPLIT_RE.split(item.strip())
    if len(parts) == 1:
        return [int(parts[0])]
    low, high = int(parts[0]), int(parts[1])
    if low > high:  # `[3-1]`: a reversed range still names the same excerpts
        low, high = high, low
    if high - low > MAX_RANGE_SPAN:
        return []
    return list(range(low, high + 1))


def parse_citations(answer: str, n_excerpts: int) -> Citations:
    """Find the `[N]`-style markers of `answer` and check them against `n_excerpts` excerpts.

    Accepted: `[1]`, `[1][2]`, `[1, 2]`, `[1,2,3]`, `[1-3]`, `[1–3]`. Ignored: `[a]`, markdown
    links `[text](url)` (numeric text included), ranges wider than `MAX_RANGE_SPAN`, and a group
    glued to a word (`git-log[1]`, a manual-page reference).
    `[0]` and numbers above `n_excerpts` are reported as invalid.
    """
    cited: list[int] = []
    invalid: list[int] = []
    seen: set[int] = set()
    for match in CITATION_RE.finditer(answer):
        for number in citation_numbers(match):
            if number in seen:
                continue
            seen.add(number)
            (cited if 1 <= number <= n_excerpts else invalid).append(number)
    return Citations(cited=cited, invalid=invalid)


def citation_numbers(match: re.Match[str]) -> list[int]:
    """The excerpt numbers one `CITATION_RE` match names, ranges expanded, in written order."""
    return [number for item in match.group(1).split(",") for number in _expand(item)]


# --------------------------------------------------------------------------------------------
# Fitting the excerpts into the model's context
# --------------------------------------------------------------------------------------------

TokenCounter = Callable[[list[ChatMessage]], int]


def _too_long(prompt_tokens: int, max_tokens: int, n_ctx: int) -> UsageError:
    return UsageError(
        f"question too long for the model's context: {prompt_tokens} tokens + {max_tokens} "
        f"reserved for the answer > {n_ctx}; shorten it or raise --ctx"
    )


def fit_hits_to_context(
    question: str,
    hits: Sequence[Hit],
    *,
    count_prompt_tokens: TokenCounter,
    n_ctx: int,
    max_tokens: int,
) -> tuple[list[Hit], list[Hit]]:
    """Keep the best-ranked hits whose grounded prompt plus `max_tokens` fits in `n_ctx`.

    Returns (kept, dropped); hits are dropped from the end (lowest-ranked first), so `kept` is
    always a prefix of `hits`. Raises UsageError when not even the question with the top excerpt
    fits. With no hits there is nothing to fit (the caller never calls the model then).

    Cost: one full count when everything fits. Otherwise each excerpt is measured once on its own
    (plus the fixed part once), the longest prefix that fits by those measures is chosen, and the
    real prompt is counted to confirm it; tokenisers are not exactly additive at the boundaries,
    so an over-budget confirmation drops one more hit and counts again (rarely more than once).
    """
    all_hits = list(hits)
    if not all_hits:
        return [], []
    budget = n_ctx - max_tokens

    full = count_prompt_tokens(build_grounded_history(question, all_hits))
    if full <= budget:
        return all_hits, []

    # The fixed part: system message, the user scaffolding and the question, with an empty context.
    fixed_history = [ChatMessage("system", SYSTEM_PROMPT), _user_message(question, "")]
    fixed = count_prompt_tokens(fixed_history)
    if fixed > budget:
        # The question alone (no excerpt at all) cannot fit: nothing to drop can help.
        raise _too_long(fixed, max_tokens, n_ctx)

    # Each excerpt's marginal cost, measured once in a bare user message and net of that message's
    # own template overhead. Every excerpt after the first also pays for its separator.
    empty = count_prompt_tokens([ChatMessage("user", "")])
    costs: list[int] = []
    for number, hit in enumerate(all_hits, start=1):
        text = format_hit(number, hit)
        if number > 1:
            text = EXCERPT_SEPARATOR + text
        costs.append(max(0, count_prompt_tokens([ChatMessage("user", text)]) - empty))

    # Longest prefix within budget by the estimates (at least one hit is tried even if the
    # estimate says no: the confirming count below has the last word).
    keep, total = 0, fixed
    for cost in costs:
        if total + cost > budget:
            break
        total += cost
        keep += 1
    keep = max(keep, 1)

    # Confirm with real counts, dropping one more hit while over budget.
    while True:
        actual = count_prompt_tokens(build_grounded_history(question, all_hits[:keep]))
        if actual <= budget:
            break
        if keep == 1:
            # The question fits alone but not with even the top excerpt.
            raise _too_long(actual, max_tokens, n_ctx)
        keep -= 1

    # The estimates can also err on the safe side; when the real count leaves room for the next
    # excerpt by its own measure, try it (again confirmed by a real count).
    while keep < len(all_hits) and actual + costs[keep] <= budget:
        candidate = count_prompt_tokens(build_grounded_history(question, all_hits[: keep + 1]))
        if candidate > budget:
            break
        keep, actual = keep + 1, candidate
    return all_hits[:keep], all_hits[keep:]
