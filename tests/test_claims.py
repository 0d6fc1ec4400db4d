"""The answer check (locallens.claims) and the extractive answer, with a deterministic fake encoder.

The fake embeds a text as a hashed bag of its lower-cased words, so a sentence copied from an
excerpt scores 1.0 against it and an unrelated one scores near 0: the check's logic is tested
without a model. The real model's end-to-end runs are in test_ask.py.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from locallens.answer import LoopGuard
from locallens.claims import check_answer, extract_facts, missing_facts, question_language, refusal
from locallens.domain import Chunk, Hit
from locallens.extractive import extractive_answer
from locallens.prompt import CITATION_RE, citation_numbers, parse_citations
from locallens.sentences import split_sentences

DIM = 256


def fake_vector(text: str) -> np.ndarray:
    vector = np.zeros(DIM)
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector


def fake_encode(texts: list[str]) -> np.ndarray:
    return np.stack([fake_vector(t) for t in texts]) if texts else np.zeros((0, DIM))


def hit(content: str, path: str = "notes/a.md", index: int = 0) -> Hit:
    return Hit(Chunk(f"c-{path}-{index}", "default", path, index, content, "x" * 64), 0.5)


HITS = [
    hit(
        "# Staging\n\nThe staging database runs PostgreSQL 16.2 and listens on port 5433. "
        "Backups are kept for 14 days.",
        "engineering/staging.md",
    ),
    hit(
        "The on-call rotation hands over on Mondays at 09:30 CET. Run `shipctl deploy --dry-run` first.",
        "operations/on-call.md",
    ),
    hit("La VPN corporativa usa WireGuard en el puerto 51820. El fichero es /etc/wireguard/wg0.conf.", "notas/vpn.md"),
]


def check(
    answer: str, question: str = "Which port does the staging database use, and how long are backups kept?", **kw
):  # type: ignore[no-untyped-def]
    # Bag-of-words cosines are lower than a model's: a lower relevance floor for the fake.
    kw.setdefault("min_relevance", 0.1)
    return check_answer(answer, HITS, fake_vector(question), fake_encode, question=question, **kw)


# -- literal facts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "facts"),
    [
        ("The database listens on port 5433.", ["5433"]),
        ("It runs PostgreSQL 16.2 since 2024-10-02.", ["16.2", "2024-10-02", "PostgreSQL"]),
        ("Use v2.4.1 at 09:30 CET.", ["v2.4.1", "09:30", "CET"]),
        ("Edit /etc/wireguard/wg0.conf or docs/setup.md then.", ["/etc/wireguard/wg0.conf", "docs/setup.md"]),
        ("Run `shipctl deploy` with --dry-run and -v.", ["shipctl deploy", "--dry-run", "-v"]),
        ('The tool is called "Tidewater Planner".', ["Tidewater Planner"]),
        ("Call __exit__ on the context_manager object.", ["__exit__", "context_manager"]),
        ("It raises AssertionError when it fails.", ["AssertionError"]),
        ("The rotation hands over on Mondays.", ["Mondays"]),
        ("La VPN escucha en el puerto 51820.", ["51820", "VPN"]),
        ("The limit is 1,200 requests per minute.", ["1,200"]),
        ("Use it and/or that.", []),
        ("The database is shared among all teams.", []),
    ],
)
def test_extract_facts(claim: str, facts: list[str]) -> None:
    assert extract_facts(claim) == facts


def test_facts_match_whole_numbers_and_words_only() -> None:
    text = "Port 15433 and version v2.4.1; limit 1,200; open on Monday; PostgreSQL 16.2.1"
    assert missing_facts(["5433"], text) == ["5433"]
    assert missing_facts(["2.4.1", "1200", "Mondays", "postgresql"], text) == []
    assert missing_facts(["16.2"], text) == ["16.2"]  # 16.2.1 is another version
    assert missing_facts(["5434"], "port 5433") == ["5434"]


# -- citations -------------------------------------------------------------------------------


def test_a_bracketed_number_glued_to_a_word_is_not_a_citation() -> None:
    cites = parse_citations("See git-send-email[1] and git-log[1], printf[3]; port 5433[2] [3].", 3)
    assert cites.cited == [2, 3] and cites.invalid == []
    assert [citation_numbers(m) for m in CITATION_RE.finditer("a [1-3] b [2, 5]")] == [[1, 2, 3], [2, 5]]


# -- the check -------------------------------------------------------------------------------


def test_a_copied_sentence_is_supported_and_gets_its_citation() -> None:
    checked = check("The staging database runs PostgreSQL 16.2 and listens on port 5433.")
    [claim] = checked.claims
    assert claim.supported and claim.source == 1 and claim.citation_added and claim.citations == [1]
    assert checked.answer == "The staging database runs PostgreSQL 16.2 and listens on port 5433 [1]."
    assert checked.withheld == 0 and not checked.refused and checked.citations == [1]


def test_a_wrong_number_is_a_missing_fact_whatever_the_similarity() -> None:
    checked = check("The staging database runs PostgreSQL 16.2 and listens on port 5434 [1].")
    [claim] = checked.claims
    assert claim.score > 0.9 and claim.facts_missing == ["5434"] and not claim.supported
    assert checked.refused and checked.answer == "The answer is not in the excerpts."


def test_invented_sentences_are_withheld_and_the_layout_is_kept() -> None:
    answer = (
        "1. The staging database runs PostgreSQL 16.2 and listens on port 5433.\n\n"
        "## 2. The staging database is a server shared among all teams of the company.\n"
        "Backups are kept for 14 days [2]."
    )
    checked = check(answer)
    assert [c.supported for c in checked.claims] == [True, False, True]
    assert checked.withheld == 1
    # [2] does not back the backup sentence: removed, reported, and the right excerpt cited.
    assert checked.claims[2].wrong_citation == [2] and checked.claims[2].citations == [1]
    assert checked.answer == (
        "1. The staging database runs PostgreSQL 16.2 and listens on port 5433 [1].\nBackups are kept for 14 days [1]."
    )
    shown = check(answer, show_unsupported=True).answer
    assert "(unsupported) ## 2. The staging database is a server" in shown


def test_a_citation_after_the_full_stop_stays_with_its_sentence() -> None:
    checked = check("Backups are kept for 14 days. [1] The rotation hands over on Mondays at 09:30 CET. [2]")
    assert [c.citations for c in checked.claims] == [[1], [2]]
    assert not any(c.citation_added or c.wrong_citation for c in checked.claims)
    assert checked.answer == "Backups are kept for 14 days [1]. The rotation hands over on Mondays at 09:30 CET [2]."


def test_invalid_citations_are_dropped_from_the_printed_answer() -> None:
    checked = check("Backups are kept for 14 days [7].")
    assert checked.claims[0].invalid_citation == [7] and checked.answer == "Backups are kept for 14 days [1]."


def test_supported_but_irrelevant_sentences_are_not_an_answer() -> None:
    checked = check(
        "The rotation hands over on Mondays at 09:30 CET.", question="What is the dress code?", min_relevance=0.35
    )
    assert checked.claims[0].supported and checked.refused
    assert checked.answer == "The answer is not in the excerpts."


def test_refusal_in_the_questions_language() -> None:
    assert refusal("¿En qué puerto escucha la VPN?") == "La respuesta no está en los fragmentos."
    assert refusal("Which port?") == "The answer is not in the excerpts."
    assert question_language("Який порт використовує VPN?") == "uk"
    assert question_language("Quel est le port du VPN ?") == "fr"
    checked = check("La VPN es muy rápida y gratuita.", question="¿Qué puerto usa la VPN corporativa?")
    assert checked.refused and checked.answer == "La respuesta no está en los fragmentos."


def test_spanish_claims_are_checked_too() -> None:
    question = "¿En qué puerto escucha la VPN corporativa?"
    ok = check("La VPN corporativa usa WireGuard en el puerto 51820.", question=question)
    assert ok.claims[0].supported and ok.answer.endswith("51820 [3].")
    wrong = check("La VPN corporativa usa WireGuard en el puerto 51821.", question=question)
    assert wrong.claims[0].facts_missing == ["51821"] and wrong.refused


def test_decoration_is_not_a_claim() -> None:
    checked = check("Backups are kept for 14 days.\n\n---\n\n[1]")
    assert len(checked.claims) == 1 and checked.answer == "Backups are kept for 14 days [1]."


EXCERPT_SENTENCES = [s for h in HITS for s in split_sentences(h.content) if not s.startswith("#")]
INVENTED = [
    "The database is shared among all teams.",
    "It costs 300 euros per month.",
    "Contact Maria Lopez for access.",
    "The VPN uses port 1194 [2].",
    "Everything is fine [9].",
]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(EXCERPT_SENTENCES + INVENTED),
            st.sampled_from(["", " [1]", " [2]", " [3]", " [5]", "[1, 3]"]),
            st.sampled_from([" ", "\n", "\n\n"]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_every_printed_sentence_is_supported_and_cited(parts: list[tuple[str, str, str]]) -> None:
    answer = "".join(sentence.rstrip(".") + cite + "." + sep for sentence, cite, sep in parts)
    checked = check(answer, question="staging database port backups rotation VPN WireGuard")
    if checked.refused:
        assert checked.answer == "The answer is not in the excerpts."
        return
    supported = {c.text for c in checked.claims if c.supported}
    printed = [u for u in split_sentences(checked.answer) if re.search(r"\w", u)]
    assert printed and all(u in supported for u in printed)
    for unit in printed:
        numbers = [n for m in CITATION_RE.finditer(unit) for n in citation_numbers(m)]
        assert numbers and all(1 <= n <= len(HITS) for n in numbers)
    assert checked.withheld == sum(1 for c in checked.claims if not c.supported)


# -- the loop guard ----------------------------------------------------------------------------


def test_loop_guard_stops_short_lines_repeated_with_new_citations() -> None:
    guard = LoopGuard()
    shown, stopped = [], False
    for n in range(1, 21):
        out, stopped = guard.feed(f"The answer is: [{n}]\n\n")
        shown.append(out)
        if stopped:
            break
    assert stopped and "".join(shown).count("The answer is:") == 2


# -- extractive ------------------------------------------------------------------------------


def test_extractive_answer_is_the_most_relevant_sentences_cited() -> None:
    question = "Which port does the staging database listen on?"
    checked = extractive_answer(
        question,
        HITS,
        fake_vector("staging database port 5433"),
        fake_encode,
    )
    lines = checked.answer.splitlines()
    assert lines[0] == "The staging database runs PostgreSQL 16.2 and listens on port 5433 [1]."
    assert all(c.supported and c.citations == [c.source] for c in checked.claims)
    assert not checked.refused and len(lines) <= 2
    nothing = extractive_answer("Zebra giraffe?", HITS, fake_vector("zebra giraffe"), fake_encode)
    assert nothing.refused and nothing.answer == "The answer is not in the excerpts."


def test_nothing_supported_falls_back_to_the_excerpts_own_sentences() -> None:
    from locallens.answer import checked_answer

    vector = fake_vector("Backups are kept for 14 days.")
    fell = checked_answer(
        "The database is shared among all teams of the company.",
        HITS,
        "How long are backups kept?",
        vector,
        fake_encode,
        max_tokens=64,
    )
    assert fell.fallback and not fell.refused and fell.withheld == 1
    assert fell.answer.splitlines()[0] == "Backups are kept for 14 days [1]."
    assert [c.extracted for c in fell.claims][-2:] == [True, False]  # the passage, then the model's (withheld)
    assert [c.text for c in fell.claims if c.supported] == fell.answer.splitlines()
    # Nothing relevant among the excerpts either: the plain refusal.
    refused = checked_answer(
        "The database is shared among all teams.",
        HITS,
        "What is the dress code?",
        fake_vector("zebra giraffe"),
        fake_encode,
        max_tokens=64,
    )
    assert refused.refused and not refused.fallback and refused.answer == "The answer is not in the excerpts."


def test_a_backed_answer_to_a_question_the_excerpts_do_not_answer_is_refused() -> None:
    # A near miss: the model copies the backup retention, but the question asks about the backups
    # of Loki, which no excerpt (nor any other note of the brain) mentions.
    from locallens.answer import checked_answer

    def counts(words: list[str]) -> tuple[int, dict[str, int]]:
        return 40, dict.fromkeys(words, 0)

    hits = [replace(h, score=0.25) for h in HITS]  # a retrieval score as weak as a near miss's
    vector = fake_vector("How long are the backups kept? Backups are kept for 14 days.")
    question = "How long are the backups of the Loki database kept?"
    refused = checked_answer(
        "Backups are kept for 14 days [1].",
        hits,
        question,
        vector,
        fake_encode,
        max_tokens=64,
        term_counts=counts,
    )
    assert refused.refused and refused.unanswered and refused.answer == "The answer is not in the excerpts."
    assert refused.withheld == 1 and not any(c.supported for c in refused.claims)
    assert refused.notices() == [
        "the excerpts do not answer the question; the model's answer is left out (--show-unsupported shows it)"
    ]
    # The same answer to the question the excerpts do answer is printed.
    kept = checked_answer(
        "Backups are kept for 14 days [1].",
        hits,
        "How long are backups kept?",
        vector,
        fake_encode,
        max_tokens=64,
        term_counts=counts,
    )
    assert not kept.refused and kept.answer == "Backups are kept for 14 days [1]."


def test_notices_say_what_the_check_did() -> None:
    from locallens.answer import checked_answer

    partly = check("Backups are kept for 14 days [2]. The database is shared among all teams of the company.")
    # One plain line; the corrected citation is in the claims (JSON) only.
    assert partly.notices() == [
        "1 sentence of the model's answer left out: not backed by the excerpts (--show-unsupported shows it)"
    ]
    assert any(c.wrong_citation for c in partly.claims)
    fell = checked_answer(
        "The database is shared among all teams of the company.",
        HITS,
        "How long are backups kept?",
        fake_vector("Backups are kept for 14 days."),
        fake_encode,
        max_tokens=64,
        show_unsupported=True,
    )
    assert fell.notices(True) == [
        "the model's answer is not backed by the excerpts; this is the excerpts' own passage "
        "(shown marked below, as asked)"
    ]
    assert fell.answer.endswith("\n\n(unsupported) The database is shared among all teams of the company.")


def test_words_found_nowhere_in_the_excerpts_are_not_supported() -> None:
    checked = check("The staging database secretly and illegally runs PostgreSQL 16.2 and listens on port 5433.")
    [claim] = checked.claims
    assert claim.score > 0.9 and claim.words_missing == ["secretly", "illegally"] and not claim.supported
    # One word of its own is what a faithful paraphrase brings ("retained" for "kept"): allowed,
    # and reported.
    one = check("The staging database secretly runs PostgreSQL 16.2 and listens on port 5433.")
    assert one.claims[0].words_missing == ["secretly"] and one.claims[0].supported
    # Function words and the question's own words are free; inflections share a stem.
    ok = check("The staging databases run PostgreSQL 16.2, which listens on port 5433.")
    assert ok.claims[0].words_missing == []


def test_a_paraphrases_own_ordinary_words_weigh_half(monkeypatch: pytest.MonkeyPatch) -> None:
    import locallens.claims.check as check_module

    # Two words found nowhere in the excerpts, both ordinary prose ("serves", "traffic"): what a
    # capable model's paraphrase brings. Each weighs COMMON_WEIGHT against MAX_NOVEL_WORDS: kept.
    paraphrase = "The staging database serves PostgreSQL 16.2 and listens on port 5433 for traffic."
    [claim] = check(paraphrase).claims
    assert claim.words_missing == ["serves", "traffic"] and claim.supported
    # Counted whole (COMMON_ZIPF off), they are one word too many.
    monkeypatch.setattr(check_module, "COMMON_ZIPF", 0.0)
    assert not check(paraphrase).claims[0].supported


def test_an_invented_clause_is_withheld_even_in_ordinary_words() -> None:
    # Three ordinary words of its own are more than a paraphrase brings.
    [three] = check("The staging database serves PostgreSQL 16.2 and listens on port 5433 for internal traffic.").claims
    assert three.words_missing == ["serves", "internal", "traffic"] and not three.supported
    # A rare word ("telemetry") weighs whole.
    [rare] = check("The staging database serves PostgreSQL 16.2 and listens on port 5433 for telemetry.").claims
    assert rare.words_missing == ["serves", "telemetry"] and not rare.supported


def test_a_sentence_said_twice_is_printed_once() -> None:
    checked = check("Backups are kept for 14 days. Backups are kept for 14 days [1].")
    assert len(checked.claims) == 1 and checked.answer == "Backups are kept for 14 days [1]."


# -- CJK claims: compared by characters and runs, not by clause ---------------------------------

_CJK_EXCERPTS = (
    "报销请在每月五日前提交。打印机在三楼。会議は月曜日です。VPNの設定はヘルプデスクに連絡してください。"
    "회의는 월요일입니다. 자료를 준비하세요."
)


@pytest.mark.parametrize(
    ("claim", "missing"),
    [
        ("打印机在三楼。", []),
        ("报销要在每月五日前提交。", []),  # 要 is a function character: a faithful paraphrase adds it
        ("会議は月曜日です。", []),
        ("会議は火曜日です。", ["火"]),  # Tuesday where the note says Monday
        ("サポートに連絡してください。", ["サポート"]),  # an invented katakana name
        ("회의를 월요일에 합니다.", []),  # another particle, the same words
        ("회식은 월요일입니다.", ["회식"]),  # a dinner, not a meeting
    ],
)
def test_cjk_claims_are_checked_by_their_parts(claim: str, missing: list[str]) -> None:
    from locallens.claims import novel_words, vocabulary_of

    assert novel_words(claim, vocabulary_of(_CJK_EXCERPTS)) == missing


def test_english_claims_keep_the_stem_rule() -> None:
    from locallens.claims import novel_words, vocabulary_of

    vocabulary = vocabulary_of("The printer requires a badge. 打印机在三楼。")
    assert novel_words("Printing required badges.", vocabulary) == []
    assert novel_words("The scanner requires a badge.", vocabulary) == ["scanner"]


# -- claims that reuse the excerpts' words and facts wrongly ------------------------------------

_POLICY = [
    hit(
        "Nightly backups are kept for 35 days. Deleted versions are kept for 90 days.\n\n"
        "Hotel nightly caps: Madrid 160 EUR, Lisbon 140 EUR.\n\n"
        "Staging is not reachable from the internet.\n\n"
        "Raising 0.0 to a negative power results in a ZeroDivisionError. In earlier versions it raised a ValueError.",
        "policy.md",
    )
]


def check_policy(answer: str):  # type: ignore[no-untyped-def]
    question = "What does the policy say?"
    return check_answer(answer, _POLICY, fake_vector(question), fake_encode, question=question, min_relevance=0.0)


@pytest.mark.parametrize(
    ("claim", "conflict"),
    [
        # a number moved from another statement of the excerpt
        ("Nightly backups are kept for 90 days.", "90 where the excerpt says 35"),
        # a number the sentence gives another label
        ("The hotel nightly cap for Madrid is 140 EUR.", "140 where the excerpt says 160"),
        # the excerpt's negation dropped
        ("Staging is reachable from the internet.", "drops the excerpt's negation"),
        # an identifier of the excerpt put in another's place
        (
            "Raising 0.0 to a negative power results in a ValueError.",
            "ValueError where the excerpt says ZeroDivisionError",
        ),
        # a word of another statement put in the sentence's place (the subject of the other)
        ("Deleted backups are kept for 35 days.", "Deleted where the excerpt says Nightly"),
    ],
)
def test_the_excerpts_own_words_recombined_are_not_supported(claim: str, conflict: str) -> None:
    [checked] = check_policy(claim).claims
    assert not checked.supported and not checked.facts_missing and not checked.words_missing
    assert conflict in checked.conflicts


@pytest.mark.parametrize(
    "claim",
    [
        "Nightly backups are kept for 35 days.",
        "In Madrid the hotel nightly cap is 160 EUR, in Lisbon 140 EUR.",
        "Staging is not reachable from the internet.",
        "Raising 0.0 to a negative power results in a ZeroDivisionError.",
    ],
)
def test_the_same_statements_said_right_are_supported(claim: str) -> None:
    [checked] = check_policy(claim).claims
    assert checked.supported and checked.conflicts == []


def test_a_unit_of_several_statements_is_compared_statement_by_statement() -> None:
    from locallens.claims.check import evidence_sentences

    [list_hit] = [hit("- A shift lasts one week. The rotation hands over on Mondays at 09:30 CET.")]
    pieces = evidence_sentences([list_hit]).sentences
    assert "The rotation hands over on Mondays at 09:30 CET." in pieces
    checked = check_answer(
        "The rotation hands over on Mondays at 09:30 CET.",
        [list_hit],
        fake_vector("handover"),
        fake_encode,
        question="When does the rotation hand over?",
        min_relevance=0.0,
    )
    assert checked.claims[0].score > 0.99 and checked.claims[0].supported


def test_a_fragment_of_the_excerpts_words_is_not_a_statement() -> None:
    # Every word is the excerpts' own, but two words state nothing: the coverage allowance needs
    # a statement (MIN_STATEMENT_WORDS), so the cosine decides, and it is low.
    [fragment] = check_policy("Staging backups.").claims
    assert fragment.score < 0.82 and not fragment.supported


# -- what a capable model writes: clauses, alignment, opposites ----------------------------------


def test_clauses_cut_where_a_new_statement_starts() -> None:
    from locallens.claims.align import clauses

    assert clauses("Connect to the VPN first; staging is not reachable from the internet.") == [
        "Connect to the VPN first",
        "staging is not reachable from the internet",
    ]
    assert clauses("Staging can be reached from the internet without connecting to the VPN.") == [
        "Staging can be reached from the internet",
        "without connecting to the VPN",
    ]
    assert clauses("If no lock is given, Condition creates a new RLock.") == [
        "If no lock is given",
        "Condition creates a new RLock",
    ]
    # "X and Y" inside a clause is not a new statement; a piece of one word joins the one before.
    assert clauses("f(3.0) and f(3) are treated as distinct calls.") == [
        "f(3.0) and f(3) are treated as distinct calls"
    ]


@pytest.mark.parametrize(
    ("claim", "sentence", "conflict"),
    [
        # the clause that repeats the excerpt's words drops its negation
        (
            "Staging can be reached from the internet without connecting to the VPN.",
            "Connect to the VPN first; staging is not reachable from the internet.",
            "drops the negation",
        ),
        ("Some payments were charged twice during the outage.", "No payment was charged twice.", "drops the negation"),
        # a word for its opposite
        (
            "The power operator binds more tightly than unary operators on its right.",
            "The power operator binds more tightly than unary operators on its left; "
            "it binds less tightly than unary operators on its right.",
            "opposite",
        ),
        (
            "The calls f(3.0) and f(3) are treated as the same call, with the same results.",
            "For example, f(3.0) and f(3) will be treated as distinct calls with distinct results.",
            "opposite",
        ),
        # a number written as a word, and an identifier, for another one
        (
            "A shift lasts two weeks and hands over on Mondays.",
            "- A shift lasts one week. The rotation hands over on Mondays.",
            "two where the excerpt says one",
        ),
        (
            "When the block is left, the context manager's __exit__() method is invoked.",
            "The context manager's __enter__() method is invoked.",
            "__exit__ where the excerpt says __enter__",
        ),
    ],
)
def test_a_clause_against_the_excerpt_clause_it_repeats(claim: str, sentence: str, conflict: str) -> None:
    from locallens.claims.align import clause_conflicts

    assert any(conflict in found for found in clause_conflicts(claim, [sentence]))


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        # the excerpt's negation bears on words the claim does not repeat
        (
            "There is a coworking allowance of up to 120 EUR per month.",
            "A coworking allowance of up to 120 EUR per month for people who do not want to work from home.",
        ),
        # the same polarity, said with the excerpt's own negation
        ("Staging cannot be reached from the internet.", "Staging is not reachable from the internet."),
        # "no more than" is a bound, not a negation
        ("Silences last no more than 24 hours.", "Silences have an expiry of at most 24 hours."),
        # an elliptical "but not if": its negation belongs to a verb it leaves out
        (
            "The else block runs when the loop ends, but not if break terminated the loop.",
            "A break statement executed in the first suite terminates the loop without executing the else suite.",
        ),
        # the same numbers and identifiers
        ("A shift lasts one week.", "- A shift lasts one week. The rotation hands over on Mondays."),
    ],
)
def test_a_clause_said_the_excerpts_way_has_no_conflict(claim: str, sentence: str) -> None:
    from locallens.claims.align import clause_conflicts

    assert clause_conflicts(claim, [sentence]) == []


def test_a_number_counting_something_else_is_relabelled() -> None:
    from locallens.claims.align import relabelled

    sentence = "In total 1,318 payment attempts failed, from 214 carriers."
    assert relabelled("The postmortem counts 214 dispatchers.", [sentence]) == [
        "214 counts carrier in the excerpt, not dispatch"
    ]
    assert relabelled("The failed attempts came from 214 carriers.", [sentence]) == []
    assert relabelled("1,318 attempts to pay failed.", [sentence]) == []


def test_a_complexity_is_a_fact() -> None:
    assert "O(n log n)" in extract_facts("heapify() turns a list into a heap in O(n log n) time.")
    assert missing_facts(["O(n log n)"], "Transform list into a heap, in-place, in O(len(heap)) time.") == [
        "O(n log n)"
    ]


def _synonym_encode(texts: list[str]) -> np.ndarray:
    """The fake encoder, but "verified" is "tested" (a word's own vector lines it up)."""
    return fake_encode([re.sub(r"\bverified\b", "tested", t) for t in texts])


_BACKUPS = [
    hit(
        "# Backups\n\nNightly backups of the production cluster are kept for 35 days. "
        "Restores of the nightly backups are tested every quarter. "
        "The nightly backups of the production cluster are encrypted.",
        "operations/backup.md",
    ),
    hit("The office coffee machine is cleaned every Friday by the facilities team.", "office/kitchen.md"),
]


def check_backups(answer: str, encode=_synonym_encode):  # type: ignore[no-untyped-def]
    question = "How long are the nightly backups kept?"
    return check_answer(answer, _BACKUPS, fake_vector(question), encode, question=question, min_relevance=0.0)


@pytest.fixture
def floors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backing by aligned words, off by default (measured: docs/decisions.md), switched on."""
    import locallens.claims.check as check_module

    monkeypatch.setattr(check_module, "MAX_SOFT", 1)
    monkeypatch.setattr(check_module, "ALIGNED_TIERS", ((0.6, 0), (0.7, 1)))


@pytest.mark.usefixtures("floors")
def test_a_paraphrase_whose_words_line_up_is_supported() -> None:
    # "verified" is found nowhere in the excerpts, but its own vector lines up with "tested".
    [claim] = check_backups("Restores of the nightly backups are verified each quarter.").claims
    assert claim.supported and claim.words_missing == [] and claim.words_unaligned == []
    # Without that synonym it is a word of its own.
    [plain] = check_backups("Restores of the nightly backups are verified each quarter.", fake_encode).claims
    assert plain.words_missing == ["verified"]


def test_words_of_another_excerpt_do_not_line_up() -> None:
    # "cleaned", "Friday", "facilities" are the excerpts' words, but of another excerpt than the
    # sentences the claim rests on: a clause added from them is withheld.
    [claim] = check_backups(
        "Nightly backups of the production cluster are kept for 35 days, tested every quarter, "
        "and cleaned every Friday by facilities."
    ).claims
    assert not claim.supported and claim.words_missing == []
    assert {"cleaned", "Friday", "facilities"} <= set(claim.words_unaligned)


@pytest.mark.usefixtures("floors")
def test_a_restatement_of_the_question_is_not_backed_by_the_floors(monkeypatch: pytest.MonkeyPatch) -> None:
    import locallens.claims.check as check_module

    # Every word is the excerpts' (the cosine, 0.77, is under MIN_SUPPORT), but it only says what
    # the question asked, with one word of its own ("cluster"): the relaxed floors need two.
    restated = "The nightly backups are kept as long as the nightly backups of the cluster are kept."
    [claim] = check_backups(restated, fake_encode).claims
    assert not claim.supported and claim.score < check_module.MIN_SUPPORT
    monkeypatch.setattr(check_module, "MIN_NEW_WORDS", 0)
    [claim] = check_backups(restated, fake_encode).claims
    assert claim.supported


@pytest.mark.usefixtures("floors")
def test_the_floors_need_the_words_of_the_closest_sentences(monkeypatch: pytest.MonkeyPatch) -> None:
    import locallens.claims.check as check_module

    # Backed at a cosine under MIN_SUPPORT: the words are those of the closest sentences.
    answer = "Nightly backups are kept: the production cluster keeps them."
    [claim] = check_backups(answer, fake_encode).claims
    assert claim.supported and claim.score < check_module.MIN_SUPPORT
    # Without the floors (nor the coverage allowance) the cosine alone decides.
    monkeypatch.setattr(check_module, "ALIGNED_TIERS", ())
    monkeypatch.setattr(check_module, "MIN_COVERAGE", 1.1)
    [claim] = check_backups(answer, fake_encode).claims
    assert not claim.supported
    # The floors count the words of the TIER_SENTENCES closest sentences only.
    monkeypatch.setattr(check_module, "ALIGNED_TIERS", ((0.6, 0),))
    monkeypatch.setattr(check_module, "TIER_SENTENCES", 0)
    [claim] = check_backups(answer, fake_encode).claims
    assert not claim.supported


@pytest.mark.parametrize(
    ("sentence", "claim"),
    [
        ("This is **bold** text [1].", "This is bold text."),
        ("- **Port 5433** is used [1].", "Port 5433 is used."),
        ("__Bold words__ here", "Bold words here"),
        # Not bold: Python's keyword arguments, a power, a name between double underscores.
        ("pdb.runcall(function, *args, **kwds) [2]", "pdb.runcall(function, *args, **kwds)"),
        ("f(**a) and f(**b)", "f(**a) and f(**b)"),
        ("x = 2**10 and `a**b`", "x = 2**10 and `a**b`"),
        (
            "the __init__ method runs before __getattr__() is called",
            "the __init__ method runs before __getattr__() is called",
        ),
    ],
)
def test_claim_text_drops_bold_marks_only(sentence: str, claim: str) -> None:
    from locallens.claims.citations import claim_text

    assert claim_text(sentence) == claim


@pytest.mark.parametrize(
    ("sentence", "claim"),
    [
        # the space a citation leaves before a stop goes ...
        ("It is 5 [1], or 6 [2].", "It is 5, or 6."),
        ("Is it [1]? Yes [2].", "Is it? Yes."),
        ("Done [1].)", "Done.)"),
        # ... a mark that starts a word, or is named, keeps the space before it
        (
            "Load it from config.py to keep settings changed via :set/:bind [1].",
            "Load it from config.py to keep settings changed via :set/:bind.",
        ),
        ("Edit your .bashrc file.", "Edit your .bashrc file."),
        ("What does !! do, and the ! character?", "What does !! do, and the ! character?"),
    ],
)
def test_claim_text_keeps_the_excerpts_marks_as_written(sentence: str, claim: str) -> None:
    """A printed unit is its excerpt's text: only the space a removed citation left is taken
    out ("via:set/:bind" was printed for "via :set/:bind")."""
    from locallens.claims.citations import claim_text, with_citations

    assert claim_text(sentence) == claim
    assert with_citations(claim, set(), 3).replace(" [3]", "") == claim


def test_a_citation_goes_before_a_stop_not_into_a_symbol() -> None:
    from locallens.claims.citations import with_citations

    assert with_citations("It is done.", set(), 2) == "It is done [2]."
    assert with_citations('He said "stop."', set(), 2) == 'He said "stop [2]."'
    assert with_citations("The status is in $?", set(), 2) == "The status is in $? [2]"
    assert with_citations("!!", set(), 2) == "!! [2]"  # a term of punctuation alone
