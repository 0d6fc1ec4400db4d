"""Shared test helpers: paths, the CLI runner, sample-docs copies, and deterministic model fakes.

The fast test tier (`make test-fast`, `pytest -m "not slow"`) runs the whole pipeline with the
fakes below instead of the real models:

- `FakeEmbedder`: the real `Embedder` (windows, batching, pooling) over a fake model: a hashed
  bag of words. Lower-cased word tokens are hashed into `dim` signed buckets and the vector is
  L2-normalised, so texts that share words have a higher cosine than texts that do not, identical
  texts have cosine 1, and nothing is random or loaded from disk.
- `FakeLLM`: the interface of `locallens.llm.LocalLLM` that `ask`, the warm service and
  `eval --answers` use (counting, streaming, grammars, JSON output, usage), with scripted replies:
  a list of strings (used in order, the last one repeated) or a function of the messages.
- `FakeReranker`: a cross-encoder stand-in scoring (query, text) pairs by the fake embedder's
  cosine mapped to 0..1.
- `install_fake_models(monkeypatch)` swaps them in at the project's one model-loading seam and
  returns a `FakeModels` handle (what was loaded, which prompts were sent). The `fake_models`
  fixture in conftest.py does that for one test.

The seam is `locallens.models.LOADERS` (a `Loaders`): every embedder (indexing, retrieval,
trimming, the answer check, the sentence cache), GGUF check and llama.cpp model (`Models`,
`WarmModels`, `eval --answers`) and cross-encoder is loaded through it, so one
`monkeypatch.setattr(locallens.models, "LOADERS", fakes.loaders())` replaces them all.

How to run things with the fakes:

    def test_something(fake_models, tmp_path):
        docs = copy_sample_docs(tmp_path / "docs", SMALL_DOCS)
        data = cli_json("index", str(docs), "--db", str(tmp_path / "index.db"))
        fake_models.replies = ["The staging database listens on port 5433 [1]."]
        result = cli("ask", "Which port?", "--db", str(tmp_path / "index.db"), "--json")

Library functions (`locallens.indexer.index`, `locallens.answer.ask`, `locallens.service.Service`)
work the same way once the fixture is active.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from typer.testing import CliRunner

from locallens.embedding import DEFAULT_ENCODER, FP32, PACKAGED_MINILM, Embedder, ModelSpec, pinned_name

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DOCS = ROOT / "sample_docs"

# Two short documents (English and Spanish): the fault and store-hardening tests' corpus.
SMALL_DOCS = ("hr/leave-policy.md", "notas/vpn-wireguard.md")
# Four short files: for tests that must embed everything anew.
FOUR_DOCS = ("hr/leave-policy.md", "hr/remote-work.txt", "notas/vpn-wireguard.md", "operations/backup-policy.txt")

# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------

runner = CliRunner()


def cli(*args: str, input: str | None = None, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """Run `locallens ARGS` in process; exceptions that are not exits propagate to the test."""
    from locallens.cli import app

    return runner.invoke(app, list(args), input=input, env=env, catch_exceptions=False)


def cli_json(*args: str) -> dict:
    """Run `locallens ARGS --json` (exit 0, or 7 for a run with skipped files) and parse stdout."""
    result = cli(*args, "--json")
    assert result.exit_code in (0, 7), result.output
    return json.loads(result.stdout)


def context_text(sources: list[dict[str, Any]]) -> str:
    """What `ask --context-only` prints for these `--json` sources: the excerpts as sent, each
    headed by its citation for a person (docs/behaviour.md#locations)."""
    return "\n\n---\n\n".join(f"[{s['n']}] {s['citation']}\n{s['content']}" for s in sources) + "\n"


def stdout_json(result: Any) -> Any:
    """The JSON document a `--json` run printed on stdout."""
    return json.loads(result.stdout)


def stdout_jsonl(result: Any) -> list[Any]:
    """The JSON lines a `--batch` run printed on stdout."""
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------
# The HTTP API in process
# --------------------------------------------------------------------------------------------


class Served:
    """`locallens serve` in process: a `Service` behind the HTTP API on a free loopback port."""

    def __init__(self, db: Path, token: str | None = None) -> None:
        from locallens.http_api import make_server
        from locallens.service import Service, ServiceSettings

        self.service = Service(ServiceSettings(db=db))
        self.httpd = make_server(self.service, "127.0.0.1", 0, token)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def request(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, dict[str, Any]]:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=120) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.service.close()


# --------------------------------------------------------------------------------------------
# Corpora
# --------------------------------------------------------------------------------------------


def copy_sample_docs(target: Path, rels: Iterable[str] | None = None, *, flat: bool = False) -> Path:
    """A writable copy of sample_docs/ (all of it, or the files `rels`) in `target`.

    With `flat`, the chosen files land directly in `target` under their file names.
    """
    if rels is None:
        shutil.copytree(SAMPLE_DOCS, target)
        return target
    target.mkdir(parents=True, exist_ok=True)
    for rel in rels:
        dest = target / (Path(rel).name if flat else rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SAMPLE_DOCS / rel, dest)
    return target


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Create `root` with `files` ({relative path: text}); returns `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# A small corpus with one topic per file and distinct words, so that the fake embedder ranks the
# file a question is about first. Used by the fast tests.
CORPUS = {
    "engineering/staging.md": "# Staging environment\n\nThe staging database listens on port 5433. It runs "
    "PostgreSQL 16.2, one version ahead of production.\n\nStaging deploys happen "
    "automatically on every merge to main.\n",
    "notas/vpn.md": "# VPN\n\nLa VPN usa WireGuard en el puerto 51820. Pide tu clave VPN al helpdesk.\n",
    "hr/leave.md": "# Parental leave\n\nParental leave lasts sixteen weeks at full pay. Holiday requests go to "
    "your manager two weeks ahead.\n",
    "operations/backups.txt": "Nightly PostgreSQL backups are kept for 35 days. Weekly backups are kept for "
    "one year in cold storage.\n",
    "office/coffee.md": "# Coffee\n\nThe espresso machine on the third floor is descaled on Fridays. Oat milk "
    "is in the left fridge.\n",
}


def write_corpus(root: Path, files: dict[str, str] | None = None) -> Path:
    """`CORPUS` (or `files`) written under `root`."""
    return write_files(root, CORPUS if files is None else files)


# --------------------------------------------------------------------------------------------
# Reading an index back
# --------------------------------------------------------------------------------------------


def write_one_chunk_notes(store: Any, brain: Any, notes: dict[str, str], vectors: dict[str, Sequence[float]]) -> None:
    """Each note as a document of one chunk (id `c<n>-0`, root /notes) with its given vector."""
    from locallens.domain import Chunk
    from locallens.storage import DocumentRecord

    for n, (path, text) in enumerate(notes.items()):
        chunk = Chunk(id=f"c{n}-0", brain=brain.name, relative_path=path, chunk_index=0, content=text, checksum=f"c{n}")
        store.write_document(
            brain,
            DocumentRecord(
                root="/notes",
                relative_path=path,
                size=len(text),
                mtime_ns=1,
                checksum=f"c{n}",
                chunks=[chunk],
                vectors=np.array([vectors[path]], dtype=np.float32),
            ),
        )


def table_counts(db: Path, brain: str = "default") -> tuple[int, int, int, int]:
    """(documents, chunks, vectors, FTS rows) of a brain; checks the vector count knn sizes by."""
    from locallens.storage.sqlite import Store

    with Store(db, create=False) as store:
        b = store.get_brain(brain)
        stats = store.stats(b)
        assert store.vector_count(b) == stats.vectors  # what knn sizes its search by
        return stats.documents, stats.chunks, stats.vectors, stats.fts_rows


def snapshot(db: Path, brain: str = "default") -> dict[tuple[str, str, int], tuple[str, bytes]]:
    """Everything that defines an index: per (path, chunk id, index) its content and vector."""
    from locallens.storage.sqlite import Store

    with Store(db, create=False) as store:
        b = store.get_brain(brain)
        rows = store.execute(
            f"SELECT c.relative_path, c.chunk_id, c.chunk_index, c.content, v.embedding FROM chunks c"
            f" JOIN {b.vec_table} v ON v.rowid = c.id WHERE c.brain_id = ?",
            (b.id,),
        )
    return {(r[0], r[1], r[2]): (r[3], r[4]) for r in rows}


# --------------------------------------------------------------------------------------------
# The fake embedder
# --------------------------------------------------------------------------------------------

FAKE_DIM = 384  # the packaged MiniLM's dimension: brains built with either agree on it
# What a new brain of the packaged model pins when no model or encoder is named.
DEFAULT_MODEL = pinned_name(PACKAGED_MINILM, DEFAULT_ENCODER)
_TOKEN = re.compile(r"\w+")
# Function words carry no topic: left out, they would make every English text look alike.
_STOPWORDS_TEXT = """
a an and are as at be by can do does for from has have how i in is it its of on or our the their this to
was we what when where which who why will with you your
de del el en es la las los para por que se un una y
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def words(text: str) -> list[str]:
    """The fake embedder's tokens: lower-cased words, function words left out."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def _bucket(token: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


def bag_of_words_vector(text: str, dim: int = FAKE_DIM) -> np.ndarray:
    """Lower-cased word tokens (`words`) hashed into `dim` signed buckets, L2-normalised (float32).

    A text without any word gets the vector of the token "<empty>", never a zero vector.
    """
    return _bag(words(text), text.lower(), dim)


def _bag(tokens: Sequence[str], fallback: str, dim: int) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float64)
    for token in tokens or ["<empty>"]:
        index, sign = _bucket(token, dim)
        vector[index] += sign
    norm = np.linalg.norm(vector)
    if norm == 0.0:  # every token cancelled out in shared buckets: fall back to the text as one token
        index, sign = _bucket(fallback or "<empty>", dim)
        vector[index] = sign
        norm = 1.0
    return (vector / norm).astype(np.float32)


def cosine(a: str, b: str, dim: int = FAKE_DIM) -> float:
    """The fake embedder's cosine similarity of two texts."""
    return float(bag_of_words_vector(a, dim) @ bag_of_words_vector(b, dim))


class FakeTokens:
    """The fake model's tokenizer: one id per distinct lower-cased word (`_TOKEN`), in the order
    first seen; [CLS] is 1 and [SEP] 2, around every window, as for BERT."""

    prefix = (1,)
    suffix = (2,)
    FIRST_WORD = 3  # ids below are [PAD], [CLS], [SEP]

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.words: list[str] = ["[PAD]", "[CLS]", "[SEP]"]

    def _id(self, word: str) -> int:
        if word not in self.vocabulary:
            self.vocabulary[word] = len(self.words)
            self.words.append(word)
        return self.vocabulary[word]

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [[self._id(word) for word in _TOKEN.findall(text.lower())] for text in texts]


class FakeEmbedder(Embedder):
    """A `locallens.embedding.Embedder` whose model is faked below the window logic.

    Only the tokenizer (`FakeTokens`: word ids) and the forward pass (a window's hashed bag of
    words, `bag_of_words_vector` of its words) are fakes: cutting long texts into windows with
    their header, batching, pooling (token-weighted mean, or one row per window with
    `multi_vector`), normalising and progress are the real `Embedder`'s. A text that fits the
    window therefore gets exactly the bag of words of its header and text.

    `calls` records the texts of every encode call (queries, sentences and passages, a passage
    as "header\n\ntext") and `passages` the chunk texts given to `encode_passages`, so tests can
    assert that unchanged chunks are not embedded again.
    """

    def __init__(
        self, name: str = "fake-bag-of-words", dim: int = FAKE_DIM, *, query_prefix: str = "", max_seq_length: int = 256
    ) -> None:
        # Not the real __init__, which loads a model: the attributes the real methods read.
        self.spec = ModelSpec(name=name, source=name, query_prefix=query_prefix)
        self.dim = dim
        self.max_seq_length = max_seq_length
        self.batch_size = 32
        self.requested_device = "cpu"
        self.encoder = FP32
        self.last_backend = "fake"
        self._st = self._np = self._onnx = self._static = None
        self._tokens = FakeTokens()
        self._memo: dict[str, list[int]] = {}
        self._numpy_spent = 0
        self.calls: list[list[str]] = []
        self.passages: list[str] = []

    @property
    def encoded(self) -> list[str]:
        """Every text encoded so far, in order."""
        return [text for call in self.calls for text in call]

    def vector(self, text: str) -> np.ndarray:
        return bag_of_words_vector(text, self.dim)

    def _backend(self, tokens: int) -> tuple[str, Callable[[list[list[int]]], np.ndarray]]:
        return "fake", self._forward

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        """Each window's hashed bag of words (special tokens and function words left out)."""
        vocabulary = self._tokens.words
        rows = []
        for ids in batch:
            tokens = [vocabulary[i] for i in ids if i >= FakeTokens.FIRST_WORD]
            rows.append(_bag([t for t in tokens if t not in STOPWORDS], " ".join(tokens), self.dim))
        return np.stack(rows)

    def encode(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None, batch_size: int | None = None
    ) -> np.ndarray:
        texts = list(texts)
        if texts:
            self.calls.append(texts)
        return super().encode(texts, progress=progress, batch_size=batch_size)

    def encode_passages(
        self,
        texts: Sequence[str],
        headers: Sequence[str] | None = None,
        *,
        multi_vector: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> list[np.ndarray]:
        texts = list(texts)
        if texts:
            heads = list(headers) if headers is not None else [""] * len(texts)
            self.passages.extend(texts)
            self.calls.append([f"{h}\n\n{t}" if h else t for h, t in zip(heads, texts, strict=True)])
        return super().encode_passages(texts, headers, multi_vector=multi_vector, progress=progress)


class FakeReranker:
    """A cross-encoder stand-in: `predict` scores pairs by the fake cosine, mapped to 0..1."""

    def __init__(self, dim: int = FAKE_DIM) -> None:
        self.dim = dim
        self.calls = 0

    def predict(self, pairs: Sequence[tuple[str, str]], **_: Any) -> np.ndarray:
        self.calls += 1
        return np.asarray([(cosine(q, t, self.dim) + 1.0) / 2.0 for q, t in pairs], dtype=np.float32)


# --------------------------------------------------------------------------------------------
# The fake LLM
# --------------------------------------------------------------------------------------------

Reply = str | Callable[[list[Any]], str]
_PIECE = re.compile(r"\S+\s*|\s+")
_EXCERPT_HEADER = re.compile(r"^\[(\d+)\] \S+#chunk-\d+$", re.M)


def excerpts_of(messages: Sequence[Any]) -> dict[int, str]:
    """The numbered excerpts of a grounded prompt ({n: content}), read back from its user message."""
    from locallens.prompt import EXCERPT_SEPARATOR

    user = messages[-1].content
    body = user.split("Source excerpts:\n\n", 1)[-1].rsplit("\n\nQuestion:\n", 1)[0]
    out: dict[int, str] = {}
    for block in body.split(EXCERPT_SEPARATOR):
        header, _, content = block.partition("\n")
        if match := _EXCERPT_HEADER.match(header):
            out[int(match.group(1))] = content
    return out


def question_of(messages: Sequence[Any]) -> str:
    """The question of a grounded prompt."""
    return messages[-1].content.rsplit("\n\nQuestion:\n", 1)[-1]


def quote_best_sentence(messages: Sequence[Any]) -> str:
    """A well-behaved model: the excerpt sentence closest to the question (fake cosine), cited."""
    from locallens.sentences import split_chunk_prefix, split_sentences

    question = question_of(messages)
    best: tuple[float, int, str] | None = None
    for n, content in excerpts_of(messages).items():
        _, body = split_chunk_prefix(content)
        for sentence in split_sentences(body):
            text = " ".join(sentence.split())
            if text and (best is None or cosine(question, text) > best[0]):
                best = (cosine(question, text), n, text)
    if best is None:
        return "The excerpts do not say."
    _, n, text = best
    return f"{text.rstrip('.')} [{n}]."


def count_words(text: str) -> int:
    """The fake tokenizer: one token per word or punctuation mark."""
    return len(re.findall(r"\w+|[^\w\s]", text))


class FakeLLM:
    """Stands in for `locallens.llm.LocalLLM`. Deterministic; never loads anything.

    Tokens are words and punctuation marks (`count_words`); a prompt costs its messages' tokens
    plus 4 per message (the chat template). `script` is a list of replies (used in order, the
    last repeated) or a function of the messages; the default (`quote_best_sentence`) quotes the
    excerpt sentence closest to the question, cited. Replies stream word by word, cut at `max_tokens`.
    """

    def __init__(
        self,
        path: Path | str = "fake-smollm2.gguf",
        *,
        n_ctx: int = 4096,
        seed: int = 0,
        n_threads: int | None = None,
        reuse_prefix: bool = False,
        script: Sequence[Reply] | Reply | None = None,
        **_: Any,
    ) -> None:
        from locallens.errors import UsageError

        if n_ctx < 0:
            raise UsageError(f"invalid context settings: n_ctx={n_ctx}")
        self.path = Path(path)
        self.n_ctx = n_ctx or 4096
        self.requested_n_ctx = self.n_ctx
        self.seed = seed
        self.n_threads = n_threads or 1
        self.reuse_prefix = reuse_prefix
        self.load_ms = 0.0
        self.last_usage: Any = None
        self.script: Sequence[Reply] | Reply = quote_best_sentence if script is None else script
        self.prompts: list[list[Any]] = []  # the messages of every generation
        self.grammars: list[Any] = []  # the grammar passed to each generation (None: unconstrained)
        self.scored: list[tuple[list[int], list[int]]] = []  # every (prompt, continuation) scored
        self.closed = False

    @property
    def model_name(self) -> str:
        return self.path.name

    def count_prompt_tokens(self, messages: Sequence[Any]) -> int:
        return sum(count_words(m.content) + 4 for m in messages) + 1

    def _reply(self, messages: list[Any]) -> str:
        script = self.script
        if callable(script):
            return script(messages)
        if isinstance(script, str):
            return script
        if not script:
            raise AssertionError("FakeLLM: no scripted reply left")
        n = len(self.prompts) - 1
        reply = script[min(n, len(script) - 1)]
        return reply(messages) if callable(reply) else reply

    def stream_chat(
        self,
        messages: list[Any],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        repeat_penalty: float = 1.0,
        grammar: Any = None,
    ) -> Iterator[str]:
        from locallens.errors import UsageError
        from locallens.llm import Usage

        if max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, got {max_tokens}")
        prompt_tokens = self.count_prompt_tokens(messages)
        if prompt_tokens + 1 > self.n_ctx:
            raise UsageError(
                f"prompt too long for the model's context: {prompt_tokens} tokens > {self.n_ctx}; "
                "shorten it or raise --ctx"
            )
        self.prompts.append(list(messages))
        self.grammars.append(grammar)
        budget = max(1, min(max_tokens, self.n_ctx - prompt_tokens))
        reply = self._reply(list(messages))
        produced = 0
        stop_reason = "stop"
        started = time.perf_counter()
        self.last_usage = None
        try:
            for piece in _PIECE.findall(reply):
                if produced >= budget:
                    stop_reason = "length"
                    break
                produced += max(1, count_words(piece))
                yield piece
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self.last_usage = Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=produced,
                prompt_ms=0.0,
                generate_ms=elapsed,
                stop_reason=stop_reason,
            )

    def chat(self, messages: list[Any], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        return "".join(self.stream_chat(messages, max_tokens=max_tokens, temperature=temperature))

    @staticmethod
    def compile_grammar(gbnf: str) -> Any:
        return ("gbnf", gbnf)

    # Scoring (`locallens.llm_rerank`): tokens are lower-cased words, ids from one shared table,
    # and a continuation token costs log-probability 0 when the prompt holds it, -1 otherwise:
    # a question is likelier after a passage that holds its words.
    _vocabulary: ClassVar[dict[str, int]] = {}

    def text_tokens(self, text: str) -> list[int]:
        return [self._vocabulary.setdefault(w, len(self._vocabulary)) for w in re.findall(r"\w+", text.lower())]

    def chat_tokens(self, messages: Sequence[Any]) -> list[int]:
        return [t for m in messages for t in self.text_tokens(m.content)]

    def continuation_logprob(self, prompt: Sequence[int], continuation: Sequence[int]) -> float:
        self.scored.append((list(prompt), list(continuation)))
        held = set(prompt)
        return -float(sum(1 for t in continuation if t not in held))

    def generate_json(
        self, messages: list[Any], json_schema: dict[str, Any], *, max_tokens: int = 256
    ) -> dict[str, Any]:
        from locallens.errors import LocallensError

        text = "".join(self.stream_chat(messages, max_tokens=max_tokens, grammar=("json", json_schema)))
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LocallensError(f"the model's constrained output is not valid JSON ({exc.msg})") from exc
        if not isinstance(value, dict):
            raise LocallensError(f"the model's constrained output is not a JSON object: {text[:80]!r}")
        return value

    def close(self) -> None:
        self.closed = True


# --------------------------------------------------------------------------------------------
# Installing the fakes
# --------------------------------------------------------------------------------------------


@dataclass
class FakeModels:
    """What `install_fake_models` swapped in, and what the code under test did with it.

    Set `replies` (a list or a function of the messages) before the LLM is created (an LLM that
    exists already, e.g. a warm service's, takes a new `script`). `dim` applies to embedders
    loaded after it is set.
    """

    dim: int = FAKE_DIM
    replies: Sequence[Reply] | Reply | None = None
    embedders: dict[str, FakeEmbedder] = field(default_factory=dict)
    llms: list[FakeLLM] = field(default_factory=list)
    reranker: FakeReranker = field(default_factory=FakeReranker)
    embedder_loads: list[str] = field(default_factory=list)  # model names asked of load_embedder

    def load_embedder(self, requested: str | None, *, device: str = "auto") -> FakeEmbedder:
        from locallens.embedding import resolve_model

        name = resolve_model(requested).name
        self.embedder_loads.append(name)
        if name not in self.embedders:
            self.embedders[name] = FakeEmbedder(name, self.dim)
        return self.embedders[name]

    def make_llm(self, path: Path | str, **kwargs: Any) -> FakeLLM:
        llm = FakeLLM(path, script=self.replies, **kwargs)
        self.llms.append(llm)
        return llm

    def loaders(self) -> Any:
        """A `locallens.models.Loaders` that hands out these fakes. An explicit `--llm` path
        that does not exist still fails as it would for real (exit 6); any file that exists is
        accepted as a GGUF."""
        from locallens.models import Loaders

        fakes = self

        class FakeLoaders(Loaders):
            def embedder(self, requested: str | None, *, device: str = "auto") -> FakeEmbedder:
                return fakes.load_embedder(requested, device=device)

            def check_gguf(self, path: Path) -> Any:
                return super().check_gguf(path) if not Path(path).exists() else None

            def llm(self, path: Path, **options: Any) -> FakeLLM:
                return fakes.make_llm(path, **options)

            def reranker(self, model: str, device: str = "auto") -> FakeReranker:
                return fakes.reranker

        return FakeLoaders()

    @property
    def embedder(self) -> FakeEmbedder:
        """The one embedder loaded so far (fails when none or several were)."""
        assert len(self.embedders) == 1, f"embedders loaded: {sorted(self.embedders)}"
        return next(iter(self.embedders.values()))

    @property
    def llm(self) -> FakeLLM:
        """The last LLM created."""
        assert self.llms, "no LLM was created"
        return self.llms[-1]

    @property
    def prompts(self) -> list[list[Any]]:
        """The messages of every generation of every fake LLM, in order."""
        return [p for llm in self.llms for p in llm.prompts]


def install_fake_models(
    monkeypatch: Any, *, replies: Sequence[Reply] | Reply | None = None, dim: int = FAKE_DIM
) -> FakeModels:
    """Swap the fakes in at the model-loading seams for the rest of the test (see the module doc).

    An explicit `--llm` path that does not exist still fails as it would for real (exit 6); any
    file that exists is accepted as a GGUF.
    """
    import locallens.models

    fakes = FakeModels(dim=dim, replies=replies)
    monkeypatch.setattr(locallens.models, "LOADERS", fakes.loaders())
    return fakes


def check_trim_json(out: dict[str, Any], chunks: int = 5, answer: str = "5433") -> None:
    """The shape and arithmetic of `trim --json`, and that the sentence carrying `answer` survives."""
    assert set(out) >= {
        "query",
        "chunks",
        "tokens_before",
        "tokens_in_context",
        "tiktoken_before",
        "tiktoken_in_context",
        "reduction_pct",
    }
    assert len(out["chunks"]) == chunks
    for chunk in out["chunks"]:
        assert set(chunk) >= {"id", "path", "chunk_index", "score", "content", "trimmed", "kept", "sentences"}
        assert chunk["kept"] == sorted(chunk["kept"]) and chunk["kept"]
        assert all(chunk["sentences"][i] in chunk["trimmed"] for i in chunk["kept"])
        if len(chunk["kept"]) == len(chunk["sentences"]):
            assert chunk["trimmed"] == chunk["content"]
    assert 0 < out["tokens_in_context"] < out["tokens_before"]
    expected = round(100 * (out["tokens_before"] - out["tokens_in_context"]) / out["tokens_before"], 1)
    assert out["reduction_pct"] == expected
    assert any(answer in c["trimmed"] for c in out["chunks"])
