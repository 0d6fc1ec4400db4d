"""Script classes: the Unicode ranges of the scripts locallens treats apart from space-separated
text, as character-class bodies (`[...]` without the brackets) that both a regular expression
and SQLite's GLOB accept; the symbols of a question (`symbols`) and the constructs it writes,
by their shape (`shapes`) and the key chords it names in any notation (`chords`: "Ctrl-R",
"C-r", "^R"), which no word index holds; and whether an indented block reads as
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


def scan_alternatives(term: str) -> list[list[str]]:
    """What a text holding `term` (a symbol, a shape or a key chord) holds as written: one or
    more alternatives, each the pieces it holds all of (`shape_pieces`; a chord's notations,
    `chord_pieces`, one piece each)."""
    return [[piece] for piece in chord_pieces(term)] if is_chord(term) else [shape_pieces(term)]


def occurrences(text: str, term: str) -> int:
    """How often `text` holds `term`: a symbol as written (`$?`), a shape (`${#x}`) by its words'
    shapes, a key chord in any notation (`chord_list`)."""
    if is_chord(term):
        return chord_list(text).count(term)
    if not any(ch.isalpha() for ch in term):
        return text.count(term)
    return sum(1 for token in text.split() if _token_shape(token) == term)


# A key chord: Control or Meta (Alt) held with one letter key, which people and manuals write in
# several notations: "Ctrl-R", "Ctrl+R", "CTRL-R", "Ctrl R", "Control-R", "C-r" (Emacs and
# Readline, the Bash manual), "^R" (caret notation: a terminal's, the Z shell manual's); "Alt-F",
# "Alt+F", "Meta-F", "M-f", "^[f" (Escape, then the key). A word index reads "C-r" as "c" and "r"
# and "^R" as "r", so a question's "Ctrl-R" met none of a manual's "^R" or "C-r". `chords` reads
# each as one key: "^R" for a control chord (its letter in capitals), "M-f" for a meta chord (in
# lower case). A plural is its chord ("enough Ctrl-Ds in a row"). A caret before a capital that
# begins a word ("^TS") or in a bracket ("[^A-Z]"), and two carets ("^^DIRECTORY^^"), are no chord.
_CHORD_END = r"(?:(?<=[A-Z])s)?(?![\w-])"
_CHORD = re.compile(
    r"(?<![\w-])(?:(?i:ctrl|control)[-+]|(?i:ctrl) )(?P<c1>[A-Za-z])"
    + _CHORD_END
    + r"|(?<![\w-])(?i:alt|meta)[-+](?P<m1>[A-Za-z])"
    + _CHORD_END
    + r"|(?<![\w-])C-(?P<c2>[A-Za-z])(?![\w-])"
    + r"|(?<![\w-])M-(?P<m2>[A-Za-z])(?![\w-])"
    + r"|(?:(?<![\w^\[\\])|(?<=\^[A-Z]))\^(?P<c3>[A-Z])(?=$|[^\w]|\^|[a-z](?!\w))"
    + r"|(?<![\w^\[\\])\^\[(?P<m3>[a-z])(?!\w)"
)
_CHORD_KEY = re.compile(r"\^[A-Z]|M-[a-z]")
# What a terminal's control chord sends, by the names manuals give it (a terminal's defaults, as
# `stty` sets them): Ctrl-D ends the input (EOF, "end of file"), Ctrl-C interrupts (SIGINT; Python's
# KeyboardInterrupt), Ctrl-Z suspends (SIGTSTP). "How do I stop the shell exiting when I press
# Ctrl-D?" is answered by IGNOREEOF's "on receipt of an EOF character", which no notation of ^D
# is in.
_SENDS = {
    "^D": ("EOF", "end-of-file", "end of file", "End-of-file", "End of file"),
    "^C": ("SIGINT", "KeyboardInterrupt"),
    "^Z": ("SIGTSTP",),
}
# A scan's pieces for what a chord sends: a name's forms of its first letter's case share the rest.
_SENT_PIECES = {
    chord: tuple(dict.fromkeys(name if name.isupper() else name[1:] for name in names))
    for chord, names in _SENDS.items()
}
_SENT_LOWERED = frozenset(name.lower() for names in _SENDS.values() for name in names)
_SENT = re.compile(
    "|".join(
        rf"(?P<{'s' + chord[1]}>" + "|".join(rf"(?<![\w-]){re.escape(name)}s?(?![\w-])" for name in names) + ")"
        for chord, names in _SENDS.items()
    )
)


def _chord(found: re.Match[str]) -> str:
    control = found["c1"] or found["c2"] or found["c3"]
    return f"^{control.upper()}" if control else f"M-{(found['m1'] or found['m2'] or found['m3']).lower()}"


def chord_list(text: str) -> list[str]:
    """Every key chord `text` writes, in any notation, as its key ("^R", "M-f"), in order; then
    every control chord it names by what the chord sends (`_SENDS`: "EOF" as "^D")."""
    lowered = text.lower()
    written = [_chord(found) for found in _CHORD.finditer(text)] if _may_hold_chord(text, lowered) else []
    if not any(name in lowered for name in _SENT_LOWERED):
        return written
    return written + [f"^{found.lastgroup[1]}" for found in _SENT.finditer(text) if found.lastgroup]


def chords(text: str) -> list[str]:
    """The key chords of `text` (`chord_list`), each once."""
    return list(dict.fromkeys(chord_list(text)))


def without_chords(text: str) -> str:
    """`text` with its key chords left out (each a space): their letters are no words."""
    return _CHORD.sub(" ", text) if _may_hold_chord(text, text.lower()) else text


def _may_hold_chord(text: str, lowered: str) -> bool:
    """Whether `text` (`lowered`: in lower case) may write a key chord: a test of its marks and
    words, several times faster than `_CHORD`'s search, which it spares most texts."""
    if "^" in text or "C-" in text or "M-" in text or "ctrl" in lowered:
        return True
    return any(word in lowered for word in _CHORD_WORDS)


_CHORD_WORDS = tuple(f"{word}{mark}" for word in ("control", "alt", "meta") for mark in "-+")


def is_chord(term: str) -> bool:
    """Whether `term` is a key chord's key (`chords`: "^R", "M-f")."""
    return bool(_CHORD_KEY.fullmatch(term))


def chord_pieces(chord: str) -> list[str]:
    """What a text writing `chord` holds as written in one of its notations, one piece of each
    (`^R`, `-r`, `+R`; `^[f`, `-f`, `+F`; and what a control chord sends, `EOF`), for a scan to
    find the candidates (`chord_list` then reads them). Few pieces: a scan tests each against
    every chunk, about 2.5 ms per 3,000 chunks."""
    letter = chord[-1]
    pieces = [f"{mark}{case}" for mark in "-+" for case in (letter.lower(), letter.upper())]
    if chord.startswith("^"):
        return [chord, *pieces, *_SENT_PIECES.get(chord, ())]
    return [f"^[{letter}", *pieces]


# A line that is code whatever surrounds it: a prompt, a definition, an import, a bracket, a comment,
# an assignment.
_CODE_LINE = re.compile(r"^(?:>>>|\.\.\.|\$|def |class |import |from |return\b|@|[{}\[\]#]|\w+\s*=[^=])")


def reads_as_prose(text: str) -> bool:
    """Whether an indented block reads as prose (sentences), not as code: it opens with a capital
    letter, ends with a stop, a colon or a bracket, is three quarters letters and spaces, and no
    line of it is code (`_CODE_LINE`). pydoc and reST indent descriptions so; an AsciiDoc page
    indents a note under a list item so."""
    if not text[:1].isupper():
        return False
    return text.rstrip().endswith((".", ":", ")")) and reads_as_words(text)


def reads_as_words(text: str) -> bool:
    """Whether an indented block is words, not code, however it opens and ends: it opens with a
    letter, is three quarters letters and spaces, and no line of it is code (`_CODE_LINE`). A
    manual page made by help2man describes an option so, under it: "do not ignore entries
    starting with .", "suppress automatic printing of pattern space"."""
    if text.startswith(("```", "~~~")) or not text[:1].isalpha():
        return False
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if any(_CODE_LINE.match(line) for line in lines):
        return False
    letters = sum(ch.isalpha() or ch.isspace() for ch in text)
    return letters >= 0.75 * len(text)
