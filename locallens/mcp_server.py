"""`locallens mcp`: the warm core (`locallens.service`) as a Model Context Protocol server.

Built on the official `mcp` SDK's low-level `Server`, so that each tool's input schema is
exactly `service.TOOLS`' (with `additionalProperties: false`) and every call goes through
`service.validate`: an unknown argument or a bad value comes back as a tool error that names it.
Tool results carry the JSON both as text and as structured content. Every indexed document is
a resource, `locallens://BRAIN/RELATIVE/PATH`, whose text is the document as stored.

Transports: stdio (what editors and desktop assistants launch), or streamable HTTP on
`--http HOST:PORT` (loopback by default; the SDK's DNS-rebinding protection stays on there).
Tool calls run in worker threads: searches run concurrently, generations one at a time.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from locallens import __version__
from locallens.errors import LocallensError, UsageError
from locallens.service import MAX_ARGUMENT_CHARS, MAX_NAME_CHARS, MAX_PATH_CHARS, TOOLS, Service

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

SCHEME = "locallens"
# An escaped brain name and path (each character at most 3 times as long), and the scheme.
MAX_URI_CHARS = 3 * (MAX_NAME_CHARS + MAX_PATH_CHARS) + 16
# A request body of streamable HTTP: the tool arguments' cap (each character up to 4 UTF-8
# bytes, or 6 escaped) and room for the JSON-RPC envelope. Larger ones are refused unread.
MAX_HTTP_BODY = 6 * MAX_ARGUMENT_CHARS + 65_536
INSTRUCTIONS = (
    "locallens answers questions from the user's own indexed files, on this machine. Use `search` to "
    "get cited excerpts to reason over, `ask` for a checked, cited answer, `get` to read a chunk or "
    "a whole document, `status` to see what is indexed."
)


def resource_uri(brain: str, path: str) -> str:
    return f"{SCHEME}://{quote(brain, safe='')}/{quote(path, safe='/')}"


def parse_resource_uri(uri: str) -> tuple[str, str]:
    prefix = f"{SCHEME}://"
    if len(uri) > MAX_URI_CHARS:
        raise UsageError(f"resource URI longer than {MAX_URI_CHARS} characters")
    if not uri.startswith(prefix) or "/" not in uri[len(prefix) :]:
        raise LocallensError(f"not a locallens resource: {uri}")
    brain, _, path = uri[len(prefix) :].partition("/")
    return unquote(brain), unquote(path)


def build_server(service: Service) -> Server[Any]:
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=spec["description"], input_schema=spec["schema"])
                for name, spec in TOOLS.items()
            ]
        )

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await anyio.to_thread.run_sync(service.call, params.name, params.arguments or {})
        except LocallensError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"error: {exc}")], is_error=True)
        except Exception as exc:
            message = f"error: unexpected {type(exc).__name__}: {exc}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
        text = json.dumps(result, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result)

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        documents = await anyio.to_thread.run_sync(service.documents)
        return types.ListResourcesResult(
            resources=[
                types.Resource(name=f"{brain}/{path}", uri=resource_uri(brain, path), mime_type="text/plain")
                for brain, path in documents
            ]
        )

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        brain, path = parse_resource_uri(str(params.uri))
        text = await anyio.to_thread.run_sync(service.document, brain, path)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text=text)]
        )

    return Server(
        "locallens",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def serve_stdio(service: Service) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(service)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    except Exception as exc:
        if _pipe_closed(exc):
            raise BrokenPipeError from None  # the client closed our stdout: a quiet exit 0
        raise


def _pipe_closed(exc: BaseException) -> bool:
    """True when `exc` (or every exception an exception group holds) says stdout was closed."""
    import anyio

    inner = getattr(exc, "exceptions", None)
    if inner:
        return all(_pipe_closed(e) for e in inner)
    return isinstance(
        exc, (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError)
    )


def limit_body(app: Any, limit: int) -> Any:
    """An ASGI app that answers 413 to a body over `limit` bytes before `app` reads it."""

    async def limited(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            body = json.dumps({"error": f"the request body must be at most {limit} bytes"}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        received = 0

        async def counted() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:  # a chunked body without a length: stop reading it
                    return {"type": "http.disconnect"}
            return message

        await app(scope, counted, send)

    return limited


def serve_http(service: Service, host: str, port: int) -> None:
    import uvicorn

    app = limit_body(build_server(service).streamable_http_app(host=host), MAX_HTTP_BODY)
    uvicorn.run(app, host=host, port=port, log_level="warning")
