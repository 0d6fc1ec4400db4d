"""The benchmark corpora's own code: the BorgBackup, Varnish, Postfix, Apache, SQLite, rsyslog and Z shell page
text and the question sets' shape."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpora import (  # noqa: E402
    ADOC_SOURCES,
    ADOC_SUFFIXES,
    FILTER_REPO_SOURCES,
    FILTER_REPO_SUFFIXES,
    apache_page_text,
    borg_page_text,
    postfix_page_text,
    rsyslog_page_text,
    sqlite_page_text,
    varnish_page_text,
    write_adoc_corpus,
    write_filter_repo_corpus,
    write_zsh_corpus,
    zsh_page_text,
)

PAGE = """<html><body><div class="sphinxsidebar">Navigation: Usage, Quick Start</div>
<div class="document clearer body">
<section id="borg-prune"><h1>borg prune<a class="headerlink" href="#x">¶</a></h1>
<table class="borg-options-table"><tbody>
<tr class="row-even"><td></td>
<td><p><code><span class="pre">-d</span></code>, <code><span class="pre">--keep-daily</span></code></p></td>
<td><p>number of daily archives to keep</p></td></tr>
</tbody></table>
<script>$(document).ready(function () {});</script>
<p>The prune command prunes a repository by deleting
all archives not matching any of the retention options.</p>
<div class="highlight"><pre>$ borg prune -v --list \\
    --keep-daily=7 /path/to/repo
</pre></div>
</section></div>
<div class="footer-relations"><a href="compact.html">borg compact</a></div>
</body></html>"""


def test_borg_page_text_keeps_the_body_only() -> None:
    text = borg_page_text(PAGE)
    assert text.splitlines()[0] == "borg prune"  # no sidebar, no pilcrow
    assert "-d, --keep-daily  number of daily archives to keep" in text.splitlines()  # a row is one line
    assert "deleting all archives not matching" in text  # a paragraph's line breaks are spaces
    assert "    --keep-daily=7 /path/to/repo" in text.splitlines()  # preformatted text kept as it is
    assert "document" not in text and "borg compact" not in text  # no script, no footer
    assert text.endswith("\n") and "\n\n\n" not in text


def test_borg_question_set_shape() -> None:
    rows = [json.loads(line) for line in (ROOT / "benchmarks/data/borg_questions.jsonl").read_text().splitlines()]
    answerable = [r for r in rows if r.get("answerable", True)]
    assert len(rows) == 45 and len(answerable) == 40
    assert all(r["files"] and r["answers"] and r["question"].strip() for r in answerable)
    assert len({r["question"] for r in rows}) == 45


VARNISH_PAGE = """<html><body>
<div class="related" role="navigation"><ul><li><a href="../index.html">Varnish 7.1.1 documentation</a></li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
<div class="section" id="purging-and-banning">
<span id="users-guide-purging"></span><h1>Purging and banning<a class="headerlink" href="#p" title="Permalink to this headline">¶</a></h1>
<p>One of the most effective ways of increasing your hit ratio is to
increase the time-to-live (ttl) of your objects.</p>
<div class="highlight-default notranslate"><div class="highlight"><pre><span></span>acl purge {
        &quot;localhost&quot;;
}
</pre></div></div>
</div></div></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Previous topic</h3><p>Compression</p></div>
</div>
<div class="related" role="navigation"><a href="compression.html">Compression</a></div>
<div class="footer" role="contentinfo">&#169; Copyright 2010-2014, Varnish Software AS.</div>
</body></html>"""


def test_varnish_page_text_keeps_the_body_only() -> None:
    text = varnish_page_text(VARNISH_PAGE)
    assert text.splitlines()[0] == "Purging and banning"  # no navigation bar, no pilcrow
    assert "the time-to-live (ttl) of your objects." in text  # a paragraph's line breaks are spaces
    assert '        "localhost";' in text.splitlines()  # preformatted text kept, entities decoded
    assert "Compression" not in text and "Copyright" not in text and "documentation" not in text
    assert text.endswith("\n") and "\n\n\n" not in text


POSTFIX_PAGE = (
    "P\bPo\bos\bst\btf\bfi\bix\bx S\bSO\bOH\bHO\bO H\bHo\bow\bwt\bto\bo\n\n" + "-" * 79 + "\n\n"
    "O\bOv\bve\ber\brv\bvi\bie\bew\bw   \n\n\n\nPostfix should work out of the box, n\bno\bot\bt with\n"
    "the _\bs_\bm_\bt_\bp client alone.\n\n    /etc/postfix/main.cf:\n        relayhost = [mail.isp.example]\n\n"
    "Purpose\n=======\n\nA heading underlined with = stays.\n"
)


def test_postfix_page_text_reads_as_text() -> None:
    text = postfix_page_text(POSTFIX_PAGE)
    lines = text.splitlines()
    assert lines[0] == "Postfix SOHO Howto" and lines[2] == "Overview"  # overstrike gone, rule under the title gone
    assert "\b" not in text and "-" * 10 not in text
    assert "out of the box, not with\nthe smtp client alone." in text  # bold and underlined words plain
    assert "        relayhost = [mail.isp.example]" in lines  # indented blocks kept as they are
    assert "Purpose\n=======\n" in text  # a heading's own underline kept
    assert text.endswith("\n") and "\n\n\n" not in text and all(line == line.rstrip() for line in lines)


APACHE_PAGE = """<html lang="en"><head><title>mod_expires</title></head><body>
<div id="page-header"><p class="menu"><a href="../mod/index.html">Modules</a> | <a href="../glossary.html">Glossary</a></p></div>
<div id="path"><a href="https://www.apache.org/">Apache</a> &gt; <a href="./index.html">Modules</a></div>
<div id="page-content">
<div id="preamble"><h1>Apache Module mod_expires</h1>
<button aria-label="Toggle language list" class="lang-toggle"><svg><circle r="10"/></svg></button>
<div class="toplang"><p><span>Available Languages: </span><a href="../../en/mod/mod_expires.html">&nbsp;en&nbsp;</a> |
<a href="../../fr/mod/mod_expires.html">&nbsp;fr&nbsp;</a></p></div>
<table class="module"><tr><th><a href="module-dict.html#Status">Status:</a></th><td>Extension</td></tr></table>
<h3>Summary</h3>
    <p>This module controls the setting of the <code>Expires</code>
    HTTP header in server responses.</p>
</div>
<div id="quickview"><h3 class="directives">Directives</h3><ul id="toc">
<li><img alt="" src="../../images/down.gif"> <a href="#expiresactive">ExpiresActive</a></li></ul></div>
<div class="top"><a href="#page-header"><img alt="top" src="../../images/up.gif"></a></div>
<div class="directive-section"><h2 id="expiresactive">ExpiresActive Directive <a title="Permanent link" href="#expiresactive" class="permalink">&para;</a></h2>
<table class="directive"><tr><th><a href="directive-dict.html#Default">Default:</a></th><td><code>ExpiresActive Off</code></td></tr></table>
<pre class="prettyprint lang-config">ExpiresDefault "access plus 1 month"
ExpiresByType image/gif "modification plus 5 hours"</pre>
</div></div>
<div class="bottomlang"><p><span>Available Languages: </span><a href="../../en/mod/mod_expires.html">&nbsp;en&nbsp;</a></p></div>
<div id="footer"><p class="apache">Copyright 2026 The Apache Software Foundation.</p></div>
</body></html>"""


def test_apache_page_text_keeps_the_content_only() -> None:
    text = apache_page_text(APACHE_PAGE)
    lines = text.splitlines()
    assert lines[0] == "Apache Module mod_expires"  # no menu, no breadcrumb path
    assert "Status:  Extension" in lines and "Default:  ExpiresActive Off" in lines  # a row is one line
    assert "ExpiresActive Directive" in lines  # the heading without its pilcrow
    assert "the setting of the Expires HTTP header in server responses." in text
    assert 'ExpiresByType image/gif "modification plus 5 hours"' in lines  # preformatted text kept
    assert "Languages" not in text and "Copyright" not in text and "Glossary" not in text  # no chrome
    assert text.count("ExpiresActive") == 2  # the sidebar's list of directives is left out
    assert text.endswith("\n") and "\n\n\n" not in text


SQLITE_PAGE = """<html><head><title>Limits In SQLite</title></head><body>
<div class="nosearch"><div class="menu mainmenu"><ul><li><a href="index.html">Home</a>
<li><a href="support.html">Support</a></ul></div>
<div class="tagline desktoponly">Small. Fast. Reliable.<br>Choose any three.</div></div>
<script>
function toggle_search() { document.getElementById("searchmenu").style.display = "block"; }
antiRobotDefense();
</script>
<div class="fancy_toc"><a onclick="toggle_toc()">Table Of Contents</a>
<div id="toc_sub"><div class="fancy-toc1"><a href="#max_column">1. Maximum Number Of Columns</a></div></div></div>
<script>function toggle_toc(){ var sub = document.getElementById("toc_sub"); }</script>
<h1 align="center">Limits In SQLite</h1>
<a name="max_column"></a><h2>1. Maximum Number Of Columns</h2>
<p>The default setting for SQLITE_MAX_COLUMN is 2000.</p>
<p><b><a href="syntax/pragma-stmt.html">pragma-stmt:</a></b>
<button id='x1' onclick='hideorshow("x1","x2")'>hide</button></p>
<div id='x2' class='imgcontainer'><svg viewBox="0 0 10 10"><text x="1" y="1">PRAGMA</text></svg></div>
<h _id=pragma_page_size style="display:none"> PRAGMA page_size</h><hr>
<p><b>PRAGMA page_size;</b></p>
<table border=1>
<tr><th>SQLITE_DQS<th>Remarks
<tr><td>3<td>default
<tr><td>0<td>recommended
</table>
<p>The recommended setting is 0.</p>
<p align="center"><small><i>This page last modified on 2022-11-21 19:17:39 UTC </small></i></p>
</body></html>"""


def test_sqlite_page_text_keeps_the_content_only() -> None:
    text = sqlite_page_text(SQLITE_PAGE)
    lines = text.splitlines()
    assert lines[0] == "Limits In SQLite"  # no menu, tagline or script before the title
    assert "The default setting for SQLITE_MAX_COLUMN is 2000." in lines
    assert "Table Of Contents" not in text and "toggle" not in text  # the contents box left out
    assert "pragma-stmt" not in text and "hide" not in text  # a syntax diagram: name, button, picture
    assert text.count("page_size") == 1  # the hidden copy of the heading left out
    # unclosed cells closed: a row is one line, and the text after the table is not in a cell
    assert "SQLITE_DQS  Remarks" in lines and "3  default" in lines and "0  recommended" in lines
    assert "The recommended setting is 0." in lines
    assert "last modified" not in text and "Support" not in text and "Choose any three" not in text
    assert text.endswith("\n") and "\n\n\n" not in text


RSYSLOG_PAGE = """<html><body>
<div class="related" role="navigation"><ul><li><a href="../../index.html">rsyslog 8.2302.0 documentation</a></li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
<section id="omfile"><h1>omfile: File Output Module<a class="headerlink" href="#omfile" title="Permalink">¶</a></h1>
<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a href="imfile.html">imfile</a></li></ul></div>
<p>The omfile plug-in provides the core functionality of writing
messages to files.</p>
<table class="docutils"><tbody><tr><td><p>word</p></td><td><p>RSYSLOG_FileFormat</p></td></tr></tbody></table>
<div class="admonition note"><p class="admonition-title">Note</p><p>Parameter names are case-insensitive.</p></div>
<div class="admonition seealso">
<p class="admonition-title">See also</p>
<p>Help with configuring/using <code class="docutils literal notranslate"><span class="pre">Rsyslog</span></code>:</p>
<ul class="simple"><li><p><a href="http://lists.adiscon.net/">Mailing list</a> - best route for general questions</p></li></ul>
</div>
<div class="admonition seealso">
<p class="admonition-title">See also</p>
<p>Contributing to <code class="docutils literal notranslate"><span class="pre">Rsyslog</span></code>:</p>
<ul class="simple"><li><p>Source project: <a href="https://github.com/rsyslog/rsyslog">rsyslog project README</a>.</p></li></ul>
</div>
<p>Copyright 2008-2020 <a class="reference external" href="https://rainer.gerhards.net/">Rainer Gerhards</a>
and Others.</p>
</section></div></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Previous topic</h3><p>omelasticsearch</p></div>
</div>
<div class="footer" role="contentinfo">&#169; Copyright 2008-2023, Rainer Gerhards and Others.</div>
</body></html>"""


def test_rsyslog_page_text_keeps_the_content_only() -> None:
    text = rsyslog_page_text(RSYSLOG_PAGE)
    lines = text.splitlines()
    assert lines[0] == "omfile: File Output Module"  # no navigation bar, no pilcrow
    assert "imfile" not in text  # the folder's table of contents left out
    assert "writing messages to files." in text and "word  RSYSLOG_FileFormat" in lines
    assert "Note" in lines and "Parameter names are case-insensitive." in lines  # other boxes kept
    # the help and contributing boxes, the copyright line and the sidebar every page repeats
    assert "See also" not in text and "Mailing list" not in text and "Contributing" not in text
    assert "Copyright" not in text and "Previous topic" not in text
    assert text.endswith("\n") and "\n\n\n" not in text


ZSH_PAGE = """<html><head><title>16 Options (zsh)</title><style type="text/css">a.copiable-anchor {}</style></head>
<body lang="en">
<div class="chapter" id="Options">
<table class="header" cellpadding="1" cellspacing="1" border="0">
<tr><td valign="middle" align="left">[<a href="Parameters.html#Parameters" title="Beginning of this chapter"> &lt;&lt; </a>]</td>
<td valign="middle" align="left">[<a href="index.html" title="Up section"> Up </a>]</td></tr></table>
<span id="Options-2"></span><h1 class="chapter">16 Options</h1>
<table class="menu" border="0" cellspacing="0">
<tr><td align="left" valign="top"><a href="#Specifying-Options">16.1 Specifying Options</a></td></tr></table>
<dl compact="compact">
<dt id='index-AUTO_005fCD'><span><tt>AUTO_CD</tt> (<tt>-J</tt>)<a href='#index-AUTO_005fCD' class='copiable-anchor'> &para;</a></span></dt>
<dd><p>If a command is issued that can&rsquo;t be executed as a normal command,
perform the <tt>cd</tt> command to that directory.
</p></dd></dl>
<hr>
<p><font size="-1">
  This document was generated on <em>February 5, 2023</em> using <a href="https://www.gnu.org/software/texinfo/"><em>texi2any</em></a>.
</font></p>
<font size="-1">Zsh version 5.9, released on May 14, 2022.</font>
</body></html>"""
ZSH_FAQ_PAGE = """<html><body >
<hr>
<ul>
    <li> <a href="FAQ.html">Table of Contents</a>
    <li> <a href="FAQ02.html">Previous Chapter</a>
</ul>
<hr>
<h1 >Chapter 3: How to get various things to work</h1>
<p>
The option <code >SH_WORD_SPLIT</code> exists to provide compatibility.
<hr>
<ul>
    <li> <a href="FAQ.html">Table of Contents</a>
    <li> <a href="FAQ04.html">Next Chapter</a>
</ul>
<hr>
</body></html>"""


def test_zsh_page_text_keeps_the_chapter_only() -> None:
    text = zsh_page_text(ZSH_PAGE)
    lines = text.splitlines()
    assert lines[0] == "16 Options"  # no navigation bar, no menu of the chapter's sections
    assert "AUTO_CD (-J)" in lines  # a definition's term, without its pilcrow
    assert "perform the cd command to that directory." in text
    assert "Up" not in lines and "16.1 Specifying Options" not in text
    assert "texi2any" not in text and "Zsh version" not in text and "¶" not in text
    assert text.endswith("\n") and "\n\n\n" not in text
    faq = zsh_page_text(ZSH_FAQ_PAGE)
    assert faq.splitlines()[0] == "Chapter 3: How to get various things to work"
    assert "Table of Contents" not in faq and "Chapter" not in faq.split("\n", 1)[1]
    assert "The option SH_WORD_SPLIT exists to provide compatibility." in faq


@pytest.mark.parametrize(
    ("name", "total", "answerable_count", "broad"),
    [
        ("varnish_questions", 48, 40, 0),
        ("varnish_es_over_en", 10, 8, 0),
        ("postfix_questions", 48, 40, 6),
        ("postfix_es_over_en", 10, 8, 0),
        ("apache_questions", 48, 40, 6),
        ("apache_es_over_en", 10, 8, 0),
        ("sqlite_questions", 48, 40, 6),
        ("sqlite_es_over_en", 10, 8, 0),
        ("rsyslog_questions", 48, 40, 6),
        ("rsyslog_es_over_en", 10, 8, 0),
        ("zsh_questions", 48, 40, 5),
        ("zsh_es_over_en", 10, 8, 0),
        ("adoc_questions", 48, 40, 5),
        ("adoc_es_over_en", 10, 8, 0),
        ("filter_repo_questions", 41, 35, 0),
        ("filter_repo_options", 10, 10, 0),
        ("adoc_options", 6, 6, 0),
        ("tig_questions", 46, 40, 2),
    ],
)
def test_question_sets_shape(name: str, total: int, answerable_count: int, broad: int) -> None:
    lines = (ROOT / f"benchmarks/data/{name}.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    answerable = [r for r in rows if r.get("answerable", True)]
    assert len(rows) == total and len(answerable) == answerable_count
    # A broad question ("what is X", "summarize the X page") names files and no answer string;
    # every other answerable question has answer strings.
    assert sum(1 for r in answerable if "answers" not in r) == broad
    assert all(r["answers"] for r in answerable if "answers" in r)
    assert all(r["files"] and r["question"].strip() for r in answerable)
    # The corpora are written as `.txt` pages; the adoc and filter-repo corpora keep their files'
    # own extensions.
    suffixes = (
        ADOC_SUFFIXES
        if name.startswith("adoc")
        else FILTER_REPO_SUFFIXES
        if name.startswith("filter")
        else (".html",)
        if name.startswith("tig")
        else (".txt",)
    )
    assert all(f.endswith(suffixes) and "/" not in f for r in answerable for f in r["files"])
    assert len({r["question"] for r in rows}) == total


def _fake_sdists(
    folder: Path, missing: str = "", sources: tuple[tuple[str, str, tuple[str, ...]], ...] = ADOC_SOURCES
) -> None:
    """Source distributions holding every file `sources` names (but `missing`), each file's
    bytes its own path, as `pip download` leaves them in the corpus folder's parent."""
    import io
    import tarfile

    for name, version, files in sources:
        with tarfile.open(folder / f"{name}-{version}.tar.gz", "w:gz") as archive:
            for member in files:
                if member == missing:
                    continue
                data = f"{name} {member}\n".encode()
                info = tarfile.TarInfo(f"{name}-{version}/{member}")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))


def test_write_adoc_corpus_copies_the_files_as_shipped(tmp_path: Path) -> None:
    _fake_sdists(tmp_path)
    dest = write_adoc_corpus(tmp_path / "adoc")
    names = sorted(p.name for p in dest.iterdir())
    assert len(names) == 14 and "settings.html" in names and "qutebrowser.1.asciidoc" in names
    assert "changelog.html" not in names and all(n.endswith(ADOC_SUFFIXES) for n in names)
    assert (dest / "a2x.1.txt").read_bytes() == b"asciidoc doc/a2x.1.txt\n"
    before = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}
    write_adoc_corpus(dest)  # the cached sdists, nothing fetched; unchanged files are not rewritten
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == before


def test_write_filter_repo_corpus_copies_its_manual_and_guides_as_shipped(tmp_path: Path) -> None:
    _fake_sdists(tmp_path, sources=FILTER_REPO_SOURCES)
    dest = write_filter_repo_corpus(tmp_path / "filter-repo")
    names = sorted(p.name for p in dest.iterdir())
    assert len(names) == 7 and "git-filter-repo.txt" in names and "FAQ.md" in names
    assert all(n.endswith(FILTER_REPO_SUFFIXES) for n in names)
    assert (dest / "README.md").read_bytes() == b"git_filter_repo README.md\n"


def test_write_adoc_corpus_names_a_missing_file(tmp_path: Path) -> None:
    _fake_sdists(tmp_path, missing="doc/asciidoc.1.txt")
    with pytest.raises(SystemExit, match=r"asciidoc-10\.2\.1\.tar\.gz holds no file doc/asciidoc\.1\.txt"):
        write_adoc_corpus(tmp_path / "adoc")


def test_a_corpus_as_html_copies_the_chapters_as_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chapter pages and the FAQ's chapters, byte for byte (navigation and all); stubs, the
    table of contents and the indexes are left out, as the text corpus leaves them; a question's
    files are the pages' `.html` names in the HTML sets."""
    import corpora
    from bench_answers import load_set

    shipped = {
        "Options.html": '<html><body><div class="chapter"><h1>16 Options</h1></div></body></html>',
        "FAQ03.html": "<html><body><h2>Chapter 3</h2><p>Why does zsh not split words?</p></body></html>",
        "Options-Stub.html": "<html><body>The node you are looking for is at Options.</body></html>",
        "Concept-Index.html": "<html><body>index</body></html>",
    }

    def unpack(command: list[str], **_: object) -> None:
        folder = Path(command[-1]) / corpora.ZSH_HTML
        folder.mkdir(parents=True)
        for name, page in shipped.items():
            (folder / name).write_text(page, encoding="utf-8")

    monkeypatch.setattr(corpora.subprocess, "run", unpack)
    deb = tmp_path / "zsh-doc_5.9-4_all.deb"
    deb.write_bytes(b"")
    dest = write_zsh_corpus(tmp_path / "zsh-html", deb, html=True)
    assert sorted(p.name for p in dest.iterdir()) == ["FAQ03.html", "Options.html"]
    assert (dest / "Options.html").read_text(encoding="utf-8") == shipped["Options.html"]
    rows = load_set("zsh-html")
    assert rows and all(f.endswith(".html") for r in rows for f in r.get("files", []))
    assert [r.get("files") for r in load_set("zsh")][:3] == [
        [f.replace(".html", ".txt") for f in r.get("files", [])] for r in rows[:3]
    ]


def test_the_bash_corpora_copy_the_manuals_in_their_format_or_the_whole_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bash-html and bash-pdf hold the two manuals in one format; bash-mixed the package's folder
    as shipped. A question's files are the manuals of the corpus's formats."""
    import corpora
    from bench_answers import load_set

    shipped = {
        "bash.html": b"<html>man page</html>",
        "bashref.html": b"<html>reference</html>",
        "bash.pdf": b"%PDF man page",
        "bashref.pdf": b"%PDF reference",
        "examples/scripts/center": b"#! /bin/bash",
    }

    def unpack(command: list[str], **_: object) -> None:
        folder = Path(command[-1]) / corpora.BASH_DOC
        for name, data in shipped.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)

    monkeypatch.setattr(corpora.subprocess, "run", unpack)
    deb = tmp_path / "bash-doc_5.2.15-2_all.deb"
    deb.write_bytes(b"")
    files = {
        kind: sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
        for kind in corpora.BASH_KINDS
        for out in [corpora.write_bash_corpus(tmp_path / f"bash-{kind}", kind, deb)]
    }
    assert files == {
        "html": ["bash.html", "bashref.html"],
        "pdf": ["bash.pdf", "bashref.pdf"],
        "mixed": sorted(shipped),
    }
    assert (tmp_path / "bash-pdf" / "bashref.pdf").read_bytes() == shipped["bashref.pdf"]
    for kind, expected in [("html", {"bash.html", "bashref.html"}), ("pdf", {"bash.pdf", "bashref.pdf"})]:
        rows = load_set(f"bash-{kind}")
        assert len(rows) == 41 and sum(r.get("answerable", True) for r in rows) == 35
        assert all(set(r["files"]) == expected for r in rows if r.get("answerable", True))
    assert all(len(r["files"]) == 4 for r in load_set("bash-mixed") if r.get("answerable", True))


def test_write_tig_corpus_copies_the_manual_and_manual_pages_as_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import corpora
    from bench_answers import load_set

    shipped = {name: f"<html>{name}</html>".encode() for name in corpora.TIG_PAGES}

    def unpack(command: list[str], **_: object) -> None:
        folder = Path(command[-1]) / corpora.TIG_DOC
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in {**shipped, "NEWS.html": b"<html>news</html>"}.items():
            (folder / name).write_bytes(data)

    monkeypatch.setattr(corpora.subprocess, "run", unpack)
    deb = tmp_path / "tig_2.5.5-1_amd64.deb"
    deb.write_bytes(b"")
    out = corpora.write_tig_corpus(tmp_path / "tig", deb)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == shipped
    rows = load_set("tig")
    assert {f for r in rows if r.get("answerable", True) for f in r["files"]} == set(corpora.TIG_PAGES)


def test_a_seeded_benchmark_index_built_by_other_indexing_code_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench_answers.build_index` reuses an index only when the code that read, chunked and
    embedded it is the imported one's: indexing is incremental, and an index built by other
    readers keeps their text for every file that did not change."""
    import bench_answers

    import locallens.indexer

    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "note.md").write_text("A note.\n")
    indexed: list[bool] = []

    def fake_index(request: object) -> None:
        indexed.append(request.db.exists())  # type: ignore[attr-defined]
        request.db.write_bytes(b"index")  # type: ignore[attr-defined]

    monkeypatch.setattr(bench_answers, "corpus_dir", lambda corpus, workdir: folder)
    monkeypatch.setattr(locallens.indexer, "index", fake_index)
    monkeypatch.setattr(bench_answers, "_roots", lambda db, folder: [folder])
    work = tmp_path / "work"
    work.mkdir()
    db = bench_answers.build_index("notes", work)
    bench_answers.build_index("notes", work)  # the same code: the index is reused, incrementally
    monkeypatch.setattr(bench_answers, "index_code_fingerprint", lambda: "another reader")
    bench_answers.build_index("notes", work)  # other code: built afresh
    assert indexed == [False, True, False]
    assert (work / f"{db.stem}.index-code").read_text().strip() == "another reader"
    # An index seeded before the stamp was kept is built afresh too.
    (work / f"{db.stem}.index-code").unlink()
    bench_answers.build_index("notes", work)
    assert indexed[-1] is False


def test_the_zsh_pdf_corpus_is_the_manuals_pdf_and_the_zsh_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import corpora
    from bench_answers import load_set

    def unpack(command: list[str], **_: object) -> None:
        path = Path(command[-1]) / corpora.ZSH_PDF
        path.parent.mkdir(parents=True)
        path.write_bytes(b"%PDF the manual")
        (path.parent / "html").mkdir()

    monkeypatch.setattr(corpora.subprocess, "run", unpack)
    deb = tmp_path / "zsh-doc_5.9-4_all.deb"
    deb.write_bytes(b"")
    dest = corpora.write_zsh_pdf_corpus(tmp_path / "zsh-pdf", deb)
    assert [p.name for p in dest.iterdir()] == ["zsh.pdf"] and (dest / "zsh.pdf").read_bytes() == b"%PDF the manual"
    for name in ("zsh", "zsh-es", "zsh-es2"):
        pdf, text = load_set(name.replace("zsh", "zsh-pdf", 1)), load_set(name)
        assert [r["question"] for r in pdf] == [r["question"] for r in text]
        assert all(r["files"] == ["zsh.pdf"] for r in pdf if r.get("files"))
