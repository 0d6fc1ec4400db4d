"""`locallens chat`: the session's rules (fresh retrieval per question, no history in the prompt,
follow-ups searched with the question before them), its commands, Ctrl-C, the history file and
the refusal to run without a terminal. Fast tier: the deterministic fakes. The real terminal
(tmux) test is in test_chat_tmux.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from locallens.chat import ChatOutput, ChatSession, _private_history, is_follow_up, search_query

from .helpers import cli, write_corpus


class Captured:
    """A ChatOutput that records what the session wrote."""

    def __init__(self) -> None:
        self.streamed: list[str] = []
        self.said: list[str] = []
        self.errors: list[str] = []
        self.answers: list[dict[str, Any]] = []
        self.sources_shown: list[dict[str, Any]] = []
        self.interrupt_after: int | None = None  # raise KeyboardInterrupt after this many pieces

    def stream(self, text: str) -> None:
        self.streamed.append(text)
        if self.interrupt_after is not None and len(self.streamed) >= self.interrupt_after:
            self.interrupt_after = None
            raise KeyboardInterrupt

    def output(self) -> ChatOutput:
        return ChatOutput(
            stream=self.stream,
            say=self.said.append,
            error=self.errors.append,
            answer=self.answers.append,
            sources=self.sources_shown.append,
        )


@pytest.fixture()
def session(fake_models: Any, tmp_path: Path) -> tuple[ChatSession, Captured]:
    from locallens.indexer import IndexRequest, index
    from locallens.service import Service, ServiceSettings

    db = tmp_path / "index.db"
    index(IndexRequest(paths=[write_corpus(tmp_path / "docs")], db=db))
    captured = Captured()
    service = Service(ServiceSettings(db=db))
    yield ChatSession(service, captured.output(), top_k=3), captured
    service.close()


def test_follow_up_rule() -> None:
    assert is_follow_up("and on weekends?")
    assert is_follow_up("¿y los fines de semana?")
    assert is_follow_up("what about contractors?")
    assert is_follow_up("who does it?")  # leans on the previous question with a pronoun
    assert not is_follow_up("VPN port?")  # short, but names its own subject
    assert not is_follow_up("And how many days of annual leave does a full-time employee get?")  # long
    assert search_query("and on weekends?", None) is None  # nothing to continue
    assert search_query("and on weekends?", "When are core hours?") == "When are core hours? and on weekends?"
    assert search_query("Which port does the staging database listen on?", "When are core hours?") is None


def test_each_question_is_its_own_round(session: tuple[ChatSession, Captured], fake_models: Any) -> None:
    chat, out = session
    assert chat.handle("Which port does the staging database listen on?")
    assert chat.handle("and the PostgreSQL version?")
    _first, second = fake_models.prompts
    # Two messages each (system rules, user: excerpts + question), never an earlier turn.
    assert [m.role for m in second] == ["system", "user"]
    assert second[1].content.endswith("Question:\nand the PostgreSQL version?")
    assert "staging database listen" not in second[1].content.split("Question:")[1]
    assert out.answers[0]["answer"] not in second[1].content.split("Source excerpts:")[0]
    # ...but the follow-up was searched together with the question before it.
    queries = [text for text in fake_models.embedder.encoded if "PostgreSQL version" in text]
    assert any("staging database listen on? and the PostgreSQL version?" in q for q in queries)
    assert out.answers[1]["sources"][0]["path"] == "engineering/staging.md"
    assert "".join(out.streamed).strip()  # the model's text streamed before the checked answer


def test_follow_ups_off_searches_the_question_alone(session: tuple[ChatSession, Captured], fake_models: Any) -> None:
    chat, _ = session
    chat.follow_ups = False
    chat.handle("Which port does the staging database listen on?")
    chat.handle("and the PostgreSQL version?")
    assert not any("listen on? and" in text for text in fake_models.embedder.encoded)


def test_commands(session: tuple[ChatSession, Captured], fake_models: Any) -> None:
    chat, out = session
    chat.handle("/sources")
    chat.handle("/show 1")
    assert len(out.errors) == 2 and all("no answer yet" in e for e in out.errors)
    chat.handle("How long is parental leave?")
    chat.handle("/sources")
    assert out.sources_shown == [out.answers[-1]]
    chat.handle("/show 1")
    source = out.answers[-1]["sources"][0]
    assert out.said[-1] == f"[1] {source['path']}#chunk-{source['chunk_index']}\n{source['content']}"
    chat.handle("/show 9")
    assert "1..3" in out.errors[-1]
    chat.handle("/help")
    assert "/brain NAME" in out.said[-1]
    chat.handle("/frobnicate")
    assert "unknown command /frobnicate" in out.errors[-1]


def test_extractive_and_generate(session: tuple[ChatSession, Captured], fake_models: Any) -> None:
    chat, out = session
    chat.handle("/extractive")
    chat.handle("How long is parental leave?")
    assert out.answers[-1]["mode"] == "extractive" and not fake_models.llms
    chat.handle("/generate")
    chat.handle("How long is parental leave?")
    assert out.answers[-1]["mode"] in ("generate", "extractive") and len(fake_models.prompts) == 1


def test_path_and_brain(session: tuple[ChatSession, Captured], fake_models: Any) -> None:
    chat, out = session
    chat.handle("/path hr/*")
    chat.handle("Which port does the staging database listen on?")
    assert {s["path"] for s in out.answers[-1]["sources"]} == {"hr/leave.md"}
    chat.handle("/path")
    chat.handle("/brain nosuch")
    assert "nosuch" in out.errors[-1] and chat.brain == "default"
    chat.handle("/brain default")
    assert out.said[-1] == "brain: default"


def test_nothing_found_keeps_the_session(session: tuple[ChatSession, Captured]) -> None:
    chat, out = session
    chat.handle("/path nowhere/*")
    assert chat.handle("Which port does the staging database listen on?")
    assert "nothing relevant found" in out.errors[-1]


def test_ctrl_c_stops_the_answer_not_the_session(session: tuple[ChatSession, Captured], fake_models: Any) -> None:
    chat, out = session
    out.interrupt_after = 2
    assert chat.handle("Which port does the staging database listen on?")
    assert out.errors[-1].startswith("stopped") and not out.answers
    # The warm model was released: the next question is answered.
    assert chat.handle("How long is parental leave?")
    assert out.answers and out.answers[-1]["sources"]


def test_quit(session: tuple[ChatSession, Captured]) -> None:
    chat, _ = session
    assert chat.handle("   ")
    assert not chat.handle("/quit")


def test_history_file_is_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = _private_history(tmp_path / "home" / "chat_history")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    path.chmod(0o644)  # made by something else: made private again
    _private_history(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_not_a_terminal_exits_2_with_advice(tmp_path: Path) -> None:
    result = cli("chat", "--db", str(tmp_path / "index.db"), input="How long is parental leave?\n")
    assert result.exit_code == 2
    assert "ask --batch" in result.stderr
