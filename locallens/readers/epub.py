"""EPUB (2 and 3), read with the standard library's zip, a defused XML parser for the package
files and the HTML reader for the chapters: the chapters in reading order (the spine), their
h1-h6 headings, the book's `dc:title`. Images, styles and the navigation file's own list are
left out; a book under DRM (encrypted chapters) is a counted skip. A chunk is cited by its
chapter file inside the book and that file's lines: `book.epub#chapter=OEBPS/ch2.xhtml:12-20`."""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

from locallens.domain import SourceSpan
from locallens.readers.base import (
    REASON_ENCRYPTED,
    Extracted,
    ReadSkip,
    TextBuilder,
    decode_text,
    one_line,
    require,
    source_lines,
)
from locallens.readers.html_page import parse_html
from locallens.readers.safety import checked_zip, read_member

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_CHAPTER_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}


def read(data: bytes, ext: str) -> Extracted:
    archive = checked_zip(data, "EPUB")
    ET = require("defusedxml.ElementTree", "defusedxml")
    names = set(archive.namelist())
    container = ET.fromstring(read_member(archive, "META-INF/container.xml", "EPUB"))
    rootfile = container.find(f".//{_CONTAINER}rootfile")
    opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
    if not opf_path:
        raise ReadSkip("cannot read EPUB: no package document in META-INF/container.xml", error=True)
    package = ET.fromstring(read_member(archive, opf_path, "EPUB"))
    base = posixpath.dirname(opf_path)
    items: dict[str, tuple[str, str, str]] = {}
    for item in package.iter(f"{_OPF}item"):
        href = posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
        items[item.get("id", "")] = (href, item.get("media-type", ""), item.get("properties", ""))
    encrypted = _encrypted_paths(archive, ET) if "META-INF/encryption.xml" in names else set()
    title_element = package.find(f".//{_DC}title")
    title = one_line(title_element.text or "") if title_element is not None else ""
    builder = TextBuilder()
    for itemref in package.iter(f"{_OPF}itemref"):
        href, media_type, properties = items.get(itemref.get("idref", ""), ("", "", ""))
        if media_type not in _CHAPTER_TYPES or "nav" in properties.split() or href not in names:
            continue
        if href in encrypted:
            raise ReadSkip(f"cannot read EPUB: {REASON_ENCRYPTED} (DRM)", error=True)
        text, _, headings, spans = parse_html(source_lines(decode_text(read_member(archive, href, "EPUB"))))
        chapter = [SourceSpan(s.start, s.end, "chapter", href, s.line_start, s.line_end) for s in spans]
        if builder.add_spanned(text, chapter):
            builder.headings.extend(headings)
    return builder.result(title, "EPUB")


def _encrypted_paths(archive: object, ET: object) -> set[str]:
    """Members that META-INF/encryption.xml says are encrypted (fonts merely obfuscated aside)."""
    root = ET.fromstring(read_member(archive, "META-INF/encryption.xml", "EPUB"))  # type: ignore[arg-type,attr-defined]
    paths = set()
    for element in root.iter():
        if element.tag.endswith("CipherReference"):
            uri = unquote(element.get("URI", ""))
            if not uri.lower().endswith((".otf", ".ttf", ".woff", ".woff2")):
                paths.add(posixpath.normpath(uri))
    return paths
