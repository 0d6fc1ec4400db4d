"""`locallens chat` at a real terminal against cold `locallens ask`, question by question.

The chat runs as a person runs it: `locallens chat` on a pseudo-terminal (TERM=xterm-256color,
prompt_toolkit's line editor, the streamed answer, the checked answer and its sources). This
script is the person: it types a question and Enter, and the answer counts as done when the line
editor asks for the cursor position again (ESC [6n), which it does each time it draws the next
prompt. The script never polls the screen: it blocks on the terminal until bytes arrive, so the
client costs next to no CPU (its own CPU time is printed).

Pairs, one run: for each question, the question asked in the open chat session (warm models),
then the same question as a new `locallens ask` process (cold), in turn; a first chat question
(the models load) is not counted. Printed per answer mode (generated, then `/extractive`): the
median warm and cold wall time, the median of the per-pair ratios warm/cold, and the CPU seconds
per question of the chat process and of the cold processes.

    python benchmarks/bench_chat_tty.py [--quick] [--questions N]
"""

from __future__ import annotations

import json
import os
import pty
import resource
import select
import subprocess
import time
from pathlib import Path

import _common as c

QUESTIONS_JSONL = c.ROOT / "tests" / "data" / "questions.jsonl"
READY = b"\x1b[6n"  # prompt_toolkit asks where the cursor is before it draws a prompt
CURSOR_REPLY = b"\x1b[1;1R"


class Terminal:
    """`locallens chat` on a pseudo-terminal, read without polling."""

    def __init__(self, db: Path) -> None:
        master, slave = pty.openpty()
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
        self.proc = subprocess.Popen(
            c.cli_command("chat", "--db", str(db), "--no-history"),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.screen = b""

    def wait_ready(self, timeout: float = 600.0) -> bytes:
        """Everything the session printed until it asks for the next line."""
        deadline = time.monotonic() + timeout
        seen = b""
        while True:
            ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise SystemExit(f"chat did not answer within {timeout:.0f} s; last output: {seen[-300:]!r}")
            try:
                data = os.read(self.master, 65536)
            except OSError as exc:  # the session ended (EIO on Linux)
                raise SystemExit(f"chat ended unexpectedly: {exc}; last output: {seen[-300:]!r}") from None
            seen += data
            if READY in data:
                os.write(self.master, CURSOR_REPLY)
                return seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode("utf-8") + b"\r")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> int:
        os.write(self.master, b"\x04")  # Ctrl-D leaves
        try:
            return self.proc.wait(30)
        finally:
            os.close(self.master)


def questions(n: int) -> list[str]:
    lines = QUESTIONS_JSONL.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()][:n]


def pairs(term: Terminal, db: Path, asked: list[str], extractive: bool) -> list[c.Row]:
    label = "extractive" if extractive else "generated"
    warm: list[float] = []
    cold: list[float] = []
    warm_cpu: list[float] = []
    cold_cpu: list[float] = []
    for question in asked:
        c.note(f"{label}: {question[:60]}")
        cpu_before = term.cpu_seconds()
        started = time.perf_counter()
        term.type(question)
        screen = term.wait_ready()
        warm.append(time.perf_counter() - started)
        warm_cpu.append(term.cpu_seconds() - cpu_before)
        if b"Sources" not in screen and b"not in the excerpts" not in screen:
            raise SystemExit(f"chat printed no answer for {question!r}: {screen[-300:]!r}")
        args = ["ask", question, "--db", str(db), *(["--extractive"] if extractive else [])]
        run = c.run_child(c.cli_command(*args))
        if run.returncode not in (0, 4):
            c.check_child(run, "locallens ask")
        cold.append(run.seconds)
        cold_cpu.append(run.cpu_seconds)
    ratios = [w / k for w, k in zip(warm, cold, strict=True)]
    return [
        c.Row(f"{label}: chat at the terminal, median of {len(warm)}", c.fmt_s(c.median(warm))),
        c.Row(f"{label}: cold `ask` process, median of {len(cold)}", c.fmt_s(c.median(cold))),
        c.Row(
            f"{label}: warm / cold, median of the {len(ratios)} pairs",
            f"{c.median(ratios):.2f}",
            note=f"range {min(ratios):.2f}-{max(ratios):.2f}",
        ),
        c.Row(f"{label}: CPU s per question, chat / cold", f"{c.median(warm_cpu):.2f} / {c.median(cold_cpu):.2f}"),
    ]


def main() -> None:
    args = c.parse_args(__doc__ or "", ints=[("--questions", "questions per mode (default 6; --quick: 3)")])
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("bench_chat_tty", args.quick)
    count = args.questions or (3 if args.quick else 6)
    asked = questions(count + 1)
    with c.bench_dir("chat-tty") as tmp:
        db = tmp / "index.db"
        c.note("indexing sample_docs")
        c.check_child(c.run_child(c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(db), "--quiet")), "index")
        table = c.Table("locallens chat at a terminal vs cold ask, sample_docs, default models")
        client_before = resource.getrusage(resource.RUSAGE_SELF)
        term = Terminal(db)
        try:
            term.wait_ready()
            c.note("first question (the models load; not counted)")
            first = time.perf_counter()
            term.type(asked[0])
            term.wait_ready()
            table.rows.append(c.Row("chat: first question, models loading", c.fmt_s(time.perf_counter() - first)))
            table.rows += pairs(term, db, asked[1:], extractive=False)
            term.type("/extractive")
            term.wait_ready()
            table.rows += pairs(term, db, asked[1:], extractive=True)
        finally:
            code = term.close()
        client = resource.getrusage(resource.RUSAGE_SELF)
        client_cpu = client.ru_utime + client.ru_stime - client_before.ru_utime - client_before.ru_stime
        table.rows.append(c.Row("this client's own CPU, whole session", c.fmt_s(client_cpu)))
        table.rows.append(c.Row("chat exit code after Ctrl-D", str(code)))
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()
