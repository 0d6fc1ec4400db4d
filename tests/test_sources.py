"""locallens.walk and locallens.readers: the walker and the reader against docs/behaviour.md#bad-input-and-faults
(rows 1-12) and #documents."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest

from locallens import readers
from locallens.domain import Document, FileStat, Skipped
from locallens.errors import UsageError
from locallens.readers import DEFAULT_MAX_BYTES, read_document, sha256_text
from locallens.readers.registry import extensions
from locallens.walk import walk

# --- helpers ----------------------------------------------------------------------------------


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(data)
    return path


def walked(root: Path, **kwargs: object) -> list[FileStat | Skipped]:
    return list(walk(root, **kwargs))  # type: ignore[arg-type]


def rels(results: list[FileStat | Skipped]) -> list[str]:
    return [r.relative_path for r in results if isinstance(r, FileStat)]


def skips(results: list[FileStat | Skipped]) -> dict[str, Skipped]:
    return {r.path: r for r in results if isinstance(r, Skipped)}


def stat_of(root: Path, rel: str) -> FileStat:
    matches = [r for r in walk(root) if isinstance(r, FileStat) and r.relative_path == rel]
    assert len(matches) == 1, matches
    return matches[0]


def read(root: Path, rel: str, **kwargs: int) -> Document | Skipped:
    return read_document(stat_of(root, rel), **kwargs)


def make_pdf(page_streams: list[bytes]) -> bytes:
    """A minimal, valid PDF: one Helvetica font, one content stream per page, a correct xref."""
    page_ids = [4 + 2 * i for i in range(len(page_streams))]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % p for p in page_ids) + b"] /Count %d >>" % len(page_streams),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for page_id, stream in zip(page_ids, page_streams):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# --- constants --------------------------------------------------------------------------------


def test_defaults() -> None:
    assert {".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".pdf"} <= extensions()
    assert DEFAULT_MAX_BYTES == 10 * 1024 * 1024
    assert sha256_text("é") == hashlib.sha256("é".encode()).hexdigest()


# --- reading: rows 1-7 ------------------------------------------------------------------------


def test_row1_binary_file_is_a_counted_skip(tmp_path: Path) -> None:
    write(tmp_path / "blob.txt", b"looks like text\x00\x01\x02 but is not")
    assert read(tmp_path, "blob.txt") == Skipped("blob.txt", "binary file", error=False)


def test_row1_nul_after_first_8kb_is_not_sniffed_as_binary_but_is_still_text(tmp_path: Path) -> None:
    # The sniff looks at 8 KB only; a NUL later is valid UTF-8 and is kept, not mangled.
    write(tmp_path / "late.txt", b"a" * 9000 + b"\x00b")
    doc = read(tmp_path, "late.txt")
    assert isinstance(doc, Document)
    assert doc.text.endswith("\x00b")


def test_row2_invalid_utf8_is_a_skip_naming_the_byte(tmp_path: Path) -> None:
    write(tmp_path / "latin1.txt", "café olé".encode("latin-1"))
    result = read(tmp_path, "latin1.txt")
    assert result == Skipped("latin1.txt", "invalid UTF-8 at byte 3", error=False)


def test_row2_offset_counts_the_utf8_bom(tmp_path: Path) -> None:
    write(tmp_path / "bom.txt", b"\xef\xbb\xbfab\xff")
    assert read(tmp_path, "bom.txt") == Skipped("bom.txt", "invalid UTF-8 at byte 5", error=False)


def test_row3_non_ascii_text_is_identical(tmp_path: Path) -> None:
    source = "Café, niño, señor.\n\n東京は日本の首都です。\nКиїв — столиця України. 🚀"
    write(tmp_path / "intl.md", source)
    doc = read(tmp_path, "intl.md")
    assert isinstance(doc, Document)
    assert doc.text == source
    assert doc.checksum == hashlib.sha256(source.encode("utf-8")).hexdigest()


def test_row4_utf8_bom_is_stripped(tmp_path: Path) -> None:
    write(tmp_path / "bom.md", b"\xef\xbb\xbf# T\xc3\xadtulo\n")
    doc = read(tmp_path, "bom.md")
    assert isinstance(doc, Document)
    assert doc.text == "# Título"


@pytest.mark.parametrize("codec,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_row4_utf16_with_bom_is_decoded(tmp_path: Path, codec: str, bom: bytes) -> None:
    source = "Hola, señor.\r\nこんにちは\r\n"
    write(tmp_path / "u16.txt", bom + source.encode(codec))
    doc = read(tmp_path, "u16.txt")
    assert isinstance(doc, Document)
    assert doc.text == "Hola, señor.\nこんにちは"


def test_row4_utf16_without_bom_is_binary(tmp_path: Path) -> None:
    write(tmp_path / "nobom.txt", "hello".encode("utf-16-le"))
    assert read(tmp_path, "nobom.txt") == Skipped("nobom.txt", "binary file", error=False)


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n  \n"])
def test_row5_empty_and_whitespace_only_are_empty_documents(tmp_path: Path, content: bytes) -> None:
    write(tmp_path / "empty.md", content)
    doc = read(tmp_path, "empty.md")
    assert isinstance(doc, Document)
    assert doc.text == ""
    assert doc.checksum == hashlib.sha256(b"").hexdigest()
    assert doc.size == len(content)


def test_row6_over_the_cap_is_skipped_without_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "big.txt", "x" * 5000)
    stat = stat_of(tmp_path, "big.txt")

    def must_not_open(*args: object, **kwargs: object) -> int:
        raise AssertionError("a file over the cap must never be opened")

    monkeypatch.setattr(readers.os, "open", must_not_open)
    result = read_document(stat, max_bytes=1000)
    assert isinstance(result, Skipped)
    assert result.path == "big.txt" and result.error is False
    assert result.reason.startswith("file too large (")
    assert result.reason.endswith("; raise with --max-file-mb)")


def test_row6_too_large_message_in_megabytes(tmp_path: Path) -> None:
    stat = FileStat(str(tmp_path), "huge.pdf", str(tmp_path / "huge.pdf"), 25 * 1024 * 1024 + 1, 0)
    result = read_document(stat)  # never touches the (absent) file
    assert result == Skipped("huge.pdf", "file too large (25.1 MB > cap 10 MB; raise with --max-file-mb)", error=False)


def test_row7_one_long_line_under_a_raised_cap_reads_fine(tmp_path: Path) -> None:
    size = 5 * 1024 * 1024
    write(tmp_path / "line.txt", b"abcdefgh" * (size // 8))
    assert isinstance(read(tmp_path, "line.txt", max_bytes=4 * 1024 * 1024), Skipped)
    doc = read(tmp_path, "line.txt", max_bytes=6 * 1024 * 1024)
    assert isinstance(doc, Document)
    assert len(doc.text) == size
    assert "\n" not in doc.text  # still one line


# --- normalisation and checksums (docs/behaviour.md#documents) ----------------------------------------------------


def test_crlf_and_cr_normalised_and_checksum_stable(tmp_path: Path) -> None:
    write(tmp_path / "unix.txt", "  one\ntwo\n\nthree\n")
    write(tmp_path / "dos.txt", "  one\r\ntwo\r\n\r\nthree\r\n")
    write(tmp_path / "mac.txt", "  one\rtwo\r\rthree\r")
    docs = [read(tmp_path, name) for name in ("unix.txt", "dos.txt", "mac.txt")]
    assert all(isinstance(d, Document) for d in docs)
    assert {d.text for d in docs} == {"one\ntwo\n\nthree"}  # type: ignore[union-attr]
    assert len({d.checksum for d in docs}) == 1  # type: ignore[union-attr]
    assert docs[0].checksum == sha256_text("one\ntwo\n\nthree")  # type: ignore[union-attr]
    # Same bytes, same checksum, run after run; one byte changed, another checksum.
    assert read(tmp_path, "unix.txt").checksum == docs[0].checksum  # type: ignore[union-attr]
    write(tmp_path / "unix.txt", "  one\ntwo\n\nthreE\n")
    assert read(tmp_path, "unix.txt").checksum != docs[0].checksum  # type: ignore[union-attr]


def test_document_fields_come_from_the_stat(tmp_path: Path) -> None:
    path = write(tmp_path / "sub" / "a.md", "hello\n")
    stat = stat_of(tmp_path, "sub/a.md")
    doc = read_document(stat)
    assert isinstance(doc, Document)
    assert doc.root == str(tmp_path.resolve())
    assert doc.relative_path == "sub/a.md"
    assert doc.size == 6 == path.stat().st_size
    assert doc.mtime_ns == path.stat().st_mtime_ns


# --- HTML -------------------------------------------------------------------------------------


def test_html_visible_text_only(tmp_path: Path) -> None:
    page = """<!DOCTYPE html>
<html><head><title>Caf&eacute; guide</title>
<meta charset="utf-8"><style>body { color: red }</style>
<script>var secret = "do not index";</script></head>
<body>
  <noscript>Enable JavaScript</noscript>
  <template><p>template text</p></template>
  <h1>Opening   hours</h1>
  <p>We open at 8&nbsp;am &amp; close at <b>6</b> pm.<br>Except Sundays.</p>
  <div>Prices &lt; 5 &euro;</div>
  <ul><li>Coffee</li><li>Tea &#x2615;</li></ul>
  <!-- a comment nobody sees -->
  <table><tr><td>Mon</td><td>8-18</td></tr><tr><td>Tue</td><td>8-18</td></tr></table>
</body></html>"""
    write(tmp_path / "page.html", page)
    doc = read(tmp_path, "page.html")
    assert isinstance(doc, Document)
    assert doc.text == (
        "Café guide\n\n"
        "Opening hours\n\n"
        "We open at 8\u00a0am & close at 6 pm.\nExcept Sundays.\n\n"
        "Prices < 5 €\n\n"
        "- Coffee\n- Tea \u2615\n\n"
        "| Mon | 8-18 |\n| Tue | 8-18 |"
    )
    for hidden in ("color: red", "secret", "JavaScript", "template text", "comment", "charset"):
        assert hidden not in doc.text


def test_htm_uppercase_extension_is_html(tmp_path: Path) -> None:
    write(tmp_path / "OLD.HTM", "<p>a</p><p>b</p><script>x()</script>")
    doc = read(tmp_path, "OLD.HTM")
    assert isinstance(doc, Document)
    assert doc.text == "a\n\nb"


def test_html_pre_keeps_its_layout(tmp_path: Path) -> None:
    write(tmp_path / "code.html", "<p>Run:</p><pre>docker run \\\n  --rm  -it x</pre>")
    doc = read(tmp_path, "code.html")
    assert isinstance(doc, Document)
    assert doc.text == "Run:\n\n```\ndocker run \\\n  --rm  -it x\n```"  # a code block, fenced
    # Under a list item's text, a block of its own between the item and the next one.
    write(
        tmp_path / "steps.html",
        "<ol><li><p>Install the tool:</p><pre>pip install quill\nquill init</pre></li><li>Run it.</li></ol>"
        "<ul><li><pre>opens the item</pre></li></ul>",
    )
    assert read(tmp_path, "steps.html").text == (  # type: ignore[union-attr]
        "1. Install the tool:\n\n```\npip install quill\nquill init\n```\n\n2. Run it.\n\n- opens the item"
    )
    # A <pre> longer than a code block (a manual page some converters wrap whole) stays text.
    lines = "\n".join(f"Line {n} of the page." for n in range(60))
    write(tmp_path / "wrapped.html", f"<pre>{lines}</pre>")
    assert read(tmp_path, "wrapped.html").text == lines  # type: ignore[union-attr]


def test_html_navigation_landmarks_and_permalinks_are_not_text(tmp_path: Path) -> None:
    """A Sphinx page's related links and sidebar (role="navigation") and a <nav> menu are not
    the page's text, nor a heading's permalink pilcrow; a landmark that never closes loses
    nothing of the page after it."""
    write(
        tmp_path / "page.html",
        '<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="n.html">next</a></li></ul></div>'
        '<h1>Grace mode<a class="headerlink" href="#g">\u00b6</a></h1><p>Serve stale content.</p>'
        "<nav><a href='/'>Home</a></nav><p>Keep is related.</p>",
    )
    page = read(tmp_path, "page.html")
    assert page.text == "Grace mode\n\nServe stale content.\n\nKeep is related."  # type: ignore[union-attr]
    assert page.headings == ((1, "Grace mode"),)  # type: ignore[union-attr]
    write(tmp_path / "open.html", '<p>Before.</p><div role="navigation"><div>Menu<p>Rest of the page.</p>')
    assert read(tmp_path, "open.html").text == "Before.\n\nMenu\n\nRest of the page."  # type: ignore[union-attr]


def test_html_blocks_of_links_alone_are_not_text(tmp_path: Path) -> None:
    """A bar, a row or a container that holds nothing but links, two or more, one of them off the
    page, is navigation without a landmark (texinfo's "[ << ] [ Up ]" row, a site's breadcrumbs
    and menu bar, a theme's sidebar of other pages) and is not the page's text. A list of links
    (an index of pages, links into the page), alone or in a container of its own, one link alone
    and links among words stay."""
    write(
        tmp_path / "page.html",
        '<table class="header"><tr><td>[<a href="a.html"> &lt;&lt; </a>]</td><td>[<a href="#up"> Up </a>]</td>'
        "<td>&nbsp;</td></tr></table>"
        '<div id="path"><a href="/">Site</a> &gt; <a href="/docs/">Docs</a> &gt; <a href="/docs/mod/">Modules</a></div>'
        '<div class="sidebar"><h3><a href="index.html">Contents</a></h3>'
        '<ul><li><a href="install.html">Installation</a></li><li><a href="usage.html">Usage</a></li></ul></div>'
        "<h1>Grace mode</h1>"
        '<h3>Directives</h3><ul id="toc"><li><a href="#grace">GraceTime</a></li><li><a href="#keep">KeepTime</a></li></ul>'
        '<p>Stale objects come from other modules such as:</p><ul><li><a href="m1.html">mod_a</a></li>'
        '<li><a href="m2.html">mod_b</a></li></ul>'
        '<p><a href="notes.html">Release notes</a></p>'
        '<ul><li><a href="grace.html">Grace mode</a></li><li><a href="keep.html">Keep mode</a></li></ul>'
        '<div class="toctree-wrapper"><ul><li><a href="ban.html">Banning</a></li><li><a href="purge.html">Purging</a>'
        "</li></ul></div>"
        '<ul><li><a href="x.html">GraceTime</a>: how long</li><li><a href="y.html">KeepTime</a>: how long more</li></ul>',
    )
    page = read(tmp_path, "page.html")
    assert page.text.split("\n\n") == [  # type: ignore[union-attr]
        "Grace mode",
        "Directives",
        "- GraceTime\n- KeepTime",
        "Stale objects come from other modules such as:",
        "- mod_a\n- mod_b",
        "Release notes",
        "- Grace mode\n- Keep mode",
        "- Banning\n- Purging",
        "- GraceTime: how long\n- KeepTime: how long more",
    ]
    assert page.headings == ((1, "Grace mode"), (3, "Directives"))  # type: ignore[union-attr]


def test_html_blocks_nested_deep_are_read_in_linear_time(tmp_path: Path) -> None:
    """Every link and piece of text is counted once, not once per open block: 20,000 nested
    blocks around 20,000 links, or as many left unclosed, read in about a second (counted per
    block, the first took 12 and 18 seconds, and 200,000 would take half an hour)."""
    import time

    n = 20_000
    links = "".join(f'<a href="p{i}.html">page {i}</a> ' for i in range(n))
    write(tmp_path / "deep.html", "<div>" * n + "<p>Read me.</p>" + links + "</div>" * n)
    write(tmp_path / "open.html", "<div><p><a href='a.html'>a</a> <a href='b.html'>b</a>" * n + "<p>Read me.</p>")
    started = time.perf_counter()
    deep, unclosed = read(tmp_path, "deep.html"), read(tmp_path, "open.html")
    assert time.perf_counter() - started < 10
    assert deep.text.startswith("Read me.\n\npage 0 page 1")  # type: ignore[union-attr]
    assert unclosed.text.endswith("Read me.")  # type: ignore[union-attr]


def test_html_title_names_the_page_not_its_site(tmp_path: Path) -> None:
    """A <title> that is the page's heading and its site's name ("Authors — Borg 1.2.4
    documentation", "mod_dir - Apache HTTP Server", "22 Zsh Modules (zsh)") is the heading that
    names the page, and its line is not written above that heading; a title no heading names
    stays whole, and its line stays."""
    for title, heading in (
        ("Authors &#8212; Borg 1.2.4 documentation", "Authors"),
        ("mod_dir - Apache HTTP Server Version 2.4", "Apache Module mod_dir"),
        ("22 Zsh Modules (zsh)", "22 Zsh Modules"),
        ("Borg 1.2.4 documentation | Authors", "Authors"),
    ):
        write(tmp_path / "page.html", f"<html><head><title>{title}</title></head><h1>{heading}</h1><p>Text.</p>")
        page = read(tmp_path, "page.html")
        assert page.title == heading  # type: ignore[union-attr]
        assert page.text == f"{heading}\n\nText."  # type: ignore[union-attr]
    write(tmp_path / "page.html", "<title>Release notes - Quill</title><h1>What changed</h1><p>Text.</p>")
    page = read(tmp_path, "page.html")
    assert page.title == "Release notes - Quill"  # type: ignore[union-attr]
    assert page.text == "Release notes - Quill\n\nWhat changed\n\nText."  # type: ignore[union-attr]


def test_html_definition_terms_are_marked_as_terms(tmp_path: Path) -> None:
    """A short `<dt>` is written `term::` over its description (stacked aliases one a line), so
    the answer's units read it as the term it is, not a title; a `<dt>` that is a question or a
    sentence (a FAQ) is left as written; one of punctuation alone (the shell's special
    parameters `?` and `!`) is a term."""
    write(
        tmp_path / "opts.html",
        "<dl><dt>-q</dt><dt>--quiet</dt><dd><p>Be quiet.</p></dd><dt>precmd</dt><dd>Run before a prompt.</dd>"
        "<dt>How do I reset it?</dt><dd>Delete the file.</dd>"
        "<dt><code>?</code></dt><dd><p>($?) Expands to the exit status.</p></dd></dl>",
    )
    assert read(tmp_path, "opts.html").text.split("\n") == [  # type: ignore[union-attr]
        "-q::",
        "--quiet::",
        "",
        "Be quiet.",
        "",
        "precmd::",
        "Run before a prompt.",
        "How do I reset it?",
        "Delete the file.",
        "?::",
        "",
        "($?) Expands to the exit status.",
    ]


def test_html_definition_terms_without_their_end_tags_are_marked_too(tmp_path: Path) -> None:
    """HTML lets a `<dt>` and a `<dd>` go unclosed, and man2html's manual pages write them so
    (`<DT><B>cdspell</B><DD>If set, ...`): the term ends where its description or the next term
    starts, and is marked as a closed one is. Without the mark, "cdable_vars" ran into the
    sentence before it ("... interactive shells. cdable_vars If set, ...")."""
    write(
        tmp_path / "shopt.html",
        "<DL COMPACT><DT><B>autocd</B>\n\n<DD>\nIf set, a directory name is executed as cd.\n"
        "<DT><B>-q</B>\n<DT><B>--quiet</B>\n<DD>Be quiet.\n"
        "<DT><B>cdspell</B>\n\n<DD>\nIf set, minor errors are corrected.\n</DL>",
    )
    assert read(tmp_path, "shopt.html").text.split("\n") == [  # type: ignore[union-attr]
        "autocd::",
        "If set, a directory name is executed as cd.",
        "-q::",
        "--quiet::",
        "Be quiet.",
        "cdspell::",
        "If set, minor errors are corrected.",
    ]


# --- PDF --------------------------------------------------------------------------------------


def test_pdf_text_of_every_page(tmp_path: Path) -> None:
    write(
        tmp_path / "doc.pdf",
        make_pdf(
            [
                b"BT /F1 24 Tf 72 720 Td (Hello PDF world) Tj ET",
                b"BT /F1 12 Tf 72 700 Td (Second page) Tj ET",
            ]
        ),
    )
    doc = read(tmp_path, "doc.pdf")
    assert isinstance(doc, Document)
    assert doc.text == "Hello PDF world\n\nSecond page"


def test_pdf_without_text_is_skipped(tmp_path: Path) -> None:
    write(tmp_path / "scan.pdf", make_pdf([b"0 0 m 100 100 l S"]))
    skipped = read(tmp_path, "scan.pdf")
    assert isinstance(skipped, Skipped) and not skipped.error
    assert skipped.reason.startswith("PDF has no extractable text")


def test_broken_pdf_is_an_error_skip_and_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage" + bytes(range(256)))
    write(tmp_path / "notapdf.pdf", "just text")
    for name in ("broken.pdf", "notapdf.pdf"):
        result = read(tmp_path, name)
        assert isinstance(result, Skipped)
        assert result.reason.startswith("cannot read PDF: ")
        assert result.error is True
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_encrypted_pdf(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    plain = make_pdf([b"BT /F1 24 Tf 72 720 Td (Locked text) Tj ET"])

    def encrypted(user: str) -> bytes:
        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
        writer.encrypt(user, owner_password="owner", algorithm="RC4-128")
        buffer = io.BytesIO()
        writer.write(buffer)
        return buffer.getvalue()

    write(tmp_path / "locked.pdf", encrypted("secret"))
    write(tmp_path / "permissions-only.pdf", encrypted(""))
    assert read(tmp_path, "locked.pdf") == Skipped(
        "locked.pdf", "cannot read PDF: encrypted (password required)", error=True
    )
    doc = read(tmp_path, "permissions-only.pdf")  # empty user password: readable
    assert isinstance(doc, Document) and doc.text == "Locked text"


# --- row 8: permission denied -----------------------------------------------------------------


def test_row8_permission_denied_on_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "secret.md", "top secret")
    stat = stat_of(tmp_path, "secret.md")
    real_open = os.open

    def deny(path: object, *args: object, **kwargs: object) -> int:
        if os.fspath(path) == stat.path:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny)
    assert read_document(stat) == Skipped("secret.md", "permission denied", error=True)


def test_row8_permission_denied_on_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "a.md", "a")
    write(tmp_path / "locked" / "inside.md", "hidden")
    write(tmp_path / "z.md", "z")
    real_scandir = os.scandir

    def deny(path: object = ".") -> object:
        if Path(os.fspath(path)).name == "locked":  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", deny)
    results = walked(tmp_path)
    assert rels(results) == ["a.md", "z.md"]  # the run goes on past the locked folder
    assert skips(results) == {"locked": Skipped("locked", "permission denied", error=True)}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores chmod 000")
def test_row8_real_chmod_when_not_root(tmp_path: Path) -> None:
    write(tmp_path / "locked" / "inside.md", "x")
    write(tmp_path / "file.md", "y")
    (tmp_path / "locked").chmod(0)
    (tmp_path / "file.md").chmod(0)
    try:
        results = walked(tmp_path)
        assert skips(results)["locked"] == Skipped("locked", "permission denied", error=True)
        assert read(tmp_path, "file.md") == Skipped("file.md", "permission denied", error=True)
    finally:
        (tmp_path / "locked").chmod(0o755)
        (tmp_path / "file.md").chmod(0o644)


# --- rows 9-10: symlinks ----------------------------------------------------------------------


def test_row9_broken_symlink_is_a_counted_skip(tmp_path: Path) -> None:
    write(tmp_path / "ok.md", "ok")
    (tmp_path / "dead.md").symlink_to(tmp_path / "gone.md")
    (tmp_path / "dead-cache").symlink_to(tmp_path / "nowhere")  # not a document name: silent
    results = walked(tmp_path)
    assert rels(results) == ["ok.md"]
    assert skips(results) == {"dead.md": Skipped("dead.md", "broken symlink", error=False)}


def test_row10_symlink_loop_to_an_ancestor(tmp_path: Path) -> None:
    write(tmp_path / "a" / "b" / "note.md", "n")
    (tmp_path / "a" / "b" / "up").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "self").symlink_to(tmp_path)  # a link to the root itself
    (tmp_path / "a" / "spin.md").symlink_to(tmp_path / "a" / "spin.md")  # ELOOP in the kernel
    results = walked(tmp_path)
    assert rels(results) == ["a/b/note.md"]
    assert skips(results) == {
        "a/b/up": Skipped("a/b/up", "symlink loop", error=False),
        "a/self": Skipped("a/self", "symlink loop", error=False),
        "a/spin.md": Skipped("a/spin.md", "symlink loop", error=False),
    }


def test_row10_symlinks_out_of_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside / "leak.md", "private")
    write(root / "in.md", "in")
    (root / "leak.md").symlink_to(outside / "leak.md")
    (root / "leakdir").symlink_to(outside)
    (root / "leak.bin").symlink_to(outside / "leak.md")  # not a document by name: silent
    results = walked(root)
    assert rels(results) == ["in.md"]
    assert skips(results) == {
        "leak.md": Skipped("leak.md", "symlink points outside the indexed root", error=False),
        "leakdir": Skipped("leakdir", "symlink points outside the indexed root", error=False),
    }


def test_symlinks_inside_the_root_are_followed_once(tmp_path: Path) -> None:
    write(tmp_path / "real" / "doc.md", "real doc")
    write(tmp_path / "real" / "other.md", "other doc")
    (tmp_path / "alias.md").symlink_to(tmp_path / "real" / "doc.md")
    (tmp_path / "linked").symlink_to(tmp_path / "real")  # visited before "real" by name order
    (tmp_path / "zlink").symlink_to(tmp_path / "real")  # a third way in
    results = walked(tmp_path)
    # The first path in the walk's order (names sorted, depth first) is the document.
    assert rels(results) == ["alias.md", "linked/other.md"]
    assert skips(results) == {
        "linked/doc.md": Skipped("linked/doc.md", "same file as alias.md", error=False, same_as="alias.md"),
        "real": Skipped("real", "same folder as linked", error=False, same_as="linked"),
        "zlink": Skipped("zlink", "same folder as linked", error=False, same_as="linked"),
    }
    alias = next(r for r in results if isinstance(r, FileStat) and r.relative_path == "alias.md")
    assert alias.path == str(tmp_path.resolve() / "alias.md")
    doc = read_document(alias)
    assert isinstance(doc, Document) and doc.text == "real doc"


def test_row50_one_file_is_one_path_however_reached(tmp_path: Path) -> None:
    """`current -> v2`, a file symlink and a hard link: each file is found once, by its first path."""
    write(tmp_path / "v2" / "a.md", "version two")
    write(tmp_path / "v2" / "b.md", "b")
    (tmp_path / "current").symlink_to("v2")  # relative, as `ln -s v2 current` makes it
    (tmp_path / "latest.md").symlink_to(tmp_path / "v2" / "b.md")
    os.link(tmp_path / "v2" / "a.md", tmp_path / "hard.md")
    results = walked(tmp_path)
    assert rels(results) == ["current/a.md", "current/b.md"]
    assert skips(results) == {
        "hard.md": Skipped("hard.md", "same file as current/a.md", error=False, same_as="current/a.md"),
        "latest.md": Skipped("latest.md", "same file as current/b.md", error=False, same_as="current/b.md"),
        "v2": Skipped("v2", "same folder as current", error=False, same_as="current"),
    }
    # Every path the walk gives is another file.
    found = [r for r in results if isinstance(r, FileStat)]
    assert len({(r.dev, r.ino) for r in found}) == len(found) and all(r.ino for r in found)


def test_row50_symlink_loops_end_and_out_of_root_links_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a" / "note.md", "n")
    write(tmp_path / "outside" / "secret.md", "private")
    (root / "a" / "again").symlink_to(root)  # a loop through the root
    (root / "b").symlink_to(root / "a")  # a second way into a, which holds the loop
    (root / "ping.md").symlink_to(root / "pong.md")
    (root / "pong.md").symlink_to(root / "ping.md")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "a" / "leak.md").symlink_to(tmp_path / "outside" / "secret.md")
    results = walked(root)
    assert rels(results) == ["a/note.md"]
    assert skips(results) == {
        "a/again": Skipped("a/again", "symlink loop", error=False),
        "a/leak.md": Skipped("a/leak.md", "symlink points outside the indexed root", error=False),
        "b": Skipped("b", "same folder as a", error=False, same_as="a"),
        "out": Skipped("out", "symlink points outside the indexed root", error=False),
        "ping.md": Skipped("ping.md", "symlink loop", error=False),
        "pong.md": Skipped("pong.md", "symlink loop", error=False),
    }


# --- row 11: ignore rules, hidden folders, .git -----------------------------------------------


def test_row11_hidden_and_dot_git_are_silently_skipped(tmp_path: Path) -> None:
    write(tmp_path / ".git" / "HEAD.md", "x")
    write(tmp_path / ".obsidian" / "workspace.md", "x")
    write(tmp_path / ".hidden.md", "x")
    write(tmp_path / "notes" / ".draft.md", "x")
    write(tmp_path / "notes" / "visible.md", "x")
    results = walked(tmp_path, include=["**/*"])
    assert results == [
        FileStat(
            str(tmp_path.resolve()),
            "notes/visible.md",
            str(tmp_path.resolve() / "notes" / "visible.md"),
            1,
            (tmp_path / "notes" / "visible.md").stat().st_mtime_ns,
        )
    ]


def test_row11_gitignore_at_root_and_nested(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "*.log.md\nbuild/\n/top-only.md\nsecret*\n")
    write(tmp_path / "a.log.md", "x")
    write(tmp_path / "build" / "out.md", "x")
    write(tmp_path / "top-only.md", "x")
    write(tmp_path / "secret-plan.md", "x")
    write(tmp_path / "keep.md", "x")
    write(tmp_path / "sub" / ".gitignore", "drafts/\n*.txt\n!important.txt\n/local.md\n")
    write(tmp_path / "sub" / "top-only.md", "x")  # "/top-only.md" anchors to the root only
    write(tmp_path / "sub" / "drafts" / "d.md", "x")
    write(tmp_path / "sub" / "notes.txt", "x")
    write(tmp_path / "sub" / "important.txt", "x")
    write(tmp_path / "sub" / "local.md", "x")
    write(tmp_path / "sub" / "deeper" / "local.md", "x")  # "/local.md" is relative to sub/
    write(tmp_path / "sub" / "deeper" / "more.txt", "x")  # nested rule applies below sub/
    write(tmp_path / "other" / "notes.txt", "x")  # sub/.gitignore does not reach here
    assert rels(walked(tmp_path)) == [
        "keep.md",
        "other/notes.txt",
        "sub/deeper/local.md",
        "sub/important.txt",
        "sub/top-only.md",
    ]


def test_row11_bad_gitignore_lines_do_not_cost_the_good_ones(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", b"\\\n*.txt\n\xff\xfe junk\n")
    write(tmp_path / "a.txt", "x")
    write(tmp_path / "b.md", "x")
    assert rels(walked(tmp_path)) == ["b.md"]


# --- include / exclude / extensions / order ---------------------------------------------------


def test_default_extensions_case_insensitive_and_others_ignored(tmp_path: Path) -> None:
    for name in (
        "a.md",
        "B.MARKDOWN",
        "c.Txt",
        "d.rst",
        "e.html",
        "f.HTM",
        "g.pdf",
        "h.py",
        "i.ORG",
        "README",
        "j.csv",
    ):
        write(tmp_path / name, "x")
    assert rels(walked(tmp_path)) == ["B.MARKDOWN", "a.md", "c.Txt", "d.rst", "e.html", "f.HTM", "g.pdf", "i.ORG"]


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    write(tmp_path / "todo.cfg", "x")
    write(tmp_path / "deep" / "x.cfg", "x")
    write(tmp_path / "notes" / "a" / "b" / "run.log", "x")
    write(tmp_path / "notes" / "run.log", "x")
    write(tmp_path / "other.log", "x")
    write(tmp_path / "keep.md", "x")
    write(tmp_path / "drafts" / "wip.md", "x")
    write(tmp_path / "notes" / "private.md", "x")
    results = walked(
        tmp_path,
        include=["*.cfg", "notes/**/*.log"],
        exclude=["drafts/", "private.md", "deep/*.cfg"],
    )
    assert rels(results) == ["keep.md", "notes/a/b/run.log", "notes/run.log", "todo.cfg"]


def test_files_that_are_not_documents_are_counted_by_extension(tmp_path: Path) -> None:
    from collections import Counter

    write(tmp_path / "notes.md", "x")
    for rel in ("run.sh", "tools/build.sh", "tools/Makefile", "tools/configure", "data.tar.GZ", "later.log"):
        write(tmp_path / rel, "x")
    write(tmp_path / ".hidden.sh", "x")  # hidden: policy, not counted
    write(tmp_path / "vendor" / "lib.sh", "x")
    write(tmp_path / ".gitignore", "vendor/\n")  # ignored: not counted
    write(tmp_path / "skip.sh", "x")  # excluded by the user: not counted
    others: Counter[str] = Counter()
    results = list(walk(tmp_path, include=["*.log"], exclude=["skip.sh"], others=others))
    assert rels(results) == ["later.log", "notes.md"]
    assert others == {".sh": 2, "": 2, ".gz": 1}


def test_invalid_glob_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--include"):
        walk(tmp_path, include=["\\"])


def test_deterministic_order_sorted_within_each_folder(tmp_path: Path) -> None:
    for rel in ("b.md", "a/z.md", "a/b.md", "c/a.md", "a.md"):
        write(tmp_path / rel, "x")
    assert rels(walked(tmp_path)) == ["a/b.md", "a/z.md", "a.md", "b.md", "c/a.md"]
    assert walked(tmp_path) == walked(tmp_path)


def test_fifo_named_like_a_document_is_not_read(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(tmp_path / "pipe.md")
    assert skips(walked(tmp_path)) == {"pipe.md": Skipped("pipe.md", "not a regular file", error=False)}


def test_walk_stats_two_thousand_files_without_opening_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The walk is what an unchanged reindex costs: it must only stat. (Its speed is measured in
    # benchmarks/bench_index.py, not asserted here: timings are flaky on shared machines.)
    for d in range(20):
        folder = tmp_path / f"d{d:02}"
        folder.mkdir()
        for f in range(100):
            (folder / f"f{f:03}.md").write_bytes(b"x")
    (tmp_path / ".gitignore").write_text("*.tmp\n")
    opened: list[str] = []
    real_open, real_os_open = open, os.open

    def spy_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    def spy_os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    results = walked(tmp_path)
    assert len(results) == 2000
    assert any(p.endswith(".gitignore") for p in opened)  # the spies see what the walk opens
    assert not [p for p in opened if p.endswith(".md")]


# --- roots ------------------------------------------------------------------------------------


def test_missing_root_is_a_usage_error_at_call_time(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or directory: "):
        walk(tmp_path / "nope")


def test_root_that_is_a_file(tmp_path: Path) -> None:
    path = write(tmp_path / "one.org", "single")  # named explicitly: no extension policy
    results = walked(path)
    assert results == [
        FileStat(str(tmp_path.resolve()), "one.org", str(tmp_path.resolve() / "one.org"), 6, path.stat().st_mtime_ns)
    ]
    doc = read_document(results[0])  # type: ignore[arg-type]
    assert isinstance(doc, Document) and doc.text == "single"


def test_root_given_as_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "docs" / "a.md", "x")
    monkeypatch.chdir(tmp_path)
    (result,) = walked(Path("docs"))
    assert isinstance(result, FileStat)
    assert result.root == str((tmp_path / "docs").resolve())
    assert result.path == str((tmp_path / "docs" / "a.md").resolve())


# --- row 12: changed or deleted while being indexed -------------------------------------------


def test_row12_file_changed_while_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "live.md", "version one\n")
    stat = stat_of(tmp_path, "live.md")
    real_read = readers._read_bytes

    def read_then_append(fh: io.BufferedReader, limit: int) -> bytes:
        data = real_read(fh, limit)
        with open(path, "ab") as other:  # another program writes while we read
            other.write(b"appended\n")
        return data

    monkeypatch.setattr(readers, "_read_bytes", read_then_append)
    assert read_document(stat) == Skipped("live.md", "file changed while being read", error=False)


def test_row12_file_changed_between_walk_and_read(tmp_path: Path) -> None:
    path = write(tmp_path / "live.md", "version one\n")
    stat = stat_of(tmp_path, "live.md")
    path.write_text("version two, longer\n")
    assert read_document(stat) == Skipped("live.md", "file changed while being read", error=False)


def test_row12_same_size_rewrite_detected_by_mtime(tmp_path: Path) -> None:
    path = write(tmp_path / "live.md", "aaaa")
    stat = stat_of(tmp_path, "live.md")
    path.write_text("bbbb")
    os.utime(path, ns=(stat.mtime_ns + 5_000_000_000, stat.mtime_ns + 5_000_000_000))
    assert read_document(stat) == Skipped("live.md", "file changed while being read", error=False)


def test_row12_file_deleted_before_or_during_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "gone.md", "bye")
    stat = stat_of(tmp_path, "gone.md")
    path.unlink()
    assert read_document(stat) == Skipped("gone.md", "file disappeared", error=False)

    write(path, "bye")
    stat = stat_of(tmp_path, "gone.md")
    real_read = readers._read_bytes

    def read_then_delete(fh: io.BufferedReader, limit: int) -> bytes:
        data = real_read(fh, limit)
        path.unlink()
        return data

    monkeypatch.setattr(readers, "_read_bytes", read_then_delete)
    assert read_document(stat) == Skipped("gone.md", "file disappeared", error=False)


def test_file_name_that_is_not_utf8_is_a_counted_skip(tmp_path: Path) -> None:
    try:
        open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.md"), "wb").close()
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")
    write(tmp_path / "ok.md", "x")
    results = walked(tmp_path)
    assert rels(results) == ["ok.md"]
    assert skips(results) == {"caf\ufffd.md": Skipped("caf\ufffd.md", "file name is not valid UTF-8")}
