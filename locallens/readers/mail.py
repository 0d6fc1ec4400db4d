"""E-mail: one `.eml` message, or every message of an `.mbox` mailbox (the standard library's
`email` parser). Each message reads as its subject (a heading, and an `.eml`'s title), then
From, To and Date, then the plain-text body (or the HTML body's text when there is no plain
one) and the names of its attachments; attachments themselves are not read.

Every block is cited by the lines of the file it comes from (`digest.eml:12-30`, the same in an
mbox): the subject by its header's lines, From/To/Date by theirs, a body sent as it is (7bit,
8bit) line by line, a quoted-printable or base64 body by the lines it is encoded on."""

from __future__ import annotations

import email
import re
from email import policy
from email.message import EmailMessage
from typing import Any

from locallens.domain import SourceSpan
from locallens.readers.base import Extracted, ReadSkip, TextBuilder, clean_extracted, one_line
from locallens.readers.html_page import parse_html

# mbox: a message starts at a line beginning "From " (the envelope line); a body line that
# began so was written as ">From " and is given back.
_ENVELOPE = re.compile(rb"^From [^\n]*\n", re.MULTILINE)
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
MAX_MESSAGES = 50_000


def read(data: bytes, ext: str) -> Extracted:
    builder = TextBuilder()
    data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")  # lines numbered as `show` numbers them
    if ext == ".mbox":
        starts = [m.start() for m in _ENVELOPE.finditer(data)]
        if not starts:
            raise ReadSkip("cannot read mbox: no message starts with a 'From ' line", error=True)
        for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(data)]), start=1):
            if number > MAX_MESSAGES:
                break
            chunk = data[start:end]
            raw = _ESCAPED_FROM.sub(rb"\1", chunk[chunk.index(b"\n") + 1 :])
            # The message's line 1 is the line after its envelope line.
            first = data.count(b"\n", 0, start) + 2
            _message(builder, email.message_from_bytes(raw, policy=policy.default), raw, first)
        return builder.result()
    message = email.message_from_bytes(data, policy=policy.default)
    if not message.keys():
        raise ReadSkip("cannot read e-mail: no headers", error=True)
    subject = _message(builder, message, data, 1)
    return builder.result(subject)


def _header(message: Any, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a malformed header costs that header
        return ""
    return one_line(str(value)) if value is not None else ""


def _header_lines(raw: bytes) -> tuple[dict[str, tuple[int, int]], int]:
    """Each header's first occurrence as (first, last) line of `raw` (folded lines included),
    and the number of header lines."""
    found: dict[str, tuple[int, int]] = {}
    current = ""
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            return found, number - 1
        if line[:1] in (b" ", b"\t"):
            if current:
                found[current] = (found[current][0], number)
            continue
        name = line.split(b":", 1)[0].strip().decode("latin-1").lower()
        current = "" if name in found else name
        if current:
            found[current] = (number, number)
    return found, len(lines)


def _last_line(raw: bytes) -> int:
    return raw.rstrip(b"\n").count(b"\n") + 1


def _message(builder: TextBuilder, message: Any, raw: bytes, first: int) -> str:
    """Lay one message out; `raw` is its source, whose line 1 is the file's line `first`."""
    at = first - 1  # add to a line of `raw` to get the file's line
    headers, header_count = _header_lines(raw)
    last = max(_last_line(raw), 1)
    subject = _header(message, "Subject")
    where = headers.get("subject", (1, max(header_count, 1)))
    builder.begin("lines", "", where[0] + at, where[1] + at)
    builder.heading(1, subject or "(no subject)")
    names = [name for name in ("From", "To", "Cc", "Date") if _header(message, name)]
    meta = [f"{name}: {_header(message, name)}" for name in names]
    lines = [headers[name.lower()] for name in names if name.lower() in headers]
    if lines:
        builder.begin("lines", "", min(a for a, _ in lines) + at, max(b for _, b in lines) + at)
    builder.add("\n".join(meta))
    builder.end()
    _body(builder, message, raw, header_count, at)
    attachments = []
    if isinstance(message, EmailMessage):
        for part in message.iter_attachments():
            name = part.get_filename()
            if name:
                attachments.append(one_line(name))
    if attachments:
        builder.begin("lines", "", min(header_count + 1, last) + at, last + at)
        builder.add("Attachments: " + ", ".join(attachments))
        builder.end()
    return subject


def _content(part: Any) -> str:
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError, AssertionError):  # unknown or lying charset
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
    return content if isinstance(content, str) else ""


def _payload_at(message: Any, part: Any, raw: bytes, header_count: int) -> tuple[int, int] | None:
    """Where `part`'s body, as encoded, lies in `raw`: its first and last line."""
    after_headers = 0
    for _ in range(header_count):
        after_headers = raw.find(b"\n", after_headers) + 1
    payload = part.get_payload(decode=False)
    if not isinstance(payload, str) or not payload.strip():
        return None
    try:
        encoded = payload.encode("ascii", "surrogateescape")
    except UnicodeEncodeError:
        return None
    # The message's own body is the end of its source (where the parser put it: after the
    # headers, or all of it when a first line is no header); a part's body is after the headers.
    start = raw.rfind(encoded) if part is message else raw.find(encoded, after_headers)
    if start < 0:
        return None
    line = raw.count(b"\n", 0, start) + 1
    return line, line + max(encoded.rstrip(b"\n").count(b"\n"), 0)


def _body(builder: TextBuilder, message: Any, raw: bytes, header_count: int, at: int) -> None:
    if not isinstance(message, EmailMessage):
        return
    part = message.get_body(preferencelist=("plain",))
    html = part is None
    if html:
        part = message.get_body(preferencelist=("html",))
    if part is None:
        return
    content = _content(part)
    where = _payload_at(message, part, raw, header_count)
    as_sent = str(part.get("Content-Transfer-Encoding", "7bit")).strip().lower() in ("7bit", "8bit", "binary")
    if where is not None and as_sent:  # the text's lines are the file's lines, from `where`
        shift = where[0] - 1 + at
        if html:
            text, _, _, html_spans = parse_html(content.replace("\r\n", "\n").replace("\r", "\n"))
            builder.add_spanned(text, [_shifted(span, shift) for span in html_spans])
            return
        text = clean_extracted(content)
        lead = content.replace("\r\n", "\n")[: len(content) - len(content.lstrip())].count("\n")
        spans: list[SourceSpan] = []
        offset = 0
        for number, line in enumerate(text.split("\n"), start=shift + lead + 1):
            if line:
                spans.append(SourceSpan(offset, offset + len(line), "lines", "", number, number))
            offset += len(line) + 1
        builder.add_spanned(text, spans)
        return
    if where is not None:  # quoted-printable, base64: the lines it is encoded on
        builder.begin("lines", "", where[0] + at, where[1] + at)
    builder.add(parse_html(content)[0] if html else content)
    builder.end()


def _shifted(span: SourceSpan, lines: int) -> SourceSpan:
    if span.line_start is None or span.line_end is None:
        return span
    return SourceSpan(span.start, span.end, span.kind, span.label, span.line_start + lines, span.line_end + lines)
