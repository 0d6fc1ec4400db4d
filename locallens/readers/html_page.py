"""HTML: the visible text (no scripts, styles or <head>, no navigation landmarks: `<nav>`,
`role="navigation"`, nor bars and containers of links alone: see `_LinkBlock`), paragraphs as
blank-line-separated blocks, list items with their "- " / "1. " markers (nested lists
indented), table rows as `| a | b |` lines, preformatted blocks of up to `MAX_FENCED_LINES` lines
as fenced code blocks (```` ``` ````), a definition list's short terms as `term::` over their
description (as AsciiDoc writes them: `--timeout <seconds>::`), the <title> (without its site's
name: `page_title`) and the h1-h6 headings; and, for every line of that text, the lines of the
source file it comes from (so a chunk is cited as `page.html:12-15`).

A term and a command are then read as what they are: without the marks, a term alone on its line
(`precmd`, `--[no-]index`) and a command of a <pre> (`quill stash-keep [-q | --quiet]`) read as
section titles, never printed. A longer <pre> (a whole manual page some converters wrap in one)
stays text, and a term that is a sentence or a question (a FAQ's `<dt>`) gets no mark."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html.parser import HTMLParser
from typing import Any

from locallens.domain import SourceSpan
from locallens.readers.base import Extracted, ReadSkip, decode_text, one_line, source_lines

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
        "dl",
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
_HTML_LINE = frozenset({"dt", "dd", "br", "option"})
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
_HTML_LIST = frozenset({"ul", "ol", "menu"})
# Inside a table cell these separate words (a nested table's cells, list items).
_CELL_BREAKS = frozenset({"ul", "ol", "menu", "li", "table", "tr", "td", "th"})
# A <pre> block of at most this many lines is a fenced code block; a longer one stays text.
MAX_FENCED_LINES = 40
# A <dt> of at most this many characters, not ending like a sentence, is marked as a term.
MAX_TERM_CHARS = 80
# A source line range: (first, last), 1-based; None for the breaks between texts.
_Lines = tuple[int, int] | None
# Blocks that are taken out when they hold nothing but links (`_LinkBlock`): a bar, a row, a
# container. A list of links is content (an index page's list of its pages, "see also" lists),
# alone or in a container of its own; a container that holds links outside lists too (a theme's
# sidebar: its logo's link over its contents) is not.
_LINK_BLOCK_TAGS = frozenset({"p", "div", "table", "section", "header", "footer", "aside"})
# Text between links that does not make a block content: separators and brackets
# ("[ << ] [ < ] [ Up ]", "Apache > HTTP Server > Documentation", "Modules | Directives").
_LINK_SEPARATORS = re.compile(r"[\s\[\](){}|<>«»‹›·•,;:/\\=^*~#?!.\-–—]*")
# A block of links alone is navigation from this many links on: one link alone is content ("Download
# the release notes").
MIN_NAVIGATION_LINKS = 2


class _LinkBlock:
    """A block element being read (`_LINK_BLOCK_TAGS`, not inside a table's cell or a <pre>):
    where its text starts in the parts and headings, and the parser's counts of links, links
    off the page and text outside links when it opened (what it holds is the counts' growth: one
    step per link or text, however deep the blocks nest). One whose text is links alone, two or
    more (a navigation bar without a landmark: texinfo's "[ << ] [ < ] [ Up ]" row, a Sphinx
    theme's sidebar, a site's breadcrumbs and menu bar) is taken out when it closes, as a
    landmark is."""

    __slots__ = ("at", "content_at", "heads", "in_list", "links_at", "listed_at", "off_page_at", "tag")

    def __init__(self, tag: str, at: int, heads: int, counts: tuple[int, int, int, int], in_list: bool) -> None:
        self.tag, self.at, self.heads, self.in_list = tag, at, heads, in_list
        self.links_at, self.off_page_at, self.content_at, self.listed_at = counts


class _TextExtractor(HTMLParser):
    """Visible text of an HTML page, with paragraphs as blank-line-separated blocks.

    Breaks are not written as they are met but owed (`pending` newlines, or one `space`) and
    paid only before the next visible text: so the indentation whitespace between `</tr>` and
    `<tr>` cannot turn into a stray blank line, and nothing dangles at the start or the end.
    Every piece of text written remembers the source lines it came from (`HTMLParser.getpos`).
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)  # entities decoded in handle_data
        self.parts: list[str] = []
        self.part_lines: list[_Lines] = []  # the source lines of each of `parts`
        self.pending = 0  # newlines owed before the next text: 1 = new line, 2 = new paragraph
        self.space = False  # a separating space owed before the next text on the same line
        self.hidden_depth = 0  # inside <script>/<style>/... (nesting counted for <template>)
        self.in_head = False
        self.in_title = False
        self.pre_depth = 0
        self.pre_start: int | None = None  # where the outermost <pre>'s text starts in `parts`
        self.dt_start: int | None = None  # where the <dt> being read starts in `parts`
        # A navigation landmark being read (<nav>, role="navigation"): its tag, how many of that
        # tag are open, and where its text starts in `parts` and `headings`.
        self.nav: tuple[str, int, int, int] | None = None
        self.link_depth = 0  # inside <a>
        self.blocks: list[_LinkBlock] = []  # the open blocks (`_LinkBlock`), innermost last
        self.open_blocks: dict[str, int] = {}  # how many of `blocks` each tag has
        # Running counts (`_LinkBlock`): links read, those leading off the page (not to a
        # "#fragment" of its own), and pieces of text read outside a link (not separators).
        self.links = 0
        self.off_page_links = 0
        self.content = 0
        self.listed_links = 0  # links read inside a list
        self.title_parts: list[str] = []  # the text of <title>
        self.title_at: tuple[int, int] | None = None  # where its text is in `parts`
        self.heading: tuple[int, list[str]] | None = None  # the <hN> being read: (N, its text)
        self.headings: list[tuple[int, str]] = []
        self.lists: list[list[Any]] = []  # open lists, innermost last: [ordered, last number]
        self.marker = ""  # the list marker owed before the next text ("- ", "  2. ")
        self.table_depth = 0
        self.row: list[str] | None = None  # the cells of the table row being read
        self.row_lines: list[int] = []  # the source lines its text came from

    def _break(self, newlines: int) -> None:
        if self.lists:  # a list is one block: its items (and their paragraphs) one line each
            newlines = min(newlines, 1)
        self.pending = max(self.pending, newlines)

    def _write(self, text: str, lines: _Lines) -> None:
        self.parts.append(text)
        self.part_lines.append(lines)

    def _emit(self, text: str, lines: _Lines) -> None:
        if self.parts:  # nothing is owed before the very first text
            if self.pending:
                self._write("\n" * self.pending, None)
            elif self.space:
                self._write(" ", None)
        self.pending = 0
        self.space = False
        if self.marker:
            text, self.marker = self.marker + text, ""
        self._write(text, lines)

    def _cell(self) -> None:
        if self.row is None:
            self.row = []
        self.row.append("")

    def _cell_break(self, tag: str) -> None:
        """A block or line element inside a cell: a space between the words on either side."""
        if self.row is not None and (tag in _HTML_PARAGRAPH or tag in _HTML_LINE or tag in _CELL_BREAKS):
            self.row[-1:] = [(self.row[-1] if self.row else "") + " "]

    def _end_row(self) -> None:
        row, lines = self.row, self.row_lines
        self.row, self.row_lines = None, []
        cells = [one_line(cell).replace("|", "/") for cell in row or []]
        while cells and not cells[-1]:
            cells.pop()
        if any(cells) and lines:
            self._break(1)
            self._emit("| " + " | ".join(cells) + " |", (min(lines), max(lines)))
            self._break(1)

    def _navigation(self, tag: str, attrs: list[tuple[str, str | None]], start: bool) -> None:
        """Track a navigation landmark (<nav>, or any element with role="navigation": a Sphinx
        page's related links and sidebar, a site's menus). Its text is written as it is read and
        taken out when the landmark closes, so a page whose landmark never closes loses nothing."""
        if self.nav is not None:
            name, depth, at, heads = self.nav
            if tag == name:
                depth += 1 if start else -1
                self.nav = (name, depth, at, heads) if depth else None
                if not depth:
                    self._take_out(at, heads)
            return
        if start and (tag == "nav" or (dict(attrs).get("role") or "").strip().lower() == "navigation"):
            self.nav = (tag, 1, len(self.parts), len(self.headings))

    def _take_out(self, at: int, heads: int) -> None:
        """Navigation read from `parts[at]` and `headings[heads]` on is not the page's text."""
        del self.parts[at:], self.part_lines[at:], self.headings[heads:]
        self.marker = ""
        self._break(2)

    def _open_block(self, tag: str) -> None:
        if tag in _LINK_BLOCK_TAGS and not self.pre_depth and not self.table_depth:
            counts = (self.links, self.off_page_links, self.content, self.listed_links)
            self.blocks.append(_LinkBlock(tag, len(self.parts), len(self.headings), counts, bool(self.lists)))
            self.open_blocks[tag] = self.open_blocks.get(tag, 0) + 1

    def _navigation_block(self, block: _LinkBlock) -> bool:
        """Links alone, two or more, and not all into the page itself: a page's own table of
        contents (a texinfo chapter's menu of its sections) names what is far below it, and
        stays; so does a container whose links are all in the lists it holds (a Sphinx
        `toctree-wrapper` around an index page's list of its pages), as a list on its own does."""
        links = self.links - block.links_at
        return (
            links >= MIN_NAVIGATION_LINKS
            and self.off_page_links > block.off_page_at
            and self.content == block.content_at
            and (block.in_list or self.listed_links - block.listed_at < links)
        )

    def _close_block(self, tag: str) -> None:
        """A block closes (and any left open inside it, as HTML closes them): one made of links
        alone is taken out, unless something it opened is still being read."""
        if not self.open_blocks.get(tag):
            return
        still_open = [at for at in (self.dt_start, self.pre_start, self.nav and self.nav[2]) if at is not None]
        while self.blocks:
            block = self.blocks.pop()
            self.open_blocks[block.tag] -= 1
            if self._navigation_block(block) and self.row is None and not any(at >= block.at for at in still_open):
                self._take_out(block.at, block.heads)
            if block.tag == tag:
                return

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._navigation(tag, attrs, start=True)
        if tag == "a":
            self.link_depth += 1
            if not self.hidden_depth and not self.in_head:
                self.links += 1
                self.off_page_links += not (dict(attrs).get("href") or "").strip().startswith("#")
                self.listed_links += bool(self.lists)
        if not self.hidden_depth and not self.in_head:
            self._open_block(tag)
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
            self.title_at = (len(self.parts), len(self.parts))
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.heading = (int(tag[1]), [])
        if tag == "pre":
            self.pre_depth += 1
        if tag == "table":
            self.table_depth += 1
            if self.table_depth == 1:
                self._break(2)
            return
        if self.table_depth == 1:  # a row's cells side by side; breaks inside a cell are spaces
            if tag == "tr":
                if self.row is not None:
                    self._end_row()
                self.row = []
            elif tag in ("td", "th"):
                self._cell()
            else:
                self._cell_break(tag)
            if self.row is not None or tag in ("tr", "td", "th", "thead", "tbody", "tfoot"):
                return
        if self.table_depth > 1:  # a nested table: its text inside the outer cell
            self._cell_break(tag)
            return
        if tag in _HTML_LIST:
            self._break(2)
            start = dict(attrs).get("start") or ""
            self.lists.append([tag == "ol", int(start) - 1 if start.strip().lstrip("-").isdigit() else 0])
        elif tag == "li":
            self._break(1)
            value = dict(attrs).get("value") or ""
            if self.lists:
                current = self.lists[-1]
                current[1] = int(value) if value.strip().isdigit() else current[1] + 1
                mark = f"{current[1]}." if current[0] else "-"
                self.marker = "  " * (len(self.lists) - 1) + mark + " "
            else:
                self.marker = "- "
        elif tag in _HTML_PARAGRAPH:
            self._break(2)
        elif tag in _HTML_LINE:
            if tag in ("dt", "dd"):
                # A term whose </dt> is left out (HTML allows it; man2html's manual pages write
                # `<DT><B>cdspell</B><DD>If set, ...`) ends where its description or the next
                # term starts.
                self._end_term()
            self._break(1)
            if tag == "dt":
                self.dt_start = len(self.parts)

    def _end_term(self) -> None:
        """A short term (`--timeout <seconds>`, `precmd`, the shell's `?` and `!`) is written
        `term::`, as AsciiDoc writes a labeled list's term; one that reads as a sentence or a
        question is left as it is."""
        start, self.dt_start = self.dt_start, None
        if start is None:
            return
        text = "".join(part for part in self.parts[start:]).strip()
        if (
            text
            and "\n" not in text
            and len(text) <= MAX_TERM_CHARS
            and (text[-1] not in ".?!:;," or not any(ch.isalnum() for ch in text))
        ):
            self._write("::", None)

    def _end_pre(self) -> None:
        """The outermost <pre> ends: fenced as a code block when it holds text and at most
        `MAX_FENCED_LINES` lines."""
        start, self.pre_start = self.pre_start, None
        if start is None:
            return
        body = "".join(part for part in self.parts[start:])
        if body.strip() and body.strip("\n").count("\n") < MAX_FENCED_LINES:
            while len(self.parts) > start and self.part_lines[-1] is None and not self.parts[-1].strip():
                self.parts.pop()  # the block's last line break: the fence closes on the next line
                self.part_lines.pop()
            self.parts[start:start] = ["```", "\n"]
            self.part_lines[start:start] = [None, None]
            self._write("\n", None)
            self._write("```", None)
        self._break(2)
        if self.lists:
            self.pending = 2  # `_break` keeps a list's lines together; the block stands apart

    def handle_endtag(self, tag: str) -> None:
        self._end_element(tag)
        if not self.table_depth and not self.pre_depth and not self.hidden_depth:
            self._close_block(tag)

    def _end_element(self, tag: str) -> None:
        self._navigation(tag, [], start=False)
        if tag == "a":
            self.link_depth = max(0, self.link_depth - 1)
        if tag in _HTML_HIDDEN:
            self.hidden_depth = max(0, self.hidden_depth - 1)
            return
        if tag == "head":
            self.in_head = False
            return
        if tag == "title":
            self.in_title = False
            if self.title_at is not None:
                self.title_at = (self.title_at[0], len(self.parts))
        if self.heading is not None and tag == f"h{self.heading[0]}":
            heading = one_line("".join(self.heading[1]))
            if heading:
                self.headings.append((self.heading[0], heading))
            self.heading = None
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
            if not self.pre_depth:
                self._end_pre()
        if tag == "table":
            if self.table_depth == 1:
                if self.row is not None:
                    self._end_row()
                self._break(2)
            self.table_depth = max(0, self.table_depth - 1)
            return
        if self.table_depth == 1 and self.row is not None:
            if tag == "tr":
                self._end_row()
            elif tag not in ("td", "th"):
                self._cell_break(tag)
            return
        if self.table_depth > 1:
            self._cell_break(tag)
            return
        if tag in _HTML_LIST:
            if self.lists:
                self.lists.pop()
            self.marker = ""
            self._break(2)
        elif tag == "li":
            self.marker = ""
            self._break(1)
        elif tag in _HTML_PARAGRAPH:
            self._break(2)
        elif tag in _HTML_LINE and tag != "br":  # <br> is void: only its start counts
            if tag == "dt":
                self._end_term()
            self._break(1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/>: a start without a matching end (an empty <script/> hides nothing, an
        # empty <nav/> holds nothing to take out).
        if tag not in _HTML_HIDDEN and tag != "nav" and dict(attrs).get("role") != "navigation":
            self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self.hidden_depth or (self.in_head and not self.in_title):
            return
        if self.link_depth and data.strip() == "\u00b6":
            return  # a heading's permalink (Sphinx, Docutils): "Grace mode¶"
        if not self.link_depth and not self.in_title and not _LINK_SEPARATORS.fullmatch(data):
            self.content += 1
        if self.in_title:
            self.title_parts.append(data)
        if self.heading is not None:
            self.heading[1].append(data)
        line = self.getpos()[0]
        if self.table_depth and self.row is not None:
            if not self.row:
                self._cell()
            self.row[-1] += data
            if data.strip():
                self.row_lines.extend(_text_lines(data, line))
            return
        if self.pre_depth:
            # Preformatted: keep its spacing and line breaks, each line from its own source line.
            if data:
                if self.pre_start is None and self.table_depth == 0 and not (self.lists and self.marker):
                    if not data.strip():
                        return  # the whitespace before the block's text
                    if self.lists:  # under an item's text: a block of its own, the list goes on after it
                        self.pending = 2
                    self._emit("", None)  # pays the breaks owed before it
                    self.pre_start = len(self.parts)
                    content = data.lstrip("\n")  # a newline right after <pre> is not content
                    line += len(data) - len(content)
                    data = content
                else:
                    self._emit("", None)  # pays the breaks owed before it (and a list marker)
                for i, segment in enumerate(data.split("\n")):
                    if i:
                        self._write("\n", None)
                    if segment:
                        self._write(segment, (line + i, line + i))
            return
        # HTML collapses runs of ASCII whitespace only: a no-break space (&nbsp;) is content.
        collapsed = _HTML_SPACE.sub(" ", data)
        inner = collapsed.strip(" ")
        if collapsed.startswith(" "):
            self.space = True  # "a <b>b</b>": the space before <b> still separates the words
        if inner:
            self._emit(inner, _text_lines(data, line))
            if collapsed.endswith(" "):
                self.space = True

    def close(self) -> None:
        super().close()
        if self.row is not None:
            self._end_row()

    def result(self) -> tuple[str, tuple[SourceSpan, ...]]:
        """The text, and a span per line of it naming the source lines that line comes from."""
        lines: list[tuple[str, list[int]]] = [("", [])]
        for part, at in zip(self.parts, self.part_lines):
            if at is None and part.strip("\n") == "" and part:
                lines.extend(("", []) for _ in range(part.count("\n")))
                continue
            text, seen = lines[-1]
            lines[-1] = (text + part, [*seen, *at] if at else seen)
        # Only <pre> text can carry spaces at a line's ends; keep its indentation, drop the rest.
        # Runs of blank lines collapse into one: paragraphs separated by exactly one blank line.
        out: list[tuple[str, list[int]]] = []
        for text, seen in lines:
            text = text.rstrip(" \t")
            if not text and (not out or not out[-1][0]):
                continue
            out.append((text, seen))
        while out and not out[-1][0]:
            out.pop()
        joined = "\n".join(text for text, _ in out)
        stripped = joined.strip()
        lead = len(joined) - len(joined.lstrip())
        spans: list[SourceSpan] = []
        offset = -lead
        for text, seen in out:
            start, end = max(offset, 0), offset + len(text)
            if seen and end > start:
                spans.append(SourceSpan(start, min(end, len(stripped)), "lines", "", min(seen), max(seen)))
            offset += len(text) + 1
        return stripped, tuple(spans)


def _text_lines(data: str, line: int) -> tuple[int, int]:
    """The source lines of the visible text of `data`, a piece of source starting on `line`."""
    stripped = data.lstrip()
    first = line + data.count("\n", 0, len(data) - len(stripped))
    return first, first + stripped.rstrip().count("\n")


def parse_html(source: str) -> tuple[str, str, tuple[tuple[int, str], ...], tuple[SourceSpan, ...]]:
    """An HTML page's visible text, its <title>, its h1-h6 headings and, per line of the text,
    its source lines (`source`'s line 1 is line 1). Also for EPUB chapters and e-mail bodies."""
    parser = _TextExtractor()
    try:
        parser.feed(source.replace("\x00", ""))
        parser.close()
    except Exception as exc:  # html.parser is lenient, but old versions assert on odd markup
        raise ReadSkip(f"cannot parse HTML: {exc}", error=True) from None
    title = one_line("".join(parser.title_parts))
    own = page_title(title, parser.headings)
    if own != title and parser.title_at is not None:
        # The page's heading says it below: the title's line would only add the site's name.
        start, end = parser.title_at
        del parser.parts[start:end], parser.part_lines[start:end]
    text, spans = parser.result()
    return text, own, tuple(parser.headings), spans


# What joins a page's name and its site's in a <title>: "borg mount — Borg documentation",
# "mod_dir - Apache HTTP Server Version 2.4", "Getting help | Project", "22 Zsh Modules (zsh)".
_TITLE_PARTS = re.compile(r"\s+(?:[-–—|·»«]|::)\s+|\s+(?=\([^()]*\)$)")


def page_title(title: str, headings: Sequence[tuple[int, str]]) -> str:
    """The page's own name, not its site's: the first of the page's first three headings that
    holds the part of its <title> before or after a separator ("Apache Module mod_dir" for
    "mod_dir - Apache HTTP Server Version 2.4", "Authors" for "Authors — Borg 1.2.4
    documentation", "22 Zsh Modules" for "22 Zsh Modules (zsh)"). Every page of a site
    repeats the site's name; in each chunk's header it says nothing about the chunk. A title
    no heading names stays whole."""
    names = [(" ".join(text.casefold().split()), text) for _, text in headings[:3]]
    for separator in _TITLE_PARTS.finditer(title):
        for part in (title[: separator.start()], title[separator.end() :]):
            own = " ".join(part.casefold().split())
            for name, text in names:
                if len(own) >= 3 and own in name:
                    return text
    return title


def html_text(source: str) -> tuple[str, str, tuple[tuple[int, str], ...]]:
    """An HTML page's visible text, its <title> and its h1-h6 headings."""
    text, title, headings, _ = parse_html(source)
    return text, title, headings


def read(data: bytes, ext: str) -> Extracted:
    text, title, headings, spans = parse_html(source_lines(decode_text(data)))
    return Extracted(text, title=title, headings=headings, spans=spans)
