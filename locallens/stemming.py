"""The English stemmer both stores' keyword search shares: `porter_stem`, FTS5's `porter`.

The SQLite store's word index stems with FTS5's built-in `porter` tokenizer; the PostgreSQL store
computes its lexemes in Python, so it needs the very same stems: porter_stem gives them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from itertools import pairwise

# -- the Porter stemmer of SQLite FTS5 ----------------------------------------------------------
#
# porter_stem reproduces what FTS5's `porter` tokenizer does to one token that its `unicode61`
# tokenizer (remove_diacritics 2) produced: M. F. Porter's 1980 algorithm with the details of
# SQLite's implementation, so that the PostgreSQL store's keywords are the SQLite store's. Those
# details, all verified against FTS5 by tests/test_stemming.py:
#
# - FTS5 works on the token's UTF-8 bytes. A token shorter than 3 bytes or longer than 64 is left
#   alone; lengths, "the stem is not empty" tests and the consonant/vowel pattern all count
#   bytes. Only a, e, i, o, u and (by position) y are vowels: every other byte, digits and each
#   byte of a non-ASCII letter included, is a consonant. The stemmer below therefore runs on the
#   token's bytes, held in a str of one character per byte (latin-1), so that plain string
#   operations (endswith, slicing) do the work.
# - y is a vowel when the letter before it is a consonant (a leading y is a consonant).
# - A suffix is removed only from a longer word: the stem left must not be empty ("ies" becomes
#   "ie", "sses" becomes "sse", "ated" keeps its "at" because "at" + "e" needs a letter before).
# - Of the rules of one step, only the longest suffix the word ends with is tried; if its
#   condition fails the step does nothing.
# - Step 2 has the later revisions of the algorithm: "bli" -> "ble" (not "abli" -> "able") and
#   "logi" -> "log".
# - Removing one of a double consonant (step 1b) can split a multi-byte character; FTS5 then
#   stores the broken bytes, which SQLite hands back with the broken character replaced by U+FFFD,
#   and so does porter_stem (a lexeme must be valid UTF-8 in PostgreSQL).

_MIN_BYTES = 3
_MAX_BYTES = 64
_VOWELS = frozenset("aeiou")


def _consonants(stem: str) -> list[bool]:
    """For each byte of `stem`, True when it is a consonant (y: when it follows a vowel)."""
    pattern: list[bool] = []
    previous_consonant = False  # a leading y is a consonant
    for ch in stem:
        vowel = ch in _VOWELS or (ch == "y" and previous_consonant)
        previous_consonant = not vowel
        pattern.append(previous_consonant)
    return pattern


def _measure(stem: str) -> int:
    """Porter's m: how many times a vowel is followed by a consonant in `stem` ([C](VC)^m[V])."""
    pattern = _consonants(stem)
    return sum(1 for before, after in pairwise(pattern) if not before and after)


def _has_vowel(stem: str) -> bool:
    """Porter's *v*: the stem holds a vowel. As in FTS5, a y counts as one anywhere but first
    (the same answer as the positional rule: a y after a vowel comes after a vowel anyway)."""
    return any(ch in _VOWELS or (ch == "y" and i > 0) for i, ch in enumerate(stem))


def _ends_cvc(stem: str) -> bool:
    """Porter's *o: the stem ends consonant-vowel-consonant, the last not w, x or y."""
    if len(stem) < 3 or stem[-1] in "wxy":
        return False
    return _consonants(stem)[-3:] == [True, False, True]


def _m_above_0(stem: str) -> bool:
    return _measure(stem) > 0


def _m_above_1(stem: str) -> bool:
    return _measure(stem) > 1


def _m_above_1_after_s_or_t(stem: str) -> bool:
    return stem[-1:] in ("s", "t") and _measure(stem) > 1


# Steps 2, 3 and 4: (suffix, replacement, condition on the stem before the suffix).
_Rule = tuple[str, str, Callable[[str], bool]]


def _rules(table: list[_Rule]) -> tuple[_Rule, ...]:
    """The rules longest suffix first, so that the first one a word ends with is the one FTS5
    tries (FTS5 picks by the word's last letters, and lists longer suffixes first)."""
    return tuple(sorted(table, key=lambda rule: -len(rule[0])))


_STEP2 = _rules(
    [
        ("ational", "ate", _m_above_0),
        ("tional", "tion", _m_above_0),
        ("enci", "ence", _m_above_0),
        ("anci", "ance", _m_above_0),
        ("izer", "ize", _m_above_0),
        ("logi", "log", _m_above_0),
        ("bli", "ble", _m_above_0),
        ("alli", "al", _m_above_0),
        ("entli", "ent", _m_above_0),
        ("eli", "e", _m_above_0),
        ("ousli", "ous", _m_above_0),
        ("ization", "ize", _m_above_0),
        ("ation", "ate", _m_above_0),
        ("ator", "ate", _m_above_0),
        ("alism", "al", _m_above_0),
        ("iveness", "ive", _m_above_0),
        ("fulness", "ful", _m_above_0),
        ("ousness", "ous", _m_above_0),
        ("aliti", "al", _m_above_0),
        ("iviti", "ive", _m_above_0),
        ("biliti", "ble", _m_above_0),
    ]
)
_STEP3 = _rules(
    [
        ("icate", "ic", _m_above_0),
        ("ative", "", _m_above_0),
        ("alize", "al", _m_above_0),
        ("iciti", "ic", _m_above_0),
        ("ical", "ic", _m_above_0),
        ("ful", "", _m_above_0),
        ("ness", "", _m_above_0),
    ]
)
_STEP4 = _rules(
    [
        ("al", "", _m_above_1),
        ("ance", "", _m_above_1),
        ("ence", "", _m_above_1),
        ("er", "", _m_above_1),
        ("ic", "", _m_above_1),
        ("able", "", _m_above_1),
        ("ible", "", _m_above_1),
        ("ant", "", _m_above_1),
        ("ement", "", _m_above_1),
        ("ment", "", _m_above_1),
        ("ent", "", _m_above_1),
        ("ion", "", _m_above_1_after_s_or_t),
        ("ou", "", _m_above_1),
        ("ism", "", _m_above_1),
        ("ate", "", _m_above_1),
        ("iti", "", _m_above_1),
        ("ous", "", _m_above_1),
        ("ive", "", _m_above_1),
        ("ize", "", _m_above_1),
    ]
)


def _apply(word: str, rules: tuple[_Rule, ...]) -> str:
    """`word` after the one rule of a step whose suffix it ends with (longest first), if any and
    if the stem before that suffix is not empty and meets the rule's condition."""
    for suffix, replacement, condition in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if condition(stem) else word
    return word


def _step1a(word: str) -> str:
    """Plurals: sses -> ss, ies -> i, ss stays, s goes (each only from a longer word)."""
    if not word.endswith("s"):
        return word
    if word.endswith("es"):
        if (len(word) > 4 and word.endswith("sses")) or (len(word) > 3 and word.endswith("ies")):
            return word[:-2]
        return word[:-1]
    return word if word.endswith("ss") else word[:-1]


def _step1b(word: str) -> str:
    """Past tenses and -ing forms: eed -> ee when m > 0; ed and ing go when the stem has a vowel,
    and the stem is then tidied (at -> ate, bl -> ble, iz -> ize, a double consonant other than
    l, s or z halved, a short cvc stem of m = 1 given back its e)."""
    if len(word) > 3 and word.endswith("eed"):
        return word[:-1] if _m_above_0(word[:-3]) else word
    for suffix in ("ed", "ing"):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            break
    else:
        return word
    if not _has_vowel(stem):
        return word
    for ending in ("at", "bl", "iz"):
        if len(stem) > 2 and stem.endswith(ending):
            return stem + "e"
    last = stem[-1]
    if len(stem) > 1 and last == stem[-2] and last not in _VOWELS and last not in "lsz":
        return stem[:-1]  # (y counts as a consonant here)
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    """A final y becomes i when the rest holds a vowel."""
    return word[:-1] + "i" if word.endswith("y") and _has_vowel(word[:-1]) else word


def _step5(word: str) -> str:
    """A final e goes when m > 1, or m = 1 and the stem does not end cvc; a final ll loses an l
    when m > 1."""
    if word.endswith("e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _ends_cvc(stem)):
            word = stem
    if word.endswith("ll") and _m_above_1(word[:-1]):
        word = word[:-1]
    return word


@lru_cache(maxsize=1 << 17)
def porter_stem(word: str) -> str:
    """The stem FTS5's `porter` tokenizer indexes for `word`, a token as `unicode61
    remove_diacritics 2` produces it (lower-case, diacritics removed): "connections" and
    "connected" -> "connect", "indexing" -> "index", "policies" -> "polici"."""
    raw = word.encode("utf-8")
    if not _MIN_BYTES <= len(raw) <= _MAX_BYTES:
        return word
    stem = _step1c(_step1b(_step1a(raw.decode("latin-1"))))
    stem = _step5(_apply(_apply(_apply(stem, _STEP2), _STEP3), _STEP4))
    return stem.encode("latin-1").decode("utf-8", errors="replace")
