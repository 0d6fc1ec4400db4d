"""`locallens pull URL`: a GGUF from a plain web address (not the model hub), resumable and checked.

The hub's client only speaks to the hub, so a GGUF published elsewhere (a release page, a
mirror, a server on the local network) is fetched here with the standard library:

- Where: `$LOCALLENS_HOME/models/URLKEY/FILE.gguf` (`URLKEY`: the first 16 hex digits of the
  SHA-256 of the URL without its `#fragment`), with `source.json` beside it (the URL, the size,
  the SHA-256 of the bytes and whether it was checked against a published one). `--llm URL`
  then finds the file there, offline (`cached`).
- Resume: the bytes arrive in `FILE.gguf.incomplete`; a connection that drops mid-file is asked
  for the rest with a Range request (up to `RETRIES` times in one run), and a later `pull` of the
  same URL continues from the bytes the earlier one left, whether it failed or was killed. The
  server's validator (ETag, else Last-Modified) is kept beside the partial file and sent as
  If-Range, so a file that changed on the server in between is downloaded whole, never spliced.
  A server that ignores Range (200 instead of 206) gets the download started over.
- Checks: the SHA-256 given (`--sha256 HEX`, or the URL's `#sha256=HEX` fragment, as pip reads
  it) must match the bytes: a mismatch removes them and is exit 6. Without one the file is kept
  as unverified (`verified: false`, said in the output). Either way the file must start with
  the GGUF magic, else it is removed and exit 6.
- Bounds: every connect and read waits at most `TIMEOUT_S`; no answer, a refused connection or
  an HTTP error is one line and exit 6. Two pulls of one URL at once take turns (a lock file).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from locallens.errors import ModelUnavailableError, UsageError

TIMEOUT_S = 20.0  # one socket timeout: the connect, the TLS handshake and every read
RETRIES = 5  # Range requests after a drop, within one run
BLOCK = 1 << 18
GGUF_MAGIC = b"GGUF"
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


@dataclass(frozen=True, slots=True)
class Fetched:
    path: Path
    size: int
    sha256: str
    verified: bool  # checked against a SHA-256 the user gave


def split_url(value: str, sha256: str | None = None) -> tuple[str, str, str | None]:
    """(url without fragment, file name, expected SHA-256 or None); UsageError if it is not a GGUF URL."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{value} is not an http(s) URL")
    filename = unquote(parts.path.rsplit("/", 1)[-1])
    if not filename.lower().endswith(".gguf") or filename.startswith(".") or "\\" in filename:
        raise UsageError(f"{value} does not name a .gguf file: pull takes a URL only for a GGUF")
    fragment = dict(p.split("=", 1) for p in parts.fragment.split("&") if "=" in p)
    given = {checked_sha256(v) for v in (sha256, fragment.get("sha256")) if v is not None}
    if len(given) > 1:
        raise UsageError("--sha256 and the URL's #sha256= fragment differ")
    return urlunsplit(parts._replace(fragment="")), filename, (given.pop() if given else None)


def checked_sha256(value: str) -> str:
    """A SHA-256 as 64 lower-case hex digits; UsageError otherwise."""
    value = value.strip().lower().removeprefix("sha256:")
    if not _HEX64.match(value):
        raise UsageError(f"a SHA-256 is 64 hexadecimal digits (got {value!r})")
    return value


def folder_of(url: str) -> Path:
    from locallens.config import locallens_home

    return locallens_home() / "models" / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def cached(value: str) -> Path | None:
    """The file a finished `pull URL` left, or None. Offline: reads the disk only."""
    url, filename, _ = split_url(value)
    path = folder_of(url) / filename
    return path if path.is_file() and (path.parent / "source.json").is_file() else None


def downloads() -> list[dict[str, Any]]:
    """What every finished `pull URL` recorded (`source.json`, plus `path`), for `locallens models`."""
    from locallens.config import locallens_home

    out = []
    for source in sorted((locallens_home() / "models").glob("*/source.json")):
        try:
            record = json.loads(source.read_text(encoding="utf-8"))
            path = source.parent / str(record["file"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if path.is_file():
            out.append({**record, "path": str(path)})
    return out


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    from locallens.config import make_private_dir

    make_private_dir(folder)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _unreachable(url: str, exc: BaseException) -> ModelUnavailableError:
    import urllib.error

    host = urlsplit(url).hostname
    if isinstance(exc, urllib.error.HTTPError):
        return ModelUnavailableError(f"cannot pull {url}: the server answered HTTP {exc.code} {exc.reason}")
    reason = getattr(exc, "reason", exc)
    kind = (
        f"no answer within {TIMEOUT_S:g} s"
        if isinstance(reason, TimeoutError)
        else str(reason) or type(reason).__name__
    )
    return ModelUnavailableError(f"cannot pull {url}: {host} cannot be reached ({kind}); pull needs the network")


def _sha256_of(path: Path) -> Any:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            digest.update(block)
    return digest


def fetch(value: str, sha256: str | None = None, *, progress: bool = True) -> Fetched:
    """Download the GGUF at `value` (resuming what an earlier run left); ModelUnavailableError (exit 6) on failure."""
    url, filename, expected = split_url(value, sha256)
    folder = folder_of(url)
    final = folder / filename
    with _locked(folder):
        record = folder / "source.json"
        if final.is_file() and record.is_file():
            kept = json.loads(record.read_text(encoding="utf-8"))
            if expected is None or kept.get("sha256") == expected:
                return Fetched(final, final.stat().st_size, kept["sha256"], bool(kept.get("verified")))
            final.unlink()  # asked for other bytes than the ones kept: download again
        part = folder / f"{filename}.incomplete"
        digest = _download(url, part, progress)
        actual = digest.hexdigest()
        if expected is not None and actual != expected:
            part.unlink(missing_ok=True)
            _forget(part)
            raise ModelUnavailableError(
                f"checksum mismatch for {url}: expected sha256:{expected}, the download is sha256:{actual}; "
                "the file was removed, pull again"
            )
        with open(part, "rb") as fh:
            magic = fh.read(len(GGUF_MAGIC))
        if magic != GGUF_MAGIC:
            part.unlink(missing_ok=True)
            _forget(part)
            raise ModelUnavailableError(f"{url} is not a GGUF file (it does not start with 'GGUF'); it was removed")
        os.replace(part, final)
        _forget(part)
        size = final.stat().st_size
        record.write_text(
            json.dumps(
                {"url": url, "file": filename, "bytes": size, "sha256": actual, "verified": expected is not None}
            )
            + "\n",
            encoding="utf-8",
        )
        return Fetched(final, size, actual, expected is not None)


def _validator_path(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def _forget(part: Path) -> None:
    _validator_path(part).unlink(missing_ok=True)


def _download(url: str, part: Path, progress: bool) -> Any:
    """Fill `part` with the whole file at `url`, resuming the bytes already there; the SHA-256 of it all."""
    import http.client
    import urllib.error
    import urllib.request

    saved = _validator_path(part)
    validator = ""
    if part.exists() and saved.is_file():
        try:
            validator = str(json.loads(saved.read_text(encoding="utf-8")).get("validator") or "")
        except (OSError, ValueError, AttributeError):
            validator = ""
    if not validator:
        part.unlink(missing_ok=True)  # bytes of unknown origin are never spliced onto
        _forget(part)
    bar: Callable[[int, int | None], None] = _bar(part.name.removesuffix(".incomplete")) if progress else _no_bar
    connected, drops = False, 0
    while True:
        have = part.stat().st_size if part.exists() else 0
        headers = {"User-Agent": "locallens", "Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
            if validator:
                headers["If-Range"] = validator
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S) as response:
                connected = True
                total = _total(response, have)
                if have and response.status != 206:
                    have = 0  # the whole file came back (Range ignored, or the file changed): start over
                validator = response.headers.get("ETag") or response.headers.get("Last-Modified") or ""
                if validator.startswith("W/"):
                    validator = ""  # a weak ETag cannot vouch for bytes
                if validator:
                    saved.write_text(json.dumps({"validator": validator}), encoding="utf-8")
                else:
                    _forget(part)  # nothing to check a resume against: a later run starts over
                with open(part, "ab" if have else "wb") as out:
                    bar(have, total)
                    for block in iter(lambda: response.read1(BLOCK), b""):  # what has arrived, on disk now
                        out.write(block)
                        have += len(block)
                        bar(have, total)
            bar(-1, None)
            if total is None or have >= total:
                if total is not None and have > total:
                    raise ModelUnavailableError(f"cannot pull {url}: the server sent more bytes than it announced")
                return _sha256_of(part)
            raise ConnectionError(f"the connection closed after {have} of {total} bytes")
        except urllib.error.HTTPError as exc:
            bar(-1, None)
            if exc.code == 416 and have:  # the bytes kept are not a prefix of this file: start over
                part.unlink(missing_ok=True)
                _forget(part)
                validator = ""
                continue
            raise _unreachable(url, exc) from None
        except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, reset, timeout, cut off
            bar(-1, None)
            if not connected:
                raise _unreachable(url, exc) from None
            drops += 1
            if drops > RETRIES:
                kept = part.stat().st_size if part.exists() and validator else 0
                raise ModelUnavailableError(
                    f"cannot pull {url}: the connection dropped {drops} times ({type(exc).__name__}); "
                    + (f"the {kept} bytes received are kept: run pull again to continue" if kept else "pull again")
                ) from None
            time.sleep(min(2.0, 0.25 * drops))


def _total(response: Any, have: int) -> int | None:
    """The whole file's size from Content-Range (206) or Content-Length (200), if the server says."""
    if response.status == 206:
        match = re.match(r"bytes (\d+)-\d+/(\d+)", response.headers.get("Content-Range") or "")
        if match is None or int(match.group(1)) != have:
            raise ValueError("the server answered the Range request with another range")
        return int(match.group(2))
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _no_bar(done: int, total: int | None) -> None:
    return None


def _bar(name: str) -> Callable[[int, int | None], None]:
    """A tqdm bar on stderr, like the hub client's: (bytes so far, total); (-1, None) closes it."""
    from tqdm.auto import tqdm

    state: dict[str, Any] = {}

    def update(done: int, total: int | None) -> None:
        shown = state.get("bar")
        if done < 0:
            if shown is not None:
                shown.close()
                state.pop("bar")
            return
        if shown is None:
            shown = state["bar"] = tqdm(total=total, initial=done, unit="B", unit_scale=True, desc=name, leave=False)
        shown.update(done - shown.n)

    return update
