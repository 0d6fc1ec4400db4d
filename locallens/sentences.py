"""Conservative sentence splitting for markdown-ish text (docs/behaviour.md#sentence-splitting).

"Conservative" means: never cut what a reader sees as one unit. When in doubt we keep text
together, because a unit that is too long only costs a few tokens after trimming, while a unit cut
in half loses its meaning (and its score) on both sides.

The walk is line based and linear:

1. Fenced code blocks (``` or ~~~, closed by a fence of the same character at least as long, or
   running to the end of the text when never closed) are atomic units.
2. Blank lines end paragraphs.
3. Structural lines (table rows: ``|`` with another ``|`` after it, or alone; bullets
   ``-``/``*``/``+`` and the plain-text bullets ``•``/``◦``/``‣``/``⁃``/``▪``, numbered items ``1.``/``1)``/``1.)``, lettered items
   ``a)``/``a.)`` (not ``a.``: a wrapped line may start with ``p. ej.``), blockquotes ``>``) and ATX
   headings (``#``) are one unit per line. An indented line right after a list item is that
   item's continuation (a wrapped bullet), not a new unit. A list item is never cut at its
   sentences, only at an inline enumeration (rule 4).
4. Inline enumerations: a list item or a prose run that starts with a marker (``1.``, ``1)``,
   ``1.)``, ``a.``, ``a)``, optionally after a bullet: ``• 9.``, ``⁃9.``) is cut before every
   later marker of the same style that carries the next number or letter (``1) one 2) two``),
   each marker staying on its item. A number after a label noun or a number abbreviation
   (``version 2.``, ``p. 2.``) is not a marker. The marker's own dot never ends a sentence. In a
   prose run each item is then split into sentences like any prose.
5. Everything else is prose: consecutive prose lines are joined into one run and split after
   ``.``/``!``/``?`` (and runs such as ``?!``), plus any closing quotes or brackets, when
   whitespace follows and the next character is an opener (``" ( ¿ ¡ “ « 「 『 （`` ...) or a
   letter that is not lower case: upper case in any cased script, or any letter of a script
   without case (Hangul, kana, Han, ...), so ``회의는 월요일입니다. 자료를 ...`` is two sentences.
   A lone ``!`` or ``?`` that ends a word of no letter or digit (a shell's ``$?``, ``($!)``) is
   the symbol's, not an end.
6. Chinese and Japanese ends: the fullwidth ``。！？｡`` (and a single ``．``, unless a digit
   precedes it or a digit or a cased letter follows it: ``３．５``, ``ｗｗｗ．ｅｘａｍｐｌｅ``) end a
   sentence with no space after them and whatever comes next (CJK has no case); runs such as ``！？`` and closing marks (``」』）”’】》`` ...) stay on the
   sentence. A mark followed by closers and then straight by more text (``「資料は？」と聞かれた``,
   ``“走吧。”他说``) closes a quotation inside the sentence, not the sentence; so does ``！``/``？``
   followed straight by the quotative ``と``/``って``.
7. Dots that do not end a sentence are protected:
   - Ellipses (``..``, ``...``, ``…``, and the spaced ``. . .``) are inside a sentence; a fourth
     dot is the period after an ellipsis and ends it (``that.... She``, ``a period . . . . Next``),
     and a period followed by a spaced ellipsis ends its sentence, the ellipsis opening the next
     one (``compounds. . . . The practice``).
   - Abbreviations (English and Spanish) by kind. Words that introduce what follows (``e.g.``,
     ``i.e.``, ``p. ej.``, ``cf.``, ``vs.``, ``vol.``, ``pág.``, ``approx.``) never end one.
     Titles (``Mr.``, ``Dr.``, ``St.``, ``Sr.``, ``Dra.``) end one only before a personal
     pronoun (``ya es Dra. Ella ...``). The others (``etc.``, ``Inc.``, ``Co.``, ``Jr.``,
     ``et al.``) and dotted acronyms (``U.S.``, ``EE. UU.``, ``a.m.``, ``p. m.``, ``Ph.D.``) end
     one only before a word that starts sentences and never names anything: a pronoun, an
     article, a demonstrative, a question word or a title (``in the U.S. How ...``, ``& Co. It
     ...``, ``etc. El resto ...``, ``6 P.M. Mr. Smith``), so ``U.S. Government``, ``etc. Todo``
     and ``a.m. Then`` stay together. And a sentence that so far is only a short introductory
     phrase (a preposition and at most two more words before the abbreviation: ``At 5 a.m.``,
     ``A las 5 p. m.``, ``En EE. UU.``) never ends at an abbreviation.
   - Initials (``J. Smith``, ``John F. Kennedy``, ``J. R. R. Tolkien``), unless the letter
     follows a label noun (``Sentence A.``, ``plan B.``); an ``I`` after a lower-case word is
     the pronoun when a sentence starter follows (``you and I. Did you``).
   - ``No.`` (and ``Nº.``, ``Núm.``...) before a number or an opener.
   - Dots inside versions, decimals and IP addresses (``v1.2.3``, ``3.14``, ``192.168.1.1``)
     are never followed by whitespace, so rule 5 never cuts there.

Units are slices of the input, stripped at both ends and otherwise untouched, so that joining
the units (with any whitespace) gives back every non-whitespace character in order.
"""

from __future__ import annotations

import heapq
import re

__all__ = ["ABBREVIATIONS", "LABEL_WORDS", "split_chunk_prefix", "split_sentences"]

# --------------------------------------------------------------------------------------------
# The `[Doc: ...]` prefix (docs/behaviour.md#sentence-splitting, rule 8)
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


def fence_opener(line: str) -> re.Match[str] | None:
    """`line` as a code fence that may open a block (group 1 the fence, group 2 its info string:
    "" for a bare fence, which may also close one), or None when it is none."""
    opener = _FENCE_OPEN.fullmatch(line)
    if opener is None or (opener.group(1)[0] == "`" and "`" in opener.group(2)):
        return None
    return opener


_HEADING = re.compile(r" {0,3}#{1,6}(?:\s|$)")
# Thematic break or setext underline: `---`, `***`, `___`, `===` (spaces allowed between marks).
_RULE = re.compile(r" {0,3}([-*_=])[ \t]*(?:\1[ \t]*){2,}\s*$")
# A table row has a cell boundary: its leading `|` and at least one more. A line that only starts
# with `|` is a gutter, as pydoc draws a class body (` |  append(self, x)` / ` |      Add x ...`):
# prose, its wrapped lines joined like any prose; a line holding nothing but the gutter stays a
# unit of its own, so it parts paragraphs as a blank line would. Taking every such line for a
# table row cut each wrapped line of a docstring into a unit of its own
# (docs/decisions.md#trimming-defaults).
_TABLE = re.compile(r"\s*\|(?:.*\||\s*$)")
_QUOTE = re.compile(r"\s*>")
# Bullets need a space (or the end of the line) after the mark, so `-5 °C`, `+1` and `**bold**`
# stay prose. Besides markdown's three, the bullets of plain text (PDF and word processor
# exports). Numbered items: up to 9 digits, then `.`, `)` or `.)`, then a space or the end.
_BULLET_MARKS = "-*+•◦‣⁃▪"
_LIST_ITEM = re.compile(r"\s*(?:[" + re.escape(_BULLET_MARKS) + r"]|\d{1,9}(?:[.)]|\.\)))(?:\s|$)")

# A lettered item's letter and what follows it (`a)`, `a.)`), tested on every line: sets are
# the fastest test CPython has.
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_PAREN_OR_DOT = frozenset(").")

# Line kinds.
_PROSE, _ITEM, _LINE_UNIT, _RULE_LINE = range(4)


# First characters (after indentation) of every line that is not plain prose: a cheap test that
# spares the regular expressions for the vast majority of lines.
_MARKUP_STARTS = frozenset("_=#|>0123456789" + _BULLET_MARKS)


def _classify(line: str, stripped: str, first: str) -> int:
    """Kind of one non-blank line outside code fences, given without its indentation
    (`stripped`) and its first character (`first`)."""
    if first not in _MARKUP_STARTS:
        # A lettered item, `a)` or `a.)` (not `a.`: a wrapped line may start with `p. ej.`).
        if first in _LETTERS and stripped[1:2] in _PAREN_OR_DOT:
            mark = stripped[1:3] if stripped[1] == "." else stripped[1:2]
            if mark in (")", ".)") and stripped[len(mark) + 1 : len(mark) + 2] in ("", " ", "\t", "\r"):
                return _ITEM
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
# Inline enumerations (rule 4)
# --------------------------------------------------------------------------------------------

# A marker: an optional bullet, a number (up to 3 digits) or a lower-case ASCII letter, then
# `.`, `)` or `.)`, then whitespace. Upper-case letters are left out: `A. Smith` is an initial.
_MARKER = r"(?:[" + re.escape(_BULLET_MARKS) + r"][ \t]*)?(\d{1,3}|[a-z])(\.\)|[.)])(?=\s)"
_ENUM_FIRST = re.compile(r"[ \t]*" + _MARKER)
# First characters of a run that may start with a marker (the cheap gate before the regex).
_ENUM_STARTS = frozenset(" \t0123456789abcdefghijklmnopqrstuvwxyz" + _BULLET_MARKS)


def _may_enumerate(item: str) -> bool:
    """A cheap test of a list item's line (without indentation): can a marker open it? A number
    (`1.`, `1)`), or a bullet then a digit or a lower-case letter (`- a)`, `• 9.`)."""
    first = item[0]
    if first.isdigit() or "a" <= first <= "z":  # `1.`, `1)`, `a)`
        return True
    after = item[2:3]
    if after in (" ", "\t"):
        after = item[1:].lstrip()[:1]
    return after.isdigit() or "a" <= after <= "z"


def _successor(value: str) -> str:
    """The marker value after `value`: `9` → `10`, `a` → `b` (nothing after `z`)."""
    if value.isdigit():
        return str(int(value) + 1)
    return chr(ord(value) + 1) if value != "z" else ""


def _enumeration(run: str) -> list[tuple[int, int]] | None:
    """`(item start, marker end)` of every item when `run` is an inline enumeration, else None.

    Linear: after the first marker, `str.find` looks for the next one (`2.` after `1.`), and every
    occurrence is checked once: a whitespace (or a bullet after whitespace) before it, whitespace
    after it, and no word before it that takes a number (`version 2.`).
    """
    first = _ENUM_FIRST.match(run)
    if first is None:
        return None
    items = [(0, first.end())]
    expected, style = _successor(first.group(1)), first.group(2)
    size = len(run)
    pos = first.end()
    while expected:
        needle = expected + style
        pos = run.find(needle, pos)
        if pos < 0:
            break
        end = pos + len(needle)
        start = _marker_start(run, pos)
        if start < 0 or end >= size or not run[end].isspace():
            pos += 1
            continue
        before = run[max(0, start - _LOOKBACK) : start].rsplit(None, 1)
        if before and before[-1].strip(_TOKEN_OPENERS + _CLOSERS + ",;:.").lower() in _NUMBERED:
            pos += 1  # `version 2.`, `p. 2.`: a number that belongs to the word before it
            continue
        items.append((start, end))
        expected, pos = _successor(expected), end
    return items


def _marker_start(run: str, pos: int) -> int:
    """Where the marker whose value is at `run[pos]` starts (its bullet, if any), or -1 when
    `run[pos]` does not start a token (`12.` is not `2.`)."""
    if pos == 0:
        return -1
    before = run[pos - 1]
    if before in _BULLET_MARKS:  # `⁃10.`
        return pos - 1 if pos > 1 and run[pos - 2].isspace() else -1
    if not before.isspace():
        return -1
    bullet = pos - 1
    while bullet > 0 and run[bullet - 1] in " \t":
        bullet -= 1
    if bullet > 0 and run[bullet - 1] in _BULLET_MARKS and (bullet == 1 or run[bullet - 2].isspace()):
        return bullet - 1  # `• 10.`
    return pos


# --------------------------------------------------------------------------------------------
# Prose boundaries
# --------------------------------------------------------------------------------------------

# Closing marks that stay with the sentence they close: `He said "stop." Then` cuts after `"`.
_CLOSERS = "\"'”’»)]」』）］｝〕〉》】〗〙〛〞＂＇"
# Openers that may start a sentence besides an upper-case or uncased letter (rule 5 above).
_OPENERS = frozenset('"(¿¡“«「『（［｛〔〈《【〖〘〚〝＂')

# A candidate boundary: a run of terminal punctuation, any closers, then whitespace, then a
# letter or an opener (whether the letter is lower case is checked in Python, which knows every
# script's case; `re` has no \p{Ll}). The look-behind makes a match start only at the first
# character of a punctuation run, so a long run of dots is scanned a bounded number of times
# (linear time, no catastrophic backtracking): a megabyte of dots is one failed attempt.
_CANDIDATE = re.compile(
    r"(?<![.!?…。！？｡．])([.!?…]+)["
    + re.escape(_CLOSERS)
    + r"]*\s+(?=[^\W\d_]|["
    + re.escape("".join(sorted(_OPENERS)))
    + r"])"
)
# A Chinese/Japanese end (rule 6): fullwidth marks (any ASCII `!`, `?`, dots or ellipses mixed
# in after the first, so that `_CANDIDATE`, whose look-behind skips them, never starts inside the
# run), then closers. Nothing has to follow, so a match never fails half-way and never
# backtracks.
_CJK_MARKS = "。！？｡．"
_CJK_END = re.compile(r"([" + _CJK_MARKS + r"][" + _CJK_MARKS + r"!?.…‥]*)([" + re.escape(_CLOSERS) + r"]*)")

# Abbreviations whose dot does not end a sentence, compared case-insensitively without the dot,
# in three kinds (rule 7). Only words that are usually followed by a capitalised word need to be
# here: abbreviations that come before numbers (`p. 5`, `art. 3`, `No. 7`) are safe anyway,
# because a digit never starts a sentence under rule 5. Words that often end real sentences
# are left out on purpose (English `art`, `min`; Spanish `mar`, `col`), so that their dot keeps
# ending sentences.
#
# Titles: always followed by a name, so only a personal pronoun after them starts a sentence.
_TITLES = frozenset(
    {
        # en
        "mr",
        "mrs",
        "ms",
        "mx",
        "dr",
        "drs",
        "prof",
        "st",
        "mt",
        "capt",
        "lt",
        "sgt",
        "gen",
        "gov",
        "sen",
        "rev",
        "hon",
        "messrs",
        # es (`Sr.` is the Spanish `Señor`, a title; the English `Sr.` "Senior" ends in the same way
        # before a pronoun: `George Bush Sr. He ...`)
        "sr",
        "sra",
        "sras",
        "srta",
        "srtas",
        "sres",
        "dra",
        "dras",
        "profa",
        "ing",
        "lic",
        "arq",
        "gral",
        "sto",
        "sta",
        "excmo",
        "excma",
        "ilmo",
        "ilma",
    }
)
# Introducers: what follows them belongs to the same sentence, whatever it is.
_INTRODUCERS = frozenset(
    {
        "vs",
        "cf",
        "viz",
        "approx",
        "aprox",
        "ej",
        "vol",
        "vols",
        "fig",
        "figs",
        "eq",
        "eqs",
        "pág",
        "págs",
        "pag",
        "pags",
        "núm",
        "núms",
        "num",
        "nº",
        "tel",
        "av",
        "avda",
        "apdo",
    }
)
# The others (postpositive: they close a name or a list) end a sentence before a starter word.
_POSTPOSITIVE = frozenset(
    {
        "etc",
        "al",
        "jr",
        "snr",
        "ed",
        "eds",
        "inc",
        "ltd",
        "co",
        "corp",
        "bros",
        "cía",
        "cia",
        "dept",
        "dpto",
        "depto",
        "admón",
        "ud",
        "uds",
        "vd",
        "vds",
    }
)
ABBREVIATIONS: frozenset[str] = _TITLES | _INTRODUCERS | _POSTPOSITIVE
# Dotted acronyms that introduce, like the introducers (compared lower-case, spaces removed).
_DOTTED_INTRODUCERS = frozenset({"e.g.", "i.e.", "p.ej.", "p.e.", "v.gr.", "a.k.a.", "n.b."})
# Case-sensitive abbreviations that protect only before a non-letter (a number or an opener):
# `No. (5)` is an abbreviation, but `¿Vienes? No. Me quedo.` is three sentences.
_NUMBER_ABBREVIATIONS = frozenset({"No", "Nos", "Nº", "Núm", "Nro", "Nros"})

# Nouns that name things by a letter: after one of them a single capital plus dot is a label that
# may end a sentence (`Sentence A.`, `Plan B.`, `Anexo C.`), not a name's initial.
LABEL_WORDS: frozenset[str] = frozenset(
    {
        # en
        "sentence",
        "plan",
        "appendix",
        "annex",
        "type",
        "group",
        "class",
        "vitamin",
        "option",
        "part",
        "section",
        "figure",
        "table",
        "model",
        "phase",
        "step",
        "level",
        "block",
        "zone",
        "item",
        "point",
        "case",
        "version",
        "letter",
        "exhibit",
        "schedule",
        "building",
        "room",
        "gate",
        "row",
        "column",
        "grade",
        "team",
        "side",
        "track",
        "series",
        "category",
        "variant",
        "scenario",
        "example",
        "question",
        "answer",
        "list",
        "box",
        "wing",
        "floor",
        "unit",
        # es
        "frase",
        "oración",
        "anexo",
        "apéndice",
        "tipo",
        "grupo",
        "clase",
        "vitamina",
        "opción",
        "parte",
        "sección",
        "figura",
        "tabla",
        "modelo",
        "fase",
        "paso",
        "nivel",
        "bloque",
        "zona",
        "punto",
        "caso",
        "versión",
        "letra",
        "edificio",
        "sala",
        "puerta",
        "fila",
        "columna",
        "equipo",
        "lado",
        "serie",
        "categoría",
        "variante",
        "escenario",
        "ejemplo",
        "pregunta",
        "respuesta",
        "lista",
        "caja",
        "ala",
        "planta",
        "unidad",
        "cara",
        "hoja",
        "pista",
    }
)
# Words after which a number is that word's number, not an enumeration marker (rule 4).
_NUMBERED = _INTRODUCERS | frozenset(
    {
        "version",
        "step",
        "page",
        "chapter",
        "section",
        "part",
        "phase",
        "level",
        "figure",
        "table",
        "appendix",
        "ch",
        "no",
        "nos",
        "nro",
        "p",
        "pp",
        "art",
        "v",
        "ver",
        "versión",
        "paso",
        "página",
        "capítulo",
        "cap",
        "sección",
        "parte",
        "fase",
        "nivel",
        "figura",
        "tabla",
        "número",
    }
)

# Words that start sentences and never name anything (rule 7), compared case-sensitively: after
# an abbreviation of the third kind or a dotted acronym they mean a new sentence.
_PRONOUNS = frozenset(
    {
        "I",
        "He",
        "She",
        "It",
        "We",
        "They",
        "You",
        "Yo",
        "Él",
        "Ella",
        "Ellos",
        "Ellas",
        "Nosotros",
        "Nosotras",
        "Vosotros",
        "Vosotras",
        "Usted",
        "Ustedes",
    }
)
_STARTERS = _PRONOUNS | frozenset(
    {
        # en: articles, demonstratives, possessives, question words
        "A",
        "An",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "There",
        "Its",
        "His",
        "Her",
        "Our",
        "Their",
        "My",
        "Your",
        "How",
        "However",
        "What",
        "When",
        "Where",
        "Who",
        "Why",
        "Which",
        "Did",
        "Does",
        # es
        "El",
        "La",
        "Los",
        "Las",
        "Lo",
        "Un",
        "Una",
        "Unos",
        "Unas",
        "Este",
        "Esta",
        "Esto",
        "Estos",
        "Estas",
        "Ese",
        "Esa",
        "Eso",
        "Esos",
        "Esas",
        "Mi",
        "Mis",
        "Tu",
        "Tus",
        "Su",
        "Sus",
        "Nuestro",
        "Nuestra",
        "Nuestros",
        "Nuestras",
        "Se",
        "Nos",
        "Me",
        "Te",
        "Hay",
        "Cómo",
        "Qué",
        "Cuándo",
        "Dónde",
        "Quién",
        "Quiénes",
        "Cuál",
        "Cuáles",
        # titles: a name's title after an abbreviation starts the next sentence (`6 P.M. Mr. X`)
        "Mr",
        "Mrs",
        "Ms",
        "Mx",
        "Dr",
        "Prof",
        "Sr",
        "Sra",
        "Srta",
        "Dra",
        "Profa",
    }
)
# A sentence that so far holds only one of these and at most two more words is an introductory
# phrase (`At 5 a.m. Mr. Smith went ...`, `En EE. UU. El ...`): it does not end at an abbreviation.
_PREPOSITIONS = frozenset(
    {
        "at",
        "by",
        "on",
        "in",
        "from",
        "since",
        "until",
        "till",
        "before",
        "after",
        "around",
        "during",
        "near",
        "through",
        "a",
        "en",
        "desde",
        "hasta",
        "hacia",
        "sobre",
        "tras",
        "durante",
        "antes",
        "después",
        "para",
        "por",
        "con",
        "entre",
        "de",
    }
)

# A dotted acronym once its final dot is added back: e.g. i.e. U.S. EE.UU. p.ej. a.m. Ph.D.
_DOTTED = re.compile(r"(?:[^\W\d_]{1,3}\.){2,}")
# A word (letters only), to read the word after a boundary.
_WORD = re.compile(r"[^\W\d_]+")
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


def _is_acronym_part(token: str) -> bool:
    """One letter (`p` of `p. m.`, `U` of `U. S.`) or a doubled capital (`EE` of `EE. UU.`)."""
    return token.isalpha() and (len(token) == 1 or (len(token) == 2 and token[0] == token[1] and token.isupper()))


def _next_word(text: str, pos: int) -> str:
    """The word at `text[pos]`, or "" when none starts there or it runs on (`I-95`, `A4`)."""
    match = _WORD.match(text, pos)
    if match is None:
        return ""
    tail = text[match.end() : match.end() + 1]
    if tail == "-" or tail.isdigit():
        return ""
    return match.group()


def _introductory(text: str, sentence_start: int, token_start: int) -> bool:
    """Whether the sentence so far, up to the abbreviation, is a preposition and at most two more
    words (`At 5 a.m.`, `A las 5 p. m.`, `In the U.S.`)."""
    if token_start - sentence_start > 40:
        return False
    words = text[sentence_start:token_start].split()
    return 0 < len(words) <= 3 and words[0].lstrip(_TOKEN_OPENERS).lower() in _PREPOSITIONS


def _period_after_ellipsis(run: str) -> bool:
    """`....`, `…`+`.`: an ellipsis then the period that ends the sentence (rule 7)."""
    return run[-1] == "." and run.count(".") + 3 * run.count("…") >= 4


def _opens(text: str, sentence_start: int, pos: int) -> bool:
    """Whether only whitespace stands between the start of the sentence and `pos` (bounded)."""
    return pos - sentence_start < 8 and not text[sentence_start:pos].strip()


def _spaced_dots_end(text: str, start: int, after_pos: int, sentence_start: int) -> int:
    """Where a `.` preceded by a space cuts (-1: nowhere): the spaced ellipsis of rule 7.

    `start` is the dot; the dots before it, each followed by one space, are counted (a bounded
    walk: each step consumes two characters of a run the regex will not visit again).
    """
    first, dots = start, 1
    while first - 2 >= sentence_start and text[first - 1] == " " and text[first - 2] == ".":
        first -= 2
        dots += 1
    if dots < 3:
        return after_pos  # a lone dot after a space: nothing to protect
    if _opens(text, sentence_start, first):
        return -1  # `. . . The practice`: an ellipsis that opens the sentence
    if first > 0 and not text[first - 1].isspace():
        # `compounds. . . . The`: the period ends its sentence, the ellipsis opens the next one;
        # `word. . . The` is an ellipsis written from spaced dots.
        return first + 1 if dots >= 4 else -1
    return after_pos if dots >= 4 else -1  # ` . . . .` ends, ` . . .` is inside


def _dot_end(text: str, start: int, after_pos: int, sentence_start: int) -> int:
    """Where the single `.` at `text[start]` cuts: `after_pos`, elsewhere, or -1 for nowhere.

    `after_pos` is where the next sentence would start (after the dot, closers and whitespace);
    `sentence_start` is where the current sentence starts.
    """
    window = text[max(sentence_start, start - _LOOKBACK) : start]
    if not window or window[-1].isspace():
        return _spaced_dots_end(text, start, after_pos, sentence_start)
    token = window.rsplit(None, 1)[-1].lstrip(_TOKEN_OPENERS)
    if not token:
        return after_pos
    token_start = start - len(token)

    lower = token.lower()
    if lower in ABBREVIATIONS:
        if lower in _INTRODUCERS:
            return -1
        starters = _PRONOUNS if lower in _TITLES else _STARTERS
        if _next_word(text, after_pos) in starters and not _introductory(text, sentence_start, token_start):
            return after_pos
        return -1
    if token in _NUMBER_ABBREVIATIONS:
        return after_pos if text[after_pos].isalpha() else -1
    if len(token) > 2 and "." not in token:
        return after_pos  # an ordinary word: none of the tests below can apply (the hot path)

    tokens = window.rsplit(None, 2)
    previous = tokens[-2] if len(tokens) > 1 else ""
    spaced = ""  # `p. m.`, `EE. UU.`, `U. S.`: a dotted acronym written with spaces
    if previous.endswith(".") and _is_acronym_part(token):
        part = previous.lstrip(_TOKEN_OPENERS)[:-1]
        if part and part.isalpha() and _is_acronym_part(part):
            spaced = part + "." + token + "."
            token_start = text.rfind(previous, sentence_start, token_start)
    if spaced or _DOTTED.fullmatch(token + "."):
        if (spaced or token + ".").lower() in _DOTTED_INTRODUCERS:
            return -1
        if _next_word(text, after_pos) in _STARTERS and not _introductory(text, sentence_start, token_start):
            return after_pos
        return -1

    if _is_initial(token):
        # An initial (`J. Smith`, `John F. Kennedy`) versus a one-letter label that ends a
        # sentence (`Sentence A.`, `Plan B.`, `Vitamina C.`). Conservatively it is an initial,
        # unless the word before it is a known label noun and no further initial follows
        # (`J. R. R. Tolkien`). The trimming examples rely on `Sentence A. Sentence B.` splitting
        # (docs/behaviour.md#trimming-examples).
        if _is_initial(text[after_pos]) and text[after_pos + 1 : after_pos + 2] == ".":
            return -1
        word = previous.strip(_TOKEN_OPENERS + _CLOSERS + ",;:")
        if word.lower() in LABEL_WORDS:
            return after_pos
        if token == "I" and word[:1].islower() and _next_word(text, after_pos) in _STARTERS:
            return after_pos  # `you and I. Did you ...`: the pronoun, not an initial
        return -1
    if len(token) == 2 and _is_acronym_part(token):
        following = text[after_pos : after_pos + 3]
        if following[2:] == "." and _is_acronym_part(following[:2]):
            return -1  # the `EE.` of `EE. UU.`
    return after_pos


# What a symbol's `!` or `?` may follow in its word (`$?`, `$!`, `-?`): no letter, digit or mark of
# a sentence's end, and at least one such character (`...?` and a lone `?` end sentences).
_SYMBOL_MARK_WORD = re.compile(r"[^\w\s.!?…]+")


def _symbol_mark(run: str, start: int) -> bool:
    """Whether the `!` or `?` at `run[start]` ends a symbol written in the text (`$?`, `($!)`),
    a word of no letter or digit, rather than a sentence."""
    before = run[max(0, start - _LOOKBACK) : start]
    if not before or before[-1].isspace():
        return False
    return bool(_SYMBOL_MARK_WORD.fullmatch(before.rsplit(None, 1)[-1].lstrip(_TOKEN_OPENERS)))


def _latin_end(run: str, match: re.Match[str], sentence_start: int, protect: int) -> int:
    """Where a `_CANDIDATE` match cuts (-1: nowhere)."""
    after_pos = match.end()
    following = run[after_pos]
    if following.islower() or not (following.isalpha() or following in _OPENERS):
        # `etc. y más`, `e.g. foo`: a lower-case continuation; `5. ²`: not a letter (the
        # look-ahead lets through whatever `\w` holds). Upper-case and uncased letters pass.
        return -1
    start = match.start(1)
    if start < protect:
        return -1  # the dot of an enumeration marker (`a. The first item`)
    punct = match.group(1)
    if "!" in punct or "?" in punct:
        if len(punct) == 1 and _symbol_mark(run, start):
            return -1  # `($?) Expands to ...`: the shell's `$?`, not a question's end
        return after_pos  # `!`, `?`, `?!`, `...?` end a sentence
    if punct != ".":
        if _opens(run, sentence_start, start):
            return -1  # `.... Then`: an ellipsis that opens the sentence
        return after_pos if _period_after_ellipsis(punct) else -1
    return _dot_end(run, start, after_pos, sentence_start)


def _cjk_end(run: str, match: re.Match[str]) -> int:
    """Where a `_CJK_END` match cuts (-1: nowhere)."""
    marks, closers = match.group(1), match.group(2)
    end = match.end()
    following = run[end : end + 1]
    if not marks.strip("．"):
        # Fullwidth dots: `３．５`, `Ｖｅｒ．２`, `ｗｗｗ．ｅｘａｍｐｌｅ` are not ends, nor is `．．．`.
        if len(marks) > 1 or run[match.start() - 1 : match.start()].isdigit():
            return -1
        if following.isdigit() or following.islower() or following.isupper():
            return -1
    if not following or following.isspace() or following in _OPENERS:
        return end
    if closers:
        return -1  # `「資料は？」と聞かれた`: a quotation inside the sentence
    if marks[-1] in "！？!?" and (following == "と" or run.startswith("って", end)):
        return -1  # `本当？と聞いた`: a quoted question without brackets
    return end


def _match_start(match: re.Match[str]) -> int:
    return match.start()


def _has_cjk_marks(text: str) -> bool:
    """Whether `text` holds any mark of rule 6 (one test per text, not per run: `str.find`
    answers at once for a Latin-1 string, whose characters all lie below the marks)."""
    return not text.isascii() and ("。" in text or "．" in text or "！" in text or "？" in text or "｡" in text)


def _split_run(run: str, protect: int, units: list[str], cjk: bool) -> None:
    """Split one prose run (or one enumeration item of it) into sentences, appending them.

    Dots before `protect` (an enumeration marker) never end a sentence; `cjk` says whether the
    text may hold CJK marks (when it does not, only `_CANDIDATE` is searched).
    """
    cut = 0
    if not cjk or not _has_cjk_marks(run):
        for match in _CANDIDATE.finditer(run):
            # `_latin_end`, inlined for the hot path.
            pos = match.end()
            following = run[pos]
            if following.islower() or not (following.isalpha() or following in _OPENERS):
                continue
            punct = match.group(1)
            if punct == "." and match.start(1) >= protect:
                pos = _dot_end(run, match.start(1), pos, cut)
            elif punct != ".":
                pos = _latin_end(run, match, cut, protect)
            else:
                continue
            if pos > cut:
                piece = run[cut:pos].strip()
                if piece:
                    units.append(piece)
                cut = pos
    else:
        # Both kinds of candidates, in order of position (lazily: a megabyte of CJK sentences
        # never builds a list of matches).
        for match in heapq.merge(_CANDIDATE.finditer(run), _CJK_END.finditer(run), key=_match_start):
            pos = _cjk_end(run, match) if match.re is _CJK_END else _latin_end(run, match, cut, protect)
            if pos > cut:
                piece = run[cut:pos].strip()
                if piece:
                    units.append(piece)
                cut = pos
    piece = run[cut:].strip()
    if piece:
        units.append(piece)


def _split_prose(text: str, start: int, end: int, units: list[str], cjk: bool) -> None:
    """Split the prose run `text[start:end]` into sentences, appending the stripped pieces."""
    run = text[start:end]
    items = _enumeration(run) if run[:1] in _ENUM_STARTS else None
    if items is None:
        _split_run(run, 0, units, cjk)
        return
    bounds = [item_start for item_start, _ in items[1:]] + [len(run)]
    for (item_start, marker_end), item_end in zip(items, bounds, strict=True):
        _split_run(run[item_start:item_end], marker_end - item_start, units, cjk)


def _split_item(text: str, start: int, end: int, units: list[str], marked: bool) -> None:
    """A list item is one unit, or one per item when it is an inline enumeration (rule 4).

    `marked`: whether the item may open with an enumeration marker (see `_may_enumerate`).
    """
    piece = text[start:end]
    items = _enumeration(piece) if marked else None
    if items is None or len(items) == 1:
        _emit(piece, units)
        return
    bounds = [item_start for item_start, _ in items[1:]] + [len(piece)]
    for (item_start, _), item_end in zip(items, bounds, strict=True):
        _emit(piece[item_start:item_end], units)


# --------------------------------------------------------------------------------------------
# The splitter
# --------------------------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Split markdown-ish text into sentence units (rules in the module docstring).

    Never returns empty strings; every unit is stripped and is otherwise an exact slice of the
    input.

    >>> split_sentences("El sistema soporta multi-tenancy (v1.2.3). Véase RFC 3986...")
    ['El sistema soporta multi-tenancy (v1.2.3).', 'Véase RFC 3986...']
    """
    units: list[str] = []
    cjk = _has_cjk_marks(text)

    # Pending spans, as [start, end) offsets into `text`: a prose run and a list item (with its
    # indented continuation lines). At most one of them is open at any time.
    prose: list[int] | None = None
    item: list[int] | None = None  # [start, end, 1 if it may open with a marker else 0]

    def flush() -> None:
        nonlocal prose, item
        if prose is not None:
            _split_prose(text, prose[0], prose[1], units, cjk)
            prose = None
        if item is not None:
            _split_item(text, item[0], item[1], units, item[2] == 1)
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
            opener = fence_opener(line)
            if opener:
                flush()
                fence_char, fence_len = opener.group(1)[0], len(opener.group(1))
                fence_start = line_start
                continue

        kind = _classify(line, stripped, first)
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
            item = [line_start, line_end, 1 if _may_enumerate(stripped) else 0]
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
