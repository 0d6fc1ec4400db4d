"""Apertium's English of candidate documentation words and Spanish constructions, in neutral sentences.

How `crosslang.DOC_TERMS` and `crosslang.CONSTRUCTIONS` are chosen: each candidate of
benchmarks/data/apertium_probe_words.txt (chosen from general knowledge, never from a question
set) is put in a neutral sentence and sent through Apertium, bare and as `crosslang`
renders a question (`_apertium_rendering`); a word or construction rendered in another sense than the software
one, or left in Spanish, is put in English before translation (docs/decisions.md, "Cross-language
questions"). Needs Debian's `apertium-eng-spa`.

    python benchmarks/apertium_probe.py [--changed]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

WORDS = Path(__file__).resolve().parent / "data" / "apertium_probe_words.txt"


def sentence(kind: str, text: str) -> str:
    """The neutral sentence a candidate is probed in."""
    if kind == "n":
        return f"{text[0].upper()}{text[1:]} está aquí."
    if kind == "v":
        return f"Quiero {text} ahora."
    if kind == "a":
        return f"El fichero {text} está aquí."
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changed", action="store_true", help="only the candidates the lists change")
    args = parser.parse_args()
    from locallens.crosslang import _apertium, _apertium_rendering, _translate

    command = _apertium()
    if command is None:
        sys.exit("apertium with its spa-eng pair is not installed")
    for line in WORDS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        kind, text = line.split(" ", 1)
        probe = sentence(kind, text.strip())
        bare = _translate(command, probe)
        listed = _apertium_rendering(probe)
        if args.changed and bare == listed:
            continue
        print(f"{text.strip():32} | {bare}" + (f"  ->  {listed}" if listed != bare else ""))


if __name__ == "__main__":
    main()
