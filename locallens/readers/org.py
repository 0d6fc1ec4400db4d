"""Org-mode: the file's own text, line for line, with its `*` outline as headings and
`#+TITLE:` as the title."""

from __future__ import annotations

import re

from locallens.readers.base import Extracted, decode_text, one_line

_HEADLINE = re.compile(r"^(\*+)[ \t]+(.*?)[ \t]*$")
# A headline's TODO keyword and priority cookie before its text, tags after it.
_KEYWORD = re.compile(r"^(?:(?:TODO|DONE|NEXT|WAITING|HOLD|CANCELLED|CANCELED)[ \t]+)?(?:\[#[A-Za-z0-9]\][ \t]+)?")
_TAGS = re.compile(r"[ \t]+:[\w@#%:]+:$")
_TITLE = re.compile(r"^#\+title:[ \t]*(.*)$", re.IGNORECASE)


def read(data: bytes, ext: str) -> Extracted:
    text = decode_text(data)
    title = ""
    headings: list[tuple[int, str]] = []
    in_block = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        lowered = line.strip().lower()
        if lowered.startswith("#+begin_"):
            in_block = True
        elif lowered.startswith("#+end_"):
            in_block = False
        if in_block:
            continue
        if not title and (match := _TITLE.match(line.strip())):
            title = one_line(match.group(1))
            continue
        headline = _HEADLINE.match(line)
        if headline:
            name = _TAGS.sub("", _KEYWORD.sub("", headline.group(2)))
            if name.strip():
                headings.append((min(len(headline.group(1)), 6), one_line(name)))
    return Extracted(text, title=title, headings=tuple(headings), line_mapped=True)
