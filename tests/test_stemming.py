"""locallens.stemming: porter_stem against SQLite FTS5's own `porter` tokenizer.

porter_stem must give, for every token, the very stem FTS5 indexes, so that the PostgreSQL store
(which stems in Python) and the SQLite store (which lets FTS5 stem) find the same chunks. It is
compared with FTS5 itself: on every word of the repository's documents, on generated English word
forms that reach every suffix rule, and on random words (ASCII letters, digits, non-ASCII
letters), one word at a time.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterable

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locallens.stemming import porter_stem

from .helpers import ROOT, SAMPLE_DOCS

PLAIN = "unicode61 remove_diacritics 2"
STEMMED = f"porter {PLAIN}"
TEXT_SUFFIXES = {".md", ".txt", ".rst", ".html", ".jsonl"}

_CONN = apsw.Connection(":memory:")
_PLAIN_TOKENS = _CONN.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])
_STEMMED_TOKENS = _CONN.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])


def fts5_stems(text: str) -> list[tuple[str, str]]:
    """(token, stem) for every token of `text`: FTS5's unicode61 tokens and what its porter
    tokenizer makes of them, matched by their place in the text."""
    data = text.encode("utf-8")
    plain = _PLAIN_TOKENS(data, apsw.FTS5_TOKENIZE_DOCUMENT, None)
    stemmed = _STEMMED_TOKENS(data, apsw.FTS5_TOKENIZE_DOCUMENT, None)
    assert [t[:2] for t in plain] == [t[:2] for t in stemmed]
    return [(p[2], s[2]) for p, s in zip(plain, stemmed)]


def vocabulary_through_tables(texts: Iterable[str]) -> dict[str, str]:
    """token -> stem as two FTS5 tables index `texts`: one with unicode61 alone, one with porter
    over it (the SQLite store's chunks_fts), their tokens paired by (row, position) through
    fts5vocab's `instance` view."""
    db = apsw.Connection(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE plain USING fts5(text, tokenize='{PLAIN}')")
    db.execute(f"CREATE VIRTUAL TABLE stemmed USING fts5(text, tokenize='{STEMMED}')")
    with db:
        for rowid, text in enumerate(texts, start=1):
            db.execute("INSERT INTO plain(rowid, text) VALUES (?, ?)", (rowid, text))
            db.execute("INSERT INTO stemmed(rowid, text) VALUES (?, ?)", (rowid, text))
    terms = {}
    for table in ("plain", "stemmed"):
        db.execute(f"CREATE VIRTUAL TABLE temp.{table}_v USING fts5vocab(main, {table}, 'instance')")
        terms[table] = {
            (doc, offset): term for term, doc, offset in db.execute(f"SELECT term, doc, offset FROM {table}_v")
        }
    assert terms["plain"].keys() == terms["stemmed"].keys()
    return {token: terms["stemmed"][place] for place, token in terms["plain"].items()}


def assert_stems_like_fts5(vocabulary: dict[str, str]) -> None:
    wrong = {token: (porter_stem(token), stem) for token, stem in vocabulary.items() if porter_stem(token) != stem}
    assert not wrong, (
        f"{len(wrong)} of {len(vocabulary)} tokens stem otherwise than in FTS5: {list(wrong.items())[:20]}"
    )


# -- whole vocabularies -----------------------------------------------------------------------


def repository_texts() -> list[str]:
    files = [*SAMPLE_DOCS.rglob("*"), *(ROOT / "docs").rglob("*"), *(ROOT / "tests" / "data").rglob("*")]
    return [path.read_text("utf-8") for path in sorted(files) if path.suffix in TEXT_SUFFIXES and path.is_file()]


def test_every_word_of_the_repository_documents_stems_as_in_fts5() -> None:
    vocabulary = vocabulary_through_tables(repository_texts())
    assert len(vocabulary) > 3000  # sample_docs/, docs/ and tests/data: English, Spanish, CJK
    assert any(not token.isascii() for token in vocabulary)
    assert_stems_like_fts5(vocabulary)


# Every suffix of every step of the algorithm, and the endings that reach them through others
# (generalizations -> generalization -> generalize -> general -> gener).
RULE_SUFFIXES = [
    *("s", "es", "ies", "sses", "ss", "eed", "ed", "ing", "y"),  # steps 1a, 1b, 1c
    *("at", "bl", "iz", "ated", "bled", "ized", "ating", "bling", "izing", "tted", "lled", "ssed", "zzed"),  # 1b
    *("ational", "tional", "enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli", "ousli"),  # 2
    *("ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti"),
    *("abli", "icate", "ative", "alize", "iciti", "ical", "ful", "ness"),  # 3 (abli: the old step-2 rule)
    *("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "sion", "tion", "ion"),
    *("ou", "ism", "ate", "iti", "ous", "ive", "ize"),  # 4
    *("e", "ll", "le", "ly", "ally", "ingly", "ations", "ically", "fully", "ities"),  # 5 and combinations
]
# Stems of measure 0, 1 and 2 with every kind of ending: vowel, consonant, y (vowel and
# consonant), double consonants, short cvc (hop, fil) and w/x/y endings, empty and one letter.
STEMS = [
    *("", "a", "b", "y", "e", "s", "ay", "by", "yy", "ey", "sy", "tr", "str", "ca", "ox", "bow", "sky", "oo", "ee"),
    *("hop", "fil", "tan", "fal", "his", "fiz", "cre", "rat", "ab", "bab", "trab", "trouble", "relat", "condit"),
    *("gener", "formal", "sens", "electr", "hope", "good", "allow", "infer", "adjust", "depend", "adopt", "commun"),
    *("activ", "effect", "control", "ceas", "agre", "fe", "bl", "iz", "at", "yell", "tell", "bell", "oscill", "digit"),
]
ENDINGS = ["", "s", "es", "ed", "ing", "ly", "y"]


def english_word_forms() -> list[str]:
    forms = {stem + suffix + ending for stem, suffix, ending in itertools.product(STEMS, RULE_SUFFIXES, ENDINGS)}
    return sorted(form for form in forms if form)


# Words of Porter's paper and of the rules' usual examples, each rule at least once.
PORTER_EXAMPLES = """
caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized
hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational
valenci hesitanci digitizer conformabli conformably radicalli differentli vileli analogousli
vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti
sensitiviti sensibiliti archaeology analogies triplicate formative formalize electriciti electrical
hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible irritant
replacement adjustment dependent adoption homologou communism activate angulariti homologous
effective bowdlerize probate rate cease controll roll generalizations oscillators connections
connected connecting connection connective indexing indexed indexes configuration configured
configuring configure rotating rotated rotation logs logging
"""


def test_english_word_forms_reaching_every_rule_stem_as_in_fts5() -> None:
    forms = english_word_forms()
    assert len(forms) > 10_000
    vocabulary = dict(pair for form in [*forms, *PORTER_EXAMPLES.split()] for pair in fts5_stems(form))
    assert_stems_like_fts5(vocabulary)
    # The rules really are reached: these words lose or change their suffix.
    assert {porter_stem(w) for w in ("connections", "connected", "connecting", "connection")} == {"connect"}
    assert [porter_stem(w) for w in ("generalizations", "oscillators", "archaeology", "conformabli")] == [
        "gener",
        "oscil",
        "archaeolog",
        "conform",
    ]


@pytest.mark.parametrize(
    ("token", "stem"),
    [
        ("is", "is"),  # shorter than 3 bytes: left alone
        ("as", "as"),
        ("ies", "ie"),  # a suffix only goes from a longer word
        ("sses", "sse"),
        ("ated", "at"),  # at + e needs a letter before "at"
        ("eed", "e"),  # too short for "eed": read as "ed"
        ("aed", "a"),
        ("1990s", "1990"),  # digits are consonants
        ("mp3s", "mp3"),
        ("жs", "ж"),  # ж is 2 bytes: 3 bytes in all, stemmed
        ("straßes", "straß"),
        ("bøed", "bøed"),  # ø is not a vowel: no vowel before "ed"
        ("tapжing", "tapж"),  # nor a double consonant
        ("a" * 60 + "ings", "a" * 60),  # 64 bytes: stemmed
        ("a" * 61 + "ings", "a" * 61 + "ings"),  # 65 bytes: left alone
        ("ж" * 31 + "ing", "ж" * 31 + "ing"),  # 65 bytes in 34 characters: left alone
        ("aж" * 15 + "ings", "aж" * 15),  # 64 bytes in 34 characters: stemmed
        ("aကed", "a\ufffd"),  # the halved double consonant was half a character (as SQLite hands it back)
    ],
)
def test_fts5_details(token: str, stem: str) -> None:
    assert fts5_stems(token) == [(token, stem)]
    assert porter_stem(token) == stem


# -- random words, one at a time --------------------------------------------------------------

# Letters and whole suffixes, so that random words end in the suffixes the rules look for.
FRAGMENTS = sorted(set(string.ascii_lowercase) | set(RULE_SUFFIXES) - {""})
ascii_words = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join)
# Text whose tokens mix ASCII letters, digits and other letters of 1 to 4 UTF-8 bytes (with
# diacritics FTS5 removes, upper case it folds, and characters it splits words on).
OTHER_CHARACTERS = list("ÀÉéèñÑçüÜßøæœİıДжЖΩωλ日本語ကအ한글ไทย𝒜😀-'. ")
mixed_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(OTHER_CHARACTERS), st.sampled_from(string.digits)),
    min_size=1,
    max_size=14,
).map("".join)


@settings(max_examples=400)
@given(word=ascii_words)
def test_random_ascii_words_stem_as_in_fts5(word: str) -> None:
    ((token, stem),) = fts5_stems(word)
    assert porter_stem(token) == stem


@settings(max_examples=400)
@given(text=mixed_text)
def test_random_words_with_digits_and_other_letters_stem_as_in_fts5(text: str) -> None:
    for token, stem in fts5_stems(text):
        assert porter_stem(token) == stem, token


def test_porter_stem_is_cached() -> None:
    porter_stem("configurations")
    hits = porter_stem.cache_info().hits
    assert porter_stem("configurations") == "configur"
    assert porter_stem.cache_info().hits == hits + 1
