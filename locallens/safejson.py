"""JSON from callers and files line by line, with limits: what a server body, an `ask --batch` line
and a JSONL questions line are parsed with.

`loads` is `json.loads` that refuses, with a ValueError saying why, what would cost a traceback
or unbounded work: a number of more than `MAX_DIGITS` characters (Python refuses to convert
over 4,300 digits with a ValueError of its own, and huge ones are slow), NaN and Infinity (not
JSON), a float that overflows to infinity, and nesting so deep the parser would recurse out of
stack (a RecursionError, turned into ValueError here).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DIGITS = 40


def _number(text: str, convert: Any) -> Any:
    if len(text) > MAX_DIGITS:
        raise ValueError(f"a number of {len(text)} characters (at most {MAX_DIGITS})")
    value = convert(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str | bytes) -> Any:
    """Parse JSON text (bytes must be UTF-8); ValueError naming the problem otherwise."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    try:
        return json.loads(
            text,
            parse_int=lambda t: _number(t, int),
            parse_float=lambda t: _number(t, float),
            parse_constant=_constant,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None


def error_text(exc: ValueError) -> str:
    """A one-line reason for a `loads` failure."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start})"
    return str(exc)
