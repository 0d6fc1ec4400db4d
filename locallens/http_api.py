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

What a burst or a hostile client meets (docs/behaviour.md#servers-and-agents): a listen backlog
of `LISTEN_BACKLOG` (a burst waits, it is not reset); at most `MAX_THREADS` connections served at
once (more wait in the backlog); `SOCKET_TIMEOUT_S` on every read and write of a connection (a
client that stalls, mid-request or idle between requests, is closed); a JSON error for every
method, path and malformed request (HTTP/0.9 included, 405 for other methods); JSON bodies
parsed by `safejson.loads` (bounded numbers, no NaN or Infinity, no recursion error) and their
depth capped by the service's argument checks; a client that disconnects costs no line on stderr.
"""

from __future__ import annotations

import hmac
import json
import re
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from typing import Any
from urllib.parse import parse_qs, urlparse, urlsplit

from locallens import __version__, safejson
from locallens.errors import LocallensError, UsageError
from locallens.service import Service

MAX_BODY = 1_000_000  # bytes; a question is capped far below this
LISTEN_BACKLOG = 1024  # the kernel caps it at net.core.somaxconn (4096 on current Linux)
MAX_THREADS = 256  # connections served at once
SOCKET_TIMEOUT_S = 10.0  # on each read and write of a connection
_DISCONNECTS = (ConnectionError, TimeoutError)  # BrokenPipeError and ConnectionResetError included
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


class _Server(ThreadingHTTPServer):
    """Threads per connection, at most MAX_THREADS at once; disconnects are not errors."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_THREADS)

    def process_request(self, request: Any, client_address: Any) -> None:
        self._slots.acquire()  # the accept loop waits here; new connections wait in the backlog
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, _DISCONNECTS):
            return  # the client went away or stalled: nothing for a person to do
        print(f"locallens: warning: a request failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


class _Handler(BaseHTTPRequestHandler):
    service: Service
    token: str | None
    server_version = f"locallens/{__version__}"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S  # StreamRequestHandler sets it on the connection's socket

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a person reads stderr for errors, not for every request

    def _send(self, status: int, body: dict[str, Any] | None) -> None:
        data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # answer with a status line the client can read
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except _DISCONNECTS:
            self.close_connection = True  # the client is gone: nobody to tell

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error http.server itself raises (bad request line, unsupported method, ...) as JSON."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self.close_connection = True
        self._send(code, {"error": message or phrase, "exit_code": 2 if 400 <= code < 500 else 1})

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":
            self.send_error(HTTPStatus.BAD_REQUEST, "HTTP/0.9 is not supported: send HTTP/1.0 or HTTP/1.1")
            return False
        return True

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED,
            None
            if self.command == "HEAD"
            else {
                "error": f"method {self.command} not allowed: GET /status /health, POST /ask /search /get",
                "exit_code": 2,
            },
        )

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

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
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            self._error(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length", 2)
            return
        text = (self.headers.get("Content-Length") or "0").strip()
        length = int(text) if text.isdigit() and len(text) <= 12 else -1
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True  # its body is not read: the connection cannot be reused
            self._error(HTTPStatus.BAD_REQUEST, f"the body must be a JSON object of at most {MAX_BODY} bytes", 2)
            return
        raw = self.rfile.read(length)
        if len(raw) < length:
            self.close_connection = True
            return  # the client closed before sending its whole body
        try:
            arguments = safejson.loads(raw) if raw.strip() else {}
        except ValueError as exc:  # not JSON, not UTF-8, a huge number, too deep
            self._error(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {safejson.error_text(exc)}", 2)
            return
        self._run(tool, arguments)


def make_server(service: Service, host: str, port: int, token: str | None) -> ThreadingHTTPServer:
    """A bound, not yet serving, HTTP server (port 0 picks a free port: see `server_address`)."""
    check_bind(host, token)
    handler = type("Handler", (_Handler,), {"service": service, "token": token})
    try:
        return _Server((host, port), handler)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


# -- the client (`ask --server URL`) ------------------------------------------------------------


class ServerUnavailable(Exception):
    """The server did not answer (down, refused, timed out): the caller works locally instead."""


CONNECT_TIMEOUT_S = 5.0  # the client's: a server that is down or unreachable is noticed in seconds
READ_TIMEOUT_S = 300.0  # between two reads: an answer waits for the LLM, one generation at a time


def _redacted(text: str) -> str:
    """`text` with anything between `//` and `@` (user and password) masked."""
    return re.sub(r"//[^/?#]*@", "//***@", text)


def parse_server_url(value: str) -> str:
    """A `--server` URL checked once: http or https, a host, a port in range, no user or password
    (the token goes in --token), no query or fragment. UsageError naming what is wrong, with any
    credentials masked. Returns the URL without a trailing slash."""
    text = value.strip()
    shown = _redacted(text)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError when out of range or not a number
    except ValueError as exc:
        raise UsageError(f"{shown!r} is not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise UsageError(f"{shown!r} is not an http:// or https:// URL")
    if "@" in parts.netloc:
        raise UsageError(f"{shown!r} carries a user or password: give the token with --token or LOCALLENS_TOKEN")
    if not parts.hostname:
        raise UsageError(f"{shown!r} names no host")
    if parts.query or parts.fragment:
        raise UsageError(f"{shown!r} has a query or fragment: give the server's base URL")
    return text.rstrip("/")


def post(
    url: str,
    endpoint: str,
    body: dict[str, Any],
    *,
    token: str | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    read_timeout: float = READ_TIMEOUT_S,
) -> tuple[int, dict[str, Any]]:
    """POST JSON to a locallens server: (HTTP status, JSON body). ServerUnavailable when it cannot
    be reached in `connect_timeout` or stops answering for `read_timeout`."""
    import http.client

    parts = urlsplit(parse_server_url(url))
    connection_class = http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "", parts.port, timeout=connect_timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.connect()  # the TLS handshake included, within connect_timeout
        assert connection.sock is not None
        connection.sock.settimeout(read_timeout)
        connection.request("POST", parts.path.rstrip("/") + endpoint, json.dumps(body).encode("utf-8"), headers)
        response = connection.getresponse()
        raw = response.read()
    except (OSError, http.client.HTTPException) as exc:
        reason = "no answer in time" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        raise ServerUnavailable(reason) from None
    finally:
        connection.close()
    try:
        data = safejson.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return response.status, {"error": f"HTTP {response.status} from {url}, not a locallens answer", "exit_code": 1}
    return response.status, data


def print_listening(host: str, port: int) -> None:
    print(
        f"locallens: serving on http://{host}:{port} (POST /ask /search /get, GET /status /health)",
        file=sys.stderr,
        flush=True,
    )
