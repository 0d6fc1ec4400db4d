"""The refusal's key terms (`unit_scores.key_terms(refined=True)`): the question's words read as
a product's documentation writes them (plurals, hyphenated and CamelCase names, possessives,
versions), so that a word the excerpts hold is not counted missing; on fakes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from locallens.broad import is_broad, topic_words
from locallens.extractive import (
    _refusal_fact,
    extractive_answer,
    missing_name,
    missing_words,
    term_coverage,
)
from locallens.unit_scores import key_terms, key_words, question_terms

from .test_claims import fake_encode, fake_vector, hit

PURGING = """Purging and banning

Imagine for instance that the company logo changed and now you need Varnish to stop serving the old logo out of the cache:

    varnish> ban req.url ~ "logo.*[.]png"

Bans are checked when we hit an object in the cache, but before we deliver it.
"""

REFERENCE = """KeepAliveTimeout Directive

Description: Amount of time the server will wait for subsequent requests on a persistent connection
Default: KeepAliveTimeout 5
"""

PLATFORM = """Transparent hugepages on Redhat Enterprise Linux 6

On RHEL6 Transparent Hugepage kernel support is enabled by default. This is known to cause sporadic crashes of Varnish.
"""

ACCESS = """Access control

Require host address
Require ip ip.address

Only the listed addresses may read the folder.
"""

PROTOCOLS = "varnishd speaks HTTP/1.1 and, with the http2 feature, HTTP/2."


@pytest.mark.parametrize(
    ("words", "same"),
    [
        ("files file", True),
        ("ports port", True),
        ("logs log", True),
        ("PNGs png", True),
        ("APIs api", True),
        ("keep-alive KeepAlive", True),
        ("ISP's ISP", True),
        ("puertos port", True),
        # Singular words ending in "s", and words whose first five letters already drop it.
        ("class clas", False),
        ("status stat", False),
        ("alias aliases", True),
        ("caches cache", True),
        # A short word's inflections by their stem.
        ("running run", True),
        ("exited exit", True),
        ("stopped stop", True),
        ("cached cache", True),
        ("runtime run", False),
    ],
)
def test_refined_keys_meet_a_plural_a_hyphenated_name_and_a_possessive(words: str, same: bool) -> None:
    a, b = words.split()
    assert bool(key_terms(a, refined=True) & key_terms(b, refined=True)) is same


def test_the_unit_scorers_keys_are_unchanged() -> None:
    # The scorer's weights were fitted on these keys: only the refusal reads the refined ones.
    assert key_terms("files") == frozenset({"files"})
    assert key_terms("keep-alive") == frozenset({"keep-"})
    assert key_terms("keep-alive", refined=True) == frozenset({"keepa", "keep", "aliv"})  # "alive" by its stem
    assert key_terms("sha-256", refined=True) == frozenset({"sha-256"})  # a version is compared whole


def test_refined_key_words_name_a_possessive_by_its_word_and_prefer_a_name() -> None:
    assert key_words("my ISP's mail server", refined=True)["isp"] == "ISP"
    assert key_words("schedule it with the Windows Task Scheduler", refined=True)["sched"] == "Scheduler"
    assert key_words("schedule it with the Windows Task Scheduler")["sched"] == "schedule"


def test_a_word_the_excerpts_write_otherwise_is_not_missing() -> None:
    purging = [hit(PURGING, "users-guide-purging.txt")]
    # "PNGs" is the excerpt's "png", "serving" its "serving"; "rid" is the user's own idiom.
    assert missing_words("Varnish keeps serving the old PNGs. How do I get rid of them?", purging) == ["keeps", "rid"]
    assert missing_words("Does Varnish ban old logos?", purging) == []
    reference = [hit(REFERENCE, "mod-core.txt")]
    # A hyphenated word is held by the CamelCase name that joins its parts.
    assert missing_words("How long is an idle keep-alive connection kept?", reference) == ["idle", "kept"]
    # A two-letter word the question writes in capitals.
    assert missing_words("How do I let only the IP of my office in?", [hit(ACCESS, "howto-access.txt")]) == [
        "let",
        "office",
    ]
    # A name and its version number, written together by the excerpts.
    assert missing_words("Varnish crashes on our RHEL 6 servers. Why?", [hit(PLATFORM)]) == ["servers"]
    assert missing_words("Varnish crashes on our RHEL 7 servers. Why?", [hit(PLATFORM)]) == ["RHEL", "7", "servers"]


def test_a_hyphenated_words_missing_part_is_what_is_missing() -> None:
    logging = [hit("varnishlog gives you the raw logs, in the style of the shared memory log.", "logging.txt")]
    question = "Which program writes Apache-style access logs?"
    assert missing_words(question, logging) == ["program", "writes", "Apache", "access"]
    assert missing_name(question, logging) == 1.0  # "Apache" is a name no excerpt mentions


def test_a_name_with_its_version_after_a_slash_is_one_name() -> None:
    protocols = [hit(PROTOCOLS, "reference-varnishd.txt")]
    assert missing_words("Does varnishd speak HTTP/3?", protocols) == ["HTTP/3"]
    assert missing_name("Does varnishd speak HTTP/3?", protocols) == 1.0
    assert missing_words("Does varnishd speak HTTP/2?", protocols) == []
    assert missing_words("Does varnishd speak HTTP/2?", [hit("varnishd speaks http2 with its feature.")]) == []


def test_a_question_for_the_setting_that_decides_a_fact_asks_for_no_fact() -> None:
    assert _refusal_fact("How long does Varnish keep a response?") == "duration"
    assert _refusal_fact("Which parameter sets how long Varnish keeps a response?") is None
    assert _refusal_fact("¿Qué variable fija cuánto tiempo se guarda en caché la respuesta?") is None
    assert _refusal_fact("How do I measure how long a snippet takes?") is None


def test_a_broad_comparisons_topic_is_what_it_compares() -> None:
    topic = is_broad("Summarize the difference between purging and banning in Varnish.")
    assert topic is not None and topic_words(topic) == "purging banning Varnish"
    hits = [hit(PURGING, "users-guide-purging.txt")]
    question = "Summarize the difference between purging and banning in Varnish."
    checked = extractive_answer(question, hits, fake_vector(question), fake_encode)
    assert not checked.refused and checked.summary


def test_coverage_and_the_refusal_read_the_refined_keys() -> None:
    hits = [hit(PURGING, "users-guide-purging.txt")]
    question = "We changed our company logo and Varnish keeps serving the old PNGs. How do I get rid of them?"
    # Of its nine key terms, the excerpt holds all but "keeps" and "rid" ("PNGs" as "png").
    assert term_coverage(question_terms(question), hits) == pytest.approx(7 / 9)

    def counts(words: Sequence[str]) -> tuple[int, dict[str, int]]:
        return 400, {"rid": 10, "keeps": 200}

    checked = extractive_answer(question, hits, fake_vector(question), fake_encode, term_counts=counts)
    assert not checked.refused and "ban req.url" in checked.answer


def test_a_version_asked_is_a_fact_the_excerpts_may_not_state() -> None:
    from locallens.unit_scores import asked_fact, carries_fact

    assert asked_fact("In which Varnish release will the persistent storage backend be removed?") == "version"
    assert asked_fact("¿Qué versión de PostgreSQL usa staging?") == "version"
    # A port asked beside the version is the fact the refusal holds the excerpts to.
    assert asked_fact("Which PostgreSQL version does staging run, and on which port?") == "port"
    assert carries_fact("Changed in version 3.7: dictionary order is guaranteed.", "version")
    assert carries_fact("It runs PostgreSQL 16.2.", "version")
    assert not carries_fact("It listens on 127.0.0.1 at 09:30.", "version")
    hits = [hit("The persistent storage backend will likely be removed from a future version of Varnish.")]
    question = "In which Varnish release will the persistent storage backend be removed?"
    assert extractive_answer(question, hits, fake_vector(question), fake_encode).refused
    hits = [hit("The persistent storage backend was removed in Varnish 7.3.")]
    assert not extractive_answer(question, hits, fake_vector(question), fake_encode).refused


def test_the_questions_form_words_are_not_the_subject_of_the_fact_asked() -> None:
    from locallens.extractive import fact_unstated
    from locallens.units import answer_units

    hits = [hit("Changed in version 3.7: Dictionary order is guaranteed to be insertion order.", "stdtypes.txt")]
    units = answer_units(hits)
    # "Since" asks the question; it is not what the version is stated about.
    assert fact_unstated("Since which version is dictionary insertion order guaranteed?", hits, units) == 0.0


def test_a_broad_topics_words_are_compared_whole_with_the_words_naming_a_kind_of_text() -> None:
    from locallens.broad import is_broad, named_document, topic_words

    # "compact" is no "compare" (their key terms are both "compa"), "processor" no "process".
    assert topic_words("borg compact") == "borg compact"
    assert topic_words("the processor guide") == "processor"
    assert topic_words("the difference between purging and banning") == "purging banning"
    # "What do the docs say about X?" asks about X; an error message's words are no document.
    assert is_broad("What does the borg documentation say about paperkey?") == "paperkey"
    assert is_broad("What do the docs say on quotas?") == "quotas"
    assert is_broad("What does the error message say about permissions?") is None

    def salience(words: Sequence[str]) -> dict[str, float]:
        return {w: 0.1 if w == "borg" else 0.9 for w in words}

    paths = ["index.txt", "installation.txt", "usage-compact.txt", "borg-notes.txt", "changes.txt"]
    assert named_document("installing borg", paths, salience) == "installation.txt"  # by its stem
    assert named_document("borg compact", paths, salience) == "usage-compact.txt"  # "borg" weighs little
    assert named_document("retention", paths, salience) is None
    assert named_document("notes", ["a-notes.txt", "b-notes.txt"], salience) is None  # two alike
    # ... unless they are one document in two formats: the one the search ranked first, else by name.
    formats = ["git-stash.html", "git-stash.txt", "git-stash-notes.md"]
    assert named_document("git stash", formats[:2], salience, ranked=["x.txt", "git-stash.txt"]) == "git-stash.txt"
    assert named_document("git stash", formats[:2], salience) == "git-stash.html"
    # A salient word the file's name lacks: not that file ("benefits" against the network page).
    assert named_document("the Madrid office benefits", ["madrid-office-network.md"], salience) is None
    # A word most chunks hold names no file ("tig" over tig's pages).
    assert named_document("borg", ["borg.1.txt", "changes.txt"], salience) is None
