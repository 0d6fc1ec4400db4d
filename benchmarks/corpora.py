"""Evaluation corpora built from data that ships with Python itself.

- `write_pydoc_corpus` writes the language-reference topics that CPython bundles for `help()`
  (`pydoc_data.topics.topics`) as one plain-text file per topic (79 files);
  `benchmarks/data/pydoc_questions.jsonl` holds questions about it.
- `write_stdlib_corpus` writes the standard library's manual pages as `pydoc MODULE` prints them
  (NAME, DESCRIPTION, CLASSES, FUNCTIONS, DATA...), one `<module>.txt` per module: every
  importable public top-level module and a few well-known submodules, ~260 pages of real reference
  documentation, long and short; `benchmarks/data/stdlib_questions.jsonl` holds questions about it.
- `write_borg_corpus` writes the manual of BorgBackup as Debian's `borgbackup-doc` package ships it
  (HTML), one plain-text file per page (`usage-prune.txt`, `faq.txt`, ...; 47 pages):
  `benchmarks/data/borg_questions.jsonl` holds questions about it. This corpus is the one nothing in
  the package is tuned on: it measures whether a change carries over to documentation nobody here
  wrote. It needs the Debian package lists (`apt-get update`) to fetch the package.
- `write_varnish_corpus` writes the Varnish Cache documentation as Debian's `varnish-doc` package
  ships it (HTML): the tutorial, users guide, reference, installation notes, design patterns and
  glossary, one plain-text file per page (`users-guide-purging.txt`, `reference-varnishd.txt`, ...;
  91 pages; the essays, release notes and developer guide are left out).
  `benchmarks/data/varnish_questions.jsonl` and `varnish_es_over_en.jsonl` hold questions about it,
  written before anything was measured on it: the held-out check of answer and retrieval changes.
- `write_postfix_corpus` writes the Postfix mail server's README documents as Debian's `postfix-doc`
  package ships them (plain text, most of them gzipped, headings in overstrike), one text file per
  document (`TLS_README.txt`, `SOHO_README.txt`, `OVERVIEW.txt`, ...; 57 pages, the html/ copies of
  the same documents and the manual pages left out). `benchmarks/data/postfix_questions.jsonl` and
  `postfix_es_over_en.jsonl` hold questions about it, written before anything was measured on it.
- `write_apache_corpus` writes the Apache HTTP Server 2.4 manual as Debian's `apache2-doc` package
  ships it (HTML, the English pages only): the guides, how-tos, program pages and module pages, one
  plain-text file per page (`mod-mod_expires.txt`, `howto-htaccess.txt`, `caching.txt`, ...; 194
  pages, 2.1 MB); left out: the developer docs, the directive/module index pages, the glossary and
  sitemap, the licence, the pages not in English and pages under 1 KB of text.
  `benchmarks/data/apache_questions.jsonl` and `apache_es_over_en.jsonl` hold questions about it,
  written before anything was measured on it.
- `write_sqlite_corpus` writes the SQLite documentation as Debian's `sqlite3-doc` package ships it
  (HTML): the SQL language pages, the PRAGMA list, the command-line shell, the FAQ, WAL, datatypes,
  limits, the query planner, the extensions (FTS5, JSON, R*Tree, ...), one plain-text file per
  page (`lang_select.txt`, `pragma.txt`, `cli.txt`, ...; 148 pages, 2.2 MB); left out: the C API
  reference (`c3ref/`, `capi3ref`), the syntax-diagram pages, the release logs and news, the
  indexes and cross-references, the legal and project pages, the pages on the old versions 2 and
  3.0-3.5, the developer-only pages (testing, the bytecode engine) and pages under 1 KB of text.
  `benchmarks/data/sqlite_questions.jsonl` and `sqlite_es_over_en.jsonl` hold questions about it,
  written before anything was measured on it: a second held-out corpus (nothing is tuned on it).
- `write_rsyslog_corpus` writes the rsyslog documentation as Debian's `rsyslog-doc` package ships it
  (HTML): the configuration reference and its modules, RainerScript and its functions, the
  concepts, tutorials, troubleshooting and white papers, one plain-text file per page
  (`configuration-modules-omfile.txt`, `tutorials-tls.txt`, ...; 155 pages, 1.05 MB); left out: the
  front matter, upgrade notes, developer guide, historical pages, proposals, the legacy
  `$Directive` pages and pages under 1 KB of text. `benchmarks/data/rsyslog_questions.jsonl` and
  `rsyslog_es_over_en.jsonl` hold questions about it, written before anything was measured on it:
  a third held-out corpus.
- `write_zsh_corpus` writes the Z shell manual and FAQ as Debian's `zsh-doc` package ships them
  (HTML written by texinfo, a chapter a page), one plain-text file per chapter (`Options.txt`,
  `Parameters.txt`, `Shell-Builtin-Commands.txt`, `FAQ03.txt`, ...; 32 pages, 1.39 MB, twelve of
  them over 30 KB): long reference pages, most of them definition lists (options, parameters,
  builtins and their flags, styles, widgets) with their descriptions and defaults, not split by
  section; left out: the section stubs, the cover, contents and indexes.
  `benchmarks/data/zsh_questions.jsonl` and `zsh_es_over_en.jsonl` hold questions about it,
  written before anything was measured on it: a development corpus of long pages.

- `write_adoc_corpus` writes AsciiDoc documentation as two PyPI source distributions ship it, the
  files kept as they are (names, extensions and markup; nothing converted): qutebrowser 3.7.0's
  user manual rendered to HTML by asciidoc (`settings.html`, `commands.html`, `faq.html`, ...; 10
  pages, the change log left out) and its AsciiDoc sources `qutebrowser.1.asciidoc` and
  `README.asciidoc`, and asciidoc 10.2.1's own manual pages in AsciiDoc (`a2x.1.txt`,
  `asciidoc.1.txt`: `*--option*=ARG::` definition lists, `----` titles). It tests the package's
  own readers on AsciiDoc and on the HTML made from it: `benchmarks/data/adoc_questions.jsonl`
  and `adoc_es_over_en.jsonl` hold questions about it, written before anything was measured on it.
  It needs PyPI (`pip download`) once; the source distributions are kept beside the folder.

- `write_filter_repo_corpus` writes git-filter-repo 2.47.0's documentation as its PyPI sdist ships
  it: the manual page `git-filter-repo.txt` in AsciiDoc, written as Git's own manual pages are
  (option entries over tab-indented descriptions, `~~~~` subsections, `linkgit:`), beside its FAQ,
  install notes, read-me and guides in Markdown (7 files, 4,000 lines).
  `benchmarks/data/filter_repo_questions.jsonl` holds questions about it, written before anything
  was run on it: a corpus in the held-out manual's style that nothing was tuned on.

- `write_tig_corpus` copies tig's manual and manual pages as Debian's tig package ships them
  (`manual.html`, `tig.1.html`, `tigrc.5.html`: HTML that AsciiDoc wrote from sources in Git's
  style). `benchmarks/data/tig_questions.jsonl` holds questions about it, written and committed
  before anything was run on it.

- `write_manpages_corpus` renders the manual pages of eight Debian packages (`MANPAGES`: tar,
  tmux, less, grep, sed, find, ssh and ssh_config, curl) to plain text as `man` prints them at 80
  columns (`man -l`, `col -b`): a user's own notes taken by saving `man tar` to a file. Entries
  are indented, options over their descriptions. It needs `man` (man-db with groff) on the
  machine and `apt-get download` once. `benchmarks/data/manpage_questions.jsonl` holds questions
  about it, written and committed before anything was run on it.

The first two need no download.
Usage: python3 benchmarks/corpora.py DEST [--stdlib | --borg | --varnish | --postfix | --apache | --sqlite
       | --rsyslog | --zsh | --adoc | --filter-repo | --tig | --manpages]
"""

from __future__ import annotations

import argparse
import gzip
import html.parser
import json
import pathlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def write_pydoc_corpus(dest: pathlib.Path) -> pathlib.Path:
    """Write every `pydoc_data` topic to `dest/<topic>.txt` (UTF-8) and return `dest`.

    Each file holds the topic text stripped, with one trailing newline. `dest` is created if
    needed; existing files with the same names are overwritten.
    """
    from pydoc_data.topics import topics

    dest = pathlib.Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(topics.items()):
        (dest / f"{name}.txt").write_text(text.strip() + "\n", encoding="utf-8")
    return dest


# Modules left out of the stdlib corpus: private ones, test suites, GUIs, and modules whose import
# has side effects (`antigravity` opens a browser, `this` prints).
_SKIPPED_PREFIXES = (
    "_",
    "test",
    "idlelib",
    "tkinter",
    "turtle",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "antigravity",
    "this",
    "xxsubtype",
    "xxlimited",
    "distutils",
    "sre_",
    "encodings",
)
# Submodules users look up by name, beside the top-level modules.
_SUBMODULES = (
    "collections.abc",
    "concurrent.futures",
    "email.message",
    "email.utils",
    "html.parser",
    "http.client",
    "http.cookies",
    "http.server",
    "importlib.metadata",
    "importlib.resources",
    "json.decoder",
    "json.encoder",
    "logging.config",
    "logging.handlers",
    "multiprocessing.pool",
    "multiprocessing.shared_memory",
    "os.path",
    "unittest.mock",
    "urllib.parse",
    "urllib.request",
    "urllib.robotparser",
    "wsgiref.simple_server",
    "xml.dom.minidom",
    "xml.etree.ElementTree",
    "xml.sax",
    "xmlrpc.client",
    "zoneinfo",
)
# Pages longer than this are left out (builtins, ast, asyncio, ssl, typing, os...): a handful of
# them would be half the corpus, and a corpus of ~4,000 chunks indexes in minutes.
MAX_PAGE_CHARS = 70_000

_RENDER = r"""
import contextlib, importlib, io, json, pydoc, re, sys, warnings
warnings.simplefilter("ignore")
pages = {}
for name in json.loads(sys.argv[1]):
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            module = importlib.import_module(name)
            text = pydoc.render_doc(module, renderer=pydoc.plaintext)
    except BaseException:
        continue
    # The FILE section is the module's path on this machine: not documentation.
    text = re.sub(r"\nFILE\n(?:    .*\n|\n)*", "\n", text + "\n")
    # Object addresses ("<function copy2 at 0x7f...>") differ from run to run.
    text = re.sub(r" at 0x[0-9a-f]+>", ">", text)
    pages[name] = text.strip() + "\n"
json.dump(pages, sys.stdout)
"""


def stdlib_module_names() -> list[str]:
    """The modules of the stdlib corpus before the size cap: public top-level modules + `_SUBMODULES`."""
    top = [n for n in sys.stdlib_module_names if not n.startswith(_SKIPPED_PREFIXES)]
    return sorted(set(top) | set(_SUBMODULES))


def write_stdlib_corpus(dest: pathlib.Path, max_chars: int = MAX_PAGE_CHARS) -> pathlib.Path:
    """Write `pydoc MODULE` text of the stdlib modules to `dest/<module>.txt` and return `dest`.

    Rendered in a child process of this interpreter, so importing ~270 modules leaves this process
    as it was. Pages are rewritten only when their text changed (an index over them stays valid);
    modules that do not import on this platform are skipped. The corpus depends on the Python
    version, which the benchmark prints.
    """
    dest = pathlib.Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    names = stdlib_module_names()
    done = subprocess.run(
        [sys.executable, "-c", _RENDER, json.dumps(names)], capture_output=True, text=True, check=True, timeout=600
    )
    pages: dict[str, str] = json.loads(done.stdout)
    for name, text in sorted(pages.items()):
        if len(text) > max_chars:
            continue
        path = dest / f"{name}.txt"
        if not (path.is_file() and path.read_text(encoding="utf-8") == text):
            path.write_text(text, encoding="utf-8")
    return dest


BORG_PACKAGE = "borgbackup-doc"
BORG_HTML = "usr/share/doc/borgbackup/html"
# Pages that are not documentation: the search form, and the font's licence under _static.
_BORG_SKIPPED = ("search.html", "_static/", "_sources/", "_images/")


class _PageText(html.parser.HTMLParser):
    """The text of a Sphinx page's body: paragraphs and list items apart, a table row on one line
    (cells two spaces apart), preformatted blocks as they are; scripts and styles dropped."""

    _BLOCKS = frozenset({"p", "div", "section", "pre", "ul", "ol", "dl", "table", "blockquote"})
    _LINES = frozenset({"li", "dt", "dd", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0
        self.pre = 0
        self.cell = 0  # inside a table cell, paragraphs run on: the row stays one line

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.hidden += 1
        elif tag == "a" and ("class", "headerlink") in attrs:
            self.hidden += 1  # the pilcrow after a heading
            self.parts.append("\0a")
        elif tag in ("td", "th"):
            self.cell += 1
            self.parts.append("\x01")  # a cell break: two spaces within a row, nothing at its start
        elif self.cell and tag in self._BLOCKS | self._LINES and tag != "pre":
            self.parts.append(" ")
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")
        elif tag in self._LINES:
            self.parts.append("\n")
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.hidden -= 1
        elif tag == "a" and self.parts and self.parts[-1] == "\0a":
            self.parts.pop()
            self.hidden -= 1
        elif tag in ("td", "th"):
            self.cell -= 1
        elif self.cell and tag in self._BLOCKS | self._LINES and tag != "pre":
            self.parts.append(" ")
        elif tag in self._BLOCKS or tag in self._LINES:
            self.parts.append("\n\n" if tag in self._BLOCKS or tag[0] == "h" else "\n")
        if tag == "pre":
            self.pre -= 1

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines = [line.rstrip() for line in "".join(self.parts).replace("\0a", "").split("\n")]
        lines = [re.sub(r"(?:\s*\x01)+\s*", "  ", line.lstrip("\x01 ")) if "\x01" in line else line for line in lines]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def borg_page_text(page: str) -> str:
    """The text of one page of the BorgBackup manual (its body, without navigation and footer)."""
    return _html_text(page, '<div class="document clearer body">', '<div class="footer-relations">')


def _html_text(page: str, start_marker: str, end_marker: str, clean: Callable[[str], str] = str) -> str:
    """The text of `page` from `start_marker` to `end_marker` (the whole page without them), the
    HTML passed through `clean` first."""
    start = page.find(start_marker)
    end = page.find(end_marker, start)
    parser = _PageText()
    parser.feed(clean(page[start if start >= 0 else 0 : end if end >= 0 else len(page)]))
    parser.close()
    return parser.text()


def _debian_package(package: str, folder: pathlib.Path) -> pathlib.Path:
    """The `.deb` of `package` in `folder`, fetched there with `apt-get download` unless one is."""
    cached = sorted(folder.glob(f"{package}_*.deb"))
    if not cached:
        done = subprocess.run(["apt-get", "download", package], cwd=folder, capture_output=True, text=True, timeout=600)
        cached = sorted(folder.glob(f"{package}_*.deb"))
        if done.returncode != 0 or not cached:
            message = (done.stderr.strip().splitlines() or ["no package file"])[-1]
            raise SystemExit(f"cannot fetch {package} (run `apt-get update` first?): {message}")
    return cached[-1]


def _pypi_sdist(name: str, version: str, folder: pathlib.Path) -> pathlib.Path:
    """The source distribution of `name` `version` in `folder`, fetched there with `pip download`
    (no dependencies, no wheel) unless one is."""

    def cached() -> list[pathlib.Path]:
        stem = f"{name}-{version}.tar.gz".lower().replace("_", "-")
        return sorted(p for p in folder.glob("*.tar.gz") if p.name.lower().replace("_", "-") == stem)

    if not cached():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        done = subprocess.run(
            [*command, f"{name}=={version}", "-d", str(folder)], capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0 or not cached():
            message = (done.stderr.strip().splitlines() or ["no source distribution"])[-1]
            raise SystemExit(f"cannot fetch {name} {version} from PyPI: {message}")
    return cached()[-1]


def write_borg_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None, *, html: bool = False) -> pathlib.Path:
    """Write the BorgBackup manual as `dest/<page>.txt` (`usage/prune.html` -> `usage-prune.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed.
    """

    def pages(root: pathlib.Path) -> list[pathlib.Path]:
        relative = {page: page.relative_to(root).as_posix() for page in root.rglob("*.html")}
        return [
            page for page, name in relative.items() if not (name.startswith(_BORG_SKIPPED) or name in _BORG_SKIPPED)
        ]

    return _write_pages(BORG_PACKAGE, deb, BORG_HTML, dest, pages, borg_page_text, html=html)


VARNISH_PACKAGE = "varnish-doc"
VARNISH_HTML = "usr/share/doc/varnish/html"
# The user-facing parts of the manual; left out: the author's essays (phk/), the release notes and
# upgrade guides (whats-new/), the developer guide, and the generated index and search pages.
_VARNISH_FOLDERS = ("tutorial", "users-guide", "reference", "installation", "vcl-design-patterns", "glossary")


def varnish_page_text(page: str) -> str:
    """The text of one page of the Varnish documentation (its body, without navigation and sidebar)."""
    return _html_text(page, '<div class="body" role="main">', '<div class="sphinxsidebar"')


def write_varnish_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None, *, html: bool = False) -> pathlib.Path:
    """Write the Varnish Cache documentation as `dest/<page>.txt` (`users-guide/purging.html` ->
    `users-guide-purging.txt`; the front page is `index.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed.
    """

    def pages(root: pathlib.Path) -> list[pathlib.Path]:
        return [root / "index.html"] + [page for folder in _VARNISH_FOLDERS for page in (root / folder).glob("*.html")]

    return _write_pages(VARNISH_PACKAGE, deb, VARNISH_HTML, dest, pages, varnish_page_text, html=html)


POSTFIX_PACKAGE = "postfix-doc"
POSTFIX_DOCS = "usr/share/doc/postfix"
# The README documents at the top of the folder (the examples/ and html/ folders left out: html/
# repeats the same documents, and adds the manual pages); left out too: the stub that points to
# the web site (QMQP_README), two notes for developers of the source tree (PORTING, README.proto),
# and the older versions' copies of two current documents (TLS_LEGACY_README for Postfix < 2.3,
# POSTSCREEN_3_5_README for 2.8 - 3.5), which would state most answers of TLS_README and
# POSTSCREEN_README a second time.
_POSTFIX_SKIPPED = ("QMQP_README", "PORTING", "README.proto", "TLS_LEGACY_README", "POSTSCREEN_3_5_README")


def postfix_page_text(page: str) -> str:
    r"""The text of one Postfix README: its overstrike emphasis ("P\bPo\bo", "_\bx") reduced to the
    letters, the horizontal rule under the title dropped (a line of dashes after a blank line; a
    heading's own underline stays), trailing blanks and runs of blank lines removed."""
    lines = [line.rstrip() for line in re.sub(r".\x08", "", page).split("\n")]
    rules = {n for n, line in enumerate(lines) if re.fullmatch(r"-{3,}", line) and (n == 0 or not lines[n - 1])}
    kept = [line for n, line in enumerate(lines) if n not in rules]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip() + "\n"


def write_postfix_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None) -> pathlib.Path:
    """Write the Postfix README documents as `dest/<document>.txt` (`TLS_README.gz` ->
    `TLS_README.txt`, `OVERVIEW.gz` -> `OVERVIEW.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed.
    """

    def pages(root: pathlib.Path) -> list[pathlib.Path]:
        return [
            page for page in root.iterdir() if page.is_file() and page.name.removesuffix(".gz") not in _POSTFIX_SKIPPED
        ]

    return _write_pages(POSTFIX_PACKAGE, deb, POSTFIX_DOCS, dest, pages, postfix_page_text)


APACHE_PACKAGE = "apache2-doc"
# Debian keeps each language of the manual in its own folder: `en/` holds the English pages.
APACHE_HTML = "usr/share/doc/apache2-doc/manual/en"
# Left out: the module API docs for C developers, the lists of links (every folder's index page,
# the directive and module indexes, the sitemap, the glossary of terms pointing at other pages),
# the licence, and the release notes of 2.0 and 2.2.
_APACHE_SKIPPED = (
    "developer/",
    "mod/directives.html",
    "mod/quickreference.html",
    "sitemap.html",
    "glossary.html",
    "license.html",
    "new_features_2_0.html",
    "new_features_2_2.html",
)
# A page with less text than this is a stub (a list of links, a one-paragraph module).
APACHE_MIN_CHARS = 1024
# The navigation every Apache page repeats: the language list (and its toggle button), the
# "quickview" sidebar (the page's topics, directives, bug links, see-also links) and the pilcrow
# after each heading.
_APACHE_CHROME = re.compile(
    r'<div class="toplang">.*?</div>|<div id="quickview">.*?</div>|<button\b.*?</button>'
    r'|<a [^>]*class="permalink"[^>]*>.*?</a>',
    re.S,
)


def apache_page_text(page: str) -> str:
    """The text of one page of the Apache HTTP Server manual (its content, without the header,
    the language lists, the sidebar and the footer)."""
    return _html_text(
        page, '<div id="page-content">', '<div class="bottomlang">', lambda html: _APACHE_CHROME.sub("", html)
    )


def write_apache_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None, *, html: bool = False) -> pathlib.Path:
    """Write the English Apache HTTP Server 2.4 manual as `dest/<page>.txt` (`mod/mod_expires.html`
    -> `mod-mod_expires.txt`, `howto/htaccess.html` -> `howto-htaccess.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed. Pages with
    less than `APACHE_MIN_CHARS` of text are left out.
    """

    def pages(root: pathlib.Path) -> list[pathlib.Path]:
        kept = []
        for page in root.rglob("*.html"):
            name = page.relative_to(root).as_posix()
            if page.name == "index.html" or name.startswith(_APACHE_SKIPPED):
                continue
            source = page.read_text(encoding="utf-8")
            # Debian 2.4.71's en/ folder holds six pages in Brazilian Portuguese (bind, install,
            # upgrading, ...; `<html lang="pt-br">`): the language of a page is its own tag's.
            if '<html lang="en"' in source:
                kept.append(page)
        return kept

    return _write_pages(APACHE_PACKAGE, deb, APACHE_HTML, dest, pages, apache_page_text, APACHE_MIN_CHARS, html=html)


SQLITE_PACKAGE = "sqlite3-doc"
SQLITE_HTML = "usr/share/doc/sqlite3"
# The pages at the top of the folder that are not user documentation (the folders c3ref/, syntax/,
# session/ and releaselog/ are left out whole: the C API one function a page, the syntax diagrams,
# the session extension's C API, the release notes). Left out here: lists of links and indexes,
# the change log and news, the legal and project pages (licence, consortium, code of conduct,
# support, books, users), the C API references on one page (capi3ref, 460 KB; session, the session
# extension's) and the requirements list (930 KB), the pages on versions 2 and 3.0-3.5 and on old format changes, the deprecated
# asynchronous VFS, the project's own version control (whynotgit, privatebranch), the developer-only
# pages (testing, th3, qmplan, assert, malloc, the bytecode engine and its opcodes, the Lemon parser
# generator, the 2002 speed comparison), and fileformat (a copy of fileformat2).
_SQLITE_SKIPPED = frozenset(
    {
        *("doc_backlink_crossref", "doc_keyword_crossref", "doc_pagelink_crossref", "doc_target_crossref"),
        *("keyword_index", "sitemap", "docs", "doclist", "syntax", "lang", "index", "syntaxdiagrams"),
        *("capi3ref", "requirements", "changes", "chronology", "news", "oldnews", "pressrelease-20071212"),
        *("copyright", "copyright-release", "codeofconduct", "codeofethics", "consortium"),
        *("consortium_agreement-20071201", "crew", "support", "prosupport", "books", "famous"),
        *("mostdeployed", "hp1", "sqlite", "download", "getthecode", "lts", "cves", "whynotgit"),
        *("privatebranch", "c_interface", "capi3", "version3", "34to35", "35to36", "formatchng"),
        *("fileformat", "pgszchng2016", "asyncvfs", "testing", "th3", "qmplan", "assert", "vdbe"),
        *("session", "opcode", "malloc", "lemon", "speed"),
    }
)
# A page with less text than this is a stub (DROP INDEX, DETACH, a one-paragraph essay).
SQLITE_MIN_CHARS = 1024
# What every SQLite page repeats or shows only as a picture: the table of contents box (closed by
# its toggle script), the syntax diagrams (SVG) with their name and show/hide button, and the
# hidden headings the site's search reads (`<h _id=... style="display:none">`, a copy of the
# heading shown next to them).
_SQLITE_CHROME = re.compile(
    r'<div class="fancy_toc">.*?</script>|<svg\b.*?</svg>|<button\b.*?</button>'
    r'|<p><b><a href="syntax/[^"]*">[^<]*</a></b>|<h _id=[^>]*display:none[^>]*>.*?</h>',
    re.S,
)


# A table cell up to the next cell, row or table end: SQLite's hand-written tables leave `<td>` and
# `<th>` unclosed (compile.html), which would keep the rest of the page inside one cell (one line).
_SQLITE_CELL = re.compile(r"(<t[dh]\b[^>]*>)(.*?)(?:</t[dh]>\s*)?(?=<t[dhr]\b|</tr>|</table>)", re.S)


def sqlite_page_text(page: str) -> str:
    """The text of one page of the SQLite documentation (its content, without the header, menus,
    table of contents, syntax diagrams and the "last modified" footer). The header's one script
    opens the content's span, so the parser hides it as it hides every script; every table cell
    is closed before the next one."""
    return _html_text(
        page,
        "<script>",
        '<p align="center"><small><i>This page last modified',
        lambda html: _SQLITE_CELL.sub(r"\1\2</td>", _SQLITE_CHROME.sub("", html)),
    )


def write_sqlite_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None, *, html: bool = False) -> pathlib.Path:
    """Write the SQLite documentation as `dest/<page>.txt` (`lang_select.html` -> `lang_select.txt`,
    `pragma.html` -> `pragma.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed. Pages with
    less than `SQLITE_MIN_CHARS` of text are left out.
    """

    def pages(root: pathlib.Path) -> list[pathlib.Path]:
        return [page for page in root.glob("*.html") if page.stem not in _SQLITE_SKIPPED]

    return _write_pages(SQLITE_PACKAGE, deb, SQLITE_HTML, dest, pages, sqlite_page_text, SQLITE_MIN_CHARS, html=html)


RSYSLOG_PACKAGE = "rsyslog-doc"
RSYSLOG_HTML = "usr/share/doc/rsyslog-doc/html"
# The user documentation: the configuration reference (its pages, the modules, the global()
# parameters), RainerScript and its functions, the concepts, tutorials, troubleshooting, white
# papers, FAQ, examples, containers and installation. Left out: the front matter at the top
# (licence, history, support, how to help), the upgrade notes (compatibility/), the developer
# guide, the historical pages, the restructuring proposals and the legacy `$Directive` pages
# (configuration/action, global/options, input_directives, ruleset: `rsconf1_*.html`).
_RSYSLOG_FOLDERS = (
    *("configuration", "configuration/modules", "configuration/global", "rainerscript"),
    *("rainerscript/functions", "concepts", "tutorials", "troubleshooting", "whitepapers"),
    *("faq", "examples", "containers", "installation"),
)
# A page with less text than this is a stub (a folder's table of contents, a one-line function).
RSYSLOG_MIN_CHARS = 1024
# What every rsyslog page repeats: the two "See also" boxes at its end (where to ask for help, how
# to contribute) and the copyright line; and a folder's table of contents (the next pages' titles).
_RSYSLOG_CHROME = re.compile(
    r'<div class="admonition seealso">\s*<p class="admonition-title">See also</p>\s*'
    r"<p>(?:Help with configuring/using|Contributing to) .*?</div>"
    r'|<p>Copyright \d{4}(?:-\d{4})? <a .*?</p>|<div class="toctree-wrapper compound">.*?</div>',
    re.S,
)


def rsyslog_page_text(page: str) -> str:
    """The text of one page of the rsyslog documentation (its body, without navigation, sidebar,
    tables of contents and the help, contributing and copyright lines every page ends with)."""
    return _html_text(
        page, '<div class="body" role="main">', '<div class="sphinxsidebar"', lambda html: _RSYSLOG_CHROME.sub("", html)
    )


def write_rsyslog_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None, *, html: bool = False) -> pathlib.Path:
    """Write the rsyslog documentation as `dest/<page>.txt` (`configuration/modules/omfile.html`
    -> `configuration-modules-omfile.txt`, `tutorials/tls.html` -> `tutorials-tls.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed. Pages with
    less than `RSYSLOG_MIN_CHARS` of text are left out.
    """

    def pages(root: pathlib.Path) -> list[pathlib.Path]:
        return [
            page
            for folder in _RSYSLOG_FOLDERS
            for page in (root / folder).glob("*.html")
            if not page.name.startswith("rsconf1_")
        ]

    return _write_pages(
        RSYSLOG_PACKAGE, deb, RSYSLOG_HTML, dest, pages, rsyslog_page_text, RSYSLOG_MIN_CHARS, html=html
    )


ZSH_PACKAGE = "zsh-doc"
ZSH_HTML = "usr/share/doc/zsh-common/html"
# The manual's chapters (texinfo writes each chapter, sections and all, to one page, and a stub
# "the node you are looking for is at ..." for each section) and the FAQ's six chapters. Left
# out: the stubs (pages without a chapter), the cover page (the licence), the table of contents,
# the "About" page, the six indexes (`*-Index.html`) and the FAQ's own table of contents.
_ZSH_FAQ = re.compile(r"FAQ0\d\.html")
# What every page repeats: the navigation bar above each section ("[ << ] [ < ] [ Up ] ..."), a
# chapter's menu of its sections (their titles, which the page states again as headings), and the
# FAQ's "Table of Contents / Previous Chapter / Next Chapter" list at its top and bottom; the
# manual's footer ("This document was generated on ... using texi2any.", "Zsh version 5.9, ...");
# and the pilcrow after a definition's term (a link to it, shown on hover).
_ZSH_CHROME = re.compile(
    r'<table class="(?:header|menu)".*?</table>|<ul>\s*<li> <a href="FAQ\.html">Table of Contents</a>.*?</ul>'
    r"|<a [^>]*class='copiable-anchor'[^>]*>.*?</a>"
    r'|<p><font size="-1">\s*This document was generated on .*',
    re.S,
)


def zsh_page_text(page: str) -> str:
    """The text of one page of the Z shell manual or FAQ (its chapter, without the navigation bars,
    the menus of sections and the FAQ's chapter links)."""
    return _html_text(page, "<body", "</body>", lambda html: _ZSH_CHROME.sub("", html))


def write_zsh_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None, *, html: bool = False) -> pathlib.Path:
    """Write the Z shell manual and FAQ as `dest/<page>.txt` (`Options.html` -> `Options.txt`,
    `Shell-Builtin-Commands.html` -> `Shell-Builtin-Commands.txt`, `FAQ03.html` -> `FAQ03.txt`).

    The package is fetched with `apt-get download` into `dest/../` (kept, so a second run needs no
    network) unless `deb` names one; pages are rewritten only when their text changed. The pages
    are long (a chapter each): they are not split by section.
    """

    return _write_pages(ZSH_PACKAGE, deb, ZSH_HTML, dest, _zsh_pages, zsh_page_text, html=html)


# The same manual as the package ships it typeset (TeX's PDF, 1 file, ~250 pages; without the FAQ).
ZSH_PDF = "usr/share/doc/zsh-common/zsh.pdf"


def write_zsh_pdf_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None) -> pathlib.Path:
    """Copy the Z shell manual's PDF byte for byte to `dest/zsh.pdf` (locallens's own PDF reader is
    what is measured) and return `dest`; fetched and kept as `write_zsh_corpus` does."""
    dest = pathlib.Path(dest)
    with _unpacked(ZSH_PACKAGE, deb, dest, "") as root:
        data = (root / ZSH_PDF).read_bytes()
        _write_changed(dest / pathlib.PurePosixPath(ZSH_PDF).name, data)
    return dest


def _zsh_pages(root: pathlib.Path) -> list[pathlib.Path]:
    """The manual's chapter pages and the FAQ's chapters (what `write_zsh_corpus` converts)."""
    return [
        page
        for page in root.glob("*.html")
        if _ZSH_FAQ.fullmatch(page.name) or '<div class="chapter"' in page.read_text(encoding="utf-8")
    ]


# The AsciiDoc corpus: (PyPI name, version, files in its source distribution). qutebrowser's user
# manual as the sdist ships it rendered (asciidoc's HTML; its change log, 380 KB of release notes,
# left out) and two of its AsciiDoc sources; asciidoc's own manual pages, AsciiDoc sources in the
# layout of most AsciiDoc manual pages (`NAME`/`OPTIONS` titles underlined with `----`,
# `*--option*=ARG::` definition lists).
ADOC_SOURCES = (
    (
        "qutebrowser",
        "3.7.0",
        (
            *(f"qutebrowser/html/doc/{page}.html" for page in ("commands", "configuring", "contributing", "faq")),
            *(f"qutebrowser/html/doc/{page}.html" for page in ("index", "install", "quickstart", "settings")),
            *(f"qutebrowser/html/doc/{page}.html" for page in ("stacktrace", "userscripts")),
            "doc/qutebrowser.1.asciidoc",
            "README.asciidoc",
        ),
    ),
    ("asciidoc", "10.2.1", ("doc/a2x.1.txt", "doc/asciidoc.1.txt")),
)
ADOC_SUFFIXES = (".html", ".asciidoc", ".txt")
FILTER_REPO_SUFFIXES = (".txt", ".md")
# git-filter-repo's documentation as its PyPI sdist ships it: a manual page in AsciiDoc written the
# way Git's own pages are (`--path <dir_or_file>::` over a tab-indented description, `~~~~`
# subsection titles, `linkgit:`), beside its FAQ, install notes, read-me and guides in Markdown.
FILTER_REPO_SOURCES = (
    (
        "git_filter_repo",
        "2.47.0",
        (
            "Documentation/git-filter-repo.txt",
            "Documentation/FAQ.md",
            "Documentation/converting-from-bfg-repo-cleaner.md",
            "Documentation/converting-from-filter-branch.md",
            "Documentation/examples-from-user-filed-issues.md",
            "README.md",
            "INSTALL.md",
        ),
    ),
)


def write_filter_repo_corpus(dest: pathlib.Path) -> pathlib.Path:
    """Write git-filter-repo's documentation (`FILTER_REPO_SOURCES`) to `dest` as it ships, as
    `write_adoc_corpus` does, and return `dest`."""
    return write_adoc_corpus(dest, FILTER_REPO_SOURCES)


def write_adoc_corpus(
    dest: pathlib.Path, sources: tuple[tuple[str, str, tuple[str, ...]], ...] = ADOC_SOURCES
) -> pathlib.Path:
    """Write the files of `sources` (`ADOC_SOURCES` unless another corpus's) to `dest/<file name>`
    byte for byte (`settings.html`,
    `qutebrowser.1.asciidoc`, `a2x.1.txt`, ...: names, extensions and markup as shipped, so that
    the package's own readers are what is measured) and return `dest`.

    The source distributions are fetched with `pip download` into `dest/../` (kept, so a second run
    needs no network); a file is rewritten only when its bytes changed.
    """
    import tarfile

    dest = pathlib.Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name, version, files in sources:
        sdist = _pypi_sdist(name, version, dest.parent)
        with tarfile.open(sdist) as archive:
            for member in files:
                try:
                    extracted = archive.extractfile(f"{name}-{version}/{member}")
                except KeyError:
                    extracted = None
                if extracted is None:
                    raise SystemExit(f"{sdist.name} holds no file {member}")
                _write_changed(dest / pathlib.PurePosixPath(member).name, extracted.read())
    return dest


# The Bash manuals as Debian's bash-doc package ships them (/usr/share/doc/bash): the manual page
# (`bash.html`, `bash.pdf`) and the reference manual (`bashref.html`, `bashref.pdf`), each once as
# HTML and once as PDF, beside the package's examples (scripts, READMEs, an index). `BASH_KINDS`:
# which of its files a corpus holds.
BASH_PACKAGE = "bash-doc"
BASH_DOC = "usr/share/doc/bash"
BASH_KINDS = {
    "html": ("bash.html", "bashref.html"),
    "pdf": ("bash.pdf", "bashref.pdf"),
    "mixed": None,  # the folder as shipped: both manuals in both formats, and the examples
}
# The files a question's answer is in, per corpus: the manuals in the corpus's formats.
BASH_MANUALS = {
    "html": ("bash.html", "bashref.html"),
    "pdf": ("bash.pdf", "bashref.pdf"),
    "mixed": ("bash.html", "bashref.html", "bash.pdf", "bashref.pdf"),
}


def write_bash_corpus(dest: pathlib.Path, kind: str = "html", deb: pathlib.Path | None = None) -> pathlib.Path:
    """Copy bash-doc's files byte for byte to `dest` (`BASH_KINDS[kind]`; "mixed": the whole folder
    as shipped, subfolders and all), so that locallens's own HTML and PDF readers are what is
    measured, and return `dest`. The package is fetched with `apt-get download` into `dest/../`
    (kept, so a second run needs no network) unless `deb` names one; a file is rewritten only when
    its bytes changed."""
    dest = pathlib.Path(dest)
    with _unpacked(BASH_PACKAGE, deb, dest, BASH_DOC) as root:
        names = BASH_KINDS[kind]
        files = [root / name for name in names] if names else [p for p in root.rglob("*") if p.is_file()]
        for source in sorted(files):
            _write_changed(dest / source.relative_to(root), source.read_bytes())
    return dest


# tig's documentation as Debian's tig package ships it (/usr/share/doc/tig): its manual and its two
# manual pages, HTML that AsciiDoc wrote from sources in Git's style (option and setting entries
# as `<dl>` lists, `NAME`/`OPTIONS` sections), the way Git's own HTML pages are written.
TIG_PACKAGE = "tig"
TIG_DOC = "usr/share/doc/tig"
TIG_PAGES = ("manual.html", "tig.1.html", "tigrc.5.html")


def write_tig_corpus(dest: pathlib.Path, deb: pathlib.Path | None = None) -> pathlib.Path:
    """Copy tig's manual and manual pages (`TIG_PAGES`) byte for byte to `dest`, so that the
    package's HTML reader is what is measured, and return `dest`. The package is fetched with
    `apt-get download` into `dest/../` (kept) unless `deb` names one; a file is rewritten only when
    its bytes changed."""
    dest = pathlib.Path(dest)
    with _unpacked(TIG_PACKAGE, deb, dest, TIG_DOC) as root:
        for name in TIG_PAGES:
            _write_changed(dest / name, (root / name).read_bytes())
    return dest


# Debian packages and the manual pages of theirs that `write_manpages_corpus` renders.
MANPAGES = (
    ("tar", ("usr/share/man/man1/tar.1.gz",)),
    ("tmux", ("usr/share/man/man1/tmux.1.gz",)),
    ("less", ("usr/share/man/man1/less.1.gz",)),
    ("grep", ("usr/share/man/man1/grep.1.gz",)),
    ("sed", ("usr/share/man/man1/sed.1.gz",)),
    ("findutils", ("usr/share/man/man1/find.1.gz",)),
    ("openssh-client", ("usr/share/man/man1/ssh.1.gz", "usr/share/man/man5/ssh_config.5.gz")),
    ("curl", ("usr/share/man/man1/curl.1.gz",)),
)


def write_manpages_corpus(dest: pathlib.Path) -> pathlib.Path:
    """Render `MANPAGES` to `dest/<page>.txt` (`tar.1.txt`) as `man` prints them on an 80-column
    terminal, overstrikes removed (`col -b`), and return `dest`. Each package is fetched with
    `apt-get download` into `dest/../` (kept); a file is rewritten only when its text changed."""
    dest = pathlib.Path(dest)
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "MANWIDTH": "80", "MAN_DISABLE_SECCOMP": "1"}
    for package, pages in MANPAGES:
        with _unpacked(package, None, dest, "") as root:  # each package unpacked once for its pages
            for page in pages:
                rendered = subprocess.run(
                    ["man", "-l", "-P", "cat", str(root / page)], env=env, capture_output=True, check=True, timeout=120
                ).stdout
                plain = subprocess.run(
                    ["col", "-b"], input=rendered, capture_output=True, check=True, timeout=60
                ).stdout
                _write_changed(dest / (pathlib.Path(page).name.removesuffix(".gz") + ".txt"), plain)
    return dest


def _write_changed(path: pathlib.Path, data: bytes) -> None:
    """`data` written to `path` (its folder made if missing) unless the file holds those bytes
    already: a corpus rewritten with nothing changed keeps its files' times, and an index over it
    finds nothing to read again."""
    if not (path.is_file() and path.read_bytes() == data):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@contextmanager
def _unpacked(package: str, deb: pathlib.Path | None, dest: pathlib.Path, folder: str) -> Iterator[pathlib.Path]:
    """`dest` created if missing, and `folder` of `deb` (`package`'s, fetched into `dest/../` when
    None: `_debian_package`) unpacked into a temporary folder for the time of the `with`."""
    dest.mkdir(parents=True, exist_ok=True)
    deb = deb or _debian_package(package, dest.parent)
    with tempfile.TemporaryDirectory(prefix="locallens-deb-") as unpacked:
        subprocess.run(["dpkg-deb", "-x", str(deb), unpacked], check=True, timeout=600)
        yield pathlib.Path(unpacked) / folder


def _read_page(page: pathlib.Path) -> str:
    """The text of `page` (UTF-8, newlines as `read_text` reads them), decompressed if gzipped."""
    if page.suffix == ".gz":
        with gzip.open(page, "rt", encoding="utf-8") as file:
            return file.read()
    return page.read_text(encoding="utf-8")


def _write_pages(
    package: str,
    deb: pathlib.Path | None,
    folder: str,
    dest: pathlib.Path,
    pages: Callable[[pathlib.Path], list[pathlib.Path]],
    page_text: Callable[[str], str],
    min_chars: int = 0,
    html: bool = False,
) -> pathlib.Path:
    """Unpack `deb` (`package`'s, fetched into `dest/../` when None: `_debian_package`) and write
    the text of each of `pages(<its folder>)` as `dest/<page>.txt` (`usage/prune.html` ->
    `usage-prune.txt`, `TLS_README.gz` -> `TLS_README.txt`; a gzipped page is read decompressed),
    `dest` created if missing, a page rewritten only when its text changed; a page with less than
    `min_chars` of text (a stub) is left out. `html`: the same pages copied as the package ships
    them instead (`usage/prune.html` -> `usage-prune.html`, navigation and all), for locallens's own
    HTML reader to read, as a person indexing the package's folder has them."""
    dest = pathlib.Path(dest)
    with _unpacked(package, deb, dest, folder) as root:
        for page in sorted(pages(root)):
            source = _read_page(page)
            text = page_text(source)
            if len(text) < min_chars:
                continue
            name = page.relative_to(root).as_posix().removesuffix(".gz").removesuffix(".html")
            if html:
                text = source
            path = dest / (name.replace("/", "-") + (".html" if html else ".txt"))
            if not (path.is_file() and path.read_text(encoding="utf-8") == text):
                path.write_text(text, encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write an evaluation corpus to a folder.")
    parser.add_argument("dest", type=pathlib.Path, help="destination folder (created if missing)")
    parser.add_argument(
        "--stdlib",
        action="store_true",
        help="the stdlib manual pages (pydoc MODULE) instead of the language-reference topics",
    )
    parser.add_argument(
        "--borg", action="store_true", help="the BorgBackup manual from Debian's borgbackup-doc package"
    )
    parser.add_argument(
        "--varnish", action="store_true", help="the Varnish Cache documentation from Debian's varnish-doc package"
    )
    parser.add_argument(
        "--postfix", action="store_true", help="the Postfix README documents from Debian's postfix-doc package"
    )
    parser.add_argument(
        "--apache", action="store_true", help="the Apache HTTP Server manual from Debian's apache2-doc package"
    )
    parser.add_argument(
        "--sqlite", action="store_true", help="the SQLite documentation from Debian's sqlite3-doc package"
    )
    parser.add_argument(
        "--rsyslog", action="store_true", help="the rsyslog documentation from Debian's rsyslog-doc package"
    )
    parser.add_argument("--zsh", action="store_true", help="the Z shell manual and FAQ from Debian's zsh-doc package")
    parser.add_argument(
        "--zsh-pdf", action="store_true", help="the Z shell manual as zsh-doc ships it typeset (zsh.pdf)"
    )
    parser.add_argument(
        "--bash",
        choices=tuple(BASH_KINDS),
        help="the Bash manual page and reference manual from Debian's bash-doc package, as HTML, as PDF "
        "or the package's folder as shipped (mixed)",
    )
    parser.add_argument(
        "--adoc",
        action="store_true",
        help="AsciiDoc documentation and its HTML from the qutebrowser and asciidoc sdists",
    )
    parser.add_argument(
        "--filter-repo", action="store_true", help="git-filter-repo's documentation from its sdist (AsciiDoc, Markdown)"
    )
    parser.add_argument(
        "--tig", action="store_true", help="tig's manual and manual pages from Debian's tig package (HTML)"
    )
    parser.add_argument(
        "--manpages", action="store_true", help="eight Debian packages' manual pages rendered to text by man"
    )
    args = parser.parse_args(argv)
    if args.manpages:
        out = write_manpages_corpus(args.dest)
        print(f"wrote {sum(len(pages) for _, pages in MANPAGES)} pages to {out}")
        return
    if args.tig:
        out = write_tig_corpus(args.dest)
        print(f"wrote {len(TIG_PAGES)} pages to {out}")
        return
    if args.bash:
        out = write_bash_corpus(args.dest, args.bash)
        print(f"wrote {sum(1 for p in out.rglob('*') if p.is_file())} files to {out}")
        return
    if args.adoc or args.filter_repo:
        out = write_adoc_corpus(args.dest, ADOC_SOURCES if args.adoc else FILTER_REPO_SOURCES)
        print(f"wrote {sum(1 for p in out.iterdir() if p.is_file())} files to {out}")
        return
    if args.zsh_pdf:
        out = write_zsh_pdf_corpus(args.dest)
        print(f"wrote zsh.pdf to {out}")
        return
    if args.zsh:
        out = write_zsh_corpus(args.dest)
    elif args.rsyslog:
        out = write_rsyslog_corpus(args.dest)
    elif args.sqlite:
        out = write_sqlite_corpus(args.dest)
    elif args.apache:
        out = write_apache_corpus(args.dest)
    elif args.postfix:
        out = write_postfix_corpus(args.dest)
    elif args.borg:
        out = write_borg_corpus(args.dest)
    elif args.varnish:
        out = write_varnish_corpus(args.dest)
    else:
        out = write_stdlib_corpus(args.dest) if args.stdlib else write_pydoc_corpus(args.dest)
    count = sum(1 for _ in out.glob("*.txt"))
    print(
        f"wrote {count} {'topics' if not (args.stdlib or args.borg or args.varnish or args.postfix or args.apache or args.sqlite or args.rsyslog or args.zsh) else 'pages'} to {out}"
    )


if __name__ == "__main__":
    main()
