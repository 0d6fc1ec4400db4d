"""Script classes: the Unicode ranges of the scripts locallens treats apart from space-separated
text, as character-class bodies (`[...]` without the brackets) that both a regular expression
and SQLite's GLOB accept; the symbols of a question (`symbols`) and the constructs it writes,
by their shape (`shapes`), which no word index holds; and whether an indented block reads as
prose (`reads_as_prose`: the answer units and the AsciiDoc reader).

One definition for every station that cares: token estimates (`tokens`), keyword indexing and
search in both stores (`storage.sqlite`, `storage.postgres`, the SQLite trigram step in
`storage.migrations`), the answer check's word keys (`claims.words`) and the answer units' key
terms (`unit_scores`). A leaf: imports nothing of locallens.
"""

from __future__ import annotations

import re

THAI = "\u0e00-\u0e7f"
HANGUL_JAMO = "\u1100-\u11ff"
HANGUL_COMPATIBILITY_JAMO = "\u3130-\u318f"
HANGUL_SYLLABLES = "\uac00-\ud7a3"  # the 11,172 precomposed syllables
HANGUL_BLOCK = "\uac00-\ud7af"  # the syllables block, with its unassigned tail
KANA = "\u3040-\u30ff"  # hiragana and katakana
KATAKANA = "\u30a0-\u30ff"
HALFWIDTH_KATAKANA = "\uff66-\uff9f"
HAN_UNIFIED = "\u3400-\u4dbf\u4e00-\u9fff"  # extension A and the unified ideographs
HAN_COMPATIBILITY = "\uf900-\ufaff"
HAN = HAN_UNIFIED + HAN_COMPATIBILITY

# Scripts written without spaces between words (Thai, Han, kana) or whose words carry their
# particles (Hangul), in code point order: the SQLite trigram triggers of schema step 4 hold this
# exact text in their GLOB.
NO_SPACE_CLASS = (
    THAI
    + HANGUL_JAMO
    + KANA
    + HANGUL_COMPATIBILITY_JAMO
    + HAN_UNIFIED
    + HANGUL_BLOCK
    + HAN_COMPATIBILITY
    + HALFWIDTH_KATAKANA
)
# Every Hangul character (jamo and the syllables block), for token estimates.
HANGUL_CLASS = HANGUL_JAMO + HANGUL_COMPATIBILITY_JAMO + HANGUL_BLOCK
# Chinese, Japanese and Korean characters as the answer check compares them (no Thai, no jamo).
CJK_CLASS = KANA + HAN + HANGUL_SYLLABLES


# A symbol: a word of two characters or more, none a letter or digit ("$?", "<<<", "&>", "//", "->",
# "!!", "..."), brackets and quotes around it aside ("($?)", '"//"'), and a stop after it. Word
# indexes and word tokens drop it, so a question naming one ("What does $# give me?") is searched
# and scored by its other words unless a station reads its symbols too (the stores' keyword search,
# the answer units' key terms). A single character ("/", "#", ">", "^") is too common in prose and
# markup to tell a passage apart: on the Z shell sets it made a question refused.
_QUOTES = "\"'`‘’“”«»"
SYMBOL_EDGES = "()[]{}" + _QUOTES


def symbols(text: str) -> list[str]:
    """The symbols of `text` in order of first appearance, each once."""
    found: dict[str, None] = {}
    for token in text.split():
        core = token.strip(SYMBOL_EDGES)
        if len(core) > 1:
            core = core.rstrip(".,;:") or core
        if len(core) > 2 and core.endswith("?"):  # "&>?" ends a question; "$?" is a symbol
            core = core[:-1].strip(SYMBOL_EDGES)
        if len(core) >= 2 and not any(ch.isalnum() for ch in core):
            found[core] = None
    return list(found)


# A construct written with names of one's own: an expansion or substitution (`${#var}`,
# `${var:-default}`, `$(command)`, `$((expr))`, `<(list)`, `=(cmd)`, `@{u}`). A manual writes the same
# construct with its own placeholders (`${#parameter}`, `${parameter:-word}`, `=(...)`), so
# both are known by their shape (`shapes`): each name, and an ellipsis, read as "x".
_SHAPE_START = re.compile(r"[$<>=@]+[({]")
_SHAPE_NAME = re.compile(r"[^\W\d]\w*|\.\.\.|…")
_OPENING = {"(": ")", "[": "]", "{": "}"}
_CLOSING = {close: open_ for open_, close in _OPENING.items()}


def _balanced(token: str) -> str:
    """`token` without the quotes, stops and unmatched brackets around it (`‘${x}’,` -> `${x}`)."""
    token = token.strip(_QUOTES).rstrip(".,;:").strip(_QUOTES)
    while token[-1:] in _CLOSING and token.count(token[-1]) > token.count(_CLOSING[token[-1]]):
        token = token[:-1].rstrip(".,;:")
    while token[:1] in _OPENING and token.count(token[0]) > token.count(_OPENING[token[0]]):
        token = token[1:]
    return token


def _token_shape(token: str) -> str | None:
    """The shape of one word of text (`${#var}` -> `${#x}`), None when it is no construct."""
    if "(" not in token and "{" not in token:
        return None  # the common word: no construct is without one
    core = _balanced(token)
    while core[:1] in _OPENING and core[-1:] == _OPENING[core[0]] and _SHAPE_START.match(core[1:]):
        core = core[1:-1]  # `($(command))`: a construct in brackets of the prose
    if _SHAPE_START.match(core) and any(ch.isalpha() or ch in ".…" for ch in core):
        return _SHAPE_NAME.sub("x", core)
    return None


def shapes(text: str) -> list[str]:
    """The constructs of `text` (`${#var}`, `<(list)`) by their shape (`${#x}`, `<(x)`), in order
    of first appearance, each once."""
    found: dict[str, None] = {}
    for token in text.split():
        if (shape := _token_shape(token)) is not None:
            found[shape] = None
    return list(found)


def shape_pieces(shape: str) -> list[str]:
    """What a text holding `shape` holds as written: its pieces between the names (`${#x}` ->
    `${#`, `}`; a symbol, which has no name, is its one piece: `$?`), for a scan to find the
    candidates of a search by symbol or shape."""
    return [piece for piece in shape.split("x") if piece]


def occurrences(text: str, term: str) -> int:
    """How often `text` holds `term`: a symbol as written (`$?`), a shape (`${#x}`) by its words'
    shapes."""
    if not any(ch.isalpha() for ch in term):
        return text.count(term)
    return sum(1 for token in text.split() if _token_shape(token) == term)


# A line that is code whatever surrounds it: a prompt, a definition, an import, a bracket, a comment,
# an assignment.
_CODE_LINE = re.compile(r"^(?:>>>|\.\.\.|\$|def |class |import |from |return\b|@|[{}\[\]#]|\w+\s*=[^=])")


def reads_as_prose(text: str) -> bool:
    """Whether an indented block reads as prose (sentences), not as code: it opens with a capital
    letter, ends with a stop, a colon or a bracket, is three quarters letters and spaces, and no
    line of it is code (`_CODE_LINE`). pydoc and reST indent descriptions so; an AsciiDoc page
    indents a note under a list item so."""
    if text.startswith(("```", "~~~")) or not text[:1].isalpha() or not text[:1].isupper():
        return False
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if any(_CODE_LINE.match(line) for line in lines):
        return False
    letters = sum(ch.isalpha() or ch.isspace() for ch in text)
    return text.rstrip().endswith((".", ":", ")")) and letters >= 0.75 * len(text)
