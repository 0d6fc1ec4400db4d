"""Literal facts of a claim (numbers, versions, paths, flags, names...) and whether the excerpts hold them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_CODE = re.compile(r"`([^`\n]+)`")
# A complexity: O(n log n), O(len(heap)).
_BIG_O = re.compile(r"\bO\((?:[^()\n]|\([^()\n]*\))+\)")
_QUOTED = re.compile(r'"([^"\n]{1,80})"|“([^”\n]{1,80})”|«([^»\n]{1,80})»')
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>()\[\]]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.I)
# A path: slashes between name characters, starting at a word boundary.
_PATH = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*")
_FILE_EXTENSIONS = (
    "md|markdown|txt|rst|html?|pdf|py|json|toml|ya?ml|conf|cfg|ini|sh|sql|csv|log|gguf|db|js|ts|go|"
    "rs|java|c|h|cpp|xml|env|lock|service|timer|tar|gz|zip|exe|dll|so|pem|key|crt"
)
_FILE = re.compile(rf"(?<![\w.-])[\w-]{{2,}}\.(?:{_FILE_EXTENSIONS})\b", re.I)
_FLAG = re.compile(r"(?<!\S)--?[A-Za-z][\w-]*")
# Any token holding a digit: 5433, 16.2, v2.4.1, 09:30, 2024-10-02, 10.40.1.50, 1,200, 30%, c6i.
_DIGITS = re.compile(r"[\w.,:/+%°-]*\d[\w.,:/+%°-]*")
# snake_case and __dunder__, CamelCase / camelCase (an inner capital), ACRONYMS of 2+ letters.
_IDENT = re.compile(r"(?<!\w)(?:\w*[^\W\d]_\w*|_\w+|[^\W\d_]*[a-z][A-Z]\w*|[A-Z]{2,}[A-Z0-9]*)(?!\w)")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_EDGE_PUNCT = ".,:;/-'’"
_POSSESSIVE = re.compile(r"['’]s$")
# Capitalised words that are not names when they open a clause or a list entry.
_NOT_NAMES = frozenset(
    {
        "i",
        "a",
        "an",
        "the",
        "it",
        "this",
        "that",
        "these",
        "those",
        "yes",
        "no",
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "sí",
        "y",
        "o",
        "en",
        "de",
    }
)


def _strip_token(token: str) -> str:
    return token.strip(_EDGE_PUNCT)


def extract_facts(claim: str) -> list[str]:
    """The literal facts of one claim (citations already removed), in order, without repeats."""
    facts: list[str] = []
    taken: list[tuple[int, int]] = []  # spans already covered by a longer fact

    def add(value: str, span: tuple[int, int]) -> None:
        value = value.strip()
        if not value or any(a <= span[0] and span[1] <= b for a, b in taken):
            return
        taken.append(span)
        if value.lower() not in (f.lower() for f in facts):
            facts.append(value)

    for match in _CODE.finditer(claim):
        add(match.group(1), match.span())
    for match in _BIG_O.finditer(claim):
        add(match.group(0), match.span())
    for match in _QUOTED.finditer(claim):
        add(next(g for g in match.groups() if g is not None), match.span())
    for match in _URL.finditer(claim):
        add(match.group(0).rstrip(".,;:"), match.span())
    for match in _PATH.finditer(claim):
        path = match.group(0).rstrip(".,;:")
        # `TCP/IP`, `and/or`: one slash between words is prose. A path starts at a root, has
        # two slashes or ends in a file name.
        if path.startswith(("/", "~", ".")) or path.count("/") >= 2 or _FILE.search(path):
            add(path, match.span())
    for match in _FILE.finditer(claim):
        add(match.group(0), match.span())
    for match in _FLAG.finditer(claim):
        add(match.group(0), match.span())
    for match in _DIGITS.finditer(claim):
        token = _strip_token(match.group(0))
        if any(ch.isdigit() for ch in token):
            add(token, match.span())
    for match in _IDENT.finditer(claim):
        add(_strip_token(match.group(0)), match.span())
    # Capitalised words inside a sentence: names of people, places, products, days.
    for match in _WORD.finditer(claim):
        word = _POSSESSIVE.sub("", _strip_token(match.group(0)))  # Lisbon's -> Lisbon
        if len(word) < 3 or not word[0].isupper() or word.lower() in _NOT_NAMES:
            continue
        before = claim[: match.start()].rstrip()
        if not before or before[-1] in ':;.!?¿¡"“«(-*#>':
            continue  # it opens the sentence, a clause or a list entry
        add(word, match.span())
    return facts


_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[,\u00a0\u202f](?=\d{3}(?!\d))")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=4096)
def _normalise(text: str) -> str:
    """Lower case, one space for any whitespace, no thousands separators (1,200 == 1200)."""
    return _SPACES.sub(" ", _NUMBER_SEPARATOR.sub("", text.lower()))


def _fact_pattern(fact: str) -> re.Pattern[str]:
    """How a fact must appear in the excerpts: whole, not as part of a longer number or word."""
    body = re.escape(_normalise(fact))
    if any(ch.isdigit() for ch in fact):
        # 5433 is not in 15433 nor in 5433.1; v2.4.1 does hold 2.4.1.
        return re.compile(rf"(?<!\d)(?<!\d[.,]){body}(?![.,]?\d)")
    if fact[:1].isalnum() and fact[-1:].isalnum():
        # Whole words, allowing a plural on either side (Monday / Mondays).
        stem = body[:-1] if body.endswith("s") and len(body) > 3 else body
        return re.compile(rf"(?<!\w){stem}(?:s|es)?(?!\w)")
    return re.compile(body)


def missing_facts(facts: Sequence[str], text: str) -> list[str]:
    """The facts that do not occur in `text`."""
    haystack = _normalise(text)
    return [fact for fact in facts if not _fact_pattern(fact).search(haystack)]
