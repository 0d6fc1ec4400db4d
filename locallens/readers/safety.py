"""Checks made before a zip-and-XML file (Office, OpenDocument, EPUB) reaches its library.

- A zip bomb is refused from the central directory alone, before anything is inflated: too many
  members, too much unpacked in total, or a member that inflates more than `MAX_RATIO` times.
- XML that declares entities (`<!ENTITY`) is refused: no Office, OpenDocument or EPUB part
  needs one, and entity expansion ("billion laughs") or external entities are how XML attacks.
  A bare `<!DOCTYPE html>` (every EPUB chapter has one) is harmless and read; the parsers used
  after this check (defusedxml, python-docx's and python-pptx's lxml parsers with entity
  resolution off, html.parser) expand no entity anyway.
- An OOXML file that is an OLE compound file (the wrapper Word, Excel and PowerPoint write a
  password-protected document in) is "encrypted"; an OpenDocument file whose manifest carries
  encryption data too.
"""

from __future__ import annotations

import io
import re
import zipfile

from locallens.readers.base import REASON_ENCRYPTED, ReadSkip

MAX_MEMBERS = 10_000
MAX_UNPACKED = 256 * 1024 * 1024  # bytes, all members together
MAX_RATIO = 200  # unpacked / packed for one member; Office XML packs about 5-20x
_RATIO_FLOOR = 1024 * 1024  # members smaller than this unpacked are never a bomb
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)
_XML_SUFFIXES = (".xml", ".rels", ".opf", ".ncx", ".xhtml", ".html", ".htm", ".svg")


def open_zip(data: bytes, kind: str) -> zipfile.ZipFile:
    """The archive, once its declared sizes are known to be sane; a skip otherwise."""
    if data.startswith(_OLE_MAGIC):
        raise ReadSkip(f"cannot read {kind}: {REASON_ENCRYPTED}", error=True)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise ReadSkip(f"cannot read {kind}: not a valid zip file ({exc})", error=True) from None
    if len(members) > MAX_MEMBERS:
        raise ReadSkip(f"cannot read {kind}: refused, {len(members)} zip members (zip bomb?)", error=True)
    total = 0
    for member in members:
        total += member.file_size
        if member.file_size > _RATIO_FLOOR and member.file_size > MAX_RATIO * max(member.compress_size, 1):
            raise ReadSkip(
                f"cannot read {kind}: refused, {member.filename} unpacks {member.file_size // max(member.compress_size, 1)}x (zip bomb?)",
                error=True,
            )
    if total > MAX_UNPACKED:
        raise ReadSkip(f"cannot read {kind}: refused, unpacks to {total // (1024 * 1024)} MB (zip bomb?)", error=True)
    return archive


def read_member(archive: zipfile.ZipFile, name: str, kind: str) -> bytes:
    """One member's bytes (bounded by the checked sizes), refused if it is XML declaring entities."""
    try:
        data = archive.read(name)
    except KeyError:
        raise ReadSkip(f"cannot read {kind}: {name} is missing", error=True) from None
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise ReadSkip(f"cannot read {kind}: {name}: {exc}", error=True) from None
    if name.lower().endswith(_XML_SUFFIXES) and _ENTITY.search(data):
        raise ReadSkip(f"cannot read {kind}: refused, {name} declares XML entities (entity expansion)", error=True)
    return data


def check_xml_members(archive: zipfile.ZipFile, kind: str) -> None:
    """Every XML member read once and refused if it declares entities, before a library parses it."""
    for member in archive.infolist():
        if member.filename.lower().endswith(_XML_SUFFIXES):
            read_member(archive, member.filename, kind)


def checked_zip(data: bytes, kind: str) -> zipfile.ZipFile:
    """`open_zip` and `check_xml_members`: what every zip-and-XML reader calls first."""
    archive = open_zip(data, kind)
    check_xml_members(archive, kind)
    return archive
