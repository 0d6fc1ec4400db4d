"""Citation markers in a checked sentence: kept with their sentence, stripped for checking, repaired for printing."""

from __future__ import annotations

import re

from locallens.prompt import CITATION_RE, citation_numbers

# A citation group right after a sentence's final punctuation belongs to that sentence:
# `... 5433. [1] The next` becomes `... 5433 [1]. The next`.
_CITATION_AFTER_STOP = re.compile(r"([.!?])([ \t]*)((?:" + CITATION_RE.pattern + r"[ \t]*)+)(?=\s|$)")
# List, heading, quote and table markup before a sentence: a bullet only with a space after it,
# so an option that opens it keeps its dashes ("* -c, --current:" is "-c, --current:").
_MARKUP_LEAD = re.compile(r"^(?:\s|#+(?=\s|$)|[>|]|[*+\-](?=\s|$)|\d{1,3}[.)](?=\s))*")
_SPACES = re.compile(r"\s+")
# Bold: a pair of `**` (or `__`) around text that neither starts nor ends with a space, opened
# after no word character and closed before none. An unpaired `**` stays (`f(*args, **kwds)`,
# `2**10`), and so does a Python name between double underscores (`__init__`, `__self__`).
_EMPHASIS = re.compile(r"(?<![\w*\\])(\*\*|__)(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*])")
_DUNDER = re.compile(r"__\w+__")
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
# The closing marks a stop may stand before (`"stop."`, `(see above).`).
_CLOSING_MARKS = "\"'”’»)]"
_CLOSERS = "[" + re.escape(_CLOSING_MARKS) + "]"
_TRAILING_STOP = re.compile(r"([.!?…:;]+" + _CLOSERS + "*)$")


def move_citations_before_stops(text: str) -> str:
    """`... 5433. [1] Next` -> `... 5433 [1]. Next`: a citation stays with the sentence it ends."""
    return _CITATION_AFTER_STOP.sub(lambda m: f" {m.group(3).strip()}{m.group(1)}", text)


def _unbold(match: re.Match[str]) -> str:
    return match.group(0) if _DUNDER.fullmatch(match.group(0)) else match.group(2)


# The space a citation left before a stop ("stated [1]." without its citation): a comma, colon or
# semicolon followed by a space, a closing mark or the end; a `.`, `!` or `?` followed by a closing
# mark, the end, or a space and no lower-case letter. A mark that starts a word (":set",
# ".bashrc", "!!") or is named in a sentence ("the ! character") keeps the space before it.
_SPACE_BEFORE_STOP = re.compile(
    r"[ \t\n]+(?:([,;:])(?=\s|" + _CLOSERS + r"|$)|([.!?])(?=" + _CLOSERS + r"|$|\s+(?![a-z])))"
)


def _stop(match: re.Match[str]) -> str:
    return match.group(1) or match.group(2)


def claim_text(sentence: str) -> str:
    """The sentence without citation markers, list/heading markup and bold marks."""
    body = CITATION_RE.sub("", sentence)
    # Bold marks, outside code, before the list markup (`- **Note:** ...`).
    body = "".join(part if part.startswith("`") else _EMPHASIS.sub(_unbold, part) for part in _CODE_SPAN.split(body))
    body = _MARKUP_LEAD.sub("", body)
    body = _SPACE_BEFORE_STOP.sub(_stop, body)  # where a citation stood before the stop
    return _SPACES.sub(" ", body).strip().strip("|").strip()


def with_citations(sentence: str, keep: set[int], add: int | None) -> str:
    """`sentence` with citation numbers outside `keep` removed, and `[add]` put before its stop."""

    def repl(match: re.Match[str]) -> str:
        numbers = [n for n in dict.fromkeys(citation_numbers(match)) if n in keep]
        return f"[{', '.join(map(str, numbers))}]" if numbers else ""

    text = CITATION_RE.sub(repl, sentence)
    text = _SPACE_BEFORE_STOP.sub(_stop, re.sub(r"[ \t]{2,}", " ", text)).strip()
    if add is not None:
        stop = _TRAILING_STOP.search(text)
        # A labeled list's term ("--timeout <seconds>::") keeps its colons, and a symbol its marks
        # ("$?", a term "!!"): they are no stop, which follows a word or a closing mark.
        after_word = (
            stop is not None
            and stop.start() > 0
            and (text[stop.start() - 1].isalnum() or text[stop.start() - 1] in _CLOSING_MARKS + "`")
        )
        cut = stop.start() if stop and after_word and not text.endswith(("::", ";;")) else len(text)
        text = f"{text[:cut].rstrip()} [{add}]{text[cut:]}"
    return text
