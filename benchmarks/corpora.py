"""Evaluation corpora built from data that ships with Python itself.

`write_pydoc_corpus` writes the language-reference topics that CPython bundles for `help()`
(`pydoc_data.topics.topics`) as one plain-text file per topic. The corpus needs no download, and
`benchmarks/data/pydoc_questions.jsonl` holds questions about it.

Usage: python3 benchmarks/corpora.py DEST
"""

from __future__ import annotations

import argparse
import pathlib


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the pydoc topics corpus to a folder.")
    parser.add_argument("dest", type=pathlib.Path, help="destination folder (created if missing)")
    args = parser.parse_args(argv)
    out = write_pydoc_corpus(args.dest)
    count = sum(1 for _ in out.glob("*.txt"))
    print(f"wrote {count} topics to {out}")


if __name__ == "__main__":
    main()
