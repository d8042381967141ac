"""Markdown chunking by lines (design §14): ~4 characters per token, 400-token chunks, 80 overlap.

Walk the lines; a line longer than ``max_chars`` is cut into ``max_chars`` segments; segments join
the current chunk while ``chars + len(segment) + 1 ≤ max_chars``, otherwise the chunk is flushed
and its trailing lines are carried into the next one as overlap: lines are taken from the end until
their lengths (+1 each) reach ``overlap_chars``, but never more than half a chunk (a longer carry
would let chunks outgrow ``max_chars`` and, with a large overlap, repeat text without bound). A
carry that cannot sit beside the next segment is dropped rather than flushed alone, since the
previous chunk already holds it. A final newline does not open an extra (empty) line, so
citations end on the last real line.
"""

from __future__ import annotations

import msgspec

from maclaw_fast.embedding.cache import text_key as sha256_text  # the cache key is the hash
from maclaw_fast.errors import ValidationError

SOURCE = "memory"


class Chunk(msgspec.Struct, frozen=True):
    """A chunk of one file: 1-based inclusive line range, text and sha256 of the text."""

    start_line: int
    end_line: int
    text: str
    hash: str


def chunk_limits(tokens: int, overlap: int, chars_per_token: int = 4) -> tuple[int, int]:
    """``(max_chars, overlap_chars)`` for a chunk size and overlap in tokens.

    Examples
    --------
    >>> chunk_limits(400, 80)
    (1600, 320)
    >>> chunk_limits(1, 0)
    (32, 0)
    """
    if tokens < 1 or overlap < 0 or chars_per_token < 1:
        raise ValidationError("chunk tokens and chars per token must be ≥ 1 and overlap ≥ 0")
    return max(32, tokens * chars_per_token), overlap * chars_per_token


def chunk_markdown(content: str, tokens: int = 400, overlap: int = 80,
                   chars_per_token: int = 4) -> list[Chunk]:
    """Split Markdown text into overlapping line-aligned chunks.

    Chunks whose text is only whitespace are dropped (nothing to find in them).

    Examples
    --------
    >>> [len(c.text) for c in chunk_markdown("x" * 4825, 400, 0)]
    [1600, 1600, 1600, 25]
    >>> [(c.start_line, c.end_line) for c in chunk_markdown("a\\nb\\nc", 400, 80)]
    [(1, 3)]
    """
    max_chars, overlap_chars = chunk_limits(tokens, overlap, chars_per_token)
    carry_cap = max_chars // 2
    chunks: list[Chunk] = []
    cur_lines: list[str] = []
    cur_nos: list[int] = []
    cur_chars = 0
    n_carried = 0

    def flush() -> None:
        text = "\n".join(cur_lines)
        if text.strip():
            chunks.append(Chunk(cur_nos[0], cur_nos[-1], text, sha256_text(text)))

    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    for line_no, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        segments = [line[i:i + max_chars] for i in range(0, len(line), max_chars)] or [""]
        for seg in segments:
            size = len(seg) + 1
            if cur_lines and cur_chars + size > max_chars:
                if n_carried == len(cur_lines):
                    cur_lines, cur_nos, cur_chars, n_carried = [], [], 0, 0
                else:
                    flush()
                    keep, acc = 0, 0
                    # why the cap: see the module docstring
                    while keep < len(cur_lines) and acc < overlap_chars:
                        nxt = len(cur_lines[-1 - keep]) + 1
                        if acc + nxt > carry_cap:
                            break
                        acc += nxt
                        keep += 1
                    cur_lines = cur_lines[len(cur_lines) - keep:] if keep else []
                    cur_nos = cur_nos[len(cur_nos) - keep:] if keep else []
                    cur_chars = acc
                    n_carried = keep
                    if cur_lines and cur_chars + size > max_chars:
                        cur_lines, cur_nos, cur_chars, n_carried = [], [], 0, 0
            cur_lines.append(seg)
            cur_nos.append(line_no)
            cur_chars += size
    if cur_lines and n_carried < len(cur_lines):
        flush()
    return chunks


def chunk_id(path: str, start_line: int, end_line: int, text_hash: str, model: str,
             source: str = SOURCE) -> str:
    """Stable chunk id: sha256 of ``source:path:start:end:hash:model``.

    Examples
    --------
    >>> len(chunk_id("MEMORY.md", 1, 3, "ab", "hash-v1:384"))
    64
    """
    return sha256_text(f"{source}:{path}:{start_line}:{end_line}:{text_hash}:{model}")
