"""Chunk headers: the document's title and the section headings above a chunk, for the embedder.

A chunk cut from the middle of a manual page ("Returns the number of bytes written.") says little
about what it documents; its page title and section headings do. With a brain's `headers`
setting on, each chunk is embedded as

    <title> > <heading> > <sub-heading>

    <chunk text>

and the same header goes into the keyword index (the `header` column of `chunks_fts`). The stored
chunk text, its id and the prompt are unchanged: the header only steers retrieval.

- Title: an HTML `<title>` or a PDF's metadata title (read by `locallens.readers`), else the first
  markdown heading, else the file name without its extension.
- Headings: markdown ATX (`## Usage`) and setext/reStructuredText underlined headings outside
  fenced code, man-page sections (a line in capitals at the margin, `DESCRIPTION`) in `.txt`
  files, and HTML h1-h6. A chunk's path is the innermost heading of each level above its start;
  a heading the chunk itself starts with is already in its text and is left out, and so are the
  sections it closes (a chunk opening on `### Path shortcuts` is under `OPTIONS`, not under the
  `### Renaming` section before it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from locallens.domain import Document

# A header takes at most this many characters of the model's window (each part at most PART_CHARS).
MAX_HEADER_CHARS = 200
PART_CHARS = 80
SEPARATOR = " > "

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_UNDERLINE = re.compile(r"^([=\-~^\"'`:.*+#_])\1{2,}[ \t]*$")
_CAPITALS = re.compile(r"^[A-Z][A-Z0-9 &/,()_-]*[A-Z0-9)]$")
_MARKDOWN = {".md", ".markdown"}
# Formats whose reader gives every heading: their text is never searched for more (an Org
# comment line, `# note`, is not a heading).
_GIVEN_ONLY = {".org"}
# What may stand before a given heading on its line: markup (`##`, `*`), an Org TODO keyword or
# priority cookie ...
_HEADING_LEAD = re.compile(r"[ \t#*]*(?:[A-Z]+[ \t]+)?(?:\[#\w\][ \t]+)?")
# ... and after it: closing markup, a colon, Org tags (`:spring:`).
_HEADING_TAIL = re.compile(r"[ \t#:]*(?::[\w@#%:]+:)?[ \t]*")


@dataclass(frozen=True, slots=True)
class Heading:
    position: int  # character offset of the heading's first line in the document text
    level: int  # 1 = outermost
    text: str


def _clean(text: str) -> str:
    text = " ".join(text.replace("`", "").replace("*", "").split())
    return text[:PART_CHARS].rstrip()


def headings(document: Document) -> list[Heading]:
    """The document's headings in order (HTML's from the reader, the others from the text)."""
    text = document.text
    suffix = PurePosixPath(document.relative_path).suffix.lower()
    if document.headings or suffix in _GIVEN_ONLY:
        return _locate(text, document.headings)
    found: list[Heading] = []
    underline_levels: dict[str, int] = {}  # RST: a level per adornment, in order of appearance
    fenced = False
    position = 0
    lines = text.split("\n")
    for number, line in enumerate(lines):
        start = position
        position += len(line) + 1
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        atx = _ATX.match(line)
        if atx and suffix != ".rst":
            found.append(Heading(start, len(atx.group(1)), _clean(atx.group(2))))
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        stripped = line.strip()
        if (
            stripped
            and not line[0].isspace()
            and _UNDERLINE.match(following)
            and len(following.strip()) >= min(len(stripped), 3)
            and not _UNDERLINE.match(line)
        ):
            mark = following.strip()[0]
            if suffix in _MARKDOWN or suffix not in {".rst", ".txt"}:
                if mark not in "=-":
                    continue
                level = 1 if mark == "=" else 2
            else:
                level = underline_levels.setdefault(mark, len(underline_levels) + 1)
            found.append(Heading(start, level, _clean(stripped)))
            continue
        if suffix == ".txt" and _CAPITALS.match(line) and len(line) <= 40 and sum(ch.isalpha() for ch in line) >= 3:
            previous = lines[number - 1] if number else ""
            if not previous.strip():
                found.append(Heading(start, 1, _clean(line)))
    return found


def _locate(text: str, given: Sequence[tuple[int, str]]) -> list[Heading]:
    """Positions of headings known by text (HTML, Office, Org, ...): each found after the
    previous one, preferably where it stands as a line of its own rather than inside a sentence."""
    found: list[Heading] = []
    cursor = 0
    for level, heading in given:
        at = _heading_line(text, heading, cursor)
        if at < 0:
            continue
        found.append(Heading(at, level, _clean(heading)))
        cursor = at + len(heading)
    return found


def _heading_line(text: str, heading: str, cursor: int) -> int:
    """Where the first line at or after `cursor` that holds `heading` as its text (after markup)
    starts, else the first occurrence of `heading` at all, else -1."""
    first = at = text.find(heading, cursor)
    for _ in range(64):  # bounded: a heading word repeated thousands of times costs nothing
        if at < 0:
            break
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        tail = text[at + len(heading) : line_end if line_end >= 0 else len(text)]
        if _HEADING_LEAD.fullmatch(text[line_start:at]) and _HEADING_TAIL.fullmatch(tail):
            return line_start
        at = text.find(heading, at + 1)
    return first


def document_title(document: Document) -> str:
    """The format's title, else the first markdown heading, else the file name without extension."""
    if document.title.strip():
        return _clean(document.title)
    if PurePosixPath(document.relative_path).suffix.lower() in _MARKDOWN | {".txt", ".rst", ""}:
        for line in document.text.split("\n", 200)[:200]:
            atx = _ATX.match(line)
            if atx:
                return _clean(atx.group(2))
    name = PurePosixPath(document.relative_path).name
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return _clean(stem)


def chunk_headers(document: Document, chunks: Sequence[str]) -> list[str]:
    """One header per chunk text (chunks of `document`, in order): title and heading path.

    A chunk is found in the text from just after the previous chunk's start (chunks overlap);
    one that is not a verbatim piece of the text (a semantic chunker may re-join sentences) is
    found by its first line, else it takes the previous chunk's place.
    """
    title = document_title(document)
    marks = headings(document)
    text = document.text
    out: list[str] = []
    cursor = 0
    for chunk in chunks:
        at = text.find(chunk, cursor)
        if at < 0:
            first = chunk.strip().split("\n", 1)[0][:80]
            at = text.find(first, cursor) if first else -1
        if at < 0:
            at = cursor
        cursor = at + 1 if at < len(text) else at
        start = at + len(chunk) - len(chunk.lstrip())  # the chunk's first line
        lead = _lead(chunk)
        path: dict[int, str] = {}
        for heading in marks:
            # A heading the chunk starts with closes the sections of its level and deeper above
            # it (`compose` then leaves it to the chunk's text).
            if heading.position > start or (heading.position == start and not lead.startswith(heading.text.lower())):
                break
            path = {level: name for level, name in path.items() if level < heading.level}
            path[heading.level] = heading.text
        out.append(compose(title, [path[level] for level in sorted(path)], chunk, lead=lead))
    return out


def _lead(chunk: str) -> str:
    """How the chunk begins, its heading marks left out, cleaned as a heading is, lower-cased."""
    return _clean(chunk.lstrip().lstrip("#")[: 2 * PART_CHARS]).lower()


def compose(title: str, path: Sequence[str], chunk: str, *, lead: str | None = None) -> str:
    """`title > heading > ...`: parts said twice are kept once, and a part the chunk starts with
    (its own heading, or the title a BEIR document starts with) is left to the chunk. `lead`: the
    chunk's `_lead`, when the caller has it already."""
    parts: list[str] = []
    for part in (title, *path):
        if part and part.lower() not in (p.lower() for p in parts):
            parts.append(part)
    lead = _lead(chunk) if lead is None else lead
    while parts and lead.startswith(parts[-1].lower()):
        parts.pop()
    header = SEPARATOR.join(parts)
    while len(header) > MAX_HEADER_CHARS and len(parts) > 1:
        parts = [parts[0], *parts[2:]]  # keep the title and the innermost headings
        header = SEPARATOR.join(parts)
    return header[:MAX_HEADER_CHARS]


def embedded_text(header: str, text: str) -> str:
    """What the model embeds for a chunk: its header, a blank line, its text."""
    return f"{header}\n\n{text}" if header else text
