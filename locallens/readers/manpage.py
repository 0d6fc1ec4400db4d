"""A manual page saved as text (`man tar > tar.txt`): the file's own lines, laid out as the answer
units read a manual, line for line.

`man` prints a page for an 80-column terminal: a running head (`TAR(1)  GNU TAR Manual  TAR(1)`),
section titles at the margin, every other line indented (7 columns for GNU pages, 5 for BSD
ones), an option's description indented further under it, tabs for some of that indentation, and
words hyphenated at a line's end with U+2010 ("op‐" / "tion"). Read as it is, an option and its
description form one block indented like code, printed as a block; a hyphenated word is two.
So, with the line count kept (a chunk's `path:LINE` citation stays the file's line):

- tabs become spaces (8 columns), and the body's indentation is taken off every line: the
  smallest indentation of more than 3 columns (a subsection title is at 3), lines indented less
  at the margin. An option's line is then at the margin over its indented description, as the
  answer units read a term and its description (`locallens.units`); an example indented under a
  description stays indented, a code block;
- a word hyphenated at a line's end is joined on that line, its tail taken from the next (or,
  when the tail is alone on its line, on that line, its head taken down);
- the spaces `man` adds to justify a line (two or three between words) are one space, so that a
  justified line is not read as a term and its description on one line ("While  in  some ways");
  wider gaps, a table's columns, stay;
- a section title (at the margin) becomes a Markdown heading, `## OPTIONS`, and a subsection's
  (indented less than the body) `### Traditional usage`: `man` sets an option right under its
  section's title, and the two lines would read as one sentence;
- the running head keeps its words, each run of spaces one space; so does the foot
  (`GNU TAR 1.34  November 2020  TAR(1)`), made a title (`## ...`) so that it is never printed
  as an answer's line.

The page's title is its `NAME` line ("tar - an archiving utility").

A `.txt` file is read so only when its first line is a running head (`NAME(SECTION)`, words,
`NAME(SECTION)` again) and a `NAME` section title follows within its first lines.
"""

from __future__ import annotations

import re

from locallens.readers.base import Extracted

_HEAD = re.compile(r"^\s*(?P<page>[\w.:+-]+\((?P<section>[0-9][\w]*)\))[ \t]{2,}\S.*?[ \t]{2,}(?P=page)\s*$")
_NAME_TITLE = re.compile(r"^NAME\s*$")
SNIFF_LINES = 12  # the `NAME` title within this many lines of the head
# A running head is a line of at most this many characters (`man` prints for a terminal); a longer
# line is not matched against `_HEAD`, whose backtracking grows with the square of a line's spaces.
MAX_HEAD_CHARS = 240
_SUBSECTION_INDENT = 3  # a subsection title's; the body is indented more
_JUSTIFIED = re.compile(r"(?<=\S) {2,3}(?=\S)")
_HYPHENATED = re.compile(r"(?P<head>\w)\u2010$")
_HEAD_WORD = re.compile(r"(?P<word>\S+)\u2010$")
_TAIL = re.compile(r"^(?P<indent>\s*)(?P<tail>\S+)(?P<rest>\s.*|)$")


def looks_like(text: str) -> bool:
    """Whether a text file is a manual page as `man` prints it (see the module docstring)."""
    lines = [line for line in text.split("\n", SNIFF_LINES + 1)[: SNIFF_LINES + 1] if line.strip()]
    return bool(lines) and _is_head(lines[0]) and any(_NAME_TITLE.match(line) for line in lines[1:])


def _is_head(line: str) -> bool:
    return len(line) <= MAX_HEAD_CHARS and bool(_HEAD.match(line))


def _is_foot(line: str, lines: list[str]) -> bool:
    """Whether the page's last line is its running foot: it ends with the page's name and section
    as its head does ("GNU TAR 1.34  November 2020  TAR(1)", "FIND(1)" alone), or a BSD page's
    foot names its system at both ends ("BSD  November 28, 2022  BSD")."""
    head = next((n for n in lines if n.strip()), "")
    found = _HEAD.match(head) if _is_head(head) else None
    words = line.split()
    return (found is not None and words[-1] == found["page"]) or (len(words) >= 3 and words[0] == words[-1])


def extract(text: str) -> Extracted:
    """The page's lines laid out for the answer units, and its title (see the module docstring)."""
    lines = [line.expandtabs(8).rstrip() for line in text.split("\n")]
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    body = min((i for i in indents if i > _SUBSECTION_INDENT), default=0)
    out = [_JUSTIFIED.sub(" ", line[min(body, len(line) - len(line.lstrip())) :]) for line in lines]
    last = max((i for i, line in enumerate(out) if line.strip()), default=-1)
    title = ""
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if i == last and i > 0 and _is_foot(line, lines):
            out[i] = "## " + " ".join(line.split())  # the foot, a title: never an answer's line
        elif i == last or _is_head(line):
            out[i] = " ".join(line.split())  # the running head
        elif indent < body:
            out[i] = ("## " if indent == 0 else "### ") + line.strip()
            if not title and _NAME_TITLE.match(line):
                title = next((" ".join(n.split()) for n in lines[i + 1 : i + 4] if n.strip()), "")
    for i in range(len(out) - 1):
        heading = out[i + 1].startswith("#")
        tail = _TAIL.match(out[i + 1]) if _HYPHENATED.search(out[i]) and not heading else None
        if tail is None:
            continue
        if tail["rest"].strip():
            out[i] = out[i][:-1] + tail["tail"]
            out[i + 1] = tail["indent"] + tail["rest"].lstrip()
            continue
        # A tail alone on its line ("ex‐" / "tension."): the head goes down to it, so that neither
        # line is left blank (a blank line would part the paragraph); not a head alone on its line.
        head = _HEAD_WORD.search(out[i])
        if head is not None and out[i][: head.start()].strip():
            out[i] = out[i][: head.start()].rstrip()
            out[i + 1] = tail["indent"] + head["word"] + tail["tail"]
    return Extracted("\n".join(out), title=title, line_mapped=True)
