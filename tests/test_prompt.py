"""The grounded prompt, citation parsing and context fitting (docs/behaviour.md#the-grounded-prompt,
#citations, #fitting-the-context; #bad-input-and-faults row 22)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from locallens.domain import ChatMessage, Chunk, Hit
from locallens.errors import EXIT_USAGE, UsageError
from locallens.prompt import (
    NO_HITS_CONTEXT,
    SYSTEM_PROMPT,
    Citations,
    build_grounded_history,
    fit_hits_to_context,
    format_hits,
    parse_citations,
)

EXPECTED_SYSTEM = (
    "You are LocalLens, a local-first file chat assistant that answers questions strictly from "
    "the provided source excerpts. Rules: 1. Only use facts that appear in the excerpts. If the "
    "answer is not in them, say so plainly. 2. Refer to source excerpts inline using bracketed "
    "numbers, for example [1] or [2], when you use them. 3. Answer in the same language as the "
    "user's question. 4. Keep answers focused and concrete. No filler. 5. Do not include hidden "
    "reasoning, chain-of-thought, or thinking tags."
)


def make_hit(path: str, index: int, content: str, score: float = 0.5) -> Hit:
    chunk = Chunk(
        id=f"abcdef012345-{index}",
        brain="default",
        relative_path=path,
        chunk_index=index,
        content=content,
        checksum="abcdef012345" + "0" * 52,
    )
    return Hit(chunk=chunk, score=score)


HITS = [
    make_hit("docs/setup.md", 0, "Run `make install` first.", 0.9),
    make_hit("notes/tenancy.md", 3, "La multi-tenancy aislaba datos.\nUsa RLS.", 0.7),
]


# ---------------------------------------------------------------------------------- prompt


def test_system_prompt_is_the_five_rules_joined_by_spaces() -> None:
    assert SYSTEM_PROMPT == EXPECTED_SYSTEM


def test_history_with_hits_exact_strings() -> None:
    history = build_grounded_history("How do I install it?", HITS)
    assert history == [
        ChatMessage("system", EXPECTED_SYSTEM),
        ChatMessage(
            "user",
            "Source excerpts:\n\n"
            "[1] docs/setup.md#chunk-0\nRun `make install` first."
            "\n\n---\n\n"
            "[2] notes/tenancy.md#chunk-3\nLa multi-tenancy aislaba datos.\nUsa RLS."
            "\n\nQuestion:\nHow do I install it?",
        ),
    ]


def test_history_without_hits_exact_strings() -> None:
    history = build_grounded_history("¿Qué es RLS?", [])
    assert history == [
        ChatMessage("system", EXPECTED_SYSTEM),
        ChatMessage(
            "user",
            "Source excerpts:\n\nNo matching chunks were found.\n\nQuestion:\n¿Qué es RLS?",
        ),
    ]
    assert NO_HITS_CONTEXT == "No matching chunks were found."


def test_format_hits_numbers_from_one_and_uses_separator() -> None:
    assert format_hits(HITS[:1]) == "[1] docs/setup.md#chunk-0\nRun `make install` first."
    assert format_hits([]) == ""
    three = format_hits([HITS[0], HITS[1], HITS[0]])
    assert three.count("\n\n---\n\n") == 2
    assert three.split("\n\n---\n\n")[2].startswith("[3] docs/setup.md#chunk-0\n")


# ------------------------------------------------------------------------------- citations


@pytest.mark.parametrize(
    ("answer", "n", "cited", "invalid"),
    [
        ("Install it with make [1].", 2, [1], []),
        ("Both say so [1][2].", 2, [1, 2], []),
        ("Both say so [1, 2].", 2, [1, 2], []),
        ("All three [1,2,3].", 3, [1, 2, 3], []),
        ("Range [1-3].", 3, [1, 2, 3], []),
        ("En-dash range [1–3].", 3, [1, 2, 3], []),
        ("Order of first appearance [2] then [1] then [2].", 2, [2, 1], []),
        ("Out of range [3] and [1].", 2, [1], [3]),
        ("Zero is not an excerpt [0].", 2, [], [0]),
        ("Range past the end [2-4].", 2, [2], [3, 4]),
        ("Mixed [1, 5] [5].", 2, [1], [5]),
        ("Spaces inside [ 2 ].", 2, [2], []),
        ("Letters [a] and [see 1] are not citations.", 2, [], []),
        ("A link [1](https://example.com) and [docs](https://x.y) are not.", 2, [], []),
        ("A span wider than 100 [1900-2020] is not a citation.", 2, [], []),
        ("Reversed range [3-1].", 3, [1, 2, 3], []),
        ("No excerpts at all [1].", 0, [], [1]),
        ("No markers.", 2, [], []),
        ("Manual pages git-send-email[1] and printf[3] are references, not citations.", 3, [], []),
        ("Glued to a number or a stop it is one: port 5433[1], done.[2]", 2, [1, 2], []),
    ],
)
def test_parse_citations(answer: str, n: int, cited: list[int], invalid: list[int]) -> None:
    assert parse_citations(answer, n) == Citations(cited=cited, invalid=invalid)


@given(st.text(), st.integers(min_value=0, max_value=20))
def test_parse_citations_partitions_numbers(answer: str, n: int) -> None:
    result = parse_citations(answer, n)
    assert all(1 <= c <= n for c in result.cited)
    assert all(not 1 <= c <= n for c in result.invalid)
    both = result.cited + result.invalid
    assert len(both) == len(set(both))  # no number reported twice


# ----------------------------------------------------------------------- context fitting


def word_counter(messages: list[ChatMessage]) -> int:
    """A fake tokenizer: one token per whitespace-separated word, plus 4 per message."""
    return sum(4 + len(m.content.split()) for m in messages)


class CountingCounter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[ChatMessage]) -> int:
        self.calls += 1
        return word_counter(messages)


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


FIT_HITS = [make_hit(f"f{i}.md", i, words(100, f"w{i}_"), 1.0 - i / 10) for i in range(5)]


def test_fit_keeps_everything_when_it_fits_with_one_count() -> None:
    counter = CountingCounter()
    kept, dropped = fit_hits_to_context("q?", FIT_HITS, count_prompt_tokens=counter, n_ctx=100_000, max_tokens=512)
    assert kept == FIT_HITS and dropped == []
    assert counter.calls == 1


def test_fit_drops_lowest_ranked_first_and_reports_them() -> None:
    three = word_counter(build_grounded_history("q?", FIT_HITS[:3]))
    four = word_counter(build_grounded_history("q?", FIT_HITS[:4]))
    # Room for exactly three excerpts (tight and loose): the last two (lowest-ranked) go.
    for n_ctx in (three + 100, four - 1 + 100):
        kept, dropped = fit_hits_to_context(
            "q?", FIT_HITS, count_prompt_tokens=word_counter, n_ctx=n_ctx, max_tokens=100
        )
        assert kept == FIT_HITS[:3]
        assert dropped == FIT_HITS[3:]
        assert word_counter(build_grounded_history("q?", kept)) + 100 <= n_ctx


def test_fit_counts_each_excerpt_once_not_quadratically() -> None:
    hits = [make_hit(f"f{i}.md", i, words(50, f"w{i}_")) for i in range(60)]
    counter = CountingCounter()
    kept, dropped = fit_hits_to_context("q?", hits, count_prompt_tokens=counter, n_ctx=1000, max_tokens=100)
    assert kept == hits[: len(kept)] and dropped == hits[len(kept) :]
    assert 1 <= len(kept) < 60
    # full + fixed + empty + 60 excerpts + one confirmation (+ at most a couple of corrections)
    assert counter.calls <= 60 + 6


def test_fit_with_no_hits_is_a_no_op() -> None:
    assert fit_hits_to_context("q?", [], count_prompt_tokens=word_counter, n_ctx=10, max_tokens=5) == ([], [])


def test_question_alone_too_long_is_usage_error() -> None:
    question = words(300, "q")
    with pytest.raises(UsageError) as info:
        fit_hits_to_context(question, FIT_HITS, count_prompt_tokens=word_counter, n_ctx=256, max_tokens=64)
    fixed = word_counter(
        [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", f"Source excerpts:\n\n\n\nQuestion:\n{question}")]
    )
    assert str(info.value) == (
        f"question too long for the model's context: {fixed} tokens + 64 reserved for the "
        "answer > 256; shorten it or raise --ctx"
    )
    assert info.value.exit_code == EXIT_USAGE == 2


def test_question_fits_but_not_with_top_excerpt_is_usage_error() -> None:
    fixed = word_counter(build_grounded_history("q?", [])) - len(NO_HITS_CONTEXT.split())
    with pytest.raises(UsageError, match="question too long for the model's context"):
        fit_hits_to_context("q?", FIT_HITS, count_prompt_tokens=word_counter, n_ctx=fixed + 64 + 50, max_tokens=64)


def test_fit_corrects_a_non_additive_tokenizer() -> None:
    """A counter whose prompt cost is not the sum of the parts: the confirming count wins."""

    def lumpy(messages: list[ChatMessage]) -> int:
        # Each "---" separator costs 20 extra tokens in a whole prompt, nothing when measured alone.
        base = word_counter(messages)
        text = "".join(m.content for m in messages)
        return base + 20 * text.count("\n\n---\n\n[")

    budget_for_three = lumpy(build_grounded_history("q?", FIT_HITS[:3]))
    kept, dropped = fit_hits_to_context(
        "q?", FIT_HITS, count_prompt_tokens=lumpy, n_ctx=budget_for_three + 10, max_tokens=10
    )
    assert kept == FIT_HITS[:3] and dropped == FIT_HITS[3:]
