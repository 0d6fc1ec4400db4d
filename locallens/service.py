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
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens.config import (
    DEFAULT_DEVICE,
    DEFAULT_EVAL_THRESHOLDS,
    DEFAULT_HYBRID,
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_TOP_K,
)
from locallens.errors import NoIndexError, UsageError
from locallens.models import WarmModels
from locallens.retrieval import MAX_QUESTION_CHARS
from locallens.storage import DbLocation

# -- schemas ------------------------------------------------------------------------------------

_BRAIN = {"type": "string", "minLength": 1, "description": "Named index inside the database (default: default)."}
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
_PATH = {"type": "string", "minLength": 1, "description": "Only sources whose relative path matches this glob."}


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
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
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
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
            "brain": _BRAIN,
            "top_k": _TOP_K,
            "trim": _TRIM,
            "hybrid": _HYBRID,
            "path": _PATH,
            "max_tokens": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "description": "Token budget of all excerpts together (default 2000).",
            },
        },
        ("query",),
    ),
    "get": _tool(
        "Read a chunk by its id, or a whole document's chunks in order by its relative path.",
        {"id": {"type": "string", "minLength": 1}, "path": {"type": "string", "minLength": 1}, "brain": _BRAIN},
    ),
    "eval_retrieval": _tool(
        "Measure retrieval and trimming over questions (a list, or the path of a questions file).",
        {
            "questions": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "array",
                        "minItems": 1,
                        "items": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "object"}]},
                    },
                ]
            },
            "brain": _BRAIN,
            "top_k": _TOP_K,
            "thresholds": {"type": "array", "minItems": 1, "items": {"type": "number", "minimum": -1, "maximum": 1}},
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
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), f"{where}[{i}]")


def validate(tool: str, arguments: Any) -> dict[str, Any]:
    """`arguments` checked against the tool's schema; UsageError names the first problem."""
    if tool not in TOOLS:
        raise UsageError(f"unknown tool {tool!r}; tools: {', '.join(TOOLS)}")
    if arguments is None:
        arguments = {}
    schema = TOOLS[tool]["schema"]
    if not isinstance(arguments, dict):
        raise UsageError(f"{tool}: arguments must be a JSON object")
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
    search_budget: int = 2000  # tokens of excerpts `search` returns by default


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

    def ask_request(self, args: dict[str, Any]) -> Any:
        from locallens.answer import AskRequest
        from locallens.retrieval import trim_settings_from_env

        s = self.settings
        return AskRequest(
            question=args["question"],
            db=s.db,
            brain=args.get("brain", s.brain),
            top_k=args.get("top_k", DEFAULT_TOP_K),
            path_glob=args.get("path"),
            llm=s.llm,
            max_tokens=args.get("max_tokens", s.max_tokens),
            n_ctx=s.n_ctx,
            gpu_layers=s.gpu_layers,
            threads=s.threads,
            device=s.device,
            trim=trim_settings_from_env(args.get("trim"), None, 1),
            hybrid=args.get("hybrid", s.hybrid),
            extractive=args.get("extractive", False),
        )

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
                {"id": c.id, "path": c.relative_path, "chunk_index": c.chunk_index, "content": c.content}
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

        questions = args["questions"]
        inline = None
        path = None
        if isinstance(questions, str):
            path = Path(questions).expanduser()
        else:
            import json

            lines = [json.dumps(q if isinstance(q, dict) else {"question": q}, ensure_ascii=False) for q in questions]
            inline = tuple(parse_questions("\n".join(lines), source="questions", jsonl=True))
        request = EvalRequest(
            db=self.settings.db,
            brain=args.get("brain", self.settings.brain),
            questions=path,
            inline_questions=inline,
            top_k=args.get("top_k", DEFAULT_TOP_K),
            thresholds=tuple(args.get("thresholds", DEFAULT_EVAL_THRESHOLDS)),
            windows=(0, 1),
            device=self.settings.device,
            hybrid=self.settings.hybrid,
        )
        return run_eval(request, models=self.models).as_json()

    def _status(self, args: dict[str, Any]) -> dict[str, Any]:
        from locallens.status import collect_status

        return collect_status(self.settings.db, args.get("brain"))
