"""HTML: the visible text (no scripts, styles or <head>), paragraphs as blank-line-separated
blocks, table cells side by side, the <title> and the h1-h6 headings."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from locallens.readers.base import Extracted, ReadSkip, decode_text, normalise_text, one_line

# Elements whose content a reader never sees.
_HTML_HIDDEN = frozenset({"script", "style", "noscript", "template"})
# Elements that stand as paragraphs of their own: a blank line before and after.
_HTML_PARAGRAPH = frozenset(
    {
        "p",
        "div",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "table",
        "figure",
        "figcaption",
        "form",
        "fieldset",
        "address",
        "details",
        "summary",
        "hr",
        "title",
        "body",
        "caption",
    }
)
# Elements that start a new line but not a new paragraph.
_HTML_LINE = frozenset({"li", "tr", "dt", "dd", "br", "option"})
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
# Table cells sit side by side on their row.
_HTML_CELL = frozenset({"td", "th"})


class _TextExtractor(HTMLParser):
    """Visible text of an HTML page, with paragraphs as blank-line-separated blocks.

    Breaks are not written as they are met but owed (`pending` newlines, or one `space`) and
    paid only before the next visible text: so the indentation whitespace between `</tr>` and
    `<tr>` cannot turn into a stray blank line, and nothing dangles at the start or the end.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)  # entities decoded in handle_data
        self.parts: list[str] = []
        self.pending = 0  # newlines owed before the next text: 1 = new line, 2 = new paragraph
        self.space = False  # a separating space owed before the next text on the same line
        self.hidden_depth = 0  # inside <script>/<style>/... (nesting counted for <template>)
        self.in_head = False
        self.in_title = False
        self.pre_depth = 0
        self.title_parts: list[str] = []  # the text of <title>
        self.heading: tuple[int, list[str]] | None = None  # the <hN> being read: (N, its text)
        self.headings: list[tuple[int, str]] = []

    def _break(self, newlines: int) -> None:
        self.pending = max(self.pending, newlines)

    def _emit(self, text: str) -> None:
        if self.parts:  # nothing is owed before the very first text
            if self.pending:
                self.parts.append("\n" * self.pending)
            elif self.space:
                self.parts.append(" ")
        self.pending = 0
        self.space = False
        self.parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_HIDDEN:
            self.hidden_depth += 1
            return
        if tag == "head":
            self.in_head = True
            return
        if tag == "body":
            self.in_head = False  # tolerate a missing </head>
        if tag == "title":
            self.in_title = True
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.heading = (int(tag[1]), [])
        if tag == "pre":
            self.pre_depth += 1
        if tag in _HTML_PARAGRAPH:
            self._break(2)
        elif tag in _HTML_LINE:
            self._break(1)
        elif tag in _HTML_CELL:
            self.space = True

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_HIDDEN:
            self.hidden_depth = max(0, self.hidden_depth - 1)
            return
        if tag == "head":
            self.in_head = False
            return
        if tag == "title":
            self.in_title = False
        if self.heading is not None and tag == f"h{self.heading[0]}":
            heading = one_line("".join(self.heading[1]))
            if heading:
                self.headings.append((self.heading[0], heading))
            self.heading = None
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if tag in _HTML_PARAGRAPH:
            self._break(2)
        elif tag in _HTML_LINE and tag != "br":  # <br> is void: only its start counts
            self._break(1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/>: a start without a matching end (an empty <script/> hides nothing).
        if tag not in _HTML_HIDDEN:
            self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self.hidden_depth or (self.in_head and not self.in_title):
            return
        if self.in_title:
            self.title_parts.append(data)
        if self.heading is not None:
            self.heading[1].append(data)
        if self.pre_depth:
            if data:
                self._emit(data)  # preformatted: keep its spacing and line breaks
            return
        # HTML collapses runs of ASCII whitespace only: a no-break space (&nbsp;) is content.
        collapsed = _HTML_SPACE.sub(" ", data)
        inner = collapsed.strip(" ")
        if collapsed.startswith(" "):
            self.space = True  # "a <b>b</b>": the space before <b> still separates the words
        if inner:
            self._emit(inner)
            if collapsed.endswith(" "):
                self.space = True

    def text(self) -> str:
        # Only <pre> text can carry spaces at a line's ends; keep its indentation, drop the rest.
        lines = [line.rstrip(" \t") for line in "".join(self.parts).split("\n")]
        # Collapse runs of blank lines into one: paragraphs separated by exactly one blank line.
        out: list[str] = []
        for line in lines:
            if not line and (not out or not out[-1]):
                continue
            out.append(line)
        return "\n".join(out).strip("\n")


def html_text(source: str) -> tuple[str, str, tuple[tuple[int, str], ...]]:
    """An HTML page's visible text, its <title> and its h1-h6 headings (also for EPUB and e-mail)."""
    parser = _TextExtractor()
    try:
        parser.feed(source)
        parser.close()
    except Exception as exc:  # html.parser is lenient, but old versions assert on odd markup
        raise ReadSkip(f"cannot parse HTML: {exc}", error=True) from None
    return parser.text(), one_line("".join(parser.title_parts)), tuple(parser.headings)


def read(data: bytes, ext: str) -> Extracted:
    text, title, headings = html_text(normalise_text(decode_text(data)))
    return Extracted(text, title=title, headings=headings)
