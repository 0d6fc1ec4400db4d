"""The default mode's answer composed from the model's checked answer and the excerpts' passage
(`generation.compose`), on the deterministic fake encoder of test_claims: the model's answer is
printed only when it states what the passage it replaces states; otherwise the passage, followed
by the model's supported sentences that add to it. Every printed line is a supported, cited
claim, and the claims hold every sentence of the model's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from locallens.claims import check_answer
from locallens.extractive import extractive_answer
from locallens.generation import checked_answer, compose

from .test_claims import HITS, fake_encode, fake_vector, hit

RELEASE = hit(
    "The release train leaves every Tuesday at 14:00 UTC. Hotfixes skip the train and need two approvals "
    "from the platform team. Release notes are published on the wiki under /releases.",
    "ops/release.md",
)
EXCERPTS = [RELEASE, HITS[0]]
QUESTION = "When does the release train leave?"
VECTOR = fake_vector("When does the release train leave every Tuesday")


def answer(model: str, question: str = QUESTION, vector_text: str | None = None, max_tokens: int = 64):  # type: ignore[no-untyped-def]
    vector = VECTOR if vector_text is None else fake_vector(vector_text)
    return checked_answer(model, EXCERPTS, question, vector, fake_encode, max_tokens=max_tokens)


def printed_claims(checked) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.text for c in checked.claims if c.supported]


def test_a_model_answer_that_drops_the_passages_fact_gives_way_to_the_passage() -> None:
    # Backed, relevant, resting on the very unit the passage prints, but without its time.
    dropped = answer("The release train leaves every Tuesday [1].")
    assert dropped.fallback and not dropped.refused
    # The passage: its answering unit first (then the line after it, which the budget has room for).
    assert dropped.answer.splitlines()[0] == "The release train leaves every Tuesday at 14:00 UTC [1]."
    assert dropped.withheld == 1 and printed_claims(dropped) == dropped.answer.splitlines()
    # The model's sentence is kept in the claims (withheld), after the passage's.
    passage = [c for c in dropped.claims if c.extracted]
    assert passage and all(c.supported for c in passage)
    assert [(c.extracted, c.supported) for c in dropped.claims[len(passage) :]] == [(False, False)]


def test_a_model_answer_that_states_the_passages_facts_is_printed() -> None:
    stated = answer(
        "The release train leaves every Tuesday at 14:00 UTC [1].",
        vector_text="When does the release train leave every Tuesday at 14:00 UTC",
    )
    assert not stated.fallback and stated.answer == "The release train leaves every Tuesday at 14:00 UTC [1]."
    assert all(not c.extracted for c in stated.claims)


def test_the_model_sentences_that_add_to_the_passage_follow_it() -> None:
    question = "When does the release train leave, and what do hotfixes need?"
    vector = "release train leaves Tuesday 14:00 UTC hotfixes skip the train need two approvals platform team"
    model = (
        "1. The release train leaves every Tuesday [1].\n"
        "2. Hotfixes skip the train and need two approvals from the platform team [1].\n"
        "3. The staging database listens on port 5433 [2]."
    )
    # A passage of one unit (a small budget): the model's second sentence adds the hotfixes' rule
    # and is printed after it, without its list number; the first drops the time (withheld), the
    # third is about another note (withheld).
    composed = answer(model, question, vector, max_tokens=30)
    assert composed.answer.splitlines() == [
        "The release train leaves every Tuesday at 14:00 UTC [1].",
        "Hotfixes skip the train and need two approvals from the platform team [1].",
    ]
    assert composed.fallback and composed.withheld == 2
    assert printed_claims(composed) == composed.answer.splitlines()
    assert [c.extracted for c in composed.claims] == [True, False, False, False]
    assert composed.notices() == [
        "the excerpts' best passage, then 1 sentence of the model's answer that adds to it "
        "(--show-unsupported shows it)"
    ]
    # A sentence the passage already prints adds nothing.
    same = answer(
        "The release train leaves every Tuesday at 14:00 UTC [1]. Hotfixes skip the train [1].", question, vector
    )
    assert "Hotfixes skip the train [1]." not in same.answer.splitlines()


def test_the_rule_before_printed_the_model_answer_that_drops_the_fact() -> None:
    # The composition measured against (`model_alone="agrees"`): any backed sentence resting on
    # the passage printed the model's answer, however little of the passage it kept.
    model = "The release train leaves every Tuesday [1]."
    checked = check_answer(model, EXCERPTS, VECTOR, fake_encode, question=QUESTION)
    passage = extractive_answer(QUESTION, EXCERPTS, VECTOR, fake_encode, max_tokens=64)
    before = compose(checked, passage, QUESTION, model_alone="agrees", add="none")
    assert before.answer == "The release train leaves every Tuesday [1]." and not before.fallback
    never = compose(checked, passage, QUESTION, model_alone="never", add="none")
    assert never.answer == passage.answer


SENTENCES = [
    "The release train leaves every Tuesday at 14:00 UTC [1].",
    "The release train leaves every Tuesday [1].",
    "Hotfixes skip the train and need two approvals from the platform team [1].",
    "Hotfixes need two approvals [2].",
    "Release notes are published on the wiki under /releases [1].",
    "The staging database listens on port 5433 [2].",
    "Backups are kept for 14 days [1].",
    "The release train leaves on Fridays at 09:00 [1].",
    "- The platform team approves every release [1].",
]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=5),
    st.sampled_from([QUESTION, "What do hotfixes need?", "Which port does the staging database use?"]),
    st.sampled_from([30, 64]),
)
def test_every_printed_line_is_a_supported_cited_claim_and_no_model_sentence_is_lost(
    model_sentences: list[str], question: str, max_tokens: int
) -> None:
    model = "\n".join(model_sentences)
    composed = checked_answer(model, EXCERPTS, question, fake_vector(question), fake_encode, max_tokens=max_tokens)
    if composed.refused:
        assert not any(c.supported for c in composed.claims)
        return
    printed = printed_claims(composed)
    assert printed == composed.answer.splitlines()
    assert all(c.citations for c in composed.claims if c.supported)
    # Every sentence of the model's is in the claims, printed or withheld.
    alone = check_answer(model, EXCERPTS, fake_vector(question), fake_encode, question=question)
    assert [c.written for c in composed.claims if not c.extracted] == [c.written for c in alone.claims]
    assert composed.withheld == sum(1 for c in composed.claims if not c.extracted and not c.supported)
