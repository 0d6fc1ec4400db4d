"""Questions in another language than the notes: a Spanish question over English notes.

The packaged embedder reads English: a Spanish question's vector lands near the Spanish notes of
a brain, and far from the English note that answers it, whose commands, names and numbers it
shares. So a question in Spanish (`claims.question_language`) is also searched in English: its
English rendering is embedded and searched beside the question itself, and each chunk keeps the
better of its two cosines and its keyword matches for the words of both
(`retrieval.hybrid_search`); a Spanish note still matches the Spanish question as before.

The rendering comes from Apertium's rule-based Spanish-to-English translator (Debian's
`apertium-eng-spa`; offline, about 0.2 s a question, run while the question itself is embedded)
when it is installed; otherwise from a word-by-word gloss: the words `unit_scores` bridges to
English, and the words a translation keeps (numbers, identifiers, names). Measured in
docs/benchmarks.md#spanish-questions-over-english-notes. `LOCALLENS_TRANSLATE=0` turns it off.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from locallens.config import env_flag
from locallens.domain import Rendering

if TYPE_CHECKING:
    import numpy as np

# Apertium's mode for Spanish to English, and how long one translation may take before the
# question is searched without it (a first run reads ~5 MB of transducers: ~0.2 s here).
APERTIUM_MODE = "spa-eng"
TRANSLATE_TIMEOUT_S = 5.0
_TOKEN = re.compile(r"[^\W_][\w'’.-]*[^\W_]|[^\W_]")


def wants_rendering(question: str) -> bool:
    """Whether `question` is searched in English too: it is in Spanish, and rendering is on."""
    from locallens.claims import question_language

    return _enabled() and question_language(question) == "es"


def _enabled() -> bool:
    raw = os.environ.get("LOCALLENS_TRANSLATE", "").strip()
    return env_flag("LOCALLENS_TRANSLATE") if raw else True


@lru_cache(maxsize=1)
def _apertium() -> str | None:
    """The `apertium` command when its Spanish-English pair is installed, else None."""
    command = shutil.which("apertium")
    if command is None:
        return None
    try:
        listed = subprocess.run([command, "-l"], capture_output=True, text=True, timeout=TRANSLATE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return command if APERTIUM_MODE in listed.stdout.split() else None


class PendingRendering:
    """A rendering being made (Apertium runs in its own process while the caller embeds the
    question); `result()` waits for it, and falls back to the gloss on any failure."""

    def __init__(self, question: str) -> None:
        self.question = question
        self._process: subprocess.Popen[str] | None = None
        command = _apertium()
        if command is not None:
            try:
                self._process = subprocess.Popen(
                    [command, "-u", APERTIUM_MODE],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    encoding="utf-8",
                )
            except OSError:
                self._process = None

    def result(self) -> Rendering | None:
        if self._process is not None:
            try:
                out, _ = self._process.communicate(self.question.replace("\n", " "), timeout=TRANSLATE_TIMEOUT_S)
            except (OSError, subprocess.SubprocessError, ValueError):
                self._process.kill()
                self._process.communicate()
                out = ""
            text = " ".join(out.split())
            if self._process.returncode == 0 and text:
                return Rendering(text, "apertium")
        text = gloss(self.question)
        return Rendering(text, "gloss") if text else None


def start_rendering(question: str) -> PendingRendering | None:
    """The English rendering of a Spanish question, started (None for any other question)."""
    return PendingRendering(question) if wants_rendering(question) else None


def render(question: str) -> Rendering | None:
    """The English rendering of a Spanish question, or None (see the module doc)."""
    pending = start_rendering(question)
    return pending.result() if pending else None


def embedded(rendering: Rendering | None, encode_query: Callable[[str], np.ndarray]) -> Rendering | None:
    """`rendering` with its query vector (the search ranks a chunk by its best cosine over the
    question and its rendering)."""
    return None if rendering is None else replace(rendering, vector=encode_query(rendering.text))


def variants(rendering: Rendering | None) -> list[tuple[str, np.ndarray]]:
    """The renderings a search takes besides the question itself (`retrieval.search`'s `also`)."""
    return [(rendering.text, rendering.vector)] if rendering is not None and rendering.vector is not None else []


def gloss(question: str) -> str:
    """A word-by-word English gloss of a Spanish question: each word `unit_scores` bridges to
    English as that word, the words a translation keeps (numbers, identifiers, names; see
    `extractive._untranslated`) as they are, the others left out. "" when no word survives."""
    from locallens.extractive import _untranslated
    from locallens.unit_scores import bridged_word

    words = _TOKEN.findall(question)
    first = words[0] if words else ""
    out = []
    for word in words:
        english = bridged_word(word)
        if english is not None:
            out.append(english)
        elif _untranslated(word, first):
            out.append(word)
    return " ".join(dict.fromkeys(out))
