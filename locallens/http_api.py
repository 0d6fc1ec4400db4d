"""`locallens serve`: the warm core over a small local HTTP JSON API, and its client.

Endpoints (bodies and results are the MCP tools' arguments and results, `locallens.service`):

    POST /ask      {"question", "brain"?, "top_k"?, "trim"?, "hybrid"?, "path"?, "extractive"?, "max_tokens"?}
    POST /search   {"query", "brain"?, "top_k"?, "trim"?, "hybrid"?, "path"?, "max_tokens"?}
    POST /get      {"id" | "path", "brain"?}
    GET  /status   (?brain=NAME)
    GET  /health   {"ok": true, "version", "uptime_s", "requests"}

Errors are `{"error": message, "exit_code": n}` with the CLI's exit code and an HTTP status:
400 bad request or argument (2), 401 missing or wrong token, 404 no such index, brain or
document (3), 422 nothing relevant found (4), 503 model or database unavailable (6, 8-10), 500
otherwise.
A refused answer (`"refused": true`) is a 200: it is an answer.

It listens on 127.0.0.1 unless told otherwise; a bearer token (`--token`, `LOCALLENS_TOKEN`) is
required on every request when set, and setting one is required to listen beyond loopback.
Requests are served by threads (searches run concurrently; the LLM is behind one lock).
"""

from __future__ import annotations

import hmac
import json
import sys
import time
import urllib.error
import urllib.request
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from typing import Any
from urllib.parse import parse_qs, urlparse

from locallens import __version__
from locallens.errors import LocallensError, UsageError
from locallens.service import Service

MAX_BODY = 1_000_000  # bytes; a question is capped far below this
_STATUS_BY_EXIT = {
    2: HTTPStatus.BAD_REQUEST,
    3: HTTPStatus.NOT_FOUND,
    4: HTTPStatus.UNPROCESSABLE_ENTITY,
    6: HTTPStatus.SERVICE_UNAVAILABLE,
    8: HTTPStatus.SERVICE_UNAVAILABLE,  # the PostgreSQL server is unreachable
    9: HTTPStatus.SERVICE_UNAVAILABLE,  # it refused our login: the server's problem, not the caller's
    10: HTTPStatus.SERVICE_UNAVAILABLE,  # it has no pgvector
}
_POST_TOOLS = {"/ask": "ask", "/search": "search", "/get": "get"}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token."""
    if not is_loopback(host) and not token:
        raise UsageError(f"--host {host} listens beyond this machine: set a token (--token or LOCALLENS_TOKEN)")


class _Handler(BaseHTTPRequestHandler):
    service: Service
    token: str | None
    server_version = f"locallens/{__version__}"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a person reads stderr for errors, not for every request

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, exit_code: int) -> None:
        self._send(status, {"error": message, "exit_code": exit_code})

    def _authorised(self) -> bool:
        if not self.token:
            return True
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            return True
        self._error(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token", 2)
        return False

    def _run(self, tool: str, arguments: Any) -> None:
        try:
            self._send(HTTPStatus.OK, self.service.call(tool, arguments))
        except LocallensError as exc:
            self._error(_STATUS_BY_EXIT.get(exc.exit_code, HTTPStatus.INTERNAL_SERVER_ERROR), str(exc), exc.exit_code)
        except Exception as exc:
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"unexpected {type(exc).__name__}: {exc}", 1)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/health":
            self._send(
                HTTPStatus.OK,
                {
                    "ok": True,
                    "version": __version__,
                    "uptime_s": round(time.time() - self.service.started, 1),
                    "requests": self.service.requests,
                },
            )
            return
        if not self._authorised():
            return
        if url.path == "/status":
            brain = parse_qs(url.query).get("brain", [None])[0]
            self._run("status", {"brain": brain} if brain else {})
            return
        self._error(HTTPStatus.NOT_FOUND, f"no such endpoint: GET {url.path}", 2)

    def do_POST(self) -> None:
        url = urlparse(self.path)
        tool = _POST_TOOLS.get(url.path)
        if tool is None:
            self._error(HTTPStatus.NOT_FOUND, f"no such endpoint: POST {url.path}", 2)
            return
        if not self._authorised():
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._error(HTTPStatus.BAD_REQUEST, f"the body must be a JSON object of at most {MAX_BODY} bytes", 2)
            return
        try:
            arguments = json.loads(self.rfile.read(length) or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {exc}", 2)
            return
        self._run(tool, arguments)


def make_server(service: Service, host: str, port: int, token: str | None) -> ThreadingHTTPServer:
    """A bound, not yet serving, HTTP server (port 0 picks a free port: see `server_address`)."""
    check_bind(host, token)
    handler = type("Handler", (_Handler,), {"service": service, "token": token})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server.daemon_threads = True
    return server


# -- the client (`ask --server URL`) ------------------------------------------------------------


class ServerUnavailable(Exception):
    """The server did not answer (down, refused, timed out): the caller works locally instead."""


def post(
    url: str, endpoint: str, body: dict[str, Any], *, token: str | None = None, timeout: float = 600.0
) -> tuple[int, dict[str, Any]]:
    """POST JSON to a locallens server: (HTTP status, JSON body). ServerUnavailable when unreachable."""
    request = urllib.request.Request(
        url.rstrip("/") + endpoint,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except (json.JSONDecodeError, OSError):
            return exc.code, {"error": f"HTTP {exc.code} from {url}", "exit_code": 1}
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
        raise ServerUnavailable(str(getattr(exc, "reason", exc))) from None


def print_listening(host: str, port: int) -> None:
    print(
        f"locallens: serving on http://{host}:{port} (POST /ask /search /get, GET /status /health)",
        file=sys.stderr,
        flush=True,
    )
