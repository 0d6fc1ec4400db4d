"""The warm core behind `locallens mcp`, `locallens serve` and `ask --batch`.

One `Service` holds the loaded models (`WarmModels`) and the database path; every operation opens
the store for its own request (a connection costs well under a millisecond, and each request then
sees the last state an `index` run committed, WAL mode) and reads the brain afresh (a brain
re-pinned to another model gets that model). Operations take the JSON arguments of the tools,
checked against `TOOLS`' schemas by `validate`: an unknown argument or a bad value is a
`UsageError` naming it, never a traceback. Results are plain JSON-able dicts, the same shapes as
the CLI's `--json`.

Tools: `ask` (the answer, checked and cited, as `ask --json`), `search` (trimmed, cited excerpts
that fit a token budget, no LLM), `get` (a chunk by id, or a document's chunks by path),
`eval_retrieval` (as `eval --json`) and `status` (as `status --json`).

The callers are agents and remote clients, so every argument has a size cap, checked before any
work (`validate`; see docs/behaviour.md#servers-and-agents): the arguments as a whole hold at most
`MAX_ARGUMENT_CHARS` characters nested at most `MAX_ARGUMENT_DEPTH` deep, and each string and list
its own cap. The one argument that names a file, `eval_retrieval`'s questions file, is read only
when it is a questions file (`.txt`, `.jsonl`, `.ndjson`) under one of the brain's roots or under a
folder the server was started with (`ServiceSettings.readable_dirs`, `mcp --allow-read DIR`),
never a hidden one, and at most `MAX_QUESTIONS_FILE_BYTES` long.
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locallens import locations
from locallens.config import (
    DEFAULT_DEVICE,
    DEFAULT_EVAL_THRESHOLDS,
    DEFAULT_HYBRID,
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_TOP_K,
)
from locallens.errors import LocallensError, NoIndexError, UsageError
from locallens.models import WarmModels
from locallens.retrieval import MAX_QUESTION_CHARS
from locallens.storage import DbLocation

if TYPE_CHECKING:
    from locallens.answer import AskRequest

# -- caps -----------------------------------------------------------------------------------------

MAX_ARGUMENT_CHARS = 1_000_000  # characters of all strings (and list items) of one call together
MAX_ARGUMENT_DEPTH = 6  # lists and objects nested in the arguments
MAX_NAME_CHARS = 200  # a brain name, a chunk id
MAX_PATH_CHARS = 4_096  # a relative path, a questions file, a path glob
MAX_EVAL_QUESTIONS = 500  # questions of one eval_retrieval call (a few seconds each hundred)
MAX_EVAL_CHARS = 100_000  # their characters together
MAX_QUESTIONS_FILE_BYTES = 1_000_000
QUESTIONS_FILE_SUFFIXES = (".txt", ".jsonl", ".ndjson")
_LIST_ITEMS = 100  # files and answers of one question, thresholds
DEFAULT_SEARCH_BUDGET = 2000  # tokens of excerpts `search` returns when the call names no max_tokens

# -- schemas ------------------------------------------------------------------------------------

_BRAIN = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NAME_CHARS,
    "description": "Named index inside the database (default: default).",
}
_TOP_K = {
    "type": "integer",
    "minimum": 1,
    "maximum": 100,
    "description": f"Excerpts to retrieve (default {DEFAULT_TOP_K}).",
}
_TRIM = {"type": "boolean", "description": "Trim excerpts to their sentences relevant to the question."}
_HYBRID = {
    "type": "boolean",
    "description": f"Fuse keyword (BM25) and vector search (default {str(DEFAULT_HYBRID).lower()}; false: vectors alone).",
}
_PATH = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_PATH_CHARS,
    "description": "Only sources whose relative path matches this glob.",
}
_QUESTION = {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS}


def _strings(max_length: int) -> dict[str, Any]:
    """A string, or a list of strings (the questions file format accepts both)."""
    item = {"type": "string", "maxLength": max_length}
    return {"oneOf": [item, {"type": "array", "maxItems": _LIST_ITEMS, "items": item}]}


_EVAL_QUESTION = {
    "type": "object",
    "properties": {
        "question": _QUESTION,
        "files": _strings(MAX_PATH_CHARS),
        "answers": _strings(MAX_QUESTION_CHARS),
        "answerable": {"type": "boolean"},
        "id": {"oneOf": [{"type": "string", "maxLength": MAX_NAME_CHARS}, {"type": "integer"}]},
        "note": {"type": "string", "maxLength": MAX_QUESTION_CHARS},
    },
    "required": ["question"],
    "additionalProperties": False,
}


def _tool(description: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "description": description,
        "schema": {
            "type": "object",
            "properties": properties,
            "required": list(required),
            "additionalProperties": False,
        },
    }


TOOLS: dict[str, dict[str, Any]] = {
    "ask": _tool(
        "Answer a question from the indexed files. Every printed sentence is checked against the "
        "excerpts and cited [n]; unsupported ones are withheld; nothing relevant gives the plain refusal.",
        {
            "question": _QUESTION,
            "brain": _BRAIN,
            "top_k": _TOP_K,
            "trim": _TRIM,
            "hybrid": _HYBRID,
            "path": _PATH,
            "extractive": {"type": "boolean", "description": "No LLM: the excerpts' most relevant sentences."},
            "max_tokens": {"type": "integer", "minimum": 1, "maximum": 4096},
        },
        ("question",),
    ),
    "search": _tool(
        "Search the indexed files: trimmed, cited excerpts that fit a token budget (no LLM).",
        {
            "query": _QUESTION,
            "brain": _BRAIN,
            "top_k": _TOP_K,
            "trim": _TRIM,
            "hybrid": _HYBRID,
            "path": _PATH,
            "max_tokens": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "description": f"Token budget of all excerpts together (default {DEFAULT_SEARCH_BUDGET}).",
            },
        },
        ("query",),
    ),
    "get": _tool(
        "Read a chunk by its id, or a whole document's chunks in order by its relative path.",
        {
            "id": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
            "path": {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS},
            "brain": _BRAIN,
        },
    ),
    "eval_retrieval": _tool(
        "Measure retrieval and trimming over questions: a list, or the path of a questions file "
        f"({', '.join(QUESTIONS_FILE_SUFFIXES)}) under one of the brain's roots or a folder the "
        "server allows (`mcp --allow-read`).",
        {
            "questions": {
                "oneOf": [
                    {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS},
                    {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_EVAL_QUESTIONS,
                        "items": {"oneOf": [_QUESTION, _EVAL_QUESTION]},
                    },
                ]
            },
            "brain": _BRAIN,
            "top_k": _TOP_K,
            "thresholds": {
                "type": "array",
                "minItems": 1,
                "maxItems": _LIST_ITEMS,
                "items": {"type": "number", "minimum": -1, "maximum": 1},
            },
        },
        ("questions",),
    ),
    "status": _tool("Brains, models, documents, chunks and staleness of the database.", {"brain": _BRAIN}),
}

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _check(value: Any, schema: dict[str, Any], where: str) -> None:
    if "oneOf" in schema:
        errors = []
        for option in schema["oneOf"]:
            try:
                _check(value, option, where)
                return
            except UsageError as exc:
                errors.append(str(exc))
        raise UsageError(errors[0] if len(errors) == 1 else f"{where}: not a valid value ({'; or '.join(errors)})")
    kind = schema.get("type")
    if kind and not _JSON_TYPES[kind](value):
        raise UsageError(f"{where}: expected {kind}, got {type(value).__name__} {value!r:.40}")
    if kind == "string":
        if len(value) < schema.get("minLength", 0):
            raise UsageError(f"{where}: must not be empty")
        if len(value) > schema.get("maxLength", math.inf):
            raise UsageError(f"{where}: longer than {schema['maxLength']} characters")
    if kind in ("integer", "number") and not schema.get("minimum", -math.inf) <= value <= schema.get(
        "maximum", math.inf
    ):
        raise UsageError(f"{where}: {value} is out of range {schema.get('minimum')}..{schema.get('maximum')}")
    if kind == "array":
        if len(value) < schema.get("minItems", 0):
            raise UsageError(f"{where}: needs at least {schema['minItems']} item(s)")
        if len(value) > schema.get("maxItems", math.inf):
            raise UsageError(f"{where}: more than {schema['maxItems']} items")
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), f"{where}[{i}]")
    if kind == "object" and "properties" in schema:
        properties = schema["properties"]
        if schema.get("additionalProperties", True) is False:
            unknown = sorted(str(k) for k in value if k not in properties)
            if unknown:
                raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(properties)}")
        for name in schema.get("required", ()):
            if name not in value:
                raise UsageError(f"{where}: missing {name!r}")
        for name, item in value.items():
            _check(item, properties[name], f"{where}.{name}")


def _check_size(arguments: dict[str, Any], tool: str) -> None:
    """The arguments' total size and nesting, measured without recursion (a deep value cannot
    exhaust the stack) and before any schema check walks them."""
    total = 0
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_ARGUMENT_DEPTH:
                raise UsageError(f"{tool}: arguments nested more than {MAX_ARGUMENT_DEPTH} deep")
            items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
            total += len(items)
            for key, item in items:
                total += len(key) if isinstance(key, str) else 0
                stack.append((item, depth + 1))
        elif isinstance(value, str):
            total += len(value)
        if total > MAX_ARGUMENT_CHARS:
            raise UsageError(f"{tool}: arguments longer than {MAX_ARGUMENT_CHARS} characters in all")


def validate(tool: str, arguments: Any) -> dict[str, Any]:
    """`arguments` checked against the tool's schema; UsageError names the first problem."""
    if tool not in TOOLS:
        raise UsageError(f"unknown tool {tool!r}; tools: {', '.join(TOOLS)}")
    if arguments is None:
        arguments = {}
    schema = TOOLS[tool]["schema"]
    if not isinstance(arguments, dict):
        raise UsageError(f"{tool}: arguments must be a JSON object")
    _check_size(arguments, tool)
    unknown = sorted(set(arguments) - set(schema["properties"]))
    if unknown:
        raise UsageError(
            f"{tool}: unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(schema['properties'])}"
        )
    for name in schema["required"]:
        if name not in arguments:
            raise UsageError(f"{tool}: missing required argument {name!r}")
    for name, value in arguments.items():
        _check(value, schema["properties"][name], f"{tool}.{name}")
    return arguments


# -- the service --------------------------------------------------------------------------------


@dataclass
class ServiceSettings:
    """Defaults for every request (the server's flags); a request's arguments override some."""

    db: DbLocation
    brain: str = "default"
    llm: str | None = None
    n_ctx: int = DEFAULT_N_CTX
    gpu_layers: int = 0
    threads: int | None = None
    device: str = DEFAULT_DEVICE
    max_tokens: int = DEFAULT_MAX_TOKENS
    hybrid: bool = DEFAULT_HYBRID
    search_budget: int = DEFAULT_SEARCH_BUDGET
    # Folders whose questions files `eval_retrieval` may read besides the brain's roots.
    readable_dirs: tuple[Path, ...] = ()


class Service:
    """The warm core: loaded models, an open question per call."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self.models = WarmModels()
        self.started = time.time()
        self.requests = 0

    def close(self) -> None:
        self.models.close()

    def call(self, tool: str, arguments: Any) -> dict[str, Any]:
        """Run one tool with JSON arguments (validated here)."""
        args = validate(tool, arguments)
        self.requests += 1
        return getattr(self, f"_{tool}")(args)

    # -- tools --------------------------------------------------------------------------------

    def ask_request(self, args: dict[str, Any]) -> AskRequest:
        """The request of an `ask` call (`AskRequest.from_tool_args` over this service's settings)."""
        from locallens.answer import AskRequest

        s = self.settings
        defaults = AskRequest(
            question="",
            db=s.db,
            brain=s.brain,
            llm=s.llm,
            max_tokens=s.max_tokens,
            n_ctx=s.n_ctx,
            gpu_layers=s.gpu_layers,
            threads=s.threads,
            device=s.device,
            hybrid=s.hybrid,
        )
        return AskRequest.from_tool_args(args, defaults)

    def _ask(self, args: dict[str, Any]) -> dict[str, Any]:
        from locallens.answer import ask

        return ask(self.ask_request(args), self.models).as_json()

    def _search(self, args: dict[str, Any]) -> dict[str, Any]:
        from locallens.errors import NothingFoundError
        from locallens.retrieval import retrieve, trim_settings_from_env
        from locallens.storage import open_store
        from locallens.tokens import count_tokens

        s = self.settings
        brain_name = args.get("brain", s.brain)
        trim = trim_settings_from_env(args.get("trim", True), None, 1)
        budget = args.get("max_tokens", s.search_budget)
        with open_store(s.db) as store:
            brain = store.get_brain(brain_name)
            embedder = self.models.embedder(brain.model, s.device)
            result = retrieve(
                store,
                brain,
                embedder,
                args["query"],
                args.get("top_k", DEFAULT_TOP_K),
                path_glob=args.get("path"),
                trim=trim,
                hybrid=args.get("hybrid", s.hybrid),
            )
        if not result.hits:
            raise NothingFoundError(f"nothing relevant found in brain {brain_name!r}")
        excerpts: list[dict[str, Any]] = []
        used = 0
        for n, hit in enumerate(result.hits, start=1):
            tokens = count_tokens(hit.content)
            if excerpts and used + tokens > budget:
                break  # lowest-ranked excerpts go first; the best one is always returned
            used += tokens
            excerpts.append(
                {
                    "n": n,
                    "id": hit.id,
                    "path": hit.chunk.relative_path,
                    "chunk_index": hit.chunk.chunk_index,
                    **locations.fields(hit.chunk),
                    "score": round(hit.score, 4),
                    "tokens": tokens,
                    "text": hit.content,
                }
            )
        return {
            "query": args["query"],
            "brain": brain_name,
            "excerpts": excerpts,
            "tokens": used,
            "dropped": len(result.hits) - len(excerpts),
            "trimmed": result.trimmed,
            "timings": {k: round(v, 1) for k, v in result.timings_ms.items()},
        }

    def _get(self, args: dict[str, Any]) -> dict[str, Any]:
        from locallens.storage import open_store

        if ("id" in args) == ("path" in args):
            raise UsageError("get: give exactly one of 'id' or 'path'")
        brain_name = args.get("brain", self.settings.brain)
        with open_store(self.settings.db) as store:
            brain = store.get_brain(brain_name)
            if "id" in args:
                chunk = store.chunk_by_id(brain, args["id"])
                chunks = [chunk] if chunk else []
            else:
                chunks = store.document_chunks(brain, args["path"])
        if not chunks:
            what = f"chunk {args['id']!r}" if "id" in args else f"document {args['path']!r}"
            raise NoIndexError(f"no {what} in brain {brain_name!r}")
        return {
            "brain": brain_name,
            "chunks": [
                {
                    "id": c.id,
                    "path": c.relative_path,
                    "chunk_index": c.chunk_index,
                    **locations.fields(c),
                    "content": c.content,
                }
                for c in chunks
            ],
        }

    def document(self, brain_name: str, path: str) -> str:
        """A document's text as stored (its chunks joined), for MCP resources."""
        chunks = self._get({"path": path, "brain": brain_name})["chunks"]
        return "\n\n".join(c["content"] for c in chunks)

    def documents(self) -> list[tuple[str, str]]:
        """(brain, relative path) of every document of every visible brain."""
        from locallens.storage import open_store

        with open_store(self.settings.db) as store:
            return [(b.name, p) for b in store.brains() if not b.name.startswith(".") for p in store.document_paths(b)]

    def _eval_retrieval(self, args: dict[str, Any]) -> dict[str, Any]:
        from locallens.evaluation import EvalRequest, run_eval
        from locallens.evaluation.questions import parse_questions

        brain = args.get("brain", self.settings.brain)
        questions = args["questions"]
        if isinstance(questions, str):
            parsed = self._questions_file(questions, brain)
            where = "eval_retrieval.questions (the file)"
        else:
            import json

            lines = [json.dumps(q if isinstance(q, dict) else {"question": q}, ensure_ascii=False) for q in questions]
            parsed = parse_questions("\n".join(lines), source="questions", jsonl=True)
            where = "eval_retrieval.questions"
        if len(parsed) > MAX_EVAL_QUESTIONS:
            raise UsageError(f"{where}: {len(parsed)} questions, more than {MAX_EVAL_QUESTIONS}")
        for q in parsed:
            if len(q.text) > MAX_QUESTION_CHARS:
                raise UsageError(
                    f"{where}: the question of line {q.line} is longer than {MAX_QUESTION_CHARS} characters"
                )
        chars = sum(len(q.text) for q in parsed)
        if chars > MAX_EVAL_CHARS:
            raise UsageError(f"{where}: {chars} characters of questions, more than {MAX_EVAL_CHARS}")
        request = EvalRequest(
            db=self.settings.db,
            brain=brain,
            questions=None,
            inline_questions=tuple(parsed),
            top_k=args.get("top_k", DEFAULT_TOP_K),
            thresholds=tuple(args.get("thresholds", DEFAULT_EVAL_THRESHOLDS)),
            windows=(0, 1),
            device=self.settings.device,
            hybrid=self.settings.hybrid,
        )
        return run_eval(request, models=self.models).as_json()

    def _questions_file(self, given: str, brain_name: str) -> list[Any]:
        """The questions of a file the caller named, when this server may read it (module doc).

        The file is judged by its real path (symlinks resolved) before anything reads it, and the
        refusal is the same whether it exists or not: it tells nothing about other files."""
        from locallens.evaluation.questions import JSONL_SUFFIXES, parse_questions
        from locallens.storage import open_store

        with open_store(self.settings.db) as store:
            roots = store.roots(store.get_brain(brain_name))
        real = os.path.realpath(Path(given).expanduser())
        allowed = [os.path.realpath(str(folder)) for folder in (*roots, *self.settings.readable_dirs)]
        refused = UsageError(
            f"eval_retrieval.questions: {given!r} cannot be read through this server: only a questions file "
            f"({', '.join(QUESTIONS_FILE_SUFFIXES)}, not hidden) under one of brain {brain_name!r}'s roots or a "
            "folder the server was started with (`locallens mcp --allow-read DIR`)"
        )
        below = [os.path.relpath(real, folder) for folder in allowed if _within(real, folder)]
        if not below or not real.lower().endswith(QUESTIONS_FILE_SUFFIXES):
            raise refused
        if all(any(part.startswith(".") for part in Path(rel).parts) for rel in below):
            raise refused  # a hidden file or folder (.env, .git, .ssh) is never read
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            raise UsageError(f"eval_retrieval.questions: no such questions file: {given}") from None
        except OSError as exc:
            raise UsageError(f"eval_retrieval.questions: cannot read {given}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"eval_retrieval.questions: {given} is not a regular file")
            if info.st_size > MAX_QUESTIONS_FILE_BYTES:
                raise UsageError(f"eval_retrieval.questions: {given} is larger than {MAX_QUESTIONS_FILE_BYTES} bytes")
            raw = handle.read(MAX_QUESTIONS_FILE_BYTES + 1)[:MAX_QUESTIONS_FILE_BYTES]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise UsageError(f"eval_retrieval.questions: {given} line {line}: not UTF-8 text") from None
        jsonl = True if real.lower().endswith(JSONL_SUFFIXES) else None
        return parse_questions(text, source=given, jsonl=jsonl)

    def _status(self, args: dict[str, Any]) -> dict[str, Any]:
        from locallens.status import collect_status

        return collect_status(self.settings.db, args.get("brain"))


def _within(path: str, folder: str) -> bool:
    """`path` is `folder` or lies below it (both real, absolute paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


# -- ask --batch ----------------------------------------------------------------------------------


def ask_batch(raw: bytes, defaults: AskRequest, write: Callable[[str], None]) -> int:
    """`ask --batch`: JSONL questions in, one JSON line out per question, one model load for all.

    `raw` is the input (a leading UTF-8 BOM is ignored; blank lines and lines starting with `#`
    are skipped); each line is a JSON object of the `ask` tool's arguments over the `defaults`
    (the command line's flags). Each line is decoded and parsed alone, so a bad byte or a hostile
    line fails only itself: it is written as `{"line", "error", "exit_code"}` and the rest go on.
    `write` gets each output line without its newline. Returns how many lines failed.
    """
    from locallens import safejson

    service = Service(
        ServiceSettings(
            db=defaults.db,
            brain=defaults.brain,
            llm=defaults.llm,
            n_ctx=defaults.n_ctx,
            threads=defaults.threads,
            gpu_layers=defaults.gpu_layers,
            device=defaults.device,
            hybrid=defaults.hybrid,
            max_tokens=defaults.max_tokens,
        )
    )
    base = {k: v for k, v in defaults.tool_args().items() if k not in ("question", "brain")}
    failed = 0
    try:
        for number, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
            if not line.strip() or line.lstrip().startswith(b"#"):
                continue
            try:
                try:
                    item = safejson.loads(line.rstrip(b"\r"))
                except ValueError as exc:  # not JSON, not UTF-8, a huge number, nested too deeply
                    raise UsageError(f"not JSON: {safejson.error_text(exc)}") from None
                if not isinstance(item, dict):
                    raise UsageError('expected a JSON object such as {"question": "..."}')
                answer = service.call("ask", {**base, **item})
                write(json.dumps({"line": number, **answer}, ensure_ascii=False))
            except LocallensError as exc:
                failed += 1
                write(json.dumps({"line": number, "error": str(exc), "exit_code": exc.exit_code}, ensure_ascii=False))
    finally:
        service.close()
    return failed
