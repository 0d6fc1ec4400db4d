"""Evaluation corpora built from data that ships with Python itself.

- `write_pydoc_corpus` writes the language-reference topics that CPython bundles for `help()`
  (`pydoc_data.topics.topics`) as one plain-text file per topic (79 files);
  `benchmarks/data/pydoc_questions.jsonl` holds questions about it.
- `write_stdlib_corpus` writes the standard library's manual pages as `pydoc MODULE` prints them
  (NAME, DESCRIPTION, CLASSES, FUNCTIONS, DATA...), one `<module>.txt` per module: every
  importable public top-level module and a few well-known submodules, ~260 pages of real reference
  documentation, long and short; `benchmarks/data/stdlib_questions.jsonl` holds questions about it.

Neither needs a download. Usage: python3 benchmarks/corpora.py DEST [--stdlib]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write an evaluation corpus to a folder.")
    parser.add_argument("dest", type=pathlib.Path, help="destination folder (created if missing)")
    parser.add_argument(
        "--stdlib",
        action="store_true",
        help="the stdlib manual pages (pydoc MODULE) instead of the language-reference topics",
    )
    args = parser.parse_args(argv)
    out = write_stdlib_corpus(args.dest) if args.stdlib else write_pydoc_corpus(args.dest)
    count = sum(1 for _ in out.glob("*.txt"))
    print(f"wrote {count} {'pages' if args.stdlib else 'topics'} to {out}")


if __name__ == "__main__":
    main()
