"""Answer units: the pieces of the excerpts that can carry an answer, with what belongs to them.

A unit is one of the project's sentence units (`split_sentences`: a sentence, a list item, a
table row, a fenced code block, a heading), an exact slice of its excerpt, classified by what it
is and linked to what it needs to be read:

- `kind`: "sentence", "item" (a list item), "row" (a table row), "header" (a table's first row,
  the one above its `|---|` line), "code" (a fenced block, or lines indented as code, or lines
  that start with a shell or Python prompt), "definition" (a term on its own line followed by
  its indented description, or `term::` / `term:` then the description: the unit holds both),
  "heading". A term and its description on one line, two or more spaces apart
  ("--tar-filter  filter program to pipe data through", as a manual page lays out an option
  list) is a definition too; short lines a setup line introduces are its items (a list laid out
  without bullets), not titles; a shell comment right over a `$ ` command line is a sentence
  that introduces the command, not a heading; an option or identifier on a line of its own
  over its description ("-p <period>", "HIST_IGNORE_SPACE (-g)", "fetch.prune": HTML
  definition lists and manual pages as text) is the term of the description's first sentence,
  a definition whose setup is the term line, and the next sentences carry the term too;
- `setup`: the unit that introduces this one, when a sentence ending with ":" is followed by a
  code block, a list, a table or a definition (all the items of that list, all the rows of that
  table point at it);
- `header`: for a table row, the table's header row;
- `section`: the heading the unit sits under in its excerpt ("" before any heading).

Decoration (a `|---|` line, a rule, a unit with no letter or digit) is not a unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from locallens.domain import Hit
from locallens.sentences import fence_opener, split_chunk_prefix, split_sentences
from locallens.text import reads_as_prose, reads_as_words

SENTENCE = "sentence"
ITEM = "item"
ROW = "row"
HEADER = "header"
CODE = "code"
DEFINITION = "definition"
HEADING = "heading"
# The kinds a setup line (a sentence ending with ":") introduces.
INTRODUCED = frozenset({ITEM, ROW, HEADER, CODE, DEFINITION})

_HAS_ALNUM = re.compile(r"\w")
# A labeled list's term of punctuation alone, which is no decoration: a shell's special parameter
# (`?::`, `#::`) or history designator (`!!::`) over its description.
_SYMBOL_TERM = re.compile(r"^\S{1,8}::$")
_DIGIT = re.compile(r"\d")
_HAS_SENTENCE_END = re.compile(r"[.!?]\s|[.!?]$")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ITEM_START = re.compile(r"^(?:[-*+•◦‣⁃▪]|\d{1,9}(?:[.)]|\.\))|[a-z](?:\)|\.\)))(?:\s|$)")
_PROMPT = re.compile(r"^(?:\$|>>>|\.\.\.|#!|C:\\>|PS>)\s")
_UNDERLINE = re.compile(r"^([*=~^-])\1{2,}$")
_TERM_LINE = re.compile(r"^(?P<term>[^\s].{0,80}?)(?P<colons>::?)\s*$")
# A term and its description on one line, two or more spaces apart (an option list or a
# definition list as a manual page lays it out: "--tar-filter  filter program to pipe data
# through", "ARCHIVE  archive to export"); the term does not end a sentence.
_ONE_LINE_TERM = re.compile(r"^(?P<term>[^\s|].{0,60}?[^\s.,;:!?]) {2,}(?P<desc>[^\s].*\w.*)$")
MAX_ONE_LINE_TERM_WORDS = 6
# A numbered section's title on a line of its own, as a typeset manual's text layer gives it with
# no blank line around it ("6.4 Bash Conditional Expressions", "3.6.3 Appending Redirected
# Output"): a number with a dot in it, a capital, and no stop (a table of contents' dotted leaders
# and page numbers are no title).
_NUMBERED_TITLE = re.compile(r"^\d+(?:\.\d+)+\.?\s+[A-Z][^\n.!?:;]{2,60}$")
# ... and its description says something: at least this many words ("REPOSITORY  repository to
# lock" names a placeholder, and stays a title).
MIN_ONE_LINE_DESCRIPTION_WORDS = 4
# A shell comment over the command it describes ("# keyfile: stores the key into
# ~/.config/borg/keys/" over "$ borg init --encryption=keyfile ..."), not a markdown heading.
_SHELL_COMMENT = re.compile(r"^#\s")


@dataclass(frozen=True, slots=True)
class Unit:
    """One answer unit of one excerpt (see the module docstring)."""

    text: str  # exact slice of the excerpt's content, stripped
    excerpt: int  # the excerpt's number, from 1
    index: int  # position among the excerpt's units, from 0
    kind: str
    setup: int | None = None  # index of the unit that introduces this one
    header: int | None = None  # a table row: index of its header row
    section: str = ""  # the heading above it in the excerpt, without its `#` marks
    term: str = ""  # a definition: its term
    entry: str = ""  # a field of a reference entry ("Default: 10pt"): the entry's term, to print it by


def _indent(line: str) -> int:
    """How many columns `line` is indented."""
    return len(line) - len(line.lstrip())


def _kind(text: str, raw_lines: list[str]) -> tuple[str, str]:
    """(kind, term) of one unit; `raw_lines` are its lines with their indentation."""
    first = text[:1]
    indented = bool(raw_lines) and _indent(raw_lines[0]) >= 4
    if (first == "#" and re.match(r"#{1,6}(\s|$)", text) and not indented) or _NUMBERED_TITLE.match(text):
        # (A `#` line indented as code is a root shell's prompt or a comment, no Markdown title:
        # "    # postmulti -e init".)
        return HEADING, ""
    if text.startswith(("```", "~~~")):
        return CODE, ""
    if first == "|":
        return ROW, ""
    if _ITEM_START.match(text):
        return ITEM, ""
    if _PROMPT.match(text):
        return CODE, ""
    lines = [line for line in raw_lines if line.strip()]
    if len(lines) >= 2 and _UNDERLINE.match(lines[-1].strip()):
        return HEADING, ""  # a title over a line of `*`, `=` or `-`
    indents = [_indent(line) for line in lines]
    if lines and min(indents) >= 3:
        if _indented_term(lines, indents):
            # A term line over its description indented deeper, the whole list indented, as pydoc
            # lays out a module's functions ("    isleap(year)" / "        Return True for leap
            # years, ...") and Postfix's READMEs their lists: a definition, not a block of code.
            return DEFINITION, lines[0].strip()
        return CODE, ""  # a block indented as code (a literal block of reST or pydoc)
    one_line = _one_line_term(text.split("\n", 1)[0])
    if one_line:
        return DEFINITION, one_line
    if len(lines) >= 2:
        head = lines[0].strip()
        term = _TERM_LINE.match(head)
        if term and term.group("colons") == "::":
            return DEFINITION, term.group("term").strip()
        # A term on its own line (no sentence end), its description indented below it.
        if (
            len(indents) >= 2
            and min(indents[1:]) > indents[0]
            and not head.endswith((".", "!", "?", ","))
            and not _HAS_SENTENCE_END.search(head)  # the tail of a sentence a chunk cut, not a term
            and len(head) <= 100
        ):
            return DEFINITION, head.rstrip(":").strip()
    return SENTENCE, ""


# An indented term line's description says something in words: at least this many ("TCP/IP
# client."), so that a block of code ("for i in range(3):" / "    print(i)") is no definition.
MIN_INDENTED_DESCRIPTION_WORDS = 2
# ... and its term line opens no block: a setup line's ":" ("/etc/postfix/main.cf:" over its
# settings), code's brace or bracket ("if (req.url ~ "^/java/") {"), a continued line.
_OPENS_BLOCK = (":", "{", "[", "(", ",", "=", "\\")


def _indented_term(lines: list[str], indents: list[int]) -> bool:
    """Whether indented `lines` (with their `indents`) are a term line over its description
    indented deeper: the first line short, with no sentence end, opening no block (`_OPENS_BLOCK`),
    the rest words (`reads_as_words`: no line of code)."""
    head, rest = lines[0].strip(), "\n".join(line.strip() for line in lines[1:])
    return (
        len(lines) >= 2
        and min(indents[1:]) > indents[0]
        and _is_term_line(head)
        and not head.endswith(_OPENS_BLOCK)
        and not _HAS_SENTENCE_END.search(head)
        and len(rest.split()) >= MIN_INDENTED_DESCRIPTION_WORDS
        and reads_as_words(rest)
    )


def _indented(piece: str, body: str) -> bool:
    """Whether `piece` starts on an indented line of `body`."""
    at = body.find(piece)
    line_start = body.rfind("\n", 0, at) + 1
    return at > line_start and body[line_start : line_start + 1] in (" ", "\t")


def _is_term_line(text: str) -> bool:
    """A line that names what the description below it is about: short, one line, no full stop."""
    return "\n" not in text and len(text) <= 100 and not text.rstrip().endswith((".", "!", "?", ",", ";"))


# The first word of a line naming an option or an identifier: "-p", "--socket", "fetch.prune",
# "default_ttl", "remote.<name>.url", "open(file, mode)".
_NAMED_TERM = re.compile(r"^(?:--?[A-Za-z0-9]|[A-Za-z_][\w<>-]*(?:[._][\w<>]|\())")
# How many sentences of a description carry its term, its first one (the definition) included.
MAX_TERM_SENTENCES = 4
# How far below its entry's last sentence carrying the term a field may be (past a list of values).
ENTRY_SPAN = 12


def _is_named_term(text: str) -> bool:
    """A short line of its own whose first word is an option or an identifier (not a title)."""
    return "\n" not in text and len(text.split()) <= MAX_ONE_LINE_TERM_WORDS and bool(_NAMED_TERM.match(text))


# A manual's entry name as a text rendering lays it out on a line of its own over its description
# (info and manual pages converted to text): a lower-case name ("precmd", "download-clear",
# "borg break-lock", "beginning-of-line-hist, vi-beginning-of-line") with what a synopsis adds
# after it: flags, bracketed or upper-case placeholders and the words they introduce ("sched [
# -item ]", "declare -a name", "timeout NUMBER", "backward-kill-word (^W ESC-^H)"). A title is
# capitalised or numbered ("14.1 History Expansion", "Filename Generation"), or goes on in plain
# words ("changing directories with the cd builtin", "a calculator").
_ENTRY_FIRST = re.compile(r"^[a-z][\w.:-]*,?$")
_ENTRY_MARKUP = re.compile(r"^(?:--?\w|[\[<({|=^]|[A-Z][A-Z0-9_]*[,\]>)}]*$|\S*[\]>)}]$)")
_ENTRY_NAMED = re.compile(r"^[a-z][\w]*[-_.][\w.()-]*,?$")
# ... not a word joining what is around it, alone on its line between two blocks ("and", "becomes").
_JOINING = frozenset({"and", "or", "but", "then", "else", "becomes", "is", "was", "to", "as", "if", "where", "while"})


def _is_entry_name(text: str, most_words: int | None = MAX_ONE_LINE_TERM_WORDS) -> bool:
    """A short line of its own naming a manual's entry in lower case (see `_ENTRY_FIRST`); with
    `most_words` None, however long (a synopsis: "zmv [ -finqQsvwW ] [ -C | -L | -M ] ...")."""
    words = text.split()
    if "\n" in text or not words or not _ENTRY_FIRST.match(words[0]):
        return False
    if most_words is not None and len(words) > most_words:
        return False
    if words[0] in _JOINING:
        return False
    marked = False  # a flag or a placeholder came: plain words after it are its arguments
    for word in words[1:]:
        if _ENTRY_MARKUP.match(word):
            marked = True
        elif not (_ENTRY_NAMED.match(word) or marked):
            return False
    return True


# A parameter or option in capitals as a text rendering lays it out over its description
# ("WORDCHARS <S>", "HISTSIZE", "CLOBBER (+C, ksh: +C) <D>", "ZLE (-Z)"): one word of capitals and
# digits, with or without its bracketed annotations. Without them, a manual page's section titles
# are such words too: those of the usual sections (`_SECTION_TITLES`) are titles.
_CAPS_NAME = re.compile(r"^(?P<name>[A-Z][A-Z0-9]+)(?P<notes>(?:\s+(?:<[^<>\n]*>|\([^()\n]*\)))*)$")
_SECTION_TITLE_WORDS = """
    NAME SYNOPSIS DESCRIPTION OPTIONS ARGUMENTS COMMANDS SUBCOMMANDS CONFIGURATION ENVIRONMENT FILES
    EXAMPLES EXAMPLE USAGE OVERVIEW INTRODUCTION SUMMARY DISCUSSION NOTES NOTE BUGS CAVEATS WARNINGS
    WARNING ERRORS DIAGNOSTICS HISTORY AUTHORS AUTHOR CREDITS COPYRIGHT LICENSE STANDARDS VERSIONS
    VERSION ATTRIBUTES SECURITY INVOCATION DEFINITIONS FUNCTIONS VARIABLES PARAMETERS SIGNALS HOOKS
    OUTPUTS OUTPUT INPUTS INPUT DEFAULTS LIMITATIONS RESTRICTIONS REQUIREMENTS INSTALLATION FEATURES
    CHANGES CONTENTS GLOSSARY REFERENCES RESOURCES SUPPORT FAQ INDEX APPENDIX PREFACE ABSTRACT TODO
    IMPORTANT TIP CAUTION DATA CLASSES PACKAGE MODULE SUBMODULES FILE
"""
_SECTION_TITLES = frozenset(_SECTION_TITLE_WORDS.split())


def _entry_name(text: str) -> str:
    """`text` without its bracketed annotations when what is left names an option or an identifier
    ("GLOB_DOTS (-4)" is "GLOB_DOTS": the Z shell's single-letter flags include digits, which
    would make the line a sentence rather than its entry's name); otherwise `text`."""
    bare = _ANNOTATIONS.sub("", text)
    return bare if bare != text and (_is_named_term(bare) or _CAPS_NAME.match(bare)) else text


def _is_caps_name(text: str, after: str) -> bool:
    """A line naming a parameter or an option in capitals (see `_CAPS_NAME`) over `after`, the
    first sentence of its description; not a section title, nor a line whose word that sentence
    goes on to use as a plain word ("EXPANSION" over "There are seven kinds of expansion
    performed"): a title names what its prose speaks of, a parameter's description seldom
    repeats its name."""
    found = _CAPS_NAME.match(text)
    if not found:
        return False
    if found["notes"]:
        return True
    name = found["name"]
    return name not in _SECTION_TITLES and name.lower() not in re.findall(r"[a-z]+", after.lower())


# A reference entry's field on a line of its own: "Type: Bool", "Default: false", "Valid values:
# 1-10" (a label of at most three words, a colon, its value). It states something, so it is no
# title however short; it keeps no term (`_carry_term`).
_FIELD_LINE = re.compile(r"^[A-Z][\w-]*(?: [\w()-]+){0,2}: +\S")


def is_field(text: str) -> bool:
    """A reference entry's field on a line of its own (`_FIELD_LINE`), not a sentence that names
    its subject before a colon ("DocBook document type: 'article', 'manpage' or 'book'.")."""
    if "\n" in text or not _FIELD_LINE.match(text):
        return False
    return not (text.rstrip().endswith(".") and len(text.split()) >= MIN_FIELD_SENTENCE_WORDS)


# A line like a field that ends a sentence and has this many words is a sentence.
MIN_FIELD_SENTENCE_WORDS = 6


# An AsciiDoc labeled list's term line: "--timeout <seconds>::", "prune.expire::", "<commit>;;"
# (the colons are 2 to 4: the list's depth). Several such lines, one a line, are the aliases of
# one term ("-n::" / "--dry-run::").
_LABEL_LINE = re.compile(r"^\S.{0,80}?(?::{2,4}|;;)$")
# ... whose term names something (an option, an identifier, a quoted or marked-up name) or is at
# most this many words: "The following are equivalent::" introduces a literal block in
# reStructuredText, and is no term.
MAX_LABEL_WORDS = 3


# What a term line may say in brackets after the name: its flags, its type, its tags ("NOTIFY
# (-5, ksh: -b) <Z>::", "timeout (integer)::"); a term's words are counted without them.
_ANNOTATIONS = re.compile(r"\s+(?:\([^()]*\)|<[^<>]*>|\[[^\[\]]*\])(?=\s|:|;|$)")


def _is_label(text: str) -> bool:
    """One to four AsciiDoc labeled-list term lines (see `_LABEL_LINE`)."""
    lines = text.split("\n")
    return len(lines) <= 4 and all(
        _LABEL_LINE.match(line.strip())
        and (
            bool(_NAMED_TERM.match(line.strip().lstrip("*'`_\"<[")))
            or len(_ANNOTATIONS.sub("", line.strip()).split()) <= MAX_LABEL_WORDS
        )
        for line in lines
    )


def _carry_term(kinds: list[tuple[str, str, str]], first: int, term: str, entries: dict[int, str]) -> bool:
    """Make the first plain sentence from `kinds[first]` on the definition of `term` and the
    sentences after it carry the term, `MAX_TERM_SENTENCES` in all, up to the next term or
    anything but a plain sentence. The entry's fields ("Units: bool", "Default: on": a reference
    may give them before the description or after it) are passed over and keep no term:
    "Default: default_size" under every font setting would meet a question's "font" and "size"
    through it, whichever setting it is (`extractive._with_default` reads an entry's default).
    They are the entry's (`entries`: their index, the term), so that one printed names it.
    False, and nothing changed, when no sentence follows before the next term."""
    sentences = 0
    fields: list[int] = []
    for j in range(first, len(kinds)):
        text, kind, carried = kinds[j]
        if kind != SENTENCE or carried or _is_named_term(text) or _is_label(text) or _is_entry_name(text, None):
            break  # the next entry's name or synopsis line
        if is_field(text):
            fields.append(j)
            continue
        if sentences == MAX_TERM_SENTENCES:
            break
        kinds[j] = (text, DEFINITION if sentences == 0 else SENTENCE, term)
        sentences += 1
    if sentences:
        entries.update(dict.fromkeys(fields, term))
    return sentences > 0


def _under_option(kinds: list[tuple[str, str, str]]) -> bool:
    """Whether the last unit is an option's line of its own (`-n, --quiet, --silent`), which an
    indented block of words below it describes, however plainly written."""
    return (
        bool(kinds)
        and kinds[-1][1] == SENTENCE
        and not kinds[-1][2]
        and kinds[-1][0].startswith("-")
        and _is_named_term(kinds[-1][0])
    )


def _heading_text(text: str) -> str:
    return text.split("\n")[0].lstrip("#").strip()


def _past_cut_block(body: str) -> str:
    """`body` without the end of a code block the chunk began inside of: when its fence lines do
    not pair up, or pair up only because the chunk's end cuts another block too (its last fence
    has the block's first line below it), and the first one closes a block (code above it, not a
    setup line ending with ":", and a blank line right below it, where an opening fence has the
    block's first line), what comes before that fence, and the fence, go. Read as they were,
    the closing fence opened a block that swallowed the prose after it up to the next block's
    opening fence, and that block's code was read as prose."""
    lines = body.split("\n")
    fences = [(i, opener) for i, line in enumerate(lines) if (opener := fence_opener(line))]
    if not fences or fences[0][1].group(2).strip():
        return body  # none, or the first opens a block (```bash: only an opening fence has a language)
    first, last = fences[0][0], fences[-1][0]
    if len(fences) % 2 == 0 and (last + 1 >= len(lines) or not lines[last + 1].strip()):
        return body  # paired, and the last closes its block
    before = [line for line in lines[:first] if line.strip()]
    rest = lines[first + 1 :]
    if not before or before[-1].rstrip().endswith(":") or (rest and rest[0].strip()) or not "".join(rest).strip():
        return body  # the first fence opens a block: a setup line ("Run:") or its first line
    return "\n".join(rest).lstrip("\n")


def _outdented_term(lines: list[str], i: int) -> bool:
    """Whether `lines[i]` (of a piece's `lines`) starts an entry of a definition list laid out in
    plain text without blank lines, as Postfix's READMEs and pages rendered to text are: a short
    line with no sentence end, after a line ending a sentence and indented more (the description
    before; the piece's first line, whose indentation the piece does not hold, counts as so), over
    a line indented more than it ("... See socketmap_table(5) for details." / "    sqlite
    (read-only)" / "        SQLite database. ..."). The sentence splitter runs on across it:
    the term starts no sentence."""
    if i + 1 >= len(lines) or not lines[i + 1].strip():
        return False
    if not _indented_term([lines[i], lines[i + 1]], [_indent(lines[i]), _indent(lines[i + 1])]):
        return False
    if i == 1 and _indent(lines[i]) > 0 and _is_term_line(lines[0].strip()) and reads_as_words(lines[0].strip()):
        # ... or after the title of its section, a line of its own at the margin ("FUNCTIONS" over
        # "    join(split_command)" / "        Return a shell-escaped string ...", as pydoc lays out
        # a module): the title is no term of the first entry.
        return not _HAS_SENTENCE_END.search(lines[0])
    return lines[i - 1].rstrip().endswith((".", "!", "?")) and (i == 1 or _indent(lines[i - 1]) > _indent(lines[i]))


def _around_title(lines: list[str], i: int) -> bool:
    """Whether a piece's `lines` are cut before `lines[i]` for a numbered section's title on a line
    of its own (`_NUMBERED_TITLE`) between a line that ends a sentence and one that starts one: at
    the title, and after it. A sentence that a line with a version number continues ("... since
    version" / "2.4 Apache ...") ends no sentence on the line before."""

    def title(k: int) -> bool:
        return (
            0 < k < len(lines) - 1
            and bool(_NUMBERED_TITLE.match(lines[k].strip()))
            and lines[k - 1].rstrip().endswith((".", "!", "?", ":"))
            and lines[k + 1].lstrip()[:1].isupper()
        )

    return title(i) or title(i - 1)


def _one_line_term(line: str) -> str:
    """The term of a term and its description on one line (`_ONE_LINE_TERM`), if `line` is one:
    the term at most MAX_ONE_LINE_TERM_WORDS, the description MIN_ONE_LINE_DESCRIPTION_WORDS or a
    sentence ("noexec  Same as -n.", as a typeset option list gives it); else ""."""
    found = _ONE_LINE_TERM.match(line.strip())
    if found is None or len(found.group("term").split()) > MAX_ONE_LINE_TERM_WORDS:
        return ""
    desc = found.group("desc")
    words = len(desc.split())
    if words >= MIN_ONE_LINE_DESCRIPTION_WORDS or (words >= 2 and desc[:1].isupper() and desc.endswith(".")):
        return found.group("term")
    return ""


def _next_one_line_term(lines: list[str], i: int) -> bool:
    """Whether `lines[i]` starts the next entry of a list of terms each with its description on its
    line, at the margin, after a line that ends a sentence or introduces the list: a typeset
    manual's text layer has no blank line between them ("Same as -C." / "noexec  Same as -n."),
    and the sentence splitter runs on across a term in lower case. Not a line of an indented block
    (a setting over its comment: "relayhost =   (default: direct delivery to Internet)")."""
    return (
        not lines[i][:1].isspace()
        and bool(_one_line_term(lines[i]))
        and lines[i - 1].rstrip().endswith((".", "!", "?", ":"))
    )


def _at_terms(pieces: list[str]) -> list[str]:
    """`pieces` cut before every labeled-list term line inside one (`_is_label`), before every
    term line of a plain-text definition list laid out without blank lines (`_outdented_term`,
    `_next_one_line_term`), and around a numbered section's title (`_around_title`): a compact list,
    its entries not parted by blank lines (`-a::` / its description / `-b::` / ..., as AsciiDoc
    allows and the HTML reader writes a `<dt>` over a `<dd>` without a paragraph), runs on as one
    prose run, and an entry's term would otherwise sit inside the sentence before it ("... are
    exported. -b:: Report the status ..."), its description under the list's first term. Each
    part starting on a term line is the term with its description, as a list's first entry is."""
    out: list[str] = []
    for piece in pieces:
        if piece.startswith(("```", "~~~")) or "\n" not in piece:
            out.append(piece)
            continue
        lines = piece.split("\n")
        cuts = [
            i
            for i in range(1, len(lines))
            if (_is_label(lines[i].strip()) and lines[i - 1].strip() and not _is_label(lines[i - 1].strip()))
            or _outdented_term(lines, i)
            or _around_title(lines, i)
            or _next_one_line_term(lines, i)
        ]  # (not between the stacked term lines of one entry: `-n::` over `--dry-run::`)
        if not cuts:
            out.append(piece)
            continue
        for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
            part = "\n".join(lines[start:end]).strip()
            if part:
                out.append(part)
    return out


def excerpt_units(content: str, excerpt: int) -> list[Unit]:
    """The answer units of one excerpt (`content` as stored, `excerpt` its number)."""
    _prefix, body = split_chunk_prefix(content)
    body = _past_cut_block(body)
    pieces = _at_terms(split_sentences(body))
    units: list[Unit] = []
    section = ""
    pos = 0
    kinds: list[tuple[str, str, str]] = []  # (text, kind, term)
    entries: dict[int, str] = {}  # a field's index: its entry's term
    for piece in pieces:
        start = body.find(piece, pos)
        start = pos if start < 0 else start
        line_start = body.rfind("\n", 0, start) + 1
        raw = body[line_start : start + len(piece)].split("\n")
        pos = start + len(piece)
        if _TABLE_RULE.match(piece) or (not _HAS_ALNUM.search(piece) and not _SYMBOL_TERM.match(piece)):
            # The `|---|` line under a table's header row makes that row a header.
            if _TABLE_RULE.match(piece) and kinds and kinds[-1][1] == ROW:
                kinds[-1] = (kinds[-1][0], HEADER, "")
            continue
        if piece.startswith(("```", "~~~")) and not piece.rstrip().endswith(piece[:3]):
            # A fence that never closes in this excerpt is the end of a block the chunk cut:
            # the fence line is decoration, and what follows it is read as text.
            rest = piece.split("\n", 1)[1] if "\n" in piece else ""
            for sub in split_sentences(rest):
                kinds.append((sub, *_kind(sub, [sub])))
            continue
        kind, term = _kind(piece, raw)
        if kind == CODE and (reads_as_prose(piece) or (_under_option(kinds) and reads_as_words(piece))):
            # An indented paragraph (pydoc and reST indent descriptions): its sentences, under
            # the term line right above it when there is one (`object.__iter__(self)`).
            above = kinds[-1] if kinds else None
            if above and above[2] and above[1] in (SENTENCE, DEFINITION) and _indented(above[0], body):
                term_line, first = above[2], False  # the description goes on
            elif above and above[1] == DEFINITION and above[2] and above[0].startswith(above[2] + "\n"):
                # ... or its term line with the description's first sentence, no blank line
                # between (a manual page: `-delete` / "Delete files or directories; true if
                # removal succeeded.  If the removal failed, ...").
                term_line, first = above[2], False
            elif above and above[1] == SENTENCE and _is_term_line(above[0]):
                term_line, first = above[0], True
            else:
                term_line, first = "", False
            for k, sentence in enumerate(split_sentences(piece)):
                kinds.append((sentence, DEFINITION if first and k == 0 else SENTENCE, term_line))
            continue
        if kind == DEFINITION and _LABEL_LINE.match(piece.split("\n", 1)[0].strip()):
            # A labeled list's term lines over the description's first sentence, one piece: the
            # lines are a unit of their own, the term line that sets up the description.
            # (Only term lines, their description cut off by the chunk's end: one unit.)
            lines = piece.split("\n")
            k = next((j for j, line in enumerate(lines) if not _LABEL_LINE.match(line.strip())), len(lines))
            head, description = "\n".join(lines[:k]).strip(), "\n".join(lines[k:]).strip()
            kinds += [(head, SENTENCE, ""), (description, SENTENCE, "")] if description else [(head, SENTENCE, "")]
            continue
        kinds.append((piece, kind, term))

    # A short line on its own, with no sentence end and no number, is a title (an HTML or
    # plain-text heading), unless it is the term of the description below it, or one of the
    # lines a setup line ending with ":" introduces (a list laid out without bullets:
    # "This comparison can operate in different modes as given by --files-cache:" over
    # "ctime,size,inode (default)"): those are its items.
    listed = False
    for i, (text, kind, _term) in enumerate(kinds):
        after = kinds[i + 1] if i + 1 < len(kinds) else None
        before = kinds[i - 1] if i else None
        if (
            kind == SENTENCE
            and before is not None
            and (after is None or after[2] != text)
            and _is_term_line(text)
            and not _HAS_SENTENCE_END.search(text)
        ):
            listed = (before[1] == SENTENCE and before[0].rstrip().endswith(":")) or (listed and before[1] == ITEM)
            if listed:
                kinds[i] = (text, ITEM, "")
                continue
        else:
            listed = False
        if (
            kind == SENTENCE
            and after is not None
            and after[2] != text
            and not (before is not None and before[1] == HEADING and _heading_text(before[0]).upper() == "NAME")
            and not is_field(text)
            and _is_term_line(text)
            and not text.rstrip().endswith(":")
            and len(text.split()) <= 8
            and not _DIGIT.search(_entry_name(text))
        ):
            kinds[i] = (text, HEADING, "")

    # An option or identifier on a line of its own over its description, as HTML definition
    # lists and manual pages converted to text lay them out ("-p <period>" / "fetch.prune" /
    # "req.hash_always_miss", then "Specified the number of seconds between screen refreshes."),
    # and an AsciiDoc labeled list's term lines ("--timeout <seconds>::", aliases one a line, a
    # blank line before the description or none): the line is the term of the description below
    # it, not a title, and the description's later sentences carry it ("The default is 3."), so a
    # passage printing the description prints the name it describes.
    for i in range(len(kinds) - 1):
        text, kind, term = kinds[i]
        named = (
            kind == HEADING
            and (_is_named_term(text) or _is_entry_name(text) or _is_caps_name(text, kinds[i + 1][0]))
            and kinds[i + 1][1] == SENTENCE
        )
        labeled = (
            kind in (SENTENCE, HEADING, ITEM) and not term and _is_label(text) and kinds[i + 1][1:] == (SENTENCE, "")
        )
        if (named or labeled) and _carry_term(kinds, i + 1, text, entries):
            kinds[i] = (text, SENTENCE, "")

    # A field after its entry's description and what it lists ("hints.mode" / "Mode to use for
    # hints." / "Valid values:" / "- letter: ..." / "Default: letter"): the entry's, as the
    # description's nearest sentence carrying a term above it says, within `ENTRY_SPAN` units and
    # no title between.
    for i, (text, kind, _term) in enumerate(kinds):
        if kind != SENTENCE or i in entries or not is_field(text):
            continue
        for k in range(i - 1, max(-1, i - 1 - ENTRY_SPAN), -1):
            if kinds[k][1] == HEADING:
                break
            if kinds[k][2]:
                entries[i] = kinds[k][2]
                break

    # A run of shell comments right over a command line ("$ ..."): what the command does.
    for i in range(len(kinds) - 2, -1, -1):
        text, kind, _term = kinds[i]
        nxt_text, nxt_kind, _ = kinds[i + 1]
        if (
            kind == HEADING
            and _SHELL_COMMENT.match(text)
            and "\n" not in text
            and (
                (nxt_kind == CODE and nxt_text.startswith("$ "))
                or (nxt_kind == SENTENCE and _SHELL_COMMENT.match(nxt_text))
            )
        ):
            kinds[i] = (text, SENTENCE, "")

    header: int | None = None
    setup: int | None = None  # the setup line whose block is running
    block = ""  # the kind of block it introduced
    for i, (text, kind, term) in enumerate(kinds):
        if kind == HEADING:
            section = _heading_text(text)
            setup = header = None
        elif kind == HEADER:
            header = i
        elif kind != ROW:
            header = None
        if setup is not None and i > setup + 1 and _family(kind) != block:
            setup = None  # the block it introduced has ended
        if kind not in INTRODUCED or (kind == DEFINITION and setup is not None and kinds[setup][0] != term):
            setup = None  # ... and a definition of another term is not the last one's block
        if kind == DEFINITION and term and i > 0 and kinds[i - 1][0] == term:
            setup, block = i - 1, DEFINITION  # the term line introduces its description
        unit = Unit(
            text=text,
            excerpt=excerpt,
            index=i,
            kind=kind,
            setup=setup if kind in INTRODUCED else None,
            header=header if kind == ROW else None,
            section=section,
            term=term,
            entry=entries.get(i, ""),
        )
        units.append(unit)
        nxt = kinds[i + 1][1] if i + 1 < len(kinds) else None
        if kind in (SENTENCE, ITEM) and nxt in INTRODUCED and (text.rstrip().endswith(":") or nxt == CODE):
            # A sentence ending with ":" introduces what follows (a block, a list, a table);
            # so does any sentence right before a code block.
            setup, block = i, _family(nxt)
    return units


def _family(kind: str) -> str:
    """Units that make one block: the rows of a table, the items of a list."""
    return ROW if kind in (ROW, HEADER) else kind


def answer_units(hits: Sequence[Hit]) -> list[Unit]:
    """The units of every excerpt, in excerpt order (excerpts numbered from 1)."""
    return [unit for n, hit in enumerate(hits, start=1) for unit in excerpt_units(hit.content, n)]
