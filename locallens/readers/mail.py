"""E-mail: one `.eml` message, or every message of an `.mbox` mailbox (the standard library's
`email` parser). Each message reads as its subject (a heading, and an `.eml`'s title), then
From, To and Date, then the plain-text body (or the HTML body's text when there is no plain
one) and the names of its attachments; attachments themselves are not read. An mbox message is
cited by its number."""

from __future__ import annotations

import email
import re
from email import policy
from email.message import EmailMessage
from typing import Any

from locallens.readers.base import Extracted, ReadSkip, TextBuilder, one_line
from locallens.readers.html_page import html_text

# mbox: a message starts at a line beginning "From " (the envelope line); a body line that
# began so was written as ">From " and is given back.
_ENVELOPE = re.compile(rb"^From [^\n]*\n", re.MULTILINE)
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
MAX_MESSAGES = 50_000


def read(data: bytes, ext: str) -> Extracted:
    builder = TextBuilder()
    if ext == ".mbox":
        starts = [m.start() for m in _ENVELOPE.finditer(data)]
        if not starts:
            raise ReadSkip("cannot read mbox: no message starts with a 'From ' line", error=True)
        for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(data)]), start=1):
            if number > MAX_MESSAGES:
                break
            chunk = data[start:end]
            raw = _ESCAPED_FROM.sub(rb"\1", chunk[chunk.index(b"\n") + 1 :])
            builder.begin("message", str(number))
            _message(builder, email.message_from_bytes(raw, policy=policy.default))
        return builder.result()
    message = email.message_from_bytes(data, policy=policy.default)
    if not message.keys():
        raise ReadSkip("cannot read e-mail: no headers", error=True)
    subject = _message(builder, message)
    return builder.result(subject)


def _header(message: Any, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a malformed header costs that header
        return ""
    return one_line(str(value)) if value is not None else ""


def _message(builder: TextBuilder, message: Any) -> str:
    subject = _header(message, "Subject")
    builder.heading(1, subject or "(no subject)")
    meta = [f"{name}: {value}" for name in ("From", "To", "Cc", "Date") if (value := _header(message, name))]
    builder.add("\n".join(meta))
    builder.add(_body(message))
    attachments = []
    if isinstance(message, EmailMessage):
        for part in message.iter_attachments():
            name = part.get_filename()
            if name:
                attachments.append(one_line(name))
    if attachments:
        builder.add("Attachments: " + ", ".join(attachments))
    return subject


def _content(part: Any) -> str:
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError, AssertionError):  # unknown or lying charset
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
    return content if isinstance(content, str) else ""


def _body(message: Any) -> str:
    if not isinstance(message, EmailMessage):
        return ""
    plain = message.get_body(preferencelist=("plain",))
    if plain is not None:
        return _content(plain)
    html = message.get_body(preferencelist=("html",))
    if html is not None:
        return html_text(_content(html))[0]
    return ""
