"""How a claim lines up with the excerpt sentences it rests on: its clauses, its words, its polarity.

The embedder's cosine says a claim is *about* what a sentence says, not that the sentence says
it. What a capable model writes (a paraphrase, a summary, two excerpts joined) is backed when its
content words line up with the few sentences it rests on; what it gets wrong is, far more often
than not, a near copy with one thing changed. This module gives the check both sides:

- `clauses`: a claim cut where a new statement starts (";", ":", ", and", ", which", "because"...);
- `window_words`: the content words of the claim that the sentences it rests on do not hold, and
  of those, the ones the excerpts hold nowhere (a paraphrase's own word, or an invention);
- `soft_aligned`: such a word lined up with a word of those sentences by the embedder's own
  vector of the word alone ("retained" with "kept", "combines" with "merge");
- `clause_conflicts`: each clause of the claim against the excerpt clause holding most of its
  words: a negation added or dropped ("can be reached" / "is not reachable"), or a word for its
  opposite ("after" / "before", "same" / "distinct", "left" / "right");
- number words ("two weeks") count as numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from locallens.claims.words import content_words, known_word, vocabulary_of, word_key

# Where a new statement starts inside one sentence.
_CLAUSE_BREAK = re.compile(
    r"\s*[;:]\s+|\s+[—–]\s+|(?<=[.!?])\s+(?=[\"“(`¿¡-]?[A-ZÁÉÍÓÚÑ_])"
    r"|,\s+(?=(?:and|but|or|so|which|while|whereas|because|since|although|though|unless|except|otherwise|"
    r"y|pero|aunque|mientras|sino)\b)"
    r"|\s+(?=(?:but|while|whereas|because|although|though|unless|so that|without|pero|aunque|sin)\s)",
    re.I,
)
# Negation cues (English, Spanish).
NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|unnecessary|unable|impossible|"
    r"unavailable|unsupported|disallowed|prohibited|forbidden|skip|skips|skipped|skipping|ignore|ignores|ignored|"
    r"omit|omits|omitted|nunca|ningún|ninguna|ninguno|nada|"
    r"tampoco|sin)\b|n['’]t\b",
    re.I,
)
_NOT_A_NEGATION = re.compile(
    r"\bno (?:more|less|longer|later|earlier|fewer|sooner) than\b|\bnot only\b|\bno matter\b|\bwhether or not\b",
    re.I,
)

# Words whose opposite, said of the same thing, makes the opposite statement. Generic English
# and Spanish pairs; compared by word key (Porter stem), both ways.
_OPPOSITES_RAW = (
    ("before", "after"),
    ("left", "right"),
    ("more", "less"),
    ("more", "fewer"),
    ("higher", "lower"),
    ("high", "low"),
    ("increase", "decrease"),
    ("minimum", "maximum"),
    ("min", "max"),
    ("first", "last"),
    ("same", "different"),
    ("same", "distinct"),
    ("true", "false"),
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("allowed", "forbidden"),
    ("include", "exclude"),
    ("open", "closed"),
    ("start", "end"),
    ("earlier", "later"),
    ("older", "newer"),
    ("above", "below"),
    ("inside", "outside"),
    ("input", "output"),
    ("ascending", "descending"),
    ("smallest", "largest"),
    ("smaller", "larger"),
    ("least", "most"),
    ("shortest", "longest"),
    ("shorter", "longer"),
    ("synchronous", "asynchronous"),
    ("public", "private"),
    ("required", "optional"),
    ("mutable", "immutable"),
    ("always", "never"),
    ("upper", "lower"),
    ("uppercase", "lowercase"),
    ("accept", "reject"),
    ("success", "failure"),
    ("succeed", "fail"),
    ("inner", "outer"),
    ("add", "remove"),
    ("lock", "unlock"),
    ("local", "remote"),
    ("local", "global"),
    ("internal", "external"),
    ("valid", "invalid"),
    ("explicit", "implicit"),
    ("positive", "negative"),
    ("odd", "even"),
    ("faster", "slower"),
    ("slow", "fast"),
    ("weekly", "daily"),
    ("weekly", "monthly"),
    ("daily", "monthly"),
    ("yearly", "monthly"),
    ("nightly", "weekly"),
    ("mínimo", "máximo"),
    ("mínima", "máxima"),
    ("antes", "después"),
    ("mayor", "menor"),
    ("primero", "último"),
)


def _opposites() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for a, b in _OPPOSITES_RAW:
        table.setdefault(word_key(a), set()).add(word_key(b))
        table.setdefault(word_key(b), set()).add(word_key(a))
    return table


OPPOSITES = _opposites()

# Number words: a claim's "two weeks" against the excerpt's "one week" is a changed number.
_NUMBER_WORDS_TEXT = (
    "one two three four five six seven eight nine ten eleven twelve twenty thirty hundred thousand "
    "twice thrice half double triple dos tres cuatro cinco seis siete ocho nueve diez"
)
NUMBER_WORDS = frozenset(_NUMBER_WORDS_TEXT.split())


# A sentence opening with a condition ("If no lock is given, ...") holds two statements.
_OPENING_CONDITION = re.compile(
    r"^((?:if|when|unless|once|after|before|while|since|although|si|cuando)\b[^,;]{3,80}),\s+", re.I
)
# A clause such as "but not if break ends the loop" negates a verb it leaves out: its polarity
# says nothing about the excerpt clause its words match.
_ELLIPTICAL = re.compile(
    r"^(?:(?:but|and|or|y|pero)\s+)?(?:not|no)\s+(?:if|when|for|in|on|after|before|while|once|si)\b", re.I
)


def _statement(piece: str) -> bool:
    """A piece that can stand as a clause: two content words, or four words."""
    return len(content_words(piece)) >= 2 or len(re.findall(r"\w+", piece)) >= 4


def clauses(text: str) -> list[str]:
    """`text` cut where a new statement starts; a piece of fewer than two content words joins
    the one before it."""
    out: list[str] = []
    pieces = []
    for part in _CLAUSE_BREAK.split(text):
        opening = _OPENING_CONDITION.match(part.strip())
        pieces.extend([opening.group(1), part.strip()[opening.end() :]] if opening else [part])
    for part in pieces:
        part = part.strip(" ,.;:")
        if not part:
            continue
        if out and not _statement(part):
            out[-1] = f"{out[-1]} {part}"
        elif not out or _statement(out[-1]):
            out.append(part)
        else:
            out[-1] = f"{out[-1]} {part}"
    return out or [text]


def negated(text: str) -> bool:
    """Whether `text` holds a negation cue (not "no more than", "not only")."""
    return bool(NEGATION.search(_NOT_A_NEGATION.sub(" ", text)))


# The words a negation bears on: the content words in the few words after its cue.
SCOPE_WORDS = 5


def negated_words(text: str) -> set[str]:
    """Keys of the content words in the scope of each negation cue of `text` (the SCOPE_WORDS
    words after it; a cue that is itself a word such as "unnecessary" bears on itself too)."""
    cleaned = _NOT_A_NEGATION.sub(" ", text)
    keys: set[str] = set()
    for match in NEGATION.finditer(cleaned):
        after = re.findall(r"[^\W\d_][\w'’-]*", cleaned[match.end() :])[:SCOPE_WORDS]
        keys |= {word_key(w) for w in content_words(" ".join(after))}
    return keys


def _keys(text: str) -> set[str]:
    return {word_key(w) for w in content_words(text)}


# A clause of the claim is compared with the excerpt clause that holds this share of its content
# words (and at least CLAUSE_MATCH_WORDS of them): the statement it repeats.
CLAUSE_MATCH = 0.6
CLAUSE_MATCH_WORDS = 2
# A clause holding within POLARITY_TIE as many words with the claim's polarity clears it.
POLARITY_TIE = 0.15
# An opposite ("same" / "distinct") counts in a looser match: this share, this many words.
OPPOSITE_MATCH, OPPOSITE_MATCH_WORDS = 0.4, 3


def _match(clause: str, candidates: Sequence[str], min_words: int = 0) -> tuple[str | None, float]:
    """The candidate clause holding most of `clause`'s content words, and that share."""
    words = content_words(clause)
    if not words:
        return None, 0.0
    best, best_share = None, 0.0
    for candidate in candidates:
        vocabulary = vocabulary_of(candidate)
        found = sum(1 for word in words if known_word(word, vocabulary))
        share = found / len(words)
        if found >= max(min_words, CLAUSE_MATCH_WORDS) and share > best_share:
            best, best_share = candidate, share
    return best, best_share


_ALL_WORDS = re.compile(r"[^\W\d_]+")
_LITERAL_TOKEN = re.compile(r"(?<![\w.])\d[\d.,:]*\d|(?<![\w.])\d|_*[^\W\d_][\w]*")
_IDENTIFIER = re.compile(r"_\w+|[A-Za-z]*[a-z][A-Z]\w*|[A-Z]{2,}\w*|\w+_\w*")


def _all_keys(text: str) -> set[str]:
    return {word_key(w) for w in _ALL_WORDS.findall(text)}


def literals(text: str) -> set[str]:
    """Numbers (digits or words: "two"), identifiers (`__exit__`, `TimeoutError`, `SIGTERM`) of `text`."""
    found = set()
    for token in _LITERAL_TOKEN.findall(text):
        lower = token.lower()
        if token[:1].isdigit():
            found.add(lower.replace(",", ""))
        elif lower in NUMBER_WORDS or _IDENTIFIER.fullmatch(token):
            found.add(lower)
    return found


def _polarity_differs(clause: str, match: str) -> bool:
    """One of the two is negated and the other not, and the negation bears on words they share
    (not on a part of the excerpt clause the claim does not repeat)."""
    ours, theirs = negated(clause), negated(match)
    if ours == theirs:
        return False
    scope = negated_words(clause if ours else match)
    other = _keys(match if ours else clause)
    return not scope or bool(scope & other)


def _kind(literal: str) -> str:
    return "number" if literal[:1].isdigit() else "word" if literal in NUMBER_WORDS else "identifier"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _matches(clause: str, candidates: Sequence[str], min_share: float) -> list[str]:
    """The candidates holding at least `min_share` of `clause`'s content words."""
    words = content_words(clause)
    out = []
    for candidate in candidates:
        vocabulary = vocabulary_of(candidate)
        found = sum(1 for word in words if known_word(word, vocabulary))
        if words and found >= CLAUSE_MATCH_WORDS and found / len(words) >= min_share:
            out.append(candidate)
    return out


def clause_conflicts(claim: str, sentences: Sequence[str]) -> list[str]:
    """Each clause of `claim` against the clause of `sentences` that holds most of its words: a
    negation added or dropped, a word standing for its opposite, or a number or identifier
    standing for another one."""
    candidates = [piece for sentence in sentences for piece in clauses(sentence)]
    found: list[str] = []
    claim_literals = literals(claim)
    for clause in clauses(claim):
        match, share = _match(clause, candidates)
        if match is None or share < CLAUSE_MATCH:
            # No clause holds its words: the sentence that does (a clause the splitter did not cut).
            match, share = _match(clause, sentences)
        if (
            match is not None
            and share >= CLAUSE_MATCH
            and _polarity_differs(clause, match)
            and not _ELLIPTICAL.match(clause)
            # Another clause holding nearly as many of its words says it the claim's way.
            and not any(
                not _polarity_differs(clause, other)
                for other in _matches(clause, [*candidates, *sentences], max(CLAUSE_MATCH, share - POLARITY_TIE))
            )
        ):
            what = "negates" if negated(clause) else "drops the negation of"
            found.append(f"{what} what the excerpt states ({_short(match)!r})")
            continue
        # A word for its opposite, in the clause sharing the most words (a looser match: the
        # opposite itself is a strong sign).
        match, share = _match(clause, candidates, OPPOSITE_MATCH_WORDS)
        if match is not None and share >= OPPOSITE_MATCH:
            ours, theirs = _all_keys(clause), _all_keys(match)
            flipped = sorted(
                (key, other) for key in ours - theirs for other in (OPPOSITES.get(key, set()) & theirs) - ours
            )
            if flipped:
                found.append(f"says the opposite of the excerpt ({flipped[0][0]} / {flipped[0][1]})")
                continue
        # A number or identifier for another one, in the clause or sentence sharing most words.
        match, share = _match(clause, [*candidates, *sentences])
        if match is not None and share >= CLAUSE_MATCH:
            theirs_all = literals(match)
            for kind in ("number", "word", "identifier"):
                mine = {t for t in literals(clause) - theirs_all if _kind(t) == kind}
                other = {t for t in theirs_all - claim_literals if _kind(t) == kind}
                if mine and other:
                    found.append(f"{', '.join(sorted(mine))} where the excerpt says {', '.join(sorted(other))}")
                    break
    return found


_NUMBER_TOKEN = re.compile(r"(?<![\w.])\d[\d.,:]*\d(?![\w])|(?<![\w.])\d(?![\w.,:]?\d)")
_LABEL_AFTER, _LABEL_BEFORE = 3, 2


def _labels(text: str) -> dict[str, list[tuple[str | None, set[str]]]]:
    """Each number of `text`: the first content word after it (what it counts) and the keys of the
    words around it."""
    tokens = re.findall(r"\d[\d.,:]*\d|\d|[^\W\d_][\w'’-]*", text)
    out: dict[str, list[tuple[str | None, set[str]]]] = {}
    for i, token in enumerate(tokens):
        if not token[:1].isdigit():
            continue
        after = [t for t in tokens[i + 1 : i + 1 + _LABEL_AFTER] if not t[:1].isdigit()]
        before = [t for t in tokens[max(0, i - _LABEL_BEFORE) : i] if not t[:1].isdigit()]
        words = content_words(" ".join(after))
        unit = word_key(words[0]) if words and after and words[0] == after[0] else None
        out.setdefault(token.replace(",", ""), []).append(
            (unit, {word_key(w) for w in content_words(" ".join(before + after))})
        )
    return out


def relabelled(claim: str, sentences: Sequence[str]) -> list[str]:
    """Numbers of the claim that the close `sentences` hold, but counting something else: the
    word right after the number in the claim is found around none of the sentences' occurrences,
    and the sentences' own word after it is not around the claim's ("214 dispatchers" where the
    excerpt says "214 carriers")."""
    ours = _labels(claim)
    theirs: dict[str, list[tuple[str | None, set[str]]]] = {}
    for sentence in sentences:
        for number, found in _labels(sentence).items():
            theirs.setdefault(number, []).extend(found)
    out = []
    for number, occurrences in ours.items():
        if number not in theirs:
            continue
        unit, around = occurrences[0]
        if unit is None:
            continue
        if any(unit in label or unit == other for other, label in theirs[number]):
            continue
        others = [other for other, _label in theirs[number] if other is not None and other not in around]
        if others and len(others) == len(theirs[number]):
            out.append(f"{number} counts {others[0]} in the excerpt, not {unit}")
    return out


def soft_aligned(words: Sequence[str], window: Sequence[str], vectors: np.ndarray, min_similarity: float) -> list[str]:
    """The `words` whose vector (the embedder's, of the word alone) reaches `min_similarity` with
    the vector of a word of `window`; `vectors` holds the words' rows, then the window's, unit
    length."""
    if not words or not window:
        return []
    ours, theirs = vectors[: len(words)], vectors[len(words) :]
    best = (ours @ theirs.T).max(axis=1)
    return [word for word, score in zip(words, best) if score >= min_similarity]
