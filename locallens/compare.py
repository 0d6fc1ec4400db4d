"""Questions that compare two things: "What is the difference between A and B?"

Such a question is answered by what the notes say of each thing, and its words rarely say which
passage that is: the question's own vector lies between the two, and the best-scoring unit is
often a sentence that mentions both and defines neither ("The considerations related to the
difference between Alias and AliasMatch also apply ..."). So a comparison is read as two sides
(`comparison`), each with the key terms that tell it from the other (`Side.keys`):

- the search (`retrieval.retrieve`) makes sure the excerpts hold each side: a side no excerpt
  says something of (`said_of`) is searched on its own and its best chunk that does takes a place
  among the first five (`with_sides`);
- the passage (`extractive.passage_units`) opens with each side's best unit (`side_units`):
  prose that opens an entry or section naming the side first, scored against the side asked on
  its own ("What is return(pipe) in vcl_recv?"), its subject and its section's first words
  weighed more, each read on to its next sentence where the budget holds it; then it goes on as
  any passage does.

A side is the words the question compares, as written: "borg prune", "`==`", "${name:=word}",
"single quotes". Its keys are its key terms and symbols that the other side lacks ("prune" for
"borg prune" against "borg compact"); a side written as a quoted word the key terms drop ("`is`")
is that word in quotes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from locallens.domain import Hit
from locallens.unit_scores import key_terms, symbol_keys, unit_keys
from locallens.units import DEFINITION, ITEM, SENTENCE, excerpt_units

__all__ = ["Side", "comparison", "holds", "placed_hit", "side_query", "side_units", "subject_of", "with_sides"]

# The end of a side: the question's end, a clause, or the context the comparison is made in
# ("break and continue inside a loop", "`is` and `==` in Python", "grace and keep for a cached
# object").
_END = r"(?=\s*(?:[?!;]|[.,:](?:\s|$)|$|\s(?:in|inside|for|when|within|on|en|para|cuando)\s))"
# A side: at most MAX_SIDE_WORDS words of at most 60 characters, so that a long question is read
# in linear time (an unbounded side backtracked for minutes over 20,000 characters).
_WORD = r"(?:[^?!;:,\s]|:(?!\s)){{1,60}}"  # braces doubled: _SIDE is formatted
_SIDE = r"(?P<{}>" + _WORD + r"(?:\s+" + _WORD + r"){{0,3}}?)"
_PATTERNS = [
    re.compile(p.format(a=_SIDE.format("a"), b=_SIDE.format("b"), end=_END), re.I)
    for p in (
        r"\bdifferences?\s+between\s+{a}\s+and\s+{b}{end}",
        r"\bdiferencias?\s+(?:hay\s+)?entre\s+{a}\s+y\s+{b}{end}",
        r"\bhow\s+(?:is|are|does|do)\s+{a}\s+differ(?:ent)?\s+from\s+{b}{end}",
        r"\bhow\s+(?:is|are|does|do)\s+{a}\s+compare\s+(?:to|with)\s+{b}{end}",
        r"\bqu[eé]\s+diferencia\s+(?:hay\s+)?entre\s+{a}\s+y\s+{b}{end}",
        r"\ben\s+qu[eé]\s+se\s+diferencian?\s+{a}\s+(?:y|de)\s+{b}{end}",
        r"\bcompare\s+{a}\s+(?:and|with)\s+{b}{end}",
        r"(?:^|\s)(?:use\s+)?{a}\s+(?:vs\.?|versus)\s+{b}{end}",
        r"\bwhen\s+(?:do|should|would|can)\s+(?:i|we|you|one)\s+use\s+{a}\s+and\s+when\s+(?:to\s+use\s+)?{b}{end}",
        # "A or B: how do they differ?", "Should I use A or B? What is the difference?"
        r"^\W*(?:should\s+(?:i|we)\s+(?:\w+\s+){{0,3}}(?:with|use|using)\s+)?{a}\s+or\s+(?:with\s+)?{b}"
        r"\s*[?:,.].*\bdiffer",
    )
]
MAX_SIDE_WORDS = 4  # a side is a name or a short phrase ("borg prune", "single quotes")
_ARTICLE = re.compile(r"^(?:the|a|an|el|la|los|las|un|una)\s+", re.I)
# What both sides are ("the Alias and the Redirect directives", "<Directory> and <Location>
# sections"): a noun after the second side that names the kind of both, not the second alone.
_KIND = re.compile(
    r"\s+(?:directives|sections|options|flags|commands|statements|functions|methods|parameters|"
    r"variables|settings|files|modules|operators|keywords|blocks|modes)$",
    re.I,
)
_FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")  # a command-line option: "--soft", "-n"
_TAG = re.compile(r"^<[A-Za-z][\w:-]*>$")  # a configuration section's tag: "<Directory>", "<Location>"
_QUOTED_WORD = re.compile(r"^[`'\"“‘]([^\W\d_]+)[`'\"”’]$")


@dataclass(frozen=True, slots=True)
class Side:
    """One of the two things a question compares: its words as written, and the key terms and
    symbols that tell it from the other side (or, where those are none, `literal`: the quoted
    word, the tag, or the token as written)."""

    text: str
    keys: frozenset[str]
    literal: str = ""


@lru_cache(maxsize=4096)
def _keys(text: str) -> frozenset[str]:
    """The key terms and symbols of `text`; cached: a comparison reads each unit's text for both
    sides, and its subject and words more than once."""
    return key_terms(text, refined=True) | symbol_keys(text)


def comparison(question: str) -> tuple[Side, Side] | None:
    """The two sides `question` compares, or None when it compares nothing (or its two sides
    cannot be told apart by their words)."""
    for pattern in _PATTERNS:
        found = pattern.search(question)
        if not found:
            continue
        a, b = (_ARTICLE.sub("", found.group(name).strip()) for name in ("a", "b"))
        b = _KIND.sub("", b)
        words = a.split()
        if len(words) > 1 and _FLAG.match(words[-1]) and _FLAG.match(b) and " " not in b:
            b = " ".join([*words[:-1], b])  # "git reset --soft and --hard": both are "git reset"'s
        if not a or not b or len(a.split()) > MAX_SIDE_WORDS or len(b.split()) > MAX_SIDE_WORDS:
            continue
        sides = []
        for mine, other in ((a, b), (b, a)):
            literal = _QUOTED_WORD.match(mine)
            keys = _keys(mine) - _keys(other)
            if _TAG.match(mine):  # "<Directory>": the tag as written, not every "directive"
                sides.append(Side(mine, frozenset(), mine[:-1]))
                continue
            if not keys and " " not in mine and not mine.isalnum() and not literal:
                sides.append(Side(mine, frozenset(), mine))  # "HEAD^" against "HEAD~": as written
                continue
            sides.append(Side(mine, keys, literal.group(1).lower() if literal and not keys else ""))
        if all(side.keys or side.literal for side in sides):
            return sides[0], sides[1]
    return None


def holds(text: str, side: Side) -> bool:
    """Whether `text` mentions `side`: one of its keys; its quoted word in quotes; its tag or its
    symbol-laden token ("HEAD^") as written."""
    if side.literal.startswith("<"):
        return bool(re.search(rf"{re.escape(side.literal)}(?![\w-])", text))
    if side.literal and not side.literal.isalpha():
        return bool(re.search(rf"(?<![\w-]){re.escape(side.literal)}", text))
    if side.literal:
        return bool(re.search(rf"[`'\"“‘]{re.escape(side.literal)}[`'\"”’]", text, re.I))
    return bool(side.keys & _keys(text))


MIN_SIDE_TERMS = 4  # what is said of a side: prose of at least this many key terms


def says(text: str, kind: str) -> bool:
    """Whether a unit of this text and kind says something of what it names: a sentence, list
    item or definition of `MIN_SIDE_TERMS` key terms or more (not code, a grammar rule or a bare
    term line)."""
    return kind in (SENTENCE, ITEM, DEFINITION) and len(unit_keys(text)) >= MIN_SIDE_TERMS


def said_of(content: str, side: Side) -> bool:
    """Whether an excerpt says something of `side` (`says`) in a unit that mentions it."""
    return any(holds(text, side) for text in _saying(content))


@lru_cache(maxsize=64)
def _saying(content: str) -> tuple[str, ...]:
    """The units of an excerpt that say something (`says`), each with its term; cached: the
    search asks it of the same excerpts for each side."""
    return tuple(f"{u.term} {u.text}" for u in excerpt_units(content, 1) if says(u.text, u.kind))


def side_query(question: str, side: Side, other: Side) -> str:
    """The question about `side` alone: "What is return(pipe) in vcl_recv?" for "What is the
    difference between return(pass) and return(pipe) in vcl_recv?" (the context after the two
    sides kept)."""
    at = question.find(other.text) if other.text in question else -1
    end = max(question.find(side.text) + len(side.text), at + len(other.text) if at >= 0 else -1)
    rest = question[end:].strip(" ?!.") if end > 0 else ""
    rest = rest if re.match(r"(?:in|inside|for|when|within|on|en|para|cuando)\s", rest, re.I) else ""
    return f"What is {side.text} {rest}".strip() + "?"


def with_sides(
    hits: Sequence[Hit],
    sides: tuple[Side, Side],
    question: str,
    search: Callable[[str], Sequence[Hit]],
    places: int,
) -> list[Hit]:
    """`hits` with each side held among the first `places`: a side none of them says something of
    (`said_of`: a grammar rule or an example naming it is not enough) is searched on its own
    (`search`, its `side_query`) and its best chunk that does takes the last of those places not
    already given to a side (the others move down one; the list keeps its length)."""
    out = list(hits)
    place = min(places, len(out))
    for side, other in (sides, sides[::-1]):
        if place < 1 or any(said_of(h.content, side) for h in out[:places]):
            continue

        def says_side(hit: Hit, side: Side = side) -> bool:
            return said_of(hit.content, side)

        moved = placed_hit(out, search(side_query(question, side, other)), says_side, place)
        if moved is None:
            continue
        out = moved
        place -= 1
    return out


def placed_hit(
    hits: Sequence[Hit], candidates: Iterable[Hit], wanted: Callable[[Hit], bool], place: int
) -> list[Hit] | None:
    """`hits` with the first of `candidates` that is `wanted` and not already among them at
    `place` (from 1): the hits from there move down one and the list keeps its length; None when
    no candidate is. How the search makes the excerpts hold what a question's form needs: a
    comparison's side (`with_sides`), an example (`examples.with_example`)."""
    taken = {(h.chunk.relative_path, h.chunk.chunk_index) for h in hits}
    found = next(
        (h for h in candidates if (h.chunk.relative_path, h.chunk.chunk_index) not in taken and wanted(h)), None
    )
    if found is None:
        return None
    return [*hits[: place - 1], found, *hits[place - 1 :]][: len(hits)]


# A unit whose subject is the side (it names it in its first words, its term or its section's
# heading) is what the notes say *of* it, beside units that only use it in passing.
SUBJECT_BONUS = 0.3
SUBJECT_WORDS = 8
# ... and the first thing its section or its entry says of it, more: documentation says what a
# thing is where it opens its section ("A purge is what happens when ...").
LEAD_BONUS = 0.3


def subject_of(text: str, term: str, section: str) -> str:
    """Where a unit names its subject: its term, its first `SUBJECT_WORDS` words, its heading."""
    return " ".join([term, " ".join(text.split()[:SUBJECT_WORDS]), section])


def side_units(
    sides: tuple[Side, Side],
    texts: Sequence[str],
    side_scores: Sequence[np.ndarray],
    own: Sequence[str] | None = None,
    subjects: Sequence[str] | None = None,
    leads: frozenset[int] = frozenset(),
    prose: Sequence[bool] | None = None,
) -> list[int]:
    """For each side, the unit (an index into `texts`: each unit's text with its term and
    context) that best answers it alone (`side_scores`: every unit scored against that side's
    question, `SUBJECT_BONUS` more for one whose subject is the side, `subjects`): among the units
    that mention it and whose own words (`own`, else `texts`) do not mention the other side, else
    among those that mention it; of those, prose (`prose`) before code, and the units that open
    an entry or section (`leads`) naming the side before the others; none when no unit mentions
    it."""
    own = own if own is not None else texts
    chosen: list[int] = []
    for (side, other), scores in zip((sides, sides[::-1]), side_scores):
        mentions = [i for i, text in enumerate(texts) if holds(text, side)]
        alone = [i for i in mentions if not holds(own[i], other)]
        pool = [i for i in (alone or mentions) if i not in chosen and scores[i] > 0]
        said = [i for i in pool if prose is None or prose[i]]
        pool = said or pool  # what the notes say of it, before an example of it
        # What its entry or section opens with, where one names it: a sentence using it in
        # passing scores as high against its question and says less of it.
        opening = [i for i in pool if i in leads and subjects is not None and holds(subjects[i], side)]
        pool = opening or pool

        def weight(i: int, side: Side = side, scores: np.ndarray = scores) -> tuple[float, int]:
            named = subjects is not None and holds(subjects[i], side)
            lead = named and i in leads
            return float(scores[i]) + (SUBJECT_BONUS if named else 0.0) + (LEAD_BONUS if lead else 0.0), -i

        if pool:
            chosen.append(max(pool, key=weight))
    return chosen
