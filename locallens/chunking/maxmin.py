"""Max-Min semantic chunking (docs/behaviour.md#semantic-chunking; "Max–Min semantic chunking of
documents for RAG application", 2025).

Sentences are read in order and each one either joins the open chunk C or opens a new one:

* C has one sentence: the newcomer joins when ``init_const * sim > hard_threshold``
  (1.5 * sim > 0.6, i.e. sim > 0.4: a lone sentence has no internal similarity to compare with).
* C has two or more: it joins when ``max_sim > max(c * min_sim * sigmoid(|C|), hard_threshold)``,
  where max_sim is its best similarity to any sentence of C and min_sim the lowest pairwise
  similarity among C's last ``window`` (5) sentences: a newcomer must be at least as close to
  the chunk as the chunk's own members are to each other (scaled by c and a sigmoid that grows
  towards 1 with |C|), and never less than the hard floor.
* C is closed when it holds ``max_sentences`` (15); the next sentence opens a new chunk.

Finally, chunks shorter than ``min_chunk_length`` characters or "garbage" are dropped.

Where the reference implementation (TypeScript, not in this repository) is ambiguous or silent,
and what this module does:

1. ``|C|`` in the sigmoid is the number of sentences already in the chunk, before the newcomer
   (the reference's ``chunkEmbeddings.length``). Since |C| >= 2 there, sigmoid(|C|) >= 0.88.
2. max_sim is taken over *all* sentences of the chunk (at most 15), min_sim over the last
   ``window`` only (the reference's O(1) approximation of the paper's all-pairs minimum).
3. The forced close comes before the similarity test, so a chunk never exceeds
   ``max_sentences``; the sentence that opens the next chunk is then paired with the following
   one by the first-pair rule, exactly as after an ordinary break.
4. Both comparisons are strict (``>``), as in the reference: a tie opens a new chunk.
5. Dropped chunks are not merged into a neighbour: their text is not indexed (as
   docs/behaviour.md#semantic-chunking says).
   A document whose only chunk is short (a one-line note) therefore yields no chunk.
6. Lengths are counted in characters (code points); the reference's JavaScript counts UTF-16
   units, which differs only for characters outside the BMP (emoji).
7. "Alphanumeric" is Unicode-aware (``str.isalnum``): the reference's ``/[a-zA-Z0-9]/`` is ASCII
   only, which would send a chunk of pure Cyrillic or CJK text on to the repetition test, and
   the reference's own comment calls the check language-agnostic. Decoration is the reference's
   ASCII set plus whitespace, Unicode dashes, box drawing, block elements, geometric shapes and
   bullets.
8. Similarity with a zero vector is 0 (as the reference); rows are re-normalised defensively.
9. Not in the reference: an optional ``max_tokens`` (default None = the reference's behaviour). When set, a
   sentence over it is first cut into token windows, and a chunk is closed before a sentence
   that would take it past ``max_tokens``, so no chunk outgrows an embedder's input limit.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from locallens.chunking.percentile import (
    Encode,
    SplitSentences,
    default_split,
    embed_documents,
    sentence_encode,
    sentences_within,
)
from locallens.errors import UsageError

__all__ = ["MaxMinChunker", "is_garbage_chunk", "sigmoid"]

# The reference's decoration characters (its regex class), without the whitespace it also allows.
_ASCII_DECORATION = frozenset("-=_.*#|~`@!%^&*()[]{}\\/<>:+")
_BULLETS = frozenset("•◦‣⁃∙·…")


@functools.lru_cache(maxsize=64)
def _upper_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the distinct pairs (i < j) of an n x n matrix; built once per size (building
    them was half the time of `_joins`)."""
    return np.triu_indices(n, k=1)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _is_decoration(char: str) -> bool:
    if char.isspace() or char in _ASCII_DECORATION or char in _BULLETS:
        return True
    if unicodedata.category(char) == "Pd":  # – — ― and other dashes
        return True
    return 0x2500 <= ord(char) <= 0x25FF  # box drawing, block elements, geometric shapes


def is_garbage_chunk(text: str) -> bool:
    """The garbage filter (docs/behaviour.md#semantic-chunking): empty; or no alphanumerics and either only decoration or one
    character making up over 80% of the (stripped) text. Any letter or digit keeps a chunk."""
    trimmed = text.strip()
    if not trimmed:
        return True
    if any(char.isalnum() for char in trimmed):
        return False
    if all(_is_decoration(char) for char in trimmed):
        return True
    most = Counter(trimmed).most_common(1)[0][1]
    return most / len(trimmed) > 0.8


class MaxMinChunker:
    """Max-Min semantic chunking. ``chunk(text) -> list[str]``."""

    def __init__(
        self,
        encode: Encode,
        hard_threshold: float = 0.6,
        init_const: float = 1.5,
        c: float = 0.9,
        min_chunk_length: int = 50,
        max_sentences: int = 15,
        *,
        window: int = 5,
        max_tokens: int | None = None,
        split: SplitSentences | None = None,
    ) -> None:
        if max_sentences < 1:
            raise UsageError(f"max_sentences must be at least 1 (got {max_sentences})")
        if window < 2:
            raise UsageError(f"the min-similarity window needs at least 2 sentences (got {window})")
        if min_chunk_length < 0:
            raise UsageError(f"min_chunk_length cannot be negative (got {min_chunk_length})")
        if max_tokens is not None and max_tokens < 1:
            raise UsageError(f"max_tokens must be positive (got {max_tokens})")
        self.encode = encode
        self._encode_sentences = sentence_encode(encode)
        self.hard_threshold = hard_threshold
        self.init_const = init_const
        self.c = c
        self.min_chunk_length = min_chunk_length
        self.max_sentences = max_sentences
        self.window = window
        self.max_tokens = max_tokens
        self.split = split or default_split

    def chunk(self, text: str) -> list[str]:
        return self.chunk_many([text])[0]

    def chunk_many(self, texts: Sequence[str]) -> list[list[str]]:
        """`chunk` of each text, their sentences embedded in one call (see embed_documents)."""
        split = [sentences_within(text, self.split, self.max_tokens) if text.strip() else ([], []) for text in texts]
        rows = embed_documents(self._encode_sentences, [sentences for sentences, _ in split])
        out: list[list[str]] = []
        for (sentences, token_counts), document_rows in zip(split, rows, strict=True):
            chunks = []
            for group in self.group(document_rows, token_counts):
                content = " ".join(sentences[i] for i in group)
                if len(content) >= self.min_chunk_length and not is_garbage_chunk(content):
                    chunks.append(content)
            out.append(chunks)
        return out

    def group(self, rows: np.ndarray, token_counts: list[int] | None = None) -> list[list[int]]:
        """Sentence indices grouped into chunks, before any filtering. `rows`: unit vectors."""
        groups: list[list[int]] = []
        current: list[int] = []
        current_tokens = 0
        for i in range(len(rows)):
            n_tokens = token_counts[i] if token_counts is not None else 0
            if current and self._must_close(current, current_tokens, n_tokens):
                joins = False
            elif len(current) == 1:
                # Init phase: one sentence has no internal similarity; compare the pair directly.
                joins = self.init_const * float(rows[current[0]] @ rows[i]) > self.hard_threshold
            elif current:
                joins = self._joins(rows, current, i)
            else:
                joins = True  # the very first sentence opens the first chunk
            if joins:
                current.append(i)
                current_tokens += n_tokens
            else:
                groups.append(current)
                current, current_tokens = [i], n_tokens
        if current:
            groups.append(current)
        return groups

    def _must_close(self, current: list[int], current_tokens: int, n_tokens: int) -> bool:
        if len(current) >= self.max_sentences:
            return True
        return self.max_tokens is not None and current_tokens + n_tokens > self.max_tokens

    def _joins(self, rows: np.ndarray, current: list[int], i: int) -> bool:
        members = rows[current]
        max_sim = float(np.max(members @ rows[i]))
        recent = members[-self.window :]
        pairwise = recent @ recent.T
        # Minimum over distinct pairs only (the diagonal is each sentence with itself).
        min_sim = float(np.min(pairwise[_upper_pairs(len(recent))]))
        threshold = max(self.c * min_sim * sigmoid(len(current)), self.hard_threshold)
        return max_sim > threshold
