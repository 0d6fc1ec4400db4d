"""One question, the next of tests/data/questions.jsonl each run: to time a warm question against a
cold `ask` with a tool that times whole processes (`/usr/bin/time -v`, hyperfine, ...).

    python benchmarks/next_question.py --state /tmp/warm --port 8765      # POST /ask to `locallens serve`
    python benchmarks/next_question.py --state /tmp/cold --db index.db    # exec `locallens ask Q --db index.db --json`
    python benchmarks/next_question.py --state /tmp/chat --tmux bench     # type it into `locallens chat` in tmux

Each run reads a counter from the `--state` file, asks question number counter mod 20 and writes
the counter back, so two such commands run in turn (A B A B ...) ask the same questions in the
same order: each pair is the same question, warm and cold. The warm forms import only the
standard library (about 30 ms of start-up); the cold form replaces itself with the CLI process,
so what is timed is the CLI's own cold start, retrieval and generation. `--tmux TARGET` clears
the screen of a `locallens chat` running in that tmux pane (Ctrl-L), types the question and
Enter, and returns once the answer is printed and the `> ` prompt is back (the screen is read
every 20 ms). `--extractive` asks for
the answer without the LLM in both forms. Exit status: 0 when the question was answered or
refused as nothing relevant (the CLI's 4), else the CLI's or 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent.parent / "tests" / "data" / "questions.jsonl"


def next_question(state: Path) -> str:
    questions = [json.loads(line)["question"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line]
    count = int(state.read_text(encoding="utf-8")) if state.is_file() else 0
    state.write_text(str(count + 1), encoding="utf-8")
    return str(questions[count % len(questions)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, required=True, help="the counter file (a new one starts at question 1)")
    parser.add_argument("--port", type=int, help="a running `locallens serve` on 127.0.0.1")
    parser.add_argument("--db", help="cold: the index `locallens ask` reads")
    parser.add_argument("--tmux", metavar="TARGET", help="a `locallens chat` running in this tmux pane")
    parser.add_argument("--extractive", action="store_true")
    args = parser.parse_args()
    question = next_question(args.state)
    if args.tmux:
        return ask_chat(args.tmux, question)
    if args.port is None:
        if not args.db:
            parser.error("give --port (warm) or --db (cold)")
        command = [sys.executable, "-m", "locallens", "ask", question, "--db", args.db, "--json"]
        os.execv(sys.executable, command + (["--extractive"] if args.extractive else []))
    body = json.dumps({"question": question, "extractive": args.extractive}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{args.port}/ask", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return 0 if json.loads(exc.read()).get("exit_code") == 4 else 1
    return 0


def ask_chat(target: str, question: str, timeout_s: float = 600) -> int:
    """Type `question` into the chat in tmux pane `target`; return once its prompt is back."""
    import subprocess
    import time

    def screen() -> list[str]:
        shown = subprocess.run(["tmux", "capture-pane", "-p", "-t", target], capture_output=True, text=True, check=True)
        return [line.rstrip() for line in shown.stdout.splitlines() if line.strip()]

    subprocess.run(["tmux", "send-keys", "-t", target, "C-l"], check=True)
    deadline = time.monotonic() + 10
    while len(screen()) > 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    subprocess.run(["tmux", "send-keys", "-t", target, "-l", question], check=True)
    subprocess.run(["tmux", "send-keys", "-t", target, "Enter"], check=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.02)
        lines = screen()
        if len(lines) >= 3 and lines[-1] == ">":  # the question, the answer, then the prompt again
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
