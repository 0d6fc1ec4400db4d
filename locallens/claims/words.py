"""Content words of a claim and the keys they are looked up by: a five-letter stem, or for
Chinese, Japanese and Korean text the parts of a run (Han characters, katakana runs, Hangul stems)."""

from __future__ import annotations

import re
from functools import lru_cache

from locallens.stemming import porter_stem
from locallens.text import CJK_CLASS, HAN, HANGUL_SYLLABLES, KATAKANA

# Function words, which a faithful paraphrase may add freely (English and Spanish); every other
# word of a claim must occur in the excerpts or the question (see `novel_words`).
_FUNCTION_WORDS_EN_ES = frozenset(
    [
        "the",
        "and",
        "but",
        "that",
        "which",
        "who",
        "whom",
        "whose",
        "this",
        "these",
        "those",
        "with",
        "from",
        "into",
        "onto",
        "for",
        "are",
        "was",
        "were",
        "been",
        "being",
        "has",
        "have",
        "had",
        "does",
        "did",
        "not",
        "cannot",
        "you",
        "your",
        "yours",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "its",
        "their",
        "there",
        "here",
        "then",
        "than",
        "also",
        "very",
        "such",
        "some",
        "any",
        "all",
        "each",
        "every",
        "both",
        "either",
        "neither",
        "nor",
        "what",
        "when",
        "where",
        "why",
        "how",
        "our",
        "ours",
        "we",
        "they",
        "them",
        "his",
        "her",
        "hers",
        "she",
        "him",
        "its",
        "yes",
        "however",
        "therefore",
        "thus",
        "because",
        "since",
        "while",
        "whereas",
        "although",
        "though",
        "unless",
        "until",
        "upon",
        "about",
        "above",
        "below",
        "after",
        "before",
        "just",
        "too",
        "instead",
        "other",
        "another",
        "same",
        "more",
        "most",
        "less",
        "least",
        "many",
        "much",
        "few",
        "own",
        "one",
        "ones",
        "use",
        "used",
        "el",
        "la",
        "los",
        "las",
        "una",
        "uno",
        "unos",
        "unas",
        "del",
        "que",
        "por",
        "para",
        "con",
        "sin",
        "pero",
        "como",
        "más",
        "muy",
        "este",
        "esta",
        "estos",
        "estas",
        "ese",
        "esa",
        "esos",
        "esas",
        "eso",
        "esto",
        "son",
        "está",
        "están",
        "ser",
        "hay",
        "sus",
        "nos",
        "les",
        "cual",
        "cuál",
        "cuales",
        "donde",
        "cuando",
        "porque",
        "pues",
        "también",
        "sino",
        "entre",
        "sobre",
        "tras",
        "desde",
        "hasta",
        "según",
        "otro",
        "otra",
        "otros",
        "otras",
        "mismo",
        "misma",
        # Connectives, quantifiers and light verbs a paraphrase brings in without adding a fact.
        "still",
        "rather",
        "besides",
        "whoever",
        "whatever",
        "whichever",
        "towards",
        "toward",
        "out",
        "off",
        "top",
        "only",
        "even",
        "again",
        "already",
        "yet",
        "once",
        "ever",
        "whole",
        "otherwise",
        "within",
        "without",
        "through",
        "throughout",
        "during",
        "between",
        "among",
        "against",
        "across",
        "around",
        "per",
        "via",
        "get",
        "gets",
        "got",
        "give",
        "gives",
        "given",
        "let",
        "lets",
        "make",
        "makes",
        "made",
        "keep",
        "keeps",
        "kept",
        "take",
        "takes",
        "took",
        "taken",
        "come",
        "comes",
        "came",
        "put",
        "puts",
        "need",
        "needs",
        "needed",
        "aren",
        "isn",
        "don",
        "doesn",
        "didn",
        "won",
        "wasn",
        "weren",
        "hasn",
        "haven",
        "shouldn",
        "couldn",
        "wouldn",
        "mustn",
        "way",
        "ways",
        "thing",
        "things",
        "kind",
        "kinds",
        "sort",
        "case",
        "cases",
        "lot",
        "actually",
        "simply",
        "first",
        "last",
        "later",
        "whether",
        "like",
        "unlike",
        "whereby",
        "everything",
        "something",
        "anything",
        "everyone",
        "someone",
        "anyone",
        "sometimes",
        "often",
        "usually",
        "typically",
        "generally",
        "normally",
        "basically",
        "essentially",
        "really",
        "exactly",
        "able",
        "hay",
        "haya",
        "debe",
        "deben",
        "tener",
        "tiene",
        "tienen",
        "menos",
        "demás",
        "usar",
        "dar",
        "hacer",
        "hace",
        "puede",
        "pueden",
        "solo",
        "sólo",
        "cada",
        "todo",
        "toda",
        "todos",
        "todas",
        "aunque",
        "mientras",
        "así",
        "ya",
        "aún",
        "todavía",
        "siempre",
    ]
)
_WORDS = re.compile(r"[^\W\d_]{3,}")


def _stem(word: str) -> str:
    """A crude stem: the first five letters, lower case (required / requires / requirement)."""
    return word.lower()[:5]


def _stems(word: str) -> list[str]:
    """The keys a Latin-script word is found by: its five-letter prefix and, for an ASCII word,
    its Porter stem (handed / hands, logged / log, which the prefix alone does not join)."""
    lower = word.lower()
    keys = [_stem(lower)]
    if lower.isascii():
        keys.append("~" + porter_stem(lower))
    return keys


# Chinese and Japanese write without spaces, so a "word" above is a whole clause there. Such a run
# is compared by its parts instead: each Han character and each katakana run (names, loanwords)
# must occur in the excerpts or the question; hiragana (particles, inflections) may differ freely.
# Korean puts spaces between words but glues particles to them (회의는, 회의를): a Hangul word is
# compared by its first two syllables.
_HAN = re.compile(f"[{HAN}]")
_KATAKANA_RUN = re.compile(f"[{KATAKANA}ー]{{2,}}")
_HANGUL_WORD = re.compile(f"[{HANGUL_SYLLABLES}]+")
_CJK = re.compile(f"[{CJK_CLASS}]")
_CJK_RUN = re.compile(f"[{CJK_CLASS}ー]+")


# Function characters and words a faithful paraphrase may add, as the English and Spanish list
# above: Chinese/Japanese grammatical characters and Korean endings and conjunctions.
_FUNCTION_HAN = frozenset(
    "的了是在有和与及或要会能可以将被把也都就还而但这那其之为于个等请需应该所从到对由向给让使并且则即如若因此每各不没无吗呢吧"
)
_FUNCTION_HANGUL = frozenset(
    [
        "합니다",
        "입니다",
        "있습니다",
        "없습니다",
        "됩니다",
        "하세요",
        "해주세요",
        "주세요",
        "그리고",
        "그러나",
        "또는",
        "및",
        "또한",
        "하는",
        "있는",
        "없는",
        "되는",
        "한다",
        "된다",
        "있다",
        "없다",
        "이다",
        "하고",
        "해야",
        "합니까",
        "입니까",
        "있나요",
        "인가요",
        "그런데",
        "하지만",
    ]
)


@lru_cache(maxsize=65536)
def _cached_keys(word: str) -> tuple[str, ...]:
    return tuple(_compute_keys(word))


def _word_keys(word: str) -> list[str]:
    """What of `word` must be found elsewhere (`_compute_keys`), remembered per word."""
    return list(_cached_keys(word))


def _compute_keys(word: str) -> list[str]:
    """What of `word` must be found elsewhere: its stem, or for CJK text the parts named above."""
    if not _CJK.search(word):
        return _stems(word)
    keys = [han for han in _HAN.findall(word) if han not in _FUNCTION_HAN] + _KATAKANA_RUN.findall(word)
    keys += [hangul[:2] for hangul in _HANGUL_WORD.findall(word) if hangul not in _FUNCTION_HANGUL]
    return keys


def vocabulary_of(text: str) -> set[str]:
    """The keys `novel_words` looks up: stems of words, CJK characters and runs (see `_word_keys`)."""
    return {key for word in _WORDS.findall(text) for key in _cached_keys(word)} | {
        key for run in _CJK_RUN.findall(text) for key in _cached_keys(run)
    }


FUNCTION_WORDS = _FUNCTION_WORDS_EN_ES


def word_key(word: str) -> str:
    """One key for a Latin word, its Porter stem (ASCII) or five-letter prefix."""
    lower = word.lower()
    return porter_stem(lower) if lower.isascii() else _stem(lower)


def content_words(text: str) -> list[str]:
    """The words of `text` that are not function words (Latin script; a CJK run counts as one)."""
    return [word for word in _WORDS.findall(text) if word.lower() not in _FUNCTION_WORDS_EN_ES]


def known_word(word: str, vocabulary: set[str]) -> bool:
    """Whether `word` is found in `vocabulary` (`vocabulary_of`): by either key of a Latin word,
    by every part of a CJK run."""
    keys = _word_keys(word)
    if _CJK.search(word):
        return all(key in vocabulary for key in keys)
    return any(key in vocabulary for key in keys)


@lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    """How common `word` is in English or Spanish prose (wordfreq's Zipf scale: 6 "long", 4
    "linear", 3 "deletes", 0 unknown), the higher of the two. wordfreq's small lists (their words
    down to Zipf 3, 10-20 ms to load) are enough for COMMON_ZIPF; the large ones take 0.15 s each."""
    from wordfreq import zipf_frequency

    return max(float(zipf_frequency(word, "en", wordlist="small")), float(zipf_frequency(word, "es", wordlist="small")))


def common_word(word: str, min_zipf: float) -> bool:
    """A lower-case word of ordinary prose (Zipf at least `min_zipf`): "turns", "accepts",
    "always". Not a name, an identifier, a number or a rare technical word."""
    return word.isalpha() and word.islower() and zipf(word) >= min_zipf


def novel_words(claim: str, vocabulary: set[str]) -> list[str]:
    """Content words of `claim` whose stem is not in `vocabulary` (stems of the excerpts and the
    question): words the model brought in from nowhere, such as a wrong subject ("La capa de la
    oficina...") or an invented relation ("a correction to the original function")."""
    novel: list[str] = []
    words = _WORDS.findall(claim) + [run for run in _CJK_RUN.findall(claim) if len(run) < 3]
    for word in words:
        if word.lower() in _FUNCTION_WORDS_EN_ES or word in novel:
            continue
        if known_word(word, vocabulary):
            continue
        missing = [key for key in _word_keys(word) if key not in vocabulary]
        # A CJK run is a whole clause: name what is missing of it, not the clause.
        for part in missing if _CJK.search(word) else [word]:
            if part not in novel:
                novel.append(part)
    return novel
