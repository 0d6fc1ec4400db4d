"""`locallens chat` in a real terminal: tmux runs it, the test types keys and reads the screen.

Real models on the session's sample_docs index: three questions (the third a follow-up),
/sources, /show 1, Ctrl-C while an answer is being written (the session goes on), Ctrl-D (exit
0), and the private history file. tmux comes from the distribution (`make install` installs it
where it can); without it the test is skipped, saying so.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TMUX = shutil.which("tmux")
LONG_ANSWERS = (
    "Explain every step of the deploy runbook in detail, from before you deploy to rollback.",
    "Describe the whole on-call rotation: schedule, response times, expectations and compensation.",
    "Summarise the complete backup and restore policy, section by section.",
)


class Terminal:
    """One tmux server (its own socket) running one command in a 160x50 window."""

    def __init__(self, socket: Path, command: str) -> None:
        self.base = [TMUX or "tmux", "-S", str(socket)]
        subprocess.run([*self.base, "new-session", "-d", "-x", "160", "-y", "50", command], check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", *keys], check=True)

    def type(self, line: str) -> None:
        self.keys("-l", line)
        self.keys("Enter")

    def screen(self) -> str:
        """The whole scrollback and screen, as text."""
        result = subprocess.run(
            [*self.base, "capture-pane", "-p", "-J", "-S", "-5000"], capture_output=True, text=True, check=False
        )
        return result.stdout

    def wait_for(self, predicate, what: str, timeout: float = 180.0, poll: float = 0.2) -> str:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(poll)
        pytest.fail(f"timed out waiting for {what}; the screen:\n{self.screen()[-3000:]}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], check=False, capture_output=True)


@pytest.fixture()
def terminal(tmp_path: Path, sample_index: Path, isolated_home: Path) -> Iterator[Terminal]:
    if TMUX is None:
        pytest.skip("tmux is not installed (make install installs it with apt-get where it can)")
    env = {
        "LOCALLENS_HOME": str(isolated_home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", ""),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "TERM": "xterm-256color",
        "NO_COLOR": "1",
    }
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # Short answers: the 135M model can loop to --max-tokens, slow on a busy machine.
    chat = f"{shlex.quote(sys.executable)} -m locallens chat --max-tokens 96 --db {shlex.quote(str(sample_index))}"
    # After the chat ends, its exit code stays on the screen until the test closes the server.
    term = Terminal(tmp_path / "tmux.sock", f"env {exports} {chat}; echo CHAT-EXITED=$?; sleep 600")
    yield term
    term.close()


def test_chat_in_a_terminal(terminal: Terminal, isolated_home: Path) -> None:
    term = terminal
    term.wait_for(lambda s: re.search(r"^>", s, re.M), "the prompt", timeout=60)  # trailing space trimmed

    def answered(n: int) -> str:
        return term.wait_for(lambda s: s.count("Sources:") >= n, f"answer {n}")

    term.type("How long is parental leave?")
    screen = answered(1)
    assert "hr/leave-policy.md" in screen.split("Sources:")[-1]
    term.type("Which port does the staging database listen on?")
    screen = answered(2)
    assert "engineering/staging-environment.md" in screen.split("Which port does")[-1]
    term.type("and which version does it run?")  # a follow-up: searched with the question before
    screen = answered(3)
    assert "engineering/staging-environment.md" in screen.split("which version does it run?")[-1]

    term.type("/sources")
    listed = re.compile(r"^Sources:\n\[1\] \S+ \(\d\.\d\d\)", re.M)
    term.wait_for(lambda s: listed.search(s.split("/sources")[-1]), "/sources")

    term.type("/show 1")  # the source's lines in its file, the cited ones marked
    screen = term.wait_for(lambda s: "│" in s.split("/show 1")[-1], "/show 1")
    shown = screen.split("/show 1")[-1]
    assert shown.strip().splitlines()[0].startswith("engineering/staging-environment.md")

    # Ctrl-C while the answer is being prepared or written stops it; the session goes on. The key
    # is sent a second after the question; an answer already done by then is not stopped, so up
    # to three questions are tried.
    for attempt, question in enumerate(LONG_ANSWERS):
        before = term.screen().count("stopped; ask again")
        answers = term.screen().count("Sources:")
        term.type(question)
        time.sleep(1.0)  # the line is handed over; retrieval and the model's prefill take longer
        term.keys("C-c")
        screen = term.wait_for(
            lambda s, b=before, a=answers: s.count("stopped; ask again") > b or s.count("Sources:") > a,
            "the answer to stop or end",
            timeout=120,
        )
        if screen.count("stopped; ask again") > before:
            break
        assert attempt < len(LONG_ANSWERS) - 1, "every answer ended before Ctrl-C reached it"
    term.type("/help")
    term.wait_for(lambda s: "/brain NAME" in s, "the help after Ctrl-C")

    term.keys("C-d")
    term.wait_for(lambda s: "CHAT-EXITED=" in s, "chat to exit", timeout=60)
    assert "CHAT-EXITED=0" in term.screen()
    assert "Traceback" not in term.screen()

    history = isolated_home / "chat_history"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert "How long is parental leave?" in history.read_text(encoding="utf-8")
