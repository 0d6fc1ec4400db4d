"""`locallens chat`: questions at a terminal, answered by models kept loaded between them.

The session is the warm core of `serve` (`locallens.service.Service`, whose `WarmModels` keep the
embedder and the GGUF loaded); nothing listens on a port. Each question is its own round:

- retrieval runs anew for every question, and the prompt holds only the excerpts found for it and
  the question itself, never earlier turns: the excerpts are the only evidence an answer may use;
- a short follow-up ("and on weekends?") is searched for together with the question before it
  (`search_query`): on its own it names too little to find anything. Only the search sees the
  previous question; the prompt and the answer check get the follow-up as typed. The rule and
  its measurement are in docs/decisions.md#chat-follow-ups;
- the model's answer streams as it is written, then the checked answer (only the sentences the
  excerpts support, each cited) and the sources are printed as `ask` prints them.

Commands start with `/` (`COMMANDS`). The terminal side (line editing, history, Ctrl-C and
Ctrl-D) is `interactive()`, on prompt_toolkit; `ChatSession` itself takes lines and writes
through a `ChatOutput`, so it runs the same under a test.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from locallens.config import PRIVATE_FILE_MODE, locallens_home, make_private_dir
from locallens.errors import LocallensError, UsageError

# -- follow-ups ---------------------------------------------------------------------------------

# A follow-up is short (at most FOLLOW_UP_MAX_WORDS words) and either opens like a continuation
# ("and ...", "what about ...", "¿y ...") or leans on the question before it with a pronoun ("who
# does it?", "¿quién la revisó?"). A short question that names its own subject ("VPN port?") is
# searched alone. Measured on 28 pairs over sample_docs (docs/decisions.md#chat-follow-ups).
FOLLOW_UP_MAX_WORDS = 6
_CONTINUATION = re.compile(
    r"^\s*[¿¡]?\s*(and|also|what about|how about|what if|then|but|or|y|e|o|pero|también|tambien|"
    r"qué pasa con|que pasa con)\b",
    re.IGNORECASE,
)
_ANAPHORA = re.compile(
    r"\b(it|its|they|them|their|that|those|this|these|he|she|who|lo|la|los|las|le|les|eso|esa|ese|esto|"
    r"quién|quien)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")


def is_follow_up(question: str) -> bool:
    """Whether `question` reads as a continuation of the one before it."""
    if len(_WORD.findall(question)) > FOLLOW_UP_MAX_WORDS:
        return False
    return bool(_CONTINUATION.match(question) or _ANAPHORA.search(question))


def search_query(question: str, previous: str | None) -> str | None:
    """What retrieval searches for instead of `question` (None: the question itself)."""
    if previous is None or not is_follow_up(question):
        return None
    return f"{previous} {question}"


# -- the session --------------------------------------------------------------------------------

HELP = """Ask a question, or type a command:
  /sources       the sources of the last answer
  /show N        source N of the last answer: its lines in the file (as `locallens show N`)
  /extractive    answer with the excerpts' most relevant sentences (no LLM, instant)
  /generate      answer with the LLM again (the default)
  /brain NAME    ask another brain of the database
  /path GLOB     only sources whose relative path matches GLOB; /path alone: all again
  /help          this help
  /quit          leave (Ctrl-D too); Ctrl-C stops an answer being written
Each question is searched on its own and answered from its excerpts alone (no chat history).
A short follow-up ("and on weekends?", "who does it?") is searched together with the question
before it; a short question naming its own subject ("VPN port?") is searched alone."""

COMMANDS = ("/sources", "/show", "/extractive", "/generate", "/brain", "/path", "/help", "/quit")


@dataclass(slots=True)
class ChatOutput:
    """Where a session writes; the CLI renders answers and sources exactly as `ask` does."""

    stream: Callable[[str], None]  # the model's text as it is written (no newline added)
    say: Callable[[str], None]  # a message or an excerpt (may be several lines)
    error: Callable[[str], None]  # a one-line problem; the session goes on
    answer: Callable[[dict[str, Any]], None]  # an answer's JSON (as `ask --json`), rendered as `ask`
    sources: Callable[[dict[str, Any]], None]  # the sources part of that rendering alone
    # Source N of the last answer in its file (`locallens show N`); None: the excerpt as sent.
    show: Callable[[int], None] | None = None


class ChatSession:
    """One person's questions against a `Service`, with the session's own settings."""

    def __init__(
        self, service: Any, output: ChatOutput, *, top_k: int, extractive: bool = False, follow_ups: bool = True
    ) -> None:
        self.service = service
        self.output = output
        self.top_k = top_k
        self.extractive = extractive
        self.follow_ups = follow_ups
        self.brain: str = service.settings.brain
        self.path_glob: str | None = None
        self.previous: str | None = None  # the last question asked (what a follow-up continues)
        self.last: dict[str, Any] | None = None  # the last answer, as `ask --json` prints it

    # -- one line ------------------------------------------------------------------------------

    def handle(self, line: str) -> bool:
        """Act on one line; False when the session should end. Ctrl-C mid-answer stops it only."""
        line = line.strip()
        if not line:
            return True
        if line.startswith("/"):
            return self._command(line)
        try:
            self.ask(line)
        except KeyboardInterrupt:
            self.output.stream("\n")
            self.output.error("stopped; ask again, or Ctrl-D to leave")
        except LocallensError as exc:
            self.output.error(str(exc))
        return True

    def request(self, question: str) -> Any:
        """The `ask` request for `question` with this session's settings."""
        from locallens.service import validate

        args: dict[str, Any] = {"question": question, "brain": self.brain, "top_k": self.top_k}
        if self.path_glob:
            args["path"] = self.path_glob
        args["extractive"] = self.extractive
        request = self.service.ask_request(validate("ask", args))
        query = search_query(question, self.previous) if self.follow_ups else None
        return replace(request, search_query=query)

    def ask(self, question: str) -> dict[str, Any]:
        from locallens.answer import ask

        request = self.request(question)
        self.previous = question
        streamed: list[str] = []

        def show(text: str) -> None:
            streamed.append(text)
            self.output.stream(text)

        result = ask(request, self.service.models, on_text=show)
        if streamed:
            self.output.stream("\n\n")
        self.last = result.as_json()
        self.output.answer(self.last)
        return self.last

    # -- commands ------------------------------------------------------------------------------

    def _command(self, line: str) -> bool:
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        name = name.lower()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name == "/help":
            self.output.say(HELP)
        elif name == "/sources":
            if self.last is None:
                self.output.error("no answer yet: ask a question first")
            else:
                self.output.sources(self.last)
        elif name == "/show":
            self._show(arg)
        elif name == "/extractive":
            self.extractive = True
            self.output.say("answers: extractive (the excerpts' most relevant sentences, no LLM)")
        elif name == "/generate":
            self.extractive = False
            self.output.say("answers: generated by the LLM, then checked against the excerpts")
        elif name == "/brain":
            self._brain(arg)
        elif name == "/path":
            self.path_glob = arg or None
            self.output.say(f"sources: only paths matching {arg!r}" if arg else "sources: every path")
        else:
            self.output.error(f"unknown command {name}; commands: {', '.join(COMMANDS)}")
        return True

    def _show(self, arg: str) -> None:
        if self.last is None:
            self.output.error("no answer yet: ask a question first")
            return
        sources = self.last["sources"]
        if not arg.isdigit() or not 1 <= int(arg) <= len(sources):
            self.output.error(f"/show takes the number of a source, 1..{len(sources)}")
            return
        if self.output.show is not None:
            try:
                self.output.show(int(arg))
                return
            except LocallensError as exc:  # the file is gone or unreadable: the excerpt as sent
                self.output.error(str(exc))
        source = sources[int(arg) - 1]
        self.output.say(f"[{source['n']}] {source['path']}#chunk-{source['chunk_index']}\n{source['content']}")

    def _brain(self, name: str) -> None:
        if not name:
            self.output.say(f"brain: {self.brain}")
            return
        from locallens.storage import open_store

        try:
            with open_store(self.service.settings.db) as store:
                store.get_brain(name)
        except LocallensError as exc:
            self.output.error(str(exc))
            return
        self.brain, self.previous, self.last = name, None, None
        self.output.say(f"brain: {name}")


# -- the terminal ------------------------------------------------------------------------------

HISTORY_FILE = "chat_history"


def history_path() -> Path:
    """`$LOCALLENS_HOME/chat_history`: the questions typed, private to the user (0600)."""
    return locallens_home() / HISTORY_FILE


def _private_history(path: Path) -> Path:
    make_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    os.close(fd)
    os.chmod(path, PRIVATE_FILE_MODE)  # also a file an older run (or another umask) made
    return path


def check_terminal(stdin: Any) -> None:
    """A chat needs a person at a terminal; a script gets the batch interface instead."""
    if not stdin.isatty():
        raise UsageError(
            "chat needs a terminal (stdin is not one); for questions from a file or a pipe use "
            "`locallens ask --batch FILE` (JSONL in, JSONL out, models loaded once)"
        )


def interactive(session: ChatSession, history: Path | None, prompt: str = "> ") -> int:
    """Read lines at the terminal until /quit or Ctrl-D; Ctrl-C at the prompt clears the line."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    prompt_session: PromptSession[str] = PromptSession(
        history=FileHistory(str(_private_history(history))) if history is not None else InMemoryHistory()
    )
    while True:
        try:
            line = prompt_session.prompt(prompt)
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        if not session.handle(line):
            return 0
