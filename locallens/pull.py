"""`locallens pull`: the one command that downloads, and the catalogue of models it knows by name.

Everything else locallens does is offline: the packaged models serve with no network, and a
model named by `--model`, `--llm` or `--rerank` is looked for in the local Hugging Face cache
only. `pull` is the explicit step that fills that cache, through the hub's own client library
(huggingface_hub), into the standard cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
`~/.cache/huggingface/hub`), where the hub's other tools see the files too.

- What: a catalogue name (`CATALOGUE`: `bge-small`, `qwen-1.5b`, ...), a hub id
  (`BAAI/bge-small-en-v1.5`: the model's files; `owner/repo/file.gguf`: one GGUF), the hub
  URL of a file (`https://huggingface.co/owner/repo/resolve/main/file.gguf`), or the URL of a
  GGUF anywhere else, fetched by `locallens.fetch` (resumable, checked against `--sha256`).
- How: the hub is probed first with short timeouts (`locallens.hub`): no network is one line
  and exit 6 within seconds. Each file shows the hub client's progress bar. A connection that
  drops mid-file is resumed where it stopped (the client asks for the rest with a Range request,
  a few times); files already in the cache are not downloaded again, so a `pull` that was
  stopped continues with the files it had not finished, and the file it was in the middle of
  from the bytes it had (the client keeps them as `blobs/ETAG.incomplete` and asks for the rest).
  Every file is then checked against the checksum the hub publishes (SHA-256 for large files,
  the git blob hash for small ones), and against `--sha256` when one is given; a mismatch
  removes the file and is exit 6.
- Then: a catalogue name works where a model is named (`--model bge-small`, `--llm qwen-1.5b`,
  `--rerank minilm-reranker`), and so does a hub id (`--model owner/repo`,
  `--llm owner/repo/file.gguf`) or the URL pulled (`--llm https://...`). Not pulled: exit 6
  with the `pull` command to run; nothing else downloads.

Nothing here imports huggingface_hub at module level: `cached_file` and the catalogue are used
by `ask` and `models`, which must stay offline and quick.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from locallens.errors import ModelUnavailableError, UsageError


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    name: str
    kind: str  # "embedding", "reranker" or "llm"
    repo_id: str
    filename: str | None  # the one GGUF file of an LLM; None: the model's files
    about: str


CATALOGUE: tuple[CatalogueEntry, ...] = (
    CatalogueEntry("bge-small", "embedding", "BAAI/bge-small-en-v1.5", None, "English embeddings, 384 dimensions"),
    CatalogueEntry("bge-base", "embedding", "BAAI/bge-base-en-v1.5", None, "English embeddings, 768 dimensions"),
    CatalogueEntry(
        "bge-m3", "embedding", "BAAI/bge-m3", None, "multilingual embeddings (100+ languages), 1024 dimensions"
    ),
    CatalogueEntry(
        "minilm-reranker", "reranker", "cross-encoder/ms-marco-MiniLM-L-6-v2", None, "English cross-encoder reranker"
    ),
    CatalogueEntry("bge-reranker", "reranker", "BAAI/bge-reranker-v2-m3", None, "multilingual cross-encoder reranker"),
    CatalogueEntry(
        "qwen-0.5b",
        "llm",
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
        "qwen2.5-0.5b-instruct-q4_k_m.gguf",
        "Qwen2.5 0.5B Instruct, Q4_K_M (multilingual chat)",
    ),
    CatalogueEntry(
        "qwen-1.5b",
        "llm",
        "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
        "qwen2.5-1.5b-instruct-q4_k_m.gguf",
        "Qwen2.5 1.5B Instruct, Q4_K_M (multilingual chat)",
    ),
    CatalogueEntry(
        "qwen-3b",
        "llm",
        "Qwen/Qwen2.5-3B-Instruct-GGUF",
        "qwen2.5-3b-instruct-q4_k_m.gguf",
        "Qwen2.5 3B Instruct, Q4_K_M (multilingual chat)",
    ),
)
BY_NAME = {entry.name: entry for entry in CATALOGUE}

# The files of a model repository that loading it needs: weights in safetensors when the repo
# has them (else PyTorch's), configs, tokenizers, sentence-transformers' module folders. Exports
# for other runtimes (ONNX, OpenVINO, TF, Flax) are left on the hub.
_SKIP = re.compile(r"(^|/)(onnx|openvino)/|\.(h5|msgpack|ot|onnx|tflite|mlmodel)$|(^|/)\.gitattributes$")
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def hf_cache_dir() -> Path:
    from locallens.hub import hf_cache_dir as cache_dir

    return cache_dir()


def _repo_folder(repo_id: str) -> Path:
    return hf_cache_dir() / f"models--{repo_id.replace('/', '--')}"


def cached_file(repo_id: str, filename: str) -> Path | None:
    """`filename` of `repo_id` in the local cache (the newest snapshot holding it), or None. Offline."""
    snapshots = _repo_folder(repo_id) / "snapshots"
    if not snapshots.is_dir():
        return None
    found = [s / filename for s in snapshots.iterdir() if (s / filename).is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def resolve_gguf_name(value: str) -> Path | None:
    """A catalogue LLM name or `owner/repo/file.gguf` as the cached file; None if `value` is neither.

    Not downloaded yet: ModelUnavailableError (exit 6) with the `pull` command that fetches it.
    """
    entry = BY_NAME.get(value)
    if entry is not None and entry.kind == "llm" and entry.filename:
        repo_id, filename = entry.repo_id, entry.filename
    elif value.startswith(("http://", "https://")):
        target = parse_target(value)
        if target.url is not None:
            from locallens import fetch

            found = fetch.cached(value)
        else:
            repo_id, filename = target.repo_id, target.filename or ""
            found = cached_file(repo_id, filename)
        if found is None:
            raise ModelUnavailableError(
                f"LLM {value} has not been pulled: run `locallens pull {value}` where the network allows, "
                "or pass --llm PATH to a GGUF file"
            )
        return found
    else:
        parts = value.split("/")
        if len(parts) < 3 or not value.lower().endswith(".gguf") or value.startswith(("/", ".", "~")):
            return None
        if Path(value).expanduser().exists():
            return None  # a relative path that happens to look like a hub id
        repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
    path = cached_file(repo_id, filename)
    if path is None:
        raise ModelUnavailableError(
            f"LLM {value} is not in the Hugging Face cache {hf_cache_dir()}: run `locallens pull {value}` "
            "where the network allows, or pass --llm PATH to a GGUF file"
        )
    return path


def catalogue_repo(value: str, kind: str) -> str | None:
    """The hub id of a catalogue name of that kind (`bge-small` → BAAI/bge-small-en-v1.5), or None."""
    entry = BY_NAME.get(value)
    return entry.repo_id if entry is not None and entry.kind == kind else None


# -- what to pull ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    repo_id: str
    filename: str | None  # one file (a GGUF); None: the model's files
    revision: str | None
    name: str  # how the user can name it afterwards
    kind: str  # "embedding", "reranker", "llm" or "model" (a hub model of a kind found on arrival)
    url: str | None = None  # a GGUF's address outside the hub (locallens.fetch); repo_id is then ""
    sha256: str | None = None  # the checksum the user gave for the one file


def parse_target(value: str, sha256: str | None = None) -> Target:
    """What `locallens pull VALUE [--sha256 HEX]` fetches; UsageError (exit 2) naming the forms it takes."""
    from dataclasses import replace

    target = _parse_target(value.strip())
    if sha256 is not None or target.url is not None:
        if target.url is None and target.filename is None:
            raise UsageError(f"--sha256 is the checksum of one file; {value} is a model of several files")
        if target.url is not None:
            from locallens import fetch

            target = replace(target, sha256=fetch.split_url(target.url, sha256)[2])
        elif sha256 is not None:
            from locallens.fetch import checked_sha256

            target = replace(target, sha256=checked_sha256(sha256))
    return target


def _parse_target(value: str) -> Target:
    from locallens.hub import endpoint

    if value in BY_NAME:
        e = BY_NAME[value]
        return Target(e.repo_id, e.filename, None, e.name, e.kind)
    if value.startswith(("http://", "https://")):
        url, base = urlsplit(value), urlsplit(endpoint())
        match = re.match(r"^/([\w.-]+/[\w.-]+)/(?:resolve|blob)/([^/]+)/(.+)$", unquote(url.path))
        if url.netloc == base.netloc and match is not None:
            repo_id, revision, filename = match.groups()
            return Target(
                repo_id, filename, revision, f"{repo_id}/{filename}", "llm" if filename.endswith(".gguf") else "file"
            )
        from locallens import fetch

        fetch.split_url(value)  # a GGUF's URL, or exit 2 saying what it is not
        return Target("", None, None, value, "llm", url=value)
    parts = value.split("/")
    if len(parts) >= 3 and value.lower().endswith(".gguf") and _REPO_ID.match("/".join(parts[:2])):
        return Target("/".join(parts[:2]), "/".join(parts[2:]), None, value, "llm")
    if _REPO_ID.match(value):
        return Target(value, None, None, value, "model")
    names = ", ".join(e.name for e in CATALOGUE)
    raise UsageError(
        f"cannot pull {value!r}: give a catalogue name ({names}), a hub id (OWNER/REPO), "
        "OWNER/REPO/FILE.gguf, or the URL of a GGUF"
    )


# -- pulling ------------------------------------------------------------------------------------


@dataclass(slots=True)
class PulledFile:
    filename: str
    size: int
    checksum: str  # "sha256:..." or "git-sha1:..."
    path: str


@dataclass(slots=True)
class PullResult:
    target: Target
    revision: str
    path: str  # the snapshot folder, or the one file
    files: list[PulledFile] = field(default_factory=list)
    kind: str = ""
    verified: bool = True  # every file checked against a published or given checksum

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def usage(self) -> str:
        flag = {"embedding": "--model", "llm": "--llm", "reranker": "--rerank"}.get(self.kind)
        return f"{flag} {self.target.name}" if flag else self.path

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.target.name,
            "kind": self.kind,
            "repo_id": self.target.repo_id,
            "revision": self.revision,
            "path": self.path,
            "bytes": self.bytes,
            "files": [{"name": f.filename, "bytes": f.size, "checksum": f.checksum} for f in self.files],
            "verified": self.verified,
            "use": self.usage(),
        }


def _checksum(path: Path, sibling: Any) -> tuple[str, str]:
    """(published, computed): the hub's checksum of the file and ours of the bytes on disk."""
    lfs = getattr(sibling, "lfs", None)
    sha256 = getattr(lfs, "sha256", None) if lfs is not None else None
    if sha256:
        return f"sha256:{sha256}", f"sha256:{_sha256_file(path)}"
    blob_id = getattr(sibling, "blob_id", None)
    if blob_id:
        data = path.read_bytes()  # small files only are stored without LFS
        git = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
        return f"git-sha1:{blob_id}", f"git-sha1:{git}"
    raise ModelUnavailableError(f"the hub publishes no checksum for {sibling.rfilename}: refusing an unverified file")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _remove(path: Path) -> None:
    """A bad download: the snapshot's link and the blob it points to."""
    blob = path.resolve()
    for p in (path, blob):
        try:
            p.unlink()
        except OSError:
            pass


def _kind_of(folder: Path) -> str:
    """What a downloaded model folder is: a cross-encoder, or embeddings (sentence-transformers)."""
    import json

    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    if any(a.endswith("ForSequenceClassification") for a in config.get("architectures") or []):
        return "reranker"
    return "embedding"


def _wanted(filenames: Sequence[str]) -> list[str]:
    kept = [f for f in filenames if not _SKIP.search(f)]
    if any(f.endswith(".safetensors") for f in kept):
        kept = [f for f in kept if not f.endswith((".bin", ".pt", ".pth")) or "colbert" in f or "sparse" in f]
    return kept


def _hub_error(what: str, exc: BaseException) -> ModelUnavailableError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ModelUnavailableError(f"cannot pull {what}: {first}")


def pull(target: Target, *, progress: bool = True) -> PullResult:
    """Download `target` into the Hugging Face cache (a URL's GGUF: `locallens.fetch`), verified;
    ModelUnavailableError (exit 6) on failure."""
    if target.url is not None:
        return _pull_url(target, progress)
    from locallens import hub

    what = target.name
    hub.probe(target.repo_id, f"{what} cannot be pulled", "pull needs the network; every other command runs offline")
    was = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "0"  # the one place locallens goes online, as asked
    from huggingface_hub import constants

    offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = False  # read when called; the hub stack may have been imported offline
    try:
        return _pull_hub(target, progress)
    finally:  # the rest of this process (a test, a library caller) is offline again
        constants.HF_HUB_OFFLINE = offline
        if was is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = was


def _pull_url(target: Target, progress: bool) -> PullResult:
    from locallens import fetch

    assert target.url is not None
    got = fetch.fetch(target.url, target.sha256, progress=progress)
    result = PullResult(target, "", str(got.path), kind="llm", verified=got.verified)
    result.files.append(PulledFile(got.path.name, got.size, f"sha256:{got.sha256}", str(got.path)))
    return result


def _fetch_blob(repo_id: str, filename: str, revision: str | None, base: str, cache: Path) -> None:
    """Put the blob of one large file in the cache, continuing the bytes an earlier run left.

    The hub client (huggingface_hub 1.x and later) writes each download to a file whose name is
    unique to the process and deletes it when the download fails, so a `pull` that was stopped
    would start that file over. Here the bytes go to `blobs/ETAG.incomplete` (the name older
    clients resumed from) through the client's own `http_get`, which asks for the rest with a
    Range request; the blob is named by its ETag, the SHA-256 of the file for large files, so
    the bytes kept can only be a prefix of that very file. `hf_hub_download` then finds the blob
    and adds the snapshot's link to it. The client's lock for that blob is held meanwhile.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import WeakFileLock, build_hf_headers

    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=base)
    meta = get_hf_file_metadata(url)
    if not meta.etag or not meta.location:
        return  # the client's own download says what is wrong
    folder = _repo_folder(repo_id)
    blob = folder / "blobs" / meta.etag
    if blob.exists():
        return
    blob.parent.mkdir(parents=True, exist_ok=True)
    lock = cache / ".locks" / folder.name / f"{meta.etag}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    part = blob.with_name(f"{meta.etag}.incomplete")
    with WeakFileLock(lock):
        if blob.exists():
            return
        have = part.stat().st_size if part.exists() else 0
        if meta.size is not None and have > meta.size:
            part.unlink()  # not a prefix of this file
            have = 0
        with open(part, "ab") as fh:
            http_get(
                meta.location,
                fh,
                resume_size=have,
                headers=build_hf_headers(),
                expected_size=meta.size,
                displayed_filename=filename,
            )
        os.replace(part, blob)  # checked against the published SHA-256 by the caller


def _pull_hub(target: Target, progress: bool) -> PullResult:
    import huggingface_hub
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    from locallens import hub

    what = target.name
    hub.bounded_client()
    if progress:
        enable_progress_bars()
    else:
        disable_progress_bars()
    base = hub.endpoint()
    cache = str(hf_cache_dir())
    try:
        info = HfApi(endpoint=base).model_info(target.repo_id, revision=target.revision, files_metadata=True)
        siblings = {s.rfilename: s for s in info.siblings or []}
        if target.filename is not None:
            if target.filename not in siblings:
                ggufs = ", ".join(sorted(f for f in siblings if f.endswith(".gguf"))[:8]) or "none"
                raise ModelUnavailableError(f"{target.repo_id} has no file {target.filename} (GGUF files: {ggufs})")
            names = [target.filename]
        else:
            names = _wanted(sorted(siblings))
            if not names:
                raise ModelUnavailableError(f"{target.repo_id} holds no model files")
        result = PullResult(target, info.sha or target.revision or "main", "", kind=target.kind)
        for name in names:
            if getattr(siblings[name].lfs, "sha256", None):  # a large file: resumable across runs
                _fetch_blob(target.repo_id, name, info.sha, base, Path(cache))
            path = Path(hf_hub_download(target.repo_id, name, revision=info.sha, cache_dir=cache, endpoint=base))
            published, computed = _checksum(path, siblings[name])
            if target.sha256 is not None and published == computed and published != f"sha256:{target.sha256}":
                published = f"sha256:{target.sha256}"  # the hub's file, but not the bytes the user asked for
                computed = computed if computed.startswith("sha256:") else f"sha256:{_sha256_file(path)}"
            if published != computed:
                _remove(path)
                raise ModelUnavailableError(
                    f"checksum mismatch for {target.repo_id}/{name}: expected {published}, the download is "
                    f"{computed}; the file was removed, pull again"
                )
            result.files.append(PulledFile(name, path.stat().st_size, published, str(path)))
    except ModelUnavailableError:
        raise
    except (huggingface_hub.errors.HfHubHTTPError, OSError, ValueError) as exc:
        raise _hub_error(what, exc) from None
    except Exception as exc:  # the HTTP library's errors (timeouts, resets) have no common base here
        if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "huggingface_hub"):
            raise _hub_error(what, exc) from None
        raise
    if target.filename is not None:
        result.path = result.files[0].path
    else:
        result.path = str(_repo_folder(target.repo_id) / "snapshots" / result.revision)
        if result.kind == "model":
            result.kind = _kind_of(Path(result.path))
    return result
