"""The plain refusal ("the answer is not in the excerpts"), in the question's language."""

from __future__ import annotations

import re
from functools import lru_cache

REFUSALS: dict[str, str] = {
    "en": "The answer is not in the excerpts.",
    "es": "La respuesta no está en los fragmentos.",
    "fr": "La réponse ne figure pas dans les extraits.",
    "de": "Die Antwort steht nicht in den Auszügen.",
    "pt": "A resposta não está nos trechos.",
    "it": "La risposta non è negli estratti.",
    "uk": "Відповіді немає у фрагментах.",
    "ru": "Ответа нет во фрагментах.",
}

# A few frequent function words per language; the language with most hits wins (English on a tie).
_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "the",
            "is",
            "are",
            "what",
            "which",
            "who",
            "how",
            "when",
            "where",
            "does",
            "do",
            "did",
            "of",
            "to",
            "in",
            "on",
            "for",
            "and",
            "a",
            "an",
            "can",
        ]
    ),
    "es": frozenset(
        [
            "el",
            "la",
            "los",
            "las",
            "qué",
            "cuál",
            "cuáles",
            "cómo",
            "cuándo",
            "dónde",
            "es",
            "son",
            "de",
            "del",
            "en",
            "para",
            "por",
            "y",
            "un",
            "una",
            "se",
        ]
    ),
    "fr": frozenset(
        [
            "le",
            "la",
            "les",
            "est",
            "sont",
            "quel",
            "quelle",
            "quels",
            "comment",
            "quand",
            "où",
            "de",
            "du",
            "des",
            "en",
            "pour",
            "et",
            "un",
            "une",
        ]
    ),
    "de": frozenset(
        [
            "der",
            "die",
            "das",
            "ist",
            "sind",
            "was",
            "welche",
            "welcher",
            "wie",
            "wann",
            "wo",
            "von",
            "zu",
            "in",
            "für",
            "und",
            "ein",
            "eine",
        ]
    ),
    "pt": frozenset(
        [
            "o",
            "a",
            "os",
            "as",
            "qual",
            "quais",
            "como",
            "quando",
            "onde",
            "é",
            "são",
            "de",
            "do",
            "da",
            "em",
            "para",
            "por",
            "e",
            "um",
            "uma",
        ]
    ),
    "it": frozenset(
        [
            "il",
            "lo",
            "la",
            "gli",
            "le",
            "è",
            "sono",
            "quale",
            "quali",
            "come",
            "quando",
            "dove",
            "di",
            "del",
            "della",
            "in",
            "per",
            "e",
            "un",
            "una",
        ]
    ),
}


@lru_cache(maxsize=512)
def question_language(question: str) -> str:
    """A two-letter guess at the question's language, from its script and its function words
    (kept for the texts last asked: the answer stage asks it of each excerpt many times)."""
    if re.search(r"[іїєґІЇЄҐ]", question):
        return "uk"
    if re.search(r"[а-яА-ЯёЁ]", question):
        return "ru"
    words = re.findall(r"[^\W\d_]+", question.lower())
    counts = {lang: sum(w in vocab for w in words) for lang, vocab in _FUNCTION_WORDS.items()}
    if "¿" in question or "¡" in question or "ñ" in question.lower():
        counts["es"] += 2
    best = max(counts, key=lambda lang: (counts[lang], lang == "en"))
    return best if counts[best] > 0 else "en"


def refusal(question: str) -> str:
    """The plain "not in the excerpts" statement, in the question's language."""
    return REFUSALS[question_language(question)]
