"""Questions that ask for an example: the request read from the question, the blocks that are
examples, the search holding one, and the passage opening with it (`locallens.examples`)."""

from __future__ import annotations

import numpy as np
import pytest

from locallens.examples import (
    as_blocks,
    asks_example,
    example_keys,
    example_units,
    holds_example,
    is_example,
    with_example,
)
from locallens.extractive import extractive_answer
from locallens.units import CODE, SENTENCE, Unit, excerpt_units

from .test_claims import fake_encode, fake_vector, hit


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Show me an example of a name-based virtual host configuration.", True),
        ("Give me an example a2x command that turns an AsciiDoc file into a PDF.", True),
        ("Can you show example header_checks rules that reject backscatter?", True),
        ("What does a minimal backend declaration look like?", True),
        ("Are there examples of a zstyle for the completion system?", True),
        ("Is there a sample config for two backends?", True),
        ("¿Me das un ejemplo de un bloque case en un script de Bash?", True),
        ("Muéstrame algunos ejemplos de zstyle.", True),
        # The user's own example, or a file named so: no request for one.
        ("Which directive makes Apache listen on another port, for example 8080?", False),
        ("What port does the admin interface listen on in Debian's example configuration?", False),
        ("¿En qué puerto escucha la interfaz en la configuración de ejemplo de Debian?", False),
        ("How do I rename files, por ejemplo *.lis to *.txt?", False),
        ("What does the -n flag do?", False),
    ],
)
def test_a_question_asking_for_an_example(question: str, asks: bool) -> None:
    assert asks_example(question) is asks


def unit(text: str, kind: str = SENTENCE, index: int = 0, setup: int | None = None, section: str = "") -> Unit:
    return Unit(text, 1, index, kind, setup=setup, section=section)


def test_a_block_of_code_or_configuration_is_an_example() -> None:
    assert is_example(unit("```\nborg create /srv/repo::docs ~/Documents\n```", CODE))
    # A plain-text manual's example reads as a sentence unit: its lines are code or settings.
    assert is_example(
        unit('<VirtualHost *:80>\n    ServerName www.example.com\n    DocumentRoot "/www/a"\n</VirtualHost>')
    )
    assert is_example(unit('TRAPINT() {\n  print "Caught SIGINT, aborting."\n  return 1\n}'))
    # Prose is not, even with a call or parentheses in it; nor a grammar's rule.
    assert not is_example(unit("The str.format() method formats a string (see Format String Syntax)."))
    assert not is_example(
        unit("1. The context expression (the expression given in the with_item) is\n   evaluated to obtain a manager.")
    )
    assert not is_example(unit('```\nwith_stmt ::= "with" with_item ("," with_item)* ":" suite\n```', CODE))


def test_the_example_is_chosen_by_the_prose_that_introduces_it() -> None:
    units = [
        unit("A decorator wraps a function definition.", index=0),
        unit("Multiple decorators are applied to a function in nested fashion.", index=1),
        unit("For example, the following code:", index=2),
        unit("@f1(arg)\n@f2\ndef func(): pass", CODE, index=3, setup=2),
        unit("is roughly equivalent to a nested call.", index=4),
        unit("```\nx = compute()\n```", CODE, index=5, section="Other"),
    ]
    scores = np.array([0.8, 0.6, 0.3, 0.1, 0.2, 0.05])
    # The block opens the passage with the line introducing it, though the prose scores higher.
    assert example_units("Show me an example of a function with two decorators.", units, scores) == [2, 3]
    # A block that scores as well as the best unit is the example, whatever its words.
    best_block = np.array([0.8, 0.6, 0.3, 0.1, 0.2, 0.9])
    assert example_units("Show me an example of a cron schedule.", units, best_block) == [5]
    # No block close to the question: the passage is chosen as for any question.
    assert example_units("Show me an example of a cron schedule.", units, scores) == []
    assert example_units("Show me an example of a cron schedule.", units[:2], scores[:2]) == []


def test_the_blocks_of_one_example_are_printed_together() -> None:
    units = excerpt_units(
        "To block such mail I use header_checks like this:\n\n"
        "    /etc/postfix/main.cf:\n        header_checks = pcre:/etc/postfix/header_checks\n\n"
        "    /etc/postfix/header_checks:\n        /^Received: +from +(example\\.org) +/\n"
        "            reject forged client name in Received: header: $1\n\n"
        "The filter uses PCRE.",
        1,
    )
    scores = np.linspace(0.9, 0.1, len(units))
    chosen = [units[i].text for i in example_units("Show me example header_checks rules.", units, scores)]
    assert chosen[0].startswith("To block such mail")
    assert any("main.cf" in text for text in chosen) and any("reject forged" in text for text in chosen)


def test_an_example_is_searched_deeper_when_the_excerpts_hold_none() -> None:
    question = "Show me an example of a borg create command with excludes."
    prose = [hit(f"borg create makes an archive; excludes are patterns ({n}).", f"create-{n}.md") for n in range(5)]
    example = hit(
        "Back up but exclude pyc files:\n\n```\nborg create /srv/repo::docs ~/src --exclude '*.pyc'\n```", "ex.md"
    )
    asked: list[int] = []

    def deeper() -> list:
        asked.append(1)
        return [*prose, hit("borg prune keeps archives.", "prune.md"), example]

    out = with_example(prose, question, deeper, 5)
    assert [h.chunk.relative_path for h in out] == ["create-0.md", "create-1.md", "create-2.md", "create-3.md", "ex.md"]
    assert holds_example(example.content, (frozenset({"borg", "creat", "exclu"}),))
    assert not holds_example(example.content, (frozenset({"borg", "prune", "keep", "daily"}),))
    # The excerpts hold one already: nothing searched, nothing moved.
    asked.clear()
    assert with_example(out, question, deeper, 5) == out and asked == []


def test_an_example_question_is_answered_with_the_example() -> None:
    hits = [
        hit(
            "# Virtual hosts\n\nName-based virtual hosts let one IP address serve several host names. "
            "The server picks the host by the Host header of the request.",
            "vhosts.md",
        ),
        hit(
            "# Virtual hosts\n\nA name-based virtual host configuration looks like this:\n\n"
            "```\n<VirtualHost *:80>\n    ServerName www.example.com\n    DocumentRoot /www/a\n</VirtualHost>\n```\n\n"
            "Add one block per host name.",
            "vhosts-example.md",
        ),
    ]
    question = "Show me an example of a name-based virtual host configuration."
    answer = extractive_answer(question, hits, fake_vector(question), fake_encode)
    assert not answer.refused
    assert answer.answer.startswith(
        "A name-based virtual host configuration looks like this [2]:\n```\n<VirtualHost *:80>"
    )
    assert all(c.citations for c in answer.claims)


def test_an_example_asked_as_a_chat_follow_up() -> None:
    from locallens.chat import is_follow_up

    # "Show me an example of that." is searched with the question before it (`locallens.chat`),
    # and names nothing itself: its block is the one the best-scoring prose introduces.
    question = "Show me an example of that."
    assert asks_example(question) and is_follow_up(question)
    units = [
        unit("A name-based virtual host is chosen by the Host header.", index=0),
        unit("A minimal one looks like this:", index=1),
        unit("<VirtualHost *:80>\n    ServerName www.example.com\n</VirtualHost>", CODE, index=2, setup=1),
        unit("```\nListen 8080\n```", CODE, index=3, section="Ports"),
    ]
    assert example_units(question, units, np.array([0.9, 0.7, 0.2, 0.3])) == [1, 2]


def test_a_plain_text_example_keeps_its_lines() -> None:
    hits = [
        hit(
            "A TRAPINT function handles the INT signal. For example, the following TRAPINT function prints a "
            "message, then mimics the usual effect of the signal:\n\n"
            'TRAPINT() {\n  print "Caught SIGINT, aborting."\n  return $(( 128 + $1 ))\n}\n',
            "Functions.txt",
        ),
        hit("A trap function is run when the shell receives its signal.", "traps.txt"),
    ]
    question = "Give an example of a TRAPINT function."
    answer = extractive_answer(question, hits, fake_vector(question), fake_encode)
    assert 'TRAPINT() {\n  print "Caught SIGINT, aborting."\n  return $(( 128 + $1 ))\n}\n[1]' in answer.answer
    units = excerpt_units(hits[0].content, 1)
    block = next(i for i, u in enumerate(units) if u.text.startswith("TRAPINT"))
    assert units[block].kind != CODE and as_blocks(units, [block])[block].kind == CODE
    assert as_blocks(units, [0])[0] == units[0]  # prose stays prose


def test_each_wording_of_the_question_is_weighed_on_its_own() -> None:
    # Apertium renders the shell's "case" as the verb "casar" ("marry"): pooled with the Spanish
    # question's, the rendering's words would count against the block.
    keys = example_keys(
        "¿Me das un ejemplo de un bloque case en un script de Bash?",
        "You give me an example of a block marry in a script of Bash?",
    )
    assert len(keys) == 2
    content = "Here is an example using case in a script:\n\n```\ncase $ANIMAL in\n  horse) echo four;;\nesac\n```"
    assert holds_example(content, keys)
    assert not holds_example(content, (keys[0] | keys[1],))
    assert example_keys("Show me an example.") == ()
