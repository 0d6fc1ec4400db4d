"""The QUESTIONS file of `locallens eval`: plain text or JSONL.

- Plain text: one question per line. Blank lines and lines starting with `#` are ignored.
- JSONL: one object per line, `{"question": str, "files"?: [str], "answers"?: [str],
  "answerable"?: bool}`: the files that hold the answer (relative paths, as `index` stores them),
  the answer as a person would state it (any one of the strings; also used to check that
  trimming keeps it), and `"answerable": false` for a question no document answers (the right
  answer is then the plain refusal). Blank lines and `#` lines are ignored here too; other keys are allowed (an `id`,
  a note) and ignored.

The format is JSONL when the file is named `*.jsonl` / `*.ndjson`, or when its first meaningful
line starts with `{`; then every meaningful line must be a valid object. A bad line is a
UsageError (exit 2) naming the file and the line number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens import safejson
from locallens.errors import UsageError

JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    files: tuple[str, ...] | None = None  # expected source files; None when not given (or empty)
    answers: tuple[str, ...] | None = None  # answer substrings; None when not given (or empty)
    line: int = 0  # 1-based line in the QUESTIONS file
    answerable: bool = True  # False: no document holds the answer; the right answer is a refusal


def normalise_path(path: str) -> str:
    """`./a\\b.md` -> `a/b.md`: the POSIX relative form `index` stores."""
    cleaned = path.strip().replace("\\", "/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    return cleaned.strip("/")


def _string_list(value: Any, key: str, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):  # a lone string is an easy slip; accept it as a list of one
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f'{where}: "{key}" must be a list of strings')
    items = tuple(v for v in (s.strip() for s in value) if v)
    return items or None


def _meaningful(lines: list[str]) -> list[tuple[int, str]]:
    return [(n, s) for n, raw in enumerate(lines, start=1) if (s := raw.strip()) and not s.startswith("#")]


def parse_questions(text: str, *, source: str = "<questions>", jsonl: bool | None = None) -> list[Question]:
    """Parse QUESTIONS text; `jsonl=None` sniffs the format from the first meaningful line."""
    text = text.removeprefix("\ufeff")  # an editor's BOM is not part of the first question
    lines = _meaningful(text.splitlines())
    if not lines:
        raise UsageError(f"{source} holds no questions (blank lines and # comments are ignored)")
    if jsonl is None:
        jsonl = lines[0][1].startswith("{")
    if not jsonl:
        return [Question(text=line, line=n) for n, line in lines]

    questions: list[Question] = []
    for n, line in lines:
        where = f"{source} line {n}"
        try:
            value = safejson.loads(line)
        except ValueError as exc:
            raise UsageError(f"{where}: not valid JSON ({safejson.error_text(exc)})") from None
        if not isinstance(value, dict):
            raise UsageError(f'{where}: expected a JSON object with a "question"')
        question = value.get("question")
        if not isinstance(question, str) or not question.strip():
            raise UsageError(f'{where}: "question" must be a non-empty string')
        files = _string_list(value.get("files"), "files", where)
        answerable = value.get("answerable", True)
        if not isinstance(answerable, bool):
            raise UsageError(f'{where}: "answerable" must be true or false')
        questions.append(
            Question(
                text=question.strip(),
                files=tuple(normalise_path(f) for f in files) if files else None,
                answers=_string_list(value.get("answers"), "answers", where),
                line=n,
                answerable=answerable,
            )
        )
    return questions


def load_questions(path: Path) -> list[Question]:
    """Read and parse a QUESTIONS file (see the module doc); UsageError when it cannot be used."""
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"no such questions file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"the questions file is a directory: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the questions file {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UsageError(f"{path} line {line}: not UTF-8 text") from None
    jsonl = True if path.suffix.lower() in JSONL_SUFFIXES else None
    return parse_questions(text, source=str(path), jsonl=jsonl)
