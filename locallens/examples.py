"""Questions that ask for an example: "Show me an example of a name-based virtual host", "What
does a minimal backend declaration look like?", "¿Me das un ejemplo de un bloque case?".

The answer a person wants is the manual's example itself: the code block or configuration with
the line that introduces it. The question's words rarely point there: a block of code shares few
words with a question in prose, so its cosine is low, and the best-scoring units are the prose
around it ("A function definition may be wrapped by one or more decorator expressions"). So an
example question is read apart (`asks_example`), and its example is chosen among the excerpts'
blocks of code (`is_example`) by what surrounds each (`example_units`): the best score of the
block and the prose just before it in its section (the sentence that says what the block shows),
the share of the question's key terms found in the block, that prose and its heading, and whether
that prose introduces it ("For example", "the following", a line ending with ":"). The passage
opens with the block and its introduction whatever the budget (`extractive.passage_units`'s
`opening`), then goes on as any passage does.

"For example 8080" or "por ejemplo" in a question is the user's own example, not a request for
one; "Debian's example configuration" names a file; neither is read as asking for an example.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from locallens.compare import placed_hit
from locallens.domain import Hit
from locallens.text import reads_as_prose
from locallens.tokens import count_tokens
from locallens.unit_scores import key_terms, symbol_keys
from locallens.units import CODE, HEADER, HEADING, ROW, Unit, excerpt_units

__all__ = [
    "as_blocks",
    "asks_example",
    "example_keys",
    "example_units",
    "holds_example",
    "is_example",
    "with_example",
]

# A request for an example: "an example of", "some examples", "an example backup script",
# "examples of", "what does X look like", "a sample config"; Spanish "un ejemplo de", "ejemplos
# de". Not "for example 8080" (an article or "of" is required) nor "Debian's example
# configuration".
_ASKS = re.compile(
    r"\b(?:an?|some|one|any|another|more)\s+(?:\w+\s+)?(?:examples?|samples?)\b"
    r"|\b(?:examples?|samples?)\s+of\b"
    r"|\b(?:show|give|see|need|want)\s+(?:me\s+|us\s+)?(?:examples?|samples?)\b"
    r"|\b(?:what|how)\s+(?:does|do|would|should|could|might)\s+.{1,80}?\blooks?\s+like\b"
    r"|\b(?:un|algún|algun|otro|unos|algunos)\s+ejemplos?\b|\bejemplos\s+de\b",
    re.I,
)
# ... and not as the user's own example ("for example", "for instance", "por ejemplo").
_USERS_OWN = re.compile(r"\b(?:for|por)\s+(?:an?\s+)?(?:example|ejemplo)\b", re.I)
# The words of the request itself, which no example holds.
_FRAME_KEYS = key_terms(
    "show give example examples sample samples look looks like see ejemplo ejemplos muestra muéstrame "
    "enseña enséñame dame das"
)
# A line of code: punctuation code uses (braces, "=", ";", "<tag>", "$", "@", a call "name("),
# or a prompt or a comment at its start; in a line of at most CODE_LINE_WORDS words (prose in
# parentheses is longer). Or a configuration line: a directive and one to three values
# ("ServerName www.example.com", "AuthType Basic") with no stop at its end.
_CODE_MARK = re.compile(r"[{};=<>$@\\|]|\w\(|^\s*(?:>>>|\$|#|//|%)\s")
CODE_LINE_WORDS = 10
_SETTING = re.compile(r"^\s*[A-Za-z_][\w.:-]*(?:\s+\S+){1,3}\s*$")
_STOP_END = re.compile(r"[.!?,]\s*$")
# A grammar's rule ("with_stmt ::= ..."): the syntax written out, not an example of it.
_GRAMMAR = re.compile(r"^\s*[\w-]+\s+::=", re.M)
# A unit other than a code block is code when at least this share of its lines, and two of them,
# are lines of code (a plain-text manual's example reads as a sentence unit).
CODE_LINE_SHARE = 0.5
# The prose before a block that introduces it.
_INTRODUCES = re.compile(
    r"\bexamples?\b|\bfollowing\b|\blike this\b|\bas follows\b|\bfor instance\b|\bejemplo\b|\bsiguiente\b|:\s*$",
    re.I,
)
PROSE_BEFORE = 2  # the units of prose before a block read with it, at most
TERMS_WEIGHT = 0.3  # the share of the question's key terms the block and its prose hold
INTRO_BONUS = 0.1  # prose that introduces the block ("For example, the following code")
# An example is printed when its block and prose hold this share of the question's key terms,
# or score within EXAMPLE_MARGIN of the best unit; else the passage is as for any question.
MIN_EXAMPLE_TERMS = 0.5
EXAMPLE_MARGIN = 0.15
# The blocks right after the chosen one are printed with it while the example's blocks hold at
# most this many tokens in all (the chosen one is printed whole whatever its length).
MAX_EXAMPLE_TOKENS = 150


def asks_example(question: str) -> bool:
    """Whether the question asks to be shown an example."""
    return bool(_ASKS.search(_USERS_OWN.sub(" ", question)))


def is_example(unit: Unit) -> bool:
    """Whether a unit is a block of code or configuration: a code block, or lines most of which
    are code (a plain-text manual's example, read as a sentence or a definition)."""
    if unit.kind == CODE:
        return not _GRAMMAR.search(unit.text)
    if unit.kind in (HEADING, HEADER, ROW) or reads_as_prose(unit.text) or _GRAMMAR.search(unit.text):
        return False
    lines = [line for line in unit.text.split("\n") if line.strip()]
    code = sum(1 for line in lines if _code_line(line))
    return code >= 2 and code >= CODE_LINE_SHARE * len(lines)


def _code_line(line: str) -> bool:
    """Whether a line reads as code or configuration (`_CODE_MARK`, `_SETTING`)."""
    if len(line.split()) > CODE_LINE_WORDS:
        return False
    return bool(_CODE_MARK.search(line) or (_SETTING.match(line) and not _STOP_END.search(line)))


def example_keys(question: str, *others: str) -> tuple[frozenset[str], ...]:
    """The key terms an example for `question` should hold (its words less the request's), one
    set per wording: the question's, and each of `others`' (its English rendering, what a chat's
    follow-up was searched with). A Spanish question and its rendering are two wordings of one
    request: their keys pooled, each wording's words would count against the other's ("case" is
    rendered "marry")."""
    sets = ((key_terms(text) | symbol_keys(text)) - _FRAME_KEYS for text in (question, *others))
    return tuple(keys for keys in sets if keys)


def _share(keys: Sequence[frozenset[str]], unit: Unit, units: Sequence[Unit], prose: Sequence[int]) -> float:
    """The largest share of one wording's `keys` that a block, its heading and the prose before
    it hold (0 with no keys)."""
    text = " ".join([unit.text, unit.section, *(units[j].text for j in prose)])
    held = key_terms(text) | symbol_keys(text)
    return max((len(wording & held) / len(wording) for wording in keys), default=0.0)


def holds_example(content: str, keys: Sequence[frozenset[str]]) -> bool:
    """Whether an excerpt holds a block whose words, heading and prose hold `MIN_EXAMPLE_TERMS` of
    one wording's `keys` (`example_keys`)."""
    units = excerpt_units(content, 1)
    at = {(u.excerpt, u.index): i for i, u in enumerate(units)}
    return any(
        is_example(u) and _share(keys, u, units, _prose_before(u, units, at)) >= MIN_EXAMPLE_TERMS for u in units
    )


def with_example(
    hits: Sequence[Hit], question: str, search: Callable[[], Sequence[Hit]], places: int, *, also: str = ""
) -> list[Hit]:
    """`hits` with an example among the first `places` for a question asking for one: when none of
    them holds one (`holds_example`), the best chunk of the deeper ranking `search` returns that
    does takes the last of those places (the others move down one; the list keeps its length).
    The prose around an example ranks above it, and a manual's example is often in the chunk
    after the prose that explains it. `also`: the question in other words (`example_keys`)."""
    keys = example_keys(question, also)
    if not keys or not hits or any(holds_example(h.content, keys) for h in hits[:places]):
        return list(hits)
    moved = placed_hit(hits, search(), lambda h: holds_example(h.content, keys), min(places, len(hits)))
    return moved if moved is not None else list(hits)


def example_units(question: str, units: Sequence[Unit], scores: np.ndarray, *, also: Sequence[str] = ()) -> list[int]:
    """The units an example question's passage opens with (indices into `units`): the prose that
    introduces the best example, then the example; none when no block is close enough to the
    question (see the module doc). `scores`: each unit's score for the question; `also`: the
    question in other words (a Spanish question's English rendering; what a chat's follow-up was
    searched with), each a wording of its own (`example_keys`)."""
    keys = example_keys(question, *also)
    if not len(units):
        return []
    at = {(u.excerpt, u.index): i for i, u in enumerate(units)}
    best_score = float(np.max(scores))
    chosen: tuple[float, float, float, int, int | None] | None = None
    for i, unit in enumerate(units):
        if not is_example(unit):
            continue
        prose = _prose_before(unit, units, at)
        context = max([float(scores[i]), *(float(scores[j]) for j in prose)])
        # "Show me an example of that." names nothing (a chat's follow-up, searched with the
        # question before it): the block is chosen by its neighbours' scores alone.
        share = _share(keys, unit, units, prose)
        intro = next((j for j in prose if _INTRODUCES.search(units[j].text)), None)
        value = context + TERMS_WEIGHT * share + (INTRO_BONUS if intro is not None else 0.0)
        if chosen is None or value > chosen[0]:
            chosen = (value, context, share, i, intro)
    if chosen is None:
        return []
    _, context, share, i, intro = chosen
    if share < MIN_EXAMPLE_TERMS and context < best_score - EXAMPLE_MARGIN:
        return []
    return ([intro] if intro is not None else []) + [i, *_rest_of(i, units, at)]


def as_blocks(units: Sequence[Unit], chosen: Sequence[int]) -> list[Unit]:
    """`units` with the chosen examples among them printed as code blocks, their lines kept (a
    plain-text manual's example is read as a sentence unit, which prints as one line)."""
    out = list(units)
    for i in chosen:
        if out[i].kind != CODE and is_example(out[i]):
            out[i] = replace(out[i], kind=CODE)
    return out


def _rest_of(i: int, units: Sequence[Unit], at: dict[tuple[int, int], int]) -> list[int]:
    """The blocks right after block `i` in its section with no prose between (an example in
    several files: the main.cf lines, then the table they name), while the example stays within
    MAX_EXAMPLE_TOKENS."""
    out: list[int] = []
    used = count_tokens(units[i].text)
    unit = units[i]
    while (
        (j := at.get((unit.excerpt, unit.index + 1))) is not None
        and is_example(units[j])
        and units[j].section == unit.section
    ):
        used += count_tokens(units[j].text)
        if used > MAX_EXAMPLE_TOKENS:
            break
        out.append(j)
        unit = units[j]
    return out


def _prose_before(unit: Unit, units: Sequence[Unit], at: dict[tuple[int, int], int]) -> list[int]:
    """The block's setup line, and the prose right before it in its section (at most
    PROSE_BEFORE units, other blocks skipped), nearest first."""
    out = []
    if unit.setup is not None and (unit.excerpt, unit.setup) in at:
        out.append(at[(unit.excerpt, unit.setup)])
    for back in range(1, PROSE_BEFORE + 1):
        j = at.get((unit.excerpt, unit.index - back))
        if j is None or units[j].section != unit.section or units[j].kind == HEADING:
            break
        if j not in out and not is_example(units[j]):
            out.append(j)
    return out
