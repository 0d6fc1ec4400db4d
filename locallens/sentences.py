"""Conservative sentence splitting for markdown-ish text (SPEC §3, seed 02 `splitSentences`).

"Conservative" means: never cut what a reader sees as one unit. When in doubt we keep text
together, because a unit that is too long only costs a few tokens after trimming, while a unit cut
in half loses its meaning (and its score) on both sides.

The walk is line based and linear:

1. Fenced code blocks (``` or ~~~, closed by a fence of the same character at least as long, or
   running to the end of the text when never closed) are atomic units.
2. Blank lines end paragraphs.
3. Structural lines (table rows ``|``, bullets ``-``/``*``/``+``, numbered items ``1.``/``1)``,
   blockquotes ``>``) and ATX headings (``#``) are one unit per line. An indented line right
   after a list item is that item's continuation (a wrapped bullet), not a new unit.
4. Everything else is prose: consecutive prose lines are joined into one run and split after
   ``.``/``!``/``?`` (and runs such as ``?!``), plus any closing quotes or brackets, when the next
   non-blank character is an upper-case letter (any script) or an opener ``" ( ¿ ¡ “ «``.
5. Dots that do not end a sentence are protected: abbreviations (English and Spanish), dotted
   acronyms (``e.g.``, ``U.S.``, ``EE.UU.``, ``p.ej.``, ``a.m.``), initials (``J. Smith``) and
   ellipses. Dots inside versions, decimals and IP addresses (``v1.2.3``, ``3.14``,
   ``192.168.1.1``) are never followed by whitespace, so rule 4 never cuts there.

Units are slices of the input, stripped at both ends and otherwise untouched, so that joining
the units (with any whitespace) gives back every non-whitespace character in order.
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "LABEL_WORDS", "split_chunk_prefix", "split_sentences"]

# --------------------------------------------------------------------------------------------
# The `[Doc: ...]` prefix (SPEC §3.6)
# --------------------------------------------------------------------------------------------

# `[Doc: name]` at the very start (after optional blank space). One level of nested brackets is
# allowed inside the name (`[Doc: notes [draft]]`); the first `]` that balances closes it, so a
# citation later on the line (`... text [1].`) is never swallowed into the prefix.
_PREFIX = re.compile(r"\A\s*(\[Doc:(?:[^\[\]\n]|\[[^\[\]\n]*\])*\])")


def split_chunk_prefix(text: str) -> tuple[str, str]:
    """Separate a leading ``[Doc: ...]`` prefix from the body: ``(prefix, body)``.

    The prefix is returned without surrounding whitespace and the body without leading
    whitespace; with no prefix the result is ``("", text)`` (the text untouched).

    >>> split_chunk_prefix("[Doc: RFC-123] Sentence A. Sentence B.")
    ('[Doc: RFC-123]', 'Sentence A. Sentence B.')
    """
    match = _PREFIX.match(text)
    if match is None:
        return "", text
    return match.group(1), text[match.end() :].lstrip()


# --------------------------------------------------------------------------------------------
# Line classification
# --------------------------------------------------------------------------------------------

# A fence opener: three or more backticks or tildes, then an optional info string. Indentation
# is accepted generously (fences inside list items are indented). CommonMark forbids backticks
# in a backtick fence's info string: "```x```" on one line is inline code, not a fence.
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})\s*")

_HEADING = re.compile(r" {0,3}#{1,6}(?:\s|$)")
# Thematic break or setext underline: `---`, `***`, `___`, `===` (spaces allowed between marks).
_RULE = re.compile(r" {0,3}([-*_=])[ \t]*(?:\1[ \t]*){2,}\s*$")
_TABLE = re.compile(r"\s*\|")
_QUOTE = re.compile(r"\s*>")
# Bullets need a space (or the end of the line) after the mark, so `-5 °C`, `+1` and `**bold**`
# stay prose. Numbered items: up to 9 digits, then `.` or `)`, then a space or the end.
_LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")

# Line kinds.
_PROSE, _ITEM, _LINE_UNIT, _RULE_LINE = range(4)


# First characters (after indentation) of every line that is not plain prose: a cheap test that
# spares the regular expressions for the vast majority of lines.
_MARKUP_STARTS = frozenset("-*_=#|>+0123456789")


def _classify(line: str, first: str) -> int:
    """Kind of one non-blank line outside code fences; `first` is its first non-blank char."""
    if first not in _MARKUP_STARTS:
        return _PROSE
    # Order matters: `- - -` and `* * *` are thematic breaks, not bullets.
    if _RULE.match(line):
        return _RULE_LINE
    if _HEADING.match(line) or _TABLE.match(line) or _QUOTE.match(line):
        return _LINE_UNIT
    if _LIST_ITEM.match(line):
        return _ITEM
    return _PROSE


# --------------------------------------------------------------------------------------------
# Prose boundaries
# --------------------------------------------------------------------------------------------

# Closing marks that stay with the sentence they close: `He said "stop." Then` cuts after `"`.
_CLOSERS = "\"'”’»)]"
# Openers that may start a sentence besides an upper-case letter (SPEC §3.4).
_OPENERS = frozenset("\"(¿¡“«")

# A candidate boundary: a run of terminal punctuation, any closers, then whitespace, then a
# letter or an opener (whether the letter is upper case is checked in Python, which knows every
# script's case; `re` has no \p{Lu}). The look-behind makes a match start only at the first
# character of a punctuation run, so a long run of dots is scanned a bounded number of times
# (linear time, no catastrophic backtracking): a megabyte of dots is one failed attempt.
_CANDIDATE = re.compile(
    r"(?<![.!?…])([.!?…]+)[" + re.escape(_CLOSERS) + r"]*\s+(?=[^\W\d_]|[\"(¿¡“«])"
)

# Abbreviations whose dot does not end a sentence, compared case-insensitively without the dot.
# Only words that are usually followed by a capitalised word need to be here: abbreviations that
# come before numbers (`p. 5`, `art. 3`, `No. 7`) are safe anyway, because a digit never starts
# a sentence under SPEC §3.4. Words that often end real sentences are left out on purpose
# (English `art`, `min`; Spanish `mar`, `col`), so that their dot keeps ending sentences.
ABBREVIATIONS: frozenset[str] = frozenset(
    {
        # titles (en)
        "mr", "mrs", "ms", "mx", "dr", "drs", "prof", "st", "mt", "jr", "sr", "snr",
        "capt", "lt", "sgt", "gen", "gov", "sen", "rev", "hon", "messrs",
        # titles (es)
        "sra", "sras", "srta", "srtas", "sres", "dra", "dras", "profa", "ing", "lic", "arq",
        "ud", "uds", "vd", "vds", "gral", "sto", "sta", "excmo", "excma", "ilmo", "ilma",
        # latin and references
        "etc", "vs", "cf", "viz", "al", "approx", "aprox", "ej", "vol", "vols", "fig", "figs",
        "eq", "eqs", "pág", "págs", "pag", "pags", "núm", "núms", "num", "nº", "tel", "ed", "eds",
        # companies and places
        "inc", "ltd", "co", "corp", "bros", "cía", "cia", "dept", "dpto", "depto", "avda", "av",
        "apdo", "admón",
    }
)
# Case-sensitive abbreviations that protect only before a non-letter (a number or an opener):
# `No. (5)` is an abbreviation, but `¿Vienes? No. Me quedo.` is three sentences.
_NUMBER_ABBREVIATIONS = frozenset({"No", "Nos", "Nº", "Núm", "Nro", "Nros"})

# Nouns that name things by a letter: after one of them a single capital plus dot is a label that
# may end a sentence (`Sentence A.`, `Plan B.`, `Anexo C.`), not a name's initial.
LABEL_WORDS: frozenset[str] = frozenset(
    {
        # en
        "sentence", "plan", "appendix", "annex", "type", "group", "class", "vitamin", "option",
        "part", "section", "figure", "table", "model", "phase", "step", "level", "block", "zone",
        "item", "point", "case", "version", "letter", "exhibit", "schedule", "building", "room",
        "gate", "row", "column", "grade", "team", "side", "track", "series", "category", "variant",
        "scenario", "example", "question", "answer", "list", "box", "wing", "floor", "unit",
        # es
        "frase", "oración", "anexo", "apéndice", "tipo", "grupo", "clase", "vitamina", "opción",
        "parte", "sección", "figura", "tabla", "modelo", "fase", "paso", "nivel", "bloque", "zona",
        "punto", "caso", "versión", "letra", "edificio", "sala", "puerta", "fila", "columna",
        "equipo", "lado", "serie", "categoría", "variante", "escenario", "ejemplo", "pregunta",
        "respuesta", "lista", "caja", "ala", "planta", "unidad", "cara", "hoja", "pista",
    }
)
# A dotted acronym once its final dot is added back: e.g. i.e. U.S. EE.UU. p.ej. a.m. Ph.D.
_DOTTED = re.compile(r"(?:[^\W\d_]{1,3}\.){2,}")
# Characters that may open a token before the word itself: `(J. Smith`, `"Dr. Who`.
_TOKEN_OPENERS = "\"'(“«¿¡[‘"
# How far back the abbreviation test looks: longer than any abbreviation and its predecessor,
# and a constant, so the test is O(1) per candidate whatever the length of the text.
_LOOKBACK = 64


def _is_upper(char: str) -> bool:
    # `istitle` covers the title-case digraphs (ǅ, ǈ, ǋ) that `isupper` rejects.
    return char.isupper() or char.istitle()


def _is_initial(token: str) -> bool:
    """A single upper-case letter: the `J` of `J. Smith`."""
    return len(token) == 1 and _is_upper(token)


def _protected(text: str, run: str, start: int, after: str) -> bool:
    """Whether the terminal run `run` at `text[start]` does NOT end a sentence.

    `after` is the text that follows the run, its closers and whitespace (at least one char).
    """
    if "!" in run or "?" in run:
        return False  # `!`, `?`, `?!`, `...?` always end a sentence
    if run != ".":
        return True  # an ellipsis (`...`, `…`, `..`) never ends a sentence: it is inside one

    window = text[max(0, start - _LOOKBACK) : start]
    if not window or window[-1].isspace():
        return False  # a lone `.` after a space: nothing to protect
    tokens = window.rsplit(None, 2)  # the last two tokens are all we need
    token = tokens[-1].lstrip(_TOKEN_OPENERS)
    if not token:
        return False

    if token.lower() in ABBREVIATIONS:
        return True
    if token in _NUMBER_ABBREVIATIONS:
        return not after[0].isalpha()
    if _DOTTED.fullmatch(token + "."):
        return True
    if _is_initial(token):
        # An initial (`J. Smith`, `John F. Kennedy`) versus a one-letter label that ends a
        # sentence (`Sentence A.`, `Plan B.`, `Vitamina C.`). Conservatively it is an initial,
        # unless the word before it is a known label noun and no further initial follows
        # (`J. R. R. Tolkien`). Seed 01 relies on `Sentence A. Sentence B.` splitting.
        if _is_initial(after[:1]) and after[1:2] == ".":
            return True
        previous = tokens[-2].strip(_TOKEN_OPENERS + _CLOSERS + ",;:") if len(tokens) > 1 else ""
        return previous.lower() not in LABEL_WORDS
    return False


def _split_prose(text: str, start: int, end: int, units: list[str]) -> None:
    """Split the prose run `text[start:end]` into sentences, appending the stripped pieces."""
    run = text[start:end]
    cut = 0
    for match in _CANDIDATE.finditer(run):
        next_char = run[match.end()]  # the look-ahead guarantees a character is there
        if not (_is_upper(next_char) or next_char in _OPENERS):
            continue  # `etc. y más`, `3. 4`, `e.g. foo`: a lower-case continuation
        if _protected(run, match.group(1), match.start(1), run[match.end() : match.end() + 2]):
            continue
        piece = run[cut : match.end()].strip()
        if piece:
            units.append(piece)
        cut = match.end()
    piece = run[cut:].strip()
    if piece:
        units.append(piece)


# --------------------------------------------------------------------------------------------
# The splitter
# --------------------------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Split markdown-ish text into sentence units (SPEC §3).

    Never returns empty strings; every unit is stripped and is otherwise an exact slice of the
    input.

    >>> split_sentences("El sistema soporta multi-tenancy (v1.2.3). Véase RFC 3986...")
    ['El sistema soporta multi-tenancy (v1.2.3).', 'Véase RFC 3986...']
    """
    units: list[str] = []

    # Pending spans, as [start, end) offsets into `text`: a prose run and a list item (with its
    # indented continuation lines). At most one of them is open at any time.
    prose: list[int] | None = None
    item: list[int] | None = None

    def flush() -> None:
        nonlocal prose, item
        if prose is not None:
            _split_prose(text, prose[0], prose[1], units)
            prose = None
        if item is not None:
            _emit(text[item[0] : item[1]], units)
            item = None

    fence_char = ""  # "`" or "~" while inside a code fence
    fence_len = 0
    fence_start = 0

    offset = 0
    for line in text.split("\n"):
        line_start, line_end = offset, offset + len(line)
        offset = line_end + 1  # past the "\n"

        if fence_char:
            # Inside a code fence: everything belongs to it until a closing fence.
            close = _FENCE_CLOSE.fullmatch(line)
            if close and close.group(1)[0] == fence_char and len(close.group(1)) >= fence_len:
                _emit(text[fence_start:line_end], units)
                fence_char = ""
            continue

        stripped = line.lstrip()
        if not stripped:
            flush()  # a blank line ends the paragraph
            continue

        first = stripped[0]
        if first in "`~":
            opener = _FENCE_OPEN.fullmatch(line)
            if opener and not (opener.group(1)[0] == "`" and "`" in opener.group(2)):
                flush()
                fence_char, fence_len = opener.group(1)[0], len(opener.group(1))
                fence_start = line_start
                continue

        kind = _classify(line, first)
        if kind == _PROSE:
            if item is not None and line[:1] in (" ", "\t"):
                item[1] = line_end  # an indented line continues the list item above it
            elif prose is not None:
                prose[1] = line_end
            else:
                flush()
                prose = [line_start, line_end]
        elif kind == _ITEM:
            flush()
            item = [line_start, line_end]
        elif kind == _RULE_LINE:
            if prose is not None:
                # A setext underline (`Title` / `=====`) closes the run it underlines.
                prose[1] = line_end
                flush()
            else:
                flush()
                _emit(line, units)
        else:  # heading, table row, blockquote line: one unit each
            flush()
            _emit(line, units)

    if fence_char:
        # An unterminated fence runs to the end of the text, as in CommonMark.
        _emit(text[fence_start:], units)
    flush()
    return units


def _emit(piece: str, units: list[str]) -> None:
    piece = piece.strip()
    if piece:
        units.append(piece)
