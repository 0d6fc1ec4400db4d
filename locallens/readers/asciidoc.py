"""AsciiDoc (`.adoc`, `.asciidoc`, and `.txt` files that are AsciiDoc): the file's own lines, with
the markup that would be misread as text made plain, line for line.

The text stays the file's, line for line, so a chunk's `path:LINE` citation is the file's line.
Only lines that are markup, not content, change:

- Section titles: `== Options` and the two-line form (`Options` over a line of `-`, `~`, `^` or
  `+` as long as the title, give or take two) become `## Options` (the underline a blank line):
  a `~` underline would otherwise open a code fence, and every later line would be code.
- Delimited blocks: a listing or literal block (`----`, `....`, `++++` on lines of their own,
  closed by the same line) becomes a fenced code block (```` ``` ````), so its command is one code
  unit and not a title over a line of dashes; the delimiters of example, sidebar, quote and open
  blocks (`====`, `****`, `____`, `--`) become blank lines (their content is prose); a comment
  block (`////`) and comment lines (`// ...`) become blank lines.
- Literal paragraphs: an indented paragraph after a blank line (`  $ a2x -f pdf notes.txt`, a
  configuration example, a diagram) renders as preformatted text, so it is a code block too: the
  blank lines around it become its fences and its lines stay as written. A list item or a
  labeled list's entry is the list's however indented, and so is a description parted from its
  term by a blank line; a paragraph with no blank line below it (the file's end, a delimited
  block) stays text, and so does one that reads as prose (a note indented under a list item).
- Lines that only set something up become blank lines: block attributes and anchors (`[verse]`,
  `[source,shell]`, `[[id]]`), attribute entries (`:doctype: manpage`), preprocessor directives
  (`ifdef::...[]`, `include::...[]`) and list continuations (a lone `+`).

Labeled lists (`--timeout <seconds>::` over its description) are left as written: the answer units
read a term line ending in `::` as the term of the description below it (`locallens.units`).

Inline markup that a reader would not see in the rendered page is rendered on every other line
(`render_inline`), so a printed answer reads as the page does and its `[1]` citations are not
mistaken for a manual section:

- attribute references: `{name}` set by an attribute entry above it in the file, or one of
  AsciiDoc's built-in character attributes (`{nbsp}`, `{plus}`, `{startsb}`...); `{litdd}`, which
  Git's manual pages use for "--" (it is defined in their processor configuration, not in the
  page), is read as "--" too; an attribute set nowhere stays as written, as Asciidoctor leaves it;
- a manual page reference `linkgit:git-config[1]` (any `name:page[N]` whose text is a manual
  section) is `git-config(1)`, as the page renders it;
- links and cross references print their text: `link:faq.html[the FAQ]` is "the FAQ",
  `https://example.org[the site]` "the site" (as the HTML page shows it), `<<limits,Limits>>` "Limits",
  `xref:limits[]` and `<<limits>>` "limits"; `kbd:[Ctrl+T]`, `btn:[Save]`, `pass:[...]` their
  text, `menu:File[Save]` "File > Save", a footnote its text in parentheses;
- inline anchors (`[[pocket]]`, `anchor:pocket[]`) and inline images and icons go;
- strong text loses its marks: `*--attribute*=NAME::` is `--attribute=NAME::` (not inside
  backticks, where `*` is literal).

A `.txt` file is read so only when it looks like AsciiDoc (`looks_like`): a document title
underlined with `=` (or `= Title`) and an AsciiDoc-only construct, or two such constructs (a
fragment that other pages include), and no reStructuredText directive. Anything else in a
`.txt` file stays plain text.
"""

from __future__ import annotations

import re

from locallens.readers.base import Extracted, decode_text, one_line
from locallens.text import reads_as_prose

EXTENSIONS = (".adoc", ".asciidoc")

# `= Title` ... `====== Title`: a section title of one line.
_TITLE = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*$")
# The underline of a two-line title, and the level each character gives.
_UNDERLINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_UNDERLINE_LEVEL = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
# How much an underline may differ from its title's length (AsciiDoc's own tolerance).
UNDERLINE_SLACK = 2
# Delimiter lines of blocks, by what their content is.
_VERBATIM = re.compile(r"^(-{4,}|\.{4,}|\+{4,})[ \t]*$")  # listing, literal, passthrough
_COMMENT_BLOCK = re.compile(r"^/{4,}[ \t]*$")
_CONTAINER = re.compile(r"^(={4,}|\*{4,}|_{4,}|--)[ \t]*$")  # example, sidebar, quote, open
_COMMENT_LINE = re.compile(r"^//(?!/)")
# `[verse]`, `[source,shell]`, `[[anchor]]`, `[#id.role]`: a line that only sets up the next block.
_BLOCK_ATTRIBUTE = re.compile(r"^\[[^\]\s][^\]]*\]\]?[ \t]*$")
# `:doctype: manpage`, `:man source: qutebrowser` (asciidoc-py's manual pages spell names with spaces)
_ATTRIBUTE_ENTRY = re.compile(r"^:!?\w[\w -]*!?:(?:[ \t].*)?$")
_DIRECTIVE = re.compile(r"^(?:ifdef|ifndef|ifeval|endif|include)::\S*\[.*\][ \t]*$")
_CONTINUATION = re.compile(r"^\+[ \t]*$")
# A list item's marker, however indented (`* item`, `- item`, `. step`, `1. step`, `a. step`), and a
# labeled list's term (`term::`, `term;;`, `term:::`, with or without its text on the line).
_LIST_START = re.compile(r"^[ \t]*(?:[-*.]+|\d+\.|[a-zA-Z]\.)[ \t]+\S")
_LABELED = re.compile(r"\S(?::{2,4}|;;)(?:[ \t]|$)")
# An ordered list's item numbered by the renderer (`. step`, `.. sub-step`: the dots are its level).
_IMPLICIT_ORDERED = re.compile(r"^([ \t]*)(\.{1,5})([ \t]+\S.*)$")
_BLOCK_TITLE = re.compile(r"^\.[^\s.]")
# A paragraph's first line that cannot be a title (a list item, a labeled list's term, a
# block title `.Title`, an admonition).
_NOT_A_TITLE = re.compile(r"^(?:[-*.]+[ \t]|\d+\.[ \t]|\.\S|[A-Z]+:[ \t])|::[ \t]*$|;;[ \t]*$")

# What `looks_like` counts as AsciiDoc's own (none of it is Markdown's or reStructuredText's).
_MARKERS = (
    re.compile(r"^\[(?:verse|source|listing|literal|quote|NOTE|TIP|IMPORTANT|WARNING|CAUTION|\[)", re.M),
    re.compile(r"^(?:ifdef|ifndef|endif|include)::", re.M),
    re.compile(r"^:[\w][\w-]*:(?:[ \t]|$)", re.M),
    re.compile(r"\blink(?:git)?:[\w./-]+\["),
    # a labeled list's term that is an option or a dotted key, over its indented description
    re.compile(r"^(?:\*?-{1,2}\w|[a-z]+\.[\w.<>-]+)[^\n]{0,80}::[ \t]*\n(?:[ \t]*\n)?[ \t]+\S", re.M),
)
_REST_DIRECTIVE = re.compile(r"^\.\. [\w-]+::", re.M)
_SNIFF_CHARS = 20_000

# AsciiDoc's built-in attributes that stand for a character (a no-break space is a space here), and
# `litdd`, Git's manual pages' "--" (set in their processor configuration, not in the pages).
CHARACTER_ATTRIBUTES = {
    "blank": "",
    "empty": "",
    "sp": " ",
    "nbsp": " ",
    "zwsp": "",
    "wj": "",
    "apos": "'",
    "quot": '"',
    "lsquo": "\u2018",
    "rsquo": "\u2019",
    "ldquo": "\u201c",
    "rdquo": "\u201d",
    "deg": "\u00b0",
    "plus": "+",
    "brvbar": "\u00a6",
    "vbar": "|",
    "amp": "&",
    "lt": "<",
    "gt": ">",
    "startsb": "[",
    "endsb": "]",
    "caret": "^",
    "asterisk": "*",
    "tilde": "~",
    "backslash": "\\",
    "backtick": "`",
    "two-colons": "::",
    "two-semicolons": ";;",
    "cpp": "C++",
    "cxx": "C++",
    "pp": "++",
    "litdd": "--",
}
_ATTRIBUTE_NAME = re.compile(r"^:(\w[\w-]{0,100}):(?:[ \t](.*))?$")
_ATTRIBUTE_REFERENCE = re.compile(r"(\\?)\{(\w[\w-]{0,100})\}")
# `linkgit:git-config[1]`, `man:ls[1]`: a manual page and its section.
_MAN_REFERENCE = re.compile(r"(?<![\w\\])[a-z][a-z0-9]{0,30}:([\w.+-]{1,200})\[(\d[a-z]{0,5})\]")
# A URL with its text in brackets: `https://example.org[the site]`.
_URL_MACRO = re.compile(r"(?<![\w\\:/])((?:https?|ftp|irc|file|mailto):[^\s\[\]]{1,2000})\[([^\]\n]{0,500})\]")
# The other inline macros: `link:faq.html[the FAQ]`, `xref:id[]`, `kbd:[Ctrl+T]`, `menu:File[Save]`.
_MACRO = re.compile(
    r"(?<![\w\\])(link|xref|kbd|btn|menu|footnote|footnoteref|pass|anchor|image|icon|indexterm2?)"
    r":([^\s\[\]]{0,500})\[([^\]\n]{0,500})\]"
)
_CROSS_REFERENCE = re.compile(r"<<([\w:./#-]{1,200})(?:,[ \t]*([^>\n]{1,200}?))?>>")
_INLINE_ANCHOR = re.compile(r"\[\[\[?[A-Za-z_][\w:.-]{0,200}(?:,[^\]\n]{0,200})?\]\]\]?")
# Strong text: `**anything**`, or `*word*` bounded by what is not a word (AsciiDoc's constrained form).
_STRONG = re.compile(r"\*\*(?=\S)(.{1,200}?)(?<=\S)\*\*|(?<![\w*\\])\*(?=[^\s*])([^*\n]{0,500}?[^\s*\\])\*(?![\w*])")
_BACKTICKED = re.compile(r"(`[^`\n]+`)")


def looks_like(text: str) -> bool:
    """Whether a `.txt` file is AsciiDoc: no reStructuredText directive (`.. note::`), and a
    document title (`= Title`, or a title over a line of `=` as long as it) with at least one
    construct only AsciiDoc has (a block attribute such as `[verse]`, a preprocessor directive, an
    attribute entry, a `link:` macro, a labeled list's term over an indented description), or two
    such constructs without a title (a fragment other pages `include::`, as a manual's shared
    options often are)."""
    head = text[:_SNIFF_CHARS]
    lines = [line for line in head.split("\n", 8)[:8] if line.strip()]
    if not lines or _REST_DIRECTIVE.search(head):
        return False
    titled = bool(_TITLE.match(lines[0]) and lines[0].startswith("= ")) or (
        len(lines) >= 2
        and lines[1].strip()[:1] == "="
        and _UNDERLINE.match(lines[1])
        and abs(len(lines[1].strip()) - len(lines[0].strip())) <= UNDERLINE_SLACK
    )
    found = sum(1 for marker in _MARKERS if marker.search(head))
    return found >= (1 if titled else 2)


def plain_lines(text: str) -> tuple[str, tuple[tuple[int, str], ...]]:
    """The text with AsciiDoc's markup lines made plain (see the module docstring), line for line,
    and its section titles as (level, text) in document order."""
    lines = text.split("\n")
    out = list(lines)
    # Where each candidate delimiter line occurs, to tell whether a block opened is ever closed.
    where: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if line[:1] in "-.+/=*_" and (_VERBATIM.match(line) or _COMMENT_BLOCK.match(line) or _CONTAINER.match(line)):
            where.setdefault(line.rstrip(), []).append(i)

    def closes(i: int, delimiter: str) -> bool:
        return where.get(delimiter, [-1])[-1] > i

    headings: list[tuple[int, str]] = []
    attributes: dict[str, str] = {}  # the attribute entries met so far
    block = ""  # the delimiter line of the verbatim or comment block we are in
    open_containers: list[str] = []
    literal_end: int | None = None  # the blank line that closes the literal paragraph we are in
    numbers: list[int] = []  # the implicit ordered list we are in: the last number at each level
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if literal_end is not None:  # a literal paragraph's lines are shown as written
            if i == literal_end:
                out[i], literal_end = "```", None
            continue
        if block:
            if stripped == block:
                out[i] = "" if block.startswith("/") else "```"
                block = ""
            elif block.startswith("/"):
                out[i] = ""
            continue
        before = lines[i - 1].strip() if i else ""
        after = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        at_block_start = (
            not before or out[i - 1] == "" or bool(_BLOCK_ATTRIBUTE.match(before) or _BLOCK_TITLE.match(before))
        )
        if _VERBATIM.match(stripped) and at_block_start and closes(i, stripped):
            out[i], block = "```", stripped
            continue
        if _COMMENT_BLOCK.match(stripped) and closes(i, stripped):
            out[i], block = "", stripped
            continue
        if _CONTAINER.match(stripped) and (stripped in open_containers or at_block_start):
            if stripped in open_containers:
                open_containers.remove(stripped)
            elif closes(i, stripped):
                open_containers.append(stripped)
            else:
                continue
            out[i] = ""
            continue
        if _COMMENT_LINE.match(line) or _DIRECTIVE.match(stripped) or _CONTINUATION.match(line):
            out[i] = ""
            continue
        if _BLOCK_ATTRIBUTE.match(stripped) or (_ATTRIBUTE_ENTRY.match(stripped) and not line[:1].isspace()):
            entry = _ATTRIBUTE_NAME.match(stripped)
            if entry:
                attributes[entry.group(1)] = render_inline((entry.group(2) or "").strip().rstrip(" \\"), attributes)
            out[i] = ""
            continue
        if stripped and line[:1] in " \t" and i and not lines[i - 1].strip():
            literal_end = _literal_end(lines, i)
            if literal_end is not None:
                # Its fences are the blank lines around it; right after another literal
                # paragraph, the two are one block.
                out[i - 1] = "" if out[i - 1] == "```" else "```"
                continue
        title = _TITLE.match(stripped)
        if title and at_block_start:
            level = len(title.group(1))
            out[i] = "#" * level + render_inline(stripped[level:], attributes)
            headings.append((level, one_line(render_inline(title.group(2), attributes))))
            numbers = []
            continue
        if (
            stripped
            and at_block_start
            and not line[:1].isspace()
            and _UNDERLINE.match(after)
            and abs(len(after.strip()) - len(stripped)) <= UNDERLINE_SLACK
            and not _NOT_A_TITLE.search(stripped)
        ):
            level = _UNDERLINE_LEVEL[after.strip()[0]]
            heading = render_inline(stripped, attributes)
            out[i] = "#" * level + " " + heading
            out[i + 1] = ""
            headings.append((level, one_line(heading)))
            numbers = []
            continue
        if out[i] == line:  # a content line (a two-line title's underline is blank by now)
            if at_block_start and stripped and not line[:1].isspace() and not _LIST_START.match(line):
                numbers = []  # a paragraph after the list ends it
            out[i] = render_inline(_numbered(line, numbers, at_block_start), attributes)
    return "\n".join(out), tuple(headings)


def _numbered(line: str, numbers: list[int], at_block_start: bool) -> str:
    """An implicit ordered list's item (`. step`) as the page shows it, numbered (`1. step`): its
    dots are its level, and `numbers` (updated) holds the last number at each level of the list
    it is in. Numbered so, its steps are list items to the sentence splitter and the answer
    units, not a stop left at the end of the line above. An item opens a list only at a block's
    start (a line of prose beginning with "..." stays text); deeper levels, which the page
    letters, are numbered too. Any other line is returned as it is."""
    found = _IMPLICIT_ORDERED.match(line)
    if not found or not (at_block_start or numbers):
        return line
    level = len(found.group(2))
    del numbers[level:]
    numbers.extend([0] * (level - len(numbers)))
    numbers[level - 1] += 1
    return f"{found.group(1)}{numbers[level - 1]}.{found.group(3)}"


def _literal_end(lines: list[str], i: int) -> int | None:
    """The blank line that ends the literal paragraph opening at line i (an indented line after a
    blank one), or None when it is none: a list item or a labeled list's entry, however indented,
    is the list's (`  * item`, `  chunked;; ...`); so is a description below its term, parted from
    it by a blank line (`--flag::`, a blank line, the indented text); and a paragraph that runs
    to the end of the file or into a delimited block has no blank line of its own to close it.
    Its blank lines above and below become its fences, so every line stays in place."""
    if _LIST_START.match(lines[i]) or _LABELED.search(lines[i]):
        return None
    above = next((lines[k] for k in range(i - 2, -1, -1) if lines[k].strip()), "")
    if _LABELED.search(above):
        return None
    for j in range(i + 1, len(lines)):
        line = lines[j].rstrip()
        if not line:
            # A note indented under a list item reads as prose; the renderer shows it preformatted,
            # but a reader reads its sentences.
            return None if reads_as_prose("\n".join(part.strip() for part in lines[i:j])) else j
        if _VERBATIM.match(line) or _COMMENT_BLOCK.match(line) or _CONTAINER.match(line) or _LABELED.search(line):
            return None
    return None


def _text_of(text: str) -> str:
    """A macro's text without its named attributes: `"the FAQ",window=_blank` -> the FAQ."""
    text = text.strip()
    quoted = re.match(r'^"([^"]*)"', text)
    if quoted:
        return quoted.group(1)
    return re.split(r",\s*\w[\w-]*=", text, maxsplit=1)[0].strip()


def _readable_id(target: str) -> str:
    """What a cross reference without text prints: its id, `_` read as a space (`_exit_status` ->
    exit status; `other.adoc#limits` -> limits)."""
    return target.rsplit("#", 1)[-1].strip("_").replace("_", " ")


def _macro(match: re.Match[str]) -> str:
    name, target, raw = match.groups()
    text = _text_of(raw)
    if name in ("anchor", "image", "icon", "indexterm"):
        return ""
    if name == "link":
        return text or target
    if name == "xref":
        return text or _readable_id(target)
    if name == "menu":
        return " > ".join(part for part in [target, *(item.strip() for item in raw.split(">"))] if part)
    if name == "footnote":
        space = "" if match.string[match.start() - 1 : match.start()].isspace() else " "
        return f"{space}({text})" if text else ""
    if name == "footnoteref":
        return raw.split(",", 1)[1].strip() if "," in raw else ""
    return raw.strip()  # kbd, btn, pass, indexterm2: their text as written


def _strong(text: str) -> str:
    """`text` without strong marks, outside backticked code (where `*` is the code's)."""
    parts = _BACKTICKED.split(text)
    for k in range(0, len(parts), 2):
        if "*" in parts[k]:
            parts[k] = _STRONG.sub(lambda m: m.group(1) or m.group(2), parts[k])
    return "".join(parts)


def render_inline(line: str, attributes: dict[str, str] | None = None) -> str:
    """One line's inline markup rendered as the page shows it (see the module docstring);
    `attributes` are the attribute entries set above the line. A line without markup is returned
    as it is, and no line ever gains or loses a line break."""
    if not any(mark in line for mark in "{:<[*"):
        return line
    attributes = attributes or {}
    original = line

    def attribute(match: re.Match[str]) -> str:
        escaped, name = match.groups()
        if escaped:
            return match.group(0)[1:]
        value = attributes.get(name, CHARACTER_ATTRIBUTES.get(name))
        return match.group(0) if value is None else value

    if "{" in line:
        line = _ATTRIBUTE_REFERENCE.sub(attribute, line)
    if ":" in line and "[" in line:
        line = _MAN_REFERENCE.sub(lambda m: f"{m.group(1)}({m.group(2)})", line)
        line = _URL_MACRO.sub(lambda m: _text_of(m.group(2)) or m.group(1), line)
        line = _MACRO.sub(_macro, line)
    if "<<" in line:
        line = _CROSS_REFERENCE.sub(lambda m: (m.group(2) or "").strip() or _readable_id(m.group(1)), line)
    if "[[" in line:
        line = _INLINE_ANCHOR.sub("", line)
    if "*" in line:
        line = _strong(line)
    return line.replace("\n", " ").rstrip() if line != original else line


def extract(text: str) -> Extracted:
    plain, headings = plain_lines(text)
    title = next((heading for level, heading in headings if level == 1), "")
    return Extracted(plain, title=title, headings=headings, line_mapped=True)


def read(data: bytes, ext: str) -> Extracted:
    return extract(decode_text(data))
