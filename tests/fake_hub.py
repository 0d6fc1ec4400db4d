"""A model hub on 127.0.0.1 for the `pull` tests: the few endpoints the hub client uses.

- `GET /api/models/OWNER/REPO[/revision/REV]`: the model's info with its files (size, git blob
  hash, and for large files the LFS SHA-256), as the hub answers `model_info(files_metadata=True)`;
  `HEAD` of it answers the reachability probe.
- `HEAD|GET /OWNER/REPO/resolve/REV/FILE`: a file, with the headers the client reads (commit,
  ETag, linked size and ETag for LFS files) and Range requests.

- `GET /files/NAME`: a file outside the hub (`files`), as a plain web server serves it: strong
  ETag, Range requests honoured only with a matching If-Range (else the whole file, 200).

Faults, per file name: `break_once` sends three quarters of the file on the first GET and drops the
connection (the client must resume with a Range request); `corrupt` serves other bytes of the
same length than the checksum published (the client must refuse them); `stall_after[name] = n`
sends a GET the file's bytes up to byte n (none past it, from whatever start it asks) and then
waits, sending nothing more, until `release` is set (the test kills the client meanwhile: a
download cut off between two runs).
`requests` records (method, path, Range header) of every request; `if_range` the If-Range
header of each Range request.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_OVER = 1024  # files larger than this are stored as LFS files, as on the hub


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(self, repos: dict[str, dict[str, bytes]]) -> None:
        self.repos = repos
        self.break_once: set[str] = set()
        self.corrupt: set[str] = set()
        self.stall_after: dict[str, int] = {}
        self.release = threading.Event()
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self.if_range: list[str | None] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                hub.handle(self, head=True)

            def do_GET(self) -> None:
                hub.handle(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    # -- answers ---------------------------------------------------------------------------------

    def info(self, repo: str) -> dict[str, Any]:
        siblings = []
        for name, data in sorted(self.repos[repo].items()):
            entry: dict[str, Any] = {"rfilename": name, "size": len(data), "blobId": git_sha1(data)}
            if len(data) > LFS_OVER:
                entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(entry)
        return {"id": repo, "modelId": repo, "sha": COMMIT, "private": False, "siblings": siblings, "tags": []}

    def handle(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        path = h.path.split("?")[0]
        self.requests.append((h.command, path, h.headers.get("Range")))
        if h.headers.get("Range"):
            self.if_range.append(h.headers.get("If-Range"))
        if path.startswith("/files/"):
            return self.serve_file(h, path.removeprefix("/files/"), head)
        api = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/[^/]+)?$", path)
        if api:
            repo = api.group(1)
            if repo not in self.repos:
                return self.send(h, 404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}, head)
            return self.send(h, 200, json.dumps(self.info(repo)).encode(), {"Content-Type": "application/json"}, head)
        resolve = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if not resolve or resolve.group(1) not in self.repos or resolve.group(3) not in self.repos[resolve.group(1)]:
            return self.send(h, 404, b"not found", {"X-Error-Code": "EntryNotFound"}, head)
        repo, _, name = resolve.groups()
        data = self.repos[repo][name]
        headers = {"X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if len(data) > LFS_OVER:
            sha = hashlib.sha256(data).hexdigest()
            headers.update({"ETag": f'"{sha}"', "X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data))})
        else:
            headers["ETag"] = f'"{git_sha1(data)}"'
        if head:
            return self.send(h, 200, data, headers, head=True)
        if name in self.corrupt:
            data = bytes(b ^ 0xFF for b in data)
        start = 0
        if rng := re.match(r"bytes=(\d+)-", h.headers.get("Range") or ""):
            start = int(rng.group(1))
        return self.send_range(h, name, data, start, headers)

    def serve_file(self, h: BaseHTTPRequestHandler, name: str, head: bool) -> None:
        if name not in self.files:
            return self.send(h, 404, b"not found", {}, head)
        data = self.files[name]
        etag = f'"{hashlib.sha256(data).hexdigest()[:20]}"'
        headers = {"ETag": etag, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if head:
            return self.send(h, 200, data, headers, head=True)
        start = 0
        rng = re.match(r"bytes=(\d+)-", h.headers.get("Range") or "")
        if rng and h.headers.get("If-Range") in (None, etag):
            start = int(rng.group(1))
            if start >= len(data):
                return self.send(h, 416, b"", {"Content-Range": f"bytes */{len(data)}"}, head=False)
        if name in self.corrupt:
            data = bytes(b ^ 0xFF for b in data)
        return self.send_range(h, name, data, start, headers)

    def send_range(
        self, h: BaseHTTPRequestHandler, name: str, data: bytes, start: int, headers: dict[str, str]
    ) -> None:
        """`data` from `start` (206 when not 0), with the faults set for `name`."""
        if name in self.stall_after:
            # The file up to byte n, then nothing until released, however it is asked for: a client
            # that times out during the stall and resumes (a loaded machine) stalls there again.
            if start:
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            h.send_response(206 if start else 200)
            for key, value in headers.items():
                h.send_header(key, value)
            h.send_header("Content-Length", str(len(data) - start))
            h.end_headers()
            h.wfile.write(data[start : max(start, self.stall_after[name])])
            h.wfile.flush()
            self.release.wait(60)
            h.close_connection = True
            return None
        if name in self.break_once and start == 0:
            self.break_once.discard(name)
            h.send_response(200)
            for key, value in headers.items():
                h.send_header(key, value)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[: len(data) * 3 // 4])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return None
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            return self.send(h, 206, data[start:], headers, head=False)
        return self.send(h, 200, data, headers, head=False)

    @staticmethod
    def send(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)
