"""Questions that compare two things: the sides read from the question, the search holding each
side, and the passage opening with what the notes say of each (`locallens.compare`)."""

from __future__ import annotations

import numpy as np
import pytest

from locallens.compare import Side, comparison, holds, side_query, side_units, with_sides
from locallens.extractive import extractive_answer

from .test_claims import fake_encode, fake_vector, hit


def sides_of(question: str) -> list[str] | None:
    found = comparison(question)
    return None if found is None else [side.text for side in found]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the difference between borg prune and borg compact?", ["borg prune", "borg compact"]),
        ("What's the difference between break and continue inside a loop?", ["break", "continue"]),
        ("What is the difference between `is` and `==` in Python?", ["`is`", "`==`"]),
        ("What's the difference between ${name:-word} and ${name:=word}?", ["${name:-word}", "${name:=word}"]),
        ("What is the difference between the Alias and the Redirect directives?", ["Alias", "Redirect"]),
        ("How does a ban differ from a purge in Varnish?", ["ban", "purge"]),
        ("git merge vs git rebase", ["git merge", "git rebase"]),
        ("When do I use global and when nonlocal?", ["global", "nonlocal"]),
        ("bisect_left or bisect_right: how do they differ?", ["bisect_left", "bisect_right"]),
        (
            "Should I restore with borg extract or with borg mount? What is the difference?",
            ["borg extract", "borg mount"],
        ),
        ("¿Qué diferencia hay entre grace y keep?", ["grace", "keep"]),
        # An option after a command: both are the command's ("git reset --hard").
        ("What is the difference between git reset --soft and --hard?", ["git reset --soft", "git reset --hard"]),
        ("What is the difference between HEAD^ and HEAD~?", ["HEAD^", "HEAD~"]),
        # Not comparisons, or sides that are no short names
        ("How can I compare two archives but ignore changes to owners and permissions?", None),
        ("What does git stash do?", None),
        ("What is the difference between them?", None),
    ],
)
def test_the_two_sides_of_a_comparison(question: str, expected: list[str] | None) -> None:
    assert sides_of(question) == expected


def test_a_side_is_told_from_the_other_by_its_own_words() -> None:
    prune, compact = comparison("What is the difference between borg prune and borg compact?") or ()
    assert prune.keys == frozenset({"prune"})  # "borg" is both sides'
    assert holds("borg prune removes archives", prune) and not holds("borg prune removes archives", compact)
    # Inflections meet ("purging" asked, "A purge is ..." written); a quoted stop word in quotes.
    purging, banning = comparison("What is the difference between purging and banning?") or ()
    assert holds("A purge is what happens when you discard an object.", purging)
    assert holds("You can think of bans as a filter.", banning)
    is_, _ = comparison("What is the difference between `is` and `==`?") or ()
    assert is_.literal == "is" and holds('The "is" operator compares identity.', is_)
    assert not holds("This is an operator.", is_)
    # Tokens told apart by a symbol alone, as written.
    caret, tilde = comparison("What is the difference between HEAD^ and HEAD~?") or ()
    assert holds("HEAD^ names the first parent.", caret) and not holds("HEAD~2 is the grandparent.", caret)
    assert holds("HEAD~2 is the grandparent.", tilde)
    soft, hard = comparison("What is the difference between git reset --soft and --hard?") or ()
    assert not holds("git reset moves HEAD.", soft) and holds("--soft does not touch the index.", soft)
    assert holds("--hard resets the working tree.", hard) and not holds("--soft keeps it.", hard)
    # A configuration section's tag as written, not every "directive" or "directory".
    directory, location = comparison("What is the difference between <Directory> and <Location> sections?") or ()
    assert holds('<Directory "/var/www"> applies to the filesystem.', directory)
    assert not holds("The enclosed directives apply to the directory.", directory)
    assert not holds("<DirectoryMatch> takes a regular expression.", directory)
    assert holds("<Location /status> applies to URLs.", location)


def test_a_sides_own_question_keeps_the_context_asked_in() -> None:
    question = "What is the difference between return(pass) and return(pipe) in vcl_recv?"
    passing, piping = comparison(question) or ()
    assert side_query(question, piping, passing) == "What is return(pipe) in vcl_recv?"
    assert (
        side_query(
            "What is the difference between grace and keep?",
            *comparison("What is the difference between grace and keep?") or (),
        )
        == "What is grace?"
    )


def test_a_side_no_excerpt_mentions_is_searched_alone() -> None:
    sides = comparison("What is the difference between borg prune and borg compact?")
    assert sides is not None
    hits = [hit(f"borg prune keeps {n} archives.", f"prune-{n}.md") for n in range(5)]
    asked: list[str] = []

    def search(text: str) -> list:
        asked.append(text)
        return [
            hit("borg create makes an archive.", "create.md"),
            hit("borg compact frees space in the repository segments.", "compact.md"),
        ]

    out = with_sides(hits, sides, "What is the difference between borg prune and borg compact?", search, 5)
    assert asked == ["What is borg compact?"]
    assert [h.chunk.relative_path for h in out] == [
        "prune-0.md",
        "prune-1.md",
        "prune-2.md",
        "prune-3.md",
        "compact.md",
    ]
    # A side named only in an example is not held: something must be said of it.
    example = [*hits[:4], hit("Run it nightly:\n\n```\nborg compact --progress /srv/repo\n```", "cron.md")]
    assert [h.chunk.relative_path for h in with_sides(example, sides, "", search, 5)][-1] == "compact.md"
    asked.clear()
    # Both sides held already: nothing searched, nothing moved.
    asked.clear()
    assert with_sides(out, sides, "", search, 5) == out and asked == []


def test_each_side_opens_with_its_own_unit() -> None:
    a, b = Side("break", frozenset({"break"})), Side("continue", frozenset({"conti"}))
    texts = ["break and continue are statements.", "break ends the loop.", "continue goes on.", "a loop."]
    scores = [np.array([0.9, 0.5, 0.1, 0.2]), np.array([0.9, 0.1, 0.4, 0.2])]
    # The unit naming both sides is passed over for the ones about each alone.
    assert side_units((a, b), texts, scores) == [1, 2]
    # The unit whose subject is the side, and that opens its section, over a passing mention.
    subjects = ["", "", "continue", ""]
    texts2 = ["break and continue are statements.", "break ends the loop.", "Loops continue.", "Goes on."]
    assert side_units((a, b), texts2, scores, subjects=subjects, leads=frozenset({2}))[1] == 2
    # A unit that opens the side's entry or section is taken over one using the side in passing,
    # whatever their scores.
    passing = ["If a loop ends by break, its target keeps its value.", "break ends the nearest loop."]
    assert side_units(
        (a, b), passing, [np.array([0.9, 0.1])] * 2, subjects=["break", "break"], leads=frozenset({1})
    ) == [1]
    # Prose says what a thing is; an example of it (code) only when nothing else mentions it.
    texts3 = ["break ends the loop.", "for x in y: break", "continue goes on.", "a loop."]
    scores3 = [np.array([0.3, 0.9, 0.1, 0.2]), np.array([0.1, 0.1, 0.4, 0.2])]
    assert side_units((a, b), texts3, scores3) == [1, 2]
    assert side_units((a, b), texts3, scores3, prose=[True, False, True, True]) == [0, 2]
    # A unit naming both is taken when no other mentions a side; none when nothing mentions it.
    assert side_units((a, b), texts[:2], [s[:2] for s in scores]) == [1, 0]
    assert side_units((a, b), [texts[1], texts[3]], [s[[1, 3]] for s in scores]) == [0]


def test_a_comparison_is_answered_with_what_the_notes_say_of_each_side() -> None:
    hits = [
        hit(
            "The break and continue statements both work inside loops. Loops are written with for and while.",
            "loops.md",
        ),
        hit("The break statement terminates the nearest enclosing loop.", "break.md"),
        hit("The continue statement goes on with the next cycle of the nearest enclosing loop.", "continue.md"),
    ]
    question = "What is the difference between break and continue?"
    answer = extractive_answer(question, hits, fake_vector(question), fake_encode)
    assert not answer.refused
    lines = answer.answer.splitlines()
    assert lines[0] == "The break statement terminates the nearest enclosing loop [2]."
    assert lines[1] == "The continue statement goes on with the next cycle of the nearest enclosing loop [3]."


def test_a_sides_unit_is_read_on_to_the_sentence_after_it_when_the_budget_holds() -> None:
    hits = [
        hit("The break and continue statements both work inside loops.", "loops.md"),
        hit(
            "# The break statement\n\nbreak may only occur nested in a loop. It terminates the nearest loop.",
            "break.md",
        ),
        hit(
            "# The continue statement\n\ncontinue may only occur nested in a loop. It goes on with the next cycle.",
            "continue.md",
        ),
    ]
    question = "What is the difference between break and continue?"
    answer = extractive_answer(question, hits, fake_vector(question), fake_encode)
    assert answer.answer.splitlines()[:4] == [
        "break may only occur nested in a loop [2].",
        "It terminates the nearest loop [2].",
        "continue may only occur nested in a loop [3].",
        "It goes on with the next cycle [3].",
    ]


def test_a_long_question_is_read_in_linear_time() -> None:
    """Sides are bounded in the patterns: an unbounded side backtracked for minutes over the
    20,000 characters a question may hold. A generous bound, far from what it took."""
    import time

    started = time.perf_counter()
    for question in ("difference between " + "a and " * 3300, "a or " * 4000 + ": how do they differ", ":" * 20_000):
        assert comparison(question[:20_000]) is None
    assert time.perf_counter() - started < 10
