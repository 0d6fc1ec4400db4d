"""Where a chunk is in its file, and how a person reads it (docs/behaviour.md#locations).

Two jobs, both small and without heavy imports:

* `locate(document, contents)`: the `Location` of each chunk text of a document, found by aligning
  the chunk texts, in order, against `Document.text`. Chunkers only ever change whitespace (the
  paragraph chunker joins paragraphs with one blank line, the semantic ones join sentences with a
  space), so a chunk is found verbatim (`str.find`, the common case) or, failing that, as its
  words in order with any whitespace between them. Lines come from the text's newlines plus the
  blank lines the reader stripped from the file's start (`Document.line_offset`), for documents
  whose lines are the file's lines (`Document.line_mapped`); other formats get the `SourceSpan`s
  the chunk overlaps: the source lines they name (`lines`: HTML, e-mail, so `page.html:12-15`),
  the chapter file and its lines (`chapter`: EPUB), or their label (page, slide, sheet, para,
  cell). A chunk that cannot be found has no location and is cited by its number.
* `citation(...)` and `as_json(...)`: the one rendering every face calls (`Chunk.citation`,
  `Hit.citation`): `path:12`, `path:12-20`, `path#page=3`, `deck.pptx#slide=4`, and the fallback
  `path#chunk-1` of a brain indexed before locations existed. The grounded prompt the model reads
  keeps `path#chunk-i` (locallens.prompt); only what a person reads changes.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from locallens.domain import Chunk, Document, Location, SourceSpan

__all__ = [
    "as_json",
    "chapter_label",
    "citation",
    "cited_sentence",
    "fields",
    "locate",
    "parse_chapter_label",
    "sentence_lines",
    "sentence_span",
    "span_labels",
    "span_range",
]


def citation(path: str, chunk_index: int, location: Location | None) -> str:
    """`path:START-END` (`path:LINE` for one line), `path#kind=label`, else `path#chunk-N`."""
    cited = location.cite(path) if location is not None else None
    return cited or f"{path}#chunk-{chunk_index}"


def as_json(location: Location | None) -> dict[str, Any]:
    """The location fields every JSON shape adds beside `path` and `chunk_index`."""
    if location is None:
        return {"line_start": None, "line_end": None, "page": None, "span": None}
    page = None
    if location.kind == "page":
        first = location.label.split("-", 1)[0]
        page = int(first) if first.isdigit() else None
    return {
        "line_start": location.line_start,
        "line_end": location.line_end,
        "page": page,
        "span": {"kind": location.kind, "label": location.label} if location.kind and location.label else None,
    }


def fields(chunk: Chunk) -> dict[str, Any]:
    """What every JSON shape adds for a chunk: its `citation` and `as_json` of its location."""
    return {"citation": chunk.citation(), **as_json(chunk.location)}


def cited_sentence(sent: str, original: str, location: Location | None, sentence: str | None) -> dict[str, Any]:
    """Where an excerpt's `sentence` is: `excerpt_span`, its [start, end) in the excerpt as sent
    (`sent`, maybe trimmed), and the file lines it is on (via the untrimmed chunk, `original`)."""
    span = sentence_span(sent, sentence or "")
    lines = None
    if sentence:
        at = sentence_span(original, sentence)
        if at is not None:
            lines = sentence_lines(original, location, *at)
    return {
        "excerpt_span": list(span) if span else None,
        "line_start": lines[0] if lines else None,
        "line_end": lines[1] if lines else None,
    }


# How many places holding a chunk's first word are tried before the chunk counts as not found (a
# chunk is always in its text, near the previous one's start: this only bounds a bad case).
_MAX_TRIES = 10_000


def _match_words(text: str, start: int, words: Sequence[str]) -> int | None:
    """Where `words` end when they follow each other in `text` from `start`, with any whitespace
    (or none) between them; None when they do not."""
    i, n = start, len(text)
    for k, word in enumerate(words):
        if k:
            while i < n and text[i].isspace():
                i += 1
        if not text.startswith(word, i):
            return None
        i += len(word)
    return i


def _find(text: str, content: str, cursor: int) -> tuple[int, int] | None:
    """Where `content` lies in `text` at or after `cursor`: verbatim, else word by word.

    Anchored on the first word's next occurrences, so the cost is about the chunk's own length:
    a failed `str.find` of the whole chunk would scan to the end of the text for every chunk.
    """
    words = content.split()
    if not words:
        return None
    # The chunker changed only whitespace: between two words the file may have any whitespace
    # (a blank line more, a line break where a space joins two sentences) or none at all
    # (sentences of Chinese or Japanese joined with a space).
    first = words[0]
    at = text.find(first, cursor)
    for _ in range(_MAX_TRIES):
        if at < 0:
            return None
        if text.startswith(content, at):
            return at, at + len(content)
        end = _match_words(text, at, words)
        if end is not None:
            return at, end
        at = text.find(first, at + 1)
    return None


def locate(document: Document, contents: Sequence[str]) -> list[Location | None]:
    """The location of each of `contents` (the document's chunk texts, in order)."""
    text = document.text
    spans = document.spans
    if not contents or not (document.line_mapped or spans):
        return [None] * len(contents)
    span_starts = [span.start for span in spans]
    out: list[Location | None] = []
    cursor = 0  # chunk starts strictly advance (overlap only repeats the end of the previous one)
    line_at_cursor = 1  # the text's line number at `cursor`, counted incrementally
    for content in contents:
        found = _find(text, content, cursor)
        if found is None:
            out.append(None)
            continue
        start, end = found
        line_start = line_at_cursor + text.count("\n", cursor, start)
        cursor, line_at_cursor = start + 1, line_start + (text[start] == "\n")
        if document.line_mapped:
            line_end = line_start + text.count("\n", start, max(start, end - 1))
            offset = document.line_offset
            out.append(Location(line_start + offset, line_end + offset))
        else:
            out.append(_span_location(spans, span_starts, start, end))
    return out


def _span_location(spans: Sequence[SourceSpan], starts: list[int], start: int, end: int) -> Location | None:
    """The label of the spans that [start, end) overlaps: one label, or `first-last`."""
    touched = []
    for span in spans[max(bisect.bisect_right(starts, start) - 1, 0) :]:
        if span.start >= end:
            break
        if span.end > start:
            touched.append(span)
    if not touched:
        return None
    head, tail = touched[0], touched[-1]
    if head.kind == "lines":  # HTML, e-mail: the source file's lines (kind "lines": not the text's)
        return Location(_first_line(touched), _last_line(touched), kind="lines")
    if head.kind == "chapter":  # EPUB: the chapter file in the book, and its lines
        first = [span for span in touched if span.label == head.label]
        last = [span for span in touched if span.label == tail.label]
        return Location(
            kind="chapter", label=chapter_label(head.label, _first_line(first), tail.label, _last_line(last))
        )
    return Location(kind=head.kind, label=span_range(head.label, tail.label))


def _first_line(spans: Sequence[SourceSpan]) -> int | None:
    return min((span.line_start for span in spans if span.line_start is not None), default=None)


def _last_line(spans: Sequence[SourceSpan]) -> int | None:
    return max((span.line_end for span in spans if span.line_end is not None), default=None)


def chapter_label(first: str, start: int | None, last: str, end: int | None) -> str:
    """An EPUB location: `OEBPS/ch2.xhtml:12-20` (the chapter file and its lines), or
    `OEBPS/ch2.xhtml:40-OEBPS/ch3.xhtml:5` for a chunk that runs into the next chapter."""
    if start is None or end is None:
        return first
    if first == last:
        return f"{first}:{start}" if start == end else f"{first}:{start}-{end}"
    return f"{first}:{start}-{last}:{end}"


_CHAPTER = re.compile(r"^(?P<first>.+?):(?P<start>\d+)(?:-(?:(?P<last>.+?):)?(?P<end>\d+))?$")


def parse_chapter_label(label: str) -> tuple[str, int, str, int] | None:
    """(first chapter, its first line, last chapter, its last line) of a `chapter_label`."""
    match = _CHAPTER.match(label)
    if match is None:
        return None
    start = int(match["start"])
    end = int(match["end"]) if match["end"] else start
    return match["first"], start, match["last"] or match["first"], end


def span_range(first: str, last: str) -> str:
    """The label of a run of spans: `3`, `3-4`; rows of one sheet as `Sheet1!5-9`."""
    if first == last:
        return first
    sheet, bang, _ = first.rpartition("!")
    if bang and last.startswith(f"{sheet}!"):
        return f"{first}-{last[len(sheet) + 1 :]}"
    return f"{first}-{last}"


def span_labels(label: str, labels: Sequence[str]) -> tuple[str, str] | None:
    """The first and last of `labels` a citation's `label` names (the inverse of `span_range`)."""
    if label in labels:
        return label, label
    for i, char in enumerate(label):
        if char != "-":
            continue
        first, last = label[:i], label[i + 1 :]
        sheet, bang, _ = first.rpartition("!")
        if bang and "!" not in last:
            last = f"{sheet}!{last}"
        if first in labels and last in labels:
            return first, last
    return None


def sentence_span(content: str, sentence: str) -> tuple[int, int] | None:
    """The character span [start, end) of `sentence` inside an excerpt's `content`, if it is there."""
    if not sentence:
        return None
    start = content.find(sentence)
    return (start, start + len(sentence)) if start >= 0 else None


def sentence_lines(content: str, location: Location | None, start: int, end: int) -> tuple[int, int] | None:
    """The file lines of `content[start:end]`, when the chunk's lines are exact.

    A chunk's own lines are exact when it holds as many line breaks as its range spans: chunkers
    only ever remove line breaks (a blank line more in the file, a break joined by a space), so an
    equal count means every break is the file's own.
    """
    if location is None or location.line_start is None or location.line_end is None:
        return None
    if location.kind == "lines":  # HTML, e-mail: the text's lines are not the source's
        return None
    if content.count("\n") != location.line_end - location.line_start:
        return None
    first = location.line_start + content.count("\n", 0, start)
    return first, first + content.count("\n", start, max(start, end - 1))
