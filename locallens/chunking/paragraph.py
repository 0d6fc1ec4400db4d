"""Paragraph / token chunking: the default strategy (docs/behaviour.md#chunking).

The text is split into paragraphs on blank lines, each paragraph is tokenised once with tiktoken
(cl100k_base), and paragraphs are packed greedily into chunks of at most ``chunk_size`` tokens,
joined with ``"\\n\\n"``. Consecutive chunks share up to ``chunk_overlap`` tokens. A paragraph
longer than ``chunk_size`` is cut into token windows of ``chunk_size`` tokens with a stride of
``chunk_size - chunk_overlap``.

Guarantees (each has a test in tests/test_chunking.py):

* Every returned chunk is stripped, non-empty, and ``count_tokens(chunk) <= chunk_size``. Token
  counts are not additive (``"A."`` + ``"\\n\\n"`` encodes as ``"A"``, ``".\\n\\n"``; stripping
  `` indentation`` turns one token into two), so packing uses a cheap estimate and every chunk
  that joins more than one piece is re-counted exactly as it will be stored before it is emitted.
  The one exception: a ``chunk_size`` too small to hold a single character (under 4 tokens) may
  yield single-character chunks over the limit, since a character is never cut.
* The text of two consecutive chunks that is shared counts at most ``chunk_overlap`` tokens.
* Nothing is lost: with paragraphs joined by ``"\\n\\n"``, every chunk is a substring of the
  text and the chunks cover it from start to end (only whitespace may fall between two chunks).
* Token slices never break a character: a window starts and ends only where a token begins a
  new UTF-8 character, so every chunk decodes strictly.
* Deterministic, linear in the input, memory bounded by a few bytes per token of the longest
  paragraph: a 50 MB single line is encoded once (in 64 KB segments, see ``_encode_long``) and
  then sliced.

What "share up to ``chunk_overlap`` tokens" means here (the contract leaves it open):

* The next chunk starts with the longest run of *whole* trailing pieces (paragraphs, or the last
  window of a long paragraph) of the previous chunk whose text fits in the overlap budget.
* When not even the last piece fits whole, the next chunk starts with the last tokens of the
  previous chunk, as many as the budget allows, moved forward to a character boundary.
* The budget is ``min(chunk_overlap, chunk_size - tokens(first new piece) - 1)``: the overlap is
  the first thing sacrificed, so it never pushes a chunk over ``chunk_size`` and never leaves a
  chunk without new text (which is also what makes the loop always advance).
* Windows of one long paragraph overlap by construction (the stride); the first window of a long
  paragraph is full and carries no overlap from the chunk before it.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from locallens.config import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from locallens.errors import UsageError
from locallens.tokens import get_encoding

__all__ = ["ParagraphTokenChunker", "split_paragraphs"]

# A paragraph break: the newline that ends a line, then one or more lines holding nothing but
# whitespace ("a\n\nb", "a\n  \n\t\nb"). A single newline stays inside its paragraph.
_PARAGRAPH_BREAK = re.compile(r"\n(?:[^\S\n]*\n)+")

# What joins two pieces of one chunk, and what it costs in the packing estimate: "\n\n" is one
# cl100k token, or none when it merges into a preceding punctuation token (".\n\n").
_JOIN = "\n\n"
_JOIN_TOKENS = 1

# Paragraphs longer than this many characters are tokenised in segments (see `_encode_long`).
_SEGMENT_CHARS = 1 << 16
# Where a segment may be cut: the last whitespace in this many characters before the limit.
_SEGMENT_SLACK = 1024

Tokens = Sequence[int] | np.ndarray  # a list from tiktoken, or a numpy uint32 array for long paragraphs


def split_paragraphs(text: str) -> Iterator[str]:
    """Yield the paragraphs of `text`: runs separated by blank lines, trailing blanks removed.

    Leading indentation is kept (it matters to an indented code block once the paragraph is
    joined into a chunk after another one); whitespace-only paragraphs are skipped. Lazy, so a
    huge document is never held twice as a list of paragraphs.
    """
    position = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        paragraph = text[position : match.start()].rstrip()
        if paragraph.strip():
            yield paragraph
        position = match.end()
    paragraph = text[position:].rstrip()
    if paragraph.strip():
        yield paragraph


@functools.lru_cache(maxsize=1)
def _continuation_table() -> np.ndarray:
    """For every token id: does its first byte continue a UTF-8 character (0b10xxxxxx)?

    A token boundary is a character boundary exactly when the token after it does not start
    with a continuation byte, so this one table lets us slice token arrays safely without ever
    materialising byte offsets.
    """
    encoding = get_encoding()
    table = np.zeros(encoding.n_vocab, dtype=bool)
    for token in range(encoding.n_vocab):
        try:
            first = encoding.decode_single_token_bytes(token)[:1]
        except KeyError:  # cl100k has a few unused ids before its special tokens
            continue
        table[token] = bool(first) and (first[0] & 0xC0) == 0x80
    return table


@dataclass(slots=True)
class _Piece:
    """A paragraph, a token window of a long paragraph, or the tail of one of them.

    Invariant: decoding `tokens` gives exactly `text`.
    """

    text: str
    tokens: Tokens
    # Tokens of the piece for the packing estimate. For a paragraph: the larger of its count
    # with and without its leading indentation, so that it is guaranteed to fit alone when it is
    # the first piece of a chunk (and is stripped). For windows and tails: the exact count of
    # the stripped text.
    n_tokens: int
    # A window that starts inside the paragraph the previous window came from: it already
    # overlaps the previous chunk, so it always opens a chunk of its own and gets no extra
    # overlap, and nothing is ever joined in front of it with "\n\n".
    continuation: bool = False


class ParagraphTokenChunker:
    """Paragraph / token chunking with overlap (docs/behaviour.md#chunking). ``chunk(text) -> list[str]``."""

    def __init__(self, chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> None:
        # Same rules and wording as config.ChunkSettings: the chunker is also used on its own.
        if chunk_size <= 0:
            raise UsageError(f"--chunk-size must be positive (got {chunk_size})")
        if chunk_overlap < 0:
            raise UsageError(f"--chunk-overlap cannot be negative (got {chunk_overlap})")
        if chunk_size <= chunk_overlap:
            raise UsageError(
                f"--chunk-size ({chunk_size}) must be larger than --chunk-overlap "
                f"({chunk_overlap}), or chunking would never advance"
            )
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self._encoding = get_encoding()

    # ----------------------------------------------------------------------------------------
    # Public API
    # ----------------------------------------------------------------------------------------

    def chunk(self, text: str) -> list[str]:
        """The chunk texts of `text`, in order: stripped, non-empty, within `chunk_size`."""
        return list(self.iter_chunks(text))

    def chunk_many(self, texts: Sequence[str]) -> list[list[str]]:
        """`chunk` of each text (the Chunker protocol's batch form)."""
        return [self.chunk(text) for text in texts]

    def iter_chunks(self, text: str) -> Iterator[str]:
        """Lazy form of `chunk`: only the current and the previous chunk are held."""
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        text = text.strip()
        if not text:
            return
        size = self.chunk_size
        pieces = self._pieces(text)
        # Pieces taken from the stream but not placed yet (the estimate let them in, the exact
        # count threw them out, or they did not fit): they open the next chunk.
        pending: deque[_Piece] = deque()

        def take() -> _Piece | None:
            return pending.popleft() if pending else next(pieces, None)

        previous: list[_Piece] = []
        while (first := take()) is not None:
            body = [first]
            cost = first.n_tokens
            overlap: list[_Piece] = []
            if previous and not first.continuation and self.chunk_overlap > 0:
                budget = min(self.chunk_overlap, size - first.n_tokens - _JOIN_TOKENS)
                overlap = self._overlap(previous, budget)
                cost += sum(piece.n_tokens + _JOIN_TOKENS for piece in overlap)

            # Greedy packing on the estimate.
            while (candidate := take()) is not None:
                if candidate.continuation or cost + _JOIN_TOKENS + candidate.n_tokens > size:
                    pending.appendleft(candidate)
                    break
                body.append(candidate)
                cost += _JOIN_TOKENS + candidate.n_tokens

            # Exact check of the text as it will be stored. A lone piece fits by construction
            # (see `_Piece.n_tokens`), so only joined chunks pay for a second encoding. On a
            # miss, give back the last new piece first (it opens the next chunk), and drop the
            # overlap only when one new piece is left.
            while True:
                parts = overlap + body
                content = _JOIN.join(piece.text for piece in parts).strip()
                if len(parts) == 1 or self._count(content) <= size:
                    break
                if len(body) > 1:
                    pending.appendleft(body.pop())
                else:
                    overlap = []

            if content:  # a window of pure whitespace strips to nothing: drop it
                yield content
            previous = parts

    # ----------------------------------------------------------------------------------------
    # Pieces
    # ----------------------------------------------------------------------------------------

    def _count(self, text: str) -> int:
        # encode_ordinary == encode(disallowed_special=()): special-token text is plain text,
        # exactly as locallens.tokens.count_tokens counts it.
        return len(self._encoding.encode_ordinary(text))

    def _decode(self, tokens: Tokens) -> str:
        ids: Sequence[int] = tokens.tolist() if isinstance(tokens, np.ndarray) else tokens
        # Strict: callers only slice at character boundaries, so an error here is a bug.
        return self._encoding.decode_bytes(ids).decode("utf-8")

    def _pieces(self, text: str) -> Iterator[_Piece]:
        """Paragraphs, each encoded once; a paragraph over `chunk_size` becomes windows."""
        for paragraph in split_paragraphs(text):
            segmented = len(paragraph) > _SEGMENT_CHARS
            if segmented:
                tokens: Tokens = self._encode_long(paragraph)
            else:
                tokens = self._encoding.encode_ordinary(paragraph)
            n_tokens = len(tokens)
            if n_tokens <= self.chunk_size and (segmented or paragraph[0].isspace()):
                # It may be stored alone, stripped, without another check: count that text.
                # Stripping indentation can add a token (" indentation" is 1 token,
                # "indentation" 2), and segments are only approximately the whole's tokens.
                n_tokens = max(n_tokens, self._count(paragraph.lstrip()))
            if n_tokens <= self.chunk_size:
                yield _Piece(paragraph, tokens, n_tokens)
            else:
                yield from self._windows(np.asarray(tokens, dtype=np.uint32))

    def _encode_long(self, paragraph: str) -> np.ndarray:
        """Tokens of a very long paragraph, encoded in ~64 KB segments.

        tiktoken slows down more than linearly on one huge piece (2 MB of letters without a
        space: 0.6 s; 8 MB: 3.4 s), and a Python list of 12 M token ids would cost ~400 MB.
        Segments are cut at whitespace where there is any (tiktoken never merges across the
        start of " word", so such a cut changes nothing); otherwise anywhere between two
        characters, which may tokenise the few characters at the cut differently: harmless,
        because a window's text is always re-counted before it is used.
        """
        parts = []
        start = 0
        while start < len(paragraph):
            end = min(start + _SEGMENT_CHARS, len(paragraph))
            if end < len(paragraph):
                window = (end - _SEGMENT_SLACK, end)
                cut = max(paragraph.rfind(" ", *window), paragraph.rfind("\n", *window))
                if cut > start:
                    end = cut
            parts.append(self._encoding.encode_to_numpy(paragraph[start:end]).astype(np.uint32, copy=False))
            start = end
        return np.concatenate(parts)

    def _windows(self, tokens: np.ndarray) -> Iterator[_Piece]:
        """Cut a long paragraph into windows of `chunk_size` tokens, stride size - overlap.

        Boundaries move to character boundaries: the end of a window backwards, the start of the
        next one forwards (so the overlap only shrinks). Each window is then counted as it will
        be stored (stripped) and shortened by the excess in the rare case re-encoding the slice
        gives more tokens than the slice had.
        """
        overlap = self.chunk_overlap
        total = len(tokens)
        continues = _continuation_table()[tokens]  # continues[i]: no char boundary before token i

        def boundary(i: int) -> bool:
            return i <= 0 or i >= total or not continues[i]

        start = previous_end = 0
        while start < total:
            end, text, n_tokens = self._fit_window(tokens, start, boundary)
            overlapping = start < previous_end
            if overlapping and (end <= previous_end or not self._decode(tokens[previous_end:end]).strip()):
                # The overlap leaves this window no room for new text (an overlap of nearly the
                # whole size over a multi-token character or a run of whitespace tokens): the
                # window would repeat the previous one. Drop the overlap for this window.
                start = previous_end
                continue
            yield _Piece(text, tokens[start:end], n_tokens, continuation=start > 0)
            if end >= total:
                return
            previous_end = end

            # The next window starts `overlap` tokens before this one ends, at a character
            # boundary at or after that point. Its shared text must count <= overlap tokens
            # once stripped, and it must leave some of this window's text behind (not just
            # whitespace): otherwise, stripped, both would start at the same character and this
            # window would be redundant. Every adjustment moves it forward: the overlap shrinks.
            following = max(end - overlap, start + 1)
            while following < end:
                while not boundary(following):
                    following += 1  # stops at `end` at the latest: `end` is a boundary
                if following >= end:
                    break
                if not self._decode(tokens[start:following]).strip():
                    following += 1
                    continue
                shared = self._count(self._decode(tokens[following:end]).strip())
                if shared <= overlap:
                    break
                following += shared - overlap
            start = min(following, end)

    def _fit_window(self, tokens: np.ndarray, start: int, boundary: Callable[[int], bool]) -> tuple[int, str, int]:
        """The window from `start`: (end, text, tokens of the stripped text)."""
        size = self.chunk_size
        end = self._floor_boundary(start, min(start + size, len(tokens)), boundary)
        text = self._decode(tokens[start:end])
        n_tokens = self._count(text.strip())
        while n_tokens > size:
            shorter = self._floor_boundary(start, end - (n_tokens - size), boundary)
            if shorter >= end:  # a single character over the limit (chunk_size < 4)
                break
            end = shorter
            text = self._decode(tokens[start:end])
            n_tokens = self._count(text.strip())
        return end, text, n_tokens

    @staticmethod
    def _floor_boundary(start: int, end: int, boundary: Callable[[int], bool]) -> int:
        """The last character boundary in (start, end]; failing that, the first one after start."""
        candidate = end
        while candidate > start and not boundary(candidate):
            candidate -= 1
        if candidate > start:
            return candidate
        # Not one whole character fits in the window (chunk_size under 4 tokens, or a token
        # run with no boundary): take one whole character anyway rather than cut it.
        candidate = start + 1
        while not boundary(candidate):
            candidate += 1
        return candidate

    def _overlap(self, previous: list[_Piece], budget: int) -> list[_Piece]:
        """The start of the next chunk: trailing text of `previous` counting <= budget tokens."""
        if budget <= 0:
            return []
        # Whole trailing pieces, as many as fit (checked exactly: the estimate only decides
        # whether counting is worth it), but never all of them: a chunk that repeated the whole
        # previous chunk would make it redundant (so chunk starts strictly advance).
        best = len(previous)
        estimate = -_JOIN_TOKENS
        for index in range(len(previous) - 1, 0, -1):
            estimate += _JOIN_TOKENS + previous[index].n_tokens
            if estimate > budget:
                break
            shared = _JOIN.join(piece.text for piece in previous[index:]).strip()
            if self._count(shared) > budget:
                break
            best = index
        if best < len(previous):
            return previous[best:]

        # Not even the last piece fits whole: its last `budget` tokens, moved forward to a
        # character boundary, shortened further if re-encoding counts more than budget.
        last = previous[-1]
        tokens = last.tokens
        continues = _continuation_table()
        start = max(len(tokens) - budget, 1)
        while start < len(tokens):
            while start < len(tokens) and continues[tokens[start]]:
                start += 1
            if start >= len(tokens):
                break
            if not self._decode(tokens[:start]).strip():
                # Only indentation left behind: stripped, the tail would be the whole piece.
                start += 1
                continue
            text = self._decode(tokens[start:])
            n_tokens = self._count(text.strip())
            if n_tokens <= budget:
                if not text.strip():
                    break  # a tail of pure whitespace shares nothing
                return [_Piece(text, tokens[start:], n_tokens)]
            start += n_tokens - budget
        return []
