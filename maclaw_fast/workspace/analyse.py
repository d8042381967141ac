"""Chunk and tokenise a batch of files into columns, on two cores when the batch is big.

A sync's files are chunked (``chunking.py``) and their chunks tokenised (design §2); this is most
of a full index build. :func:`analyse_files` returns one :class:`Analysed` per part of the
batch: columns of chunk fields plus every token as an int32 id into the part's own vocabulary
(first-seen order). A forked child (``text/bulk.py``) sends its part back as a few long strings
and one byte array instead of millions of token strings, and the parent maps a part's vocabulary
to the index's term ids once (:func:`global_ids`), which gives the same ids as adding the tokens
one by one.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import msgspec
import numpy as np

from maclaw_fast.text.bulk import forked_parts
from maclaw_fast.text.tokenizer import tokenize
from maclaw_fast.text.vocabulary import Vocabulary
from maclaw_fast.workspace.chunking import chunk_id, chunk_markdown

TOKEN_SEP = "\n"  # the tokenizer strips whitespace, so no token holds a newline


class Analysed(msgspec.Struct, array_like=True):
    """Chunks of consecutive files as columns; file ``i`` owns ``file_chunks[i]`` chunks.

    ``lengths`` holds each chunk's token count, ``ids`` every token (chunk after chunk) as
    int32 indices into ``vocab``.
    """

    file_chunks: list[int]
    chunk_id: list[str]
    start_line: list[int]
    end_line: list[int]
    text: list[str]
    hash: list[str]
    lengths: list[int]
    vocab: list[str]
    ids: bytes

    @property
    def size(self) -> int:
        return len(self.text)


def analyse(files: list[tuple[str, str]], chunking: tuple[int, int, int], reuse: dict[str, str],
            model: str) -> Analysed:
    """Chunk every ``(path, text)`` file and tokenise every chunk; a chunk whose hash is in
    ``reuse`` (the tokens of a removed chunk with the same text, joined by :data:`TOKEN_SEP`)
    takes those tokens instead.
    ``model`` (the embedder fingerprint) goes into the chunk ids.

    Examples
    --------
    >>> a = analyse([("MEMORY.md", "Deploy the script\\n部署脚本")], (400, 80, 4), {}, "none")
    >>> a.file_chunks, a.lengths, a.vocab
    ([1], [4], ['deploy', 'script', '部署', '脚本'])
    """
    out = Analysed([], [], [], [], [], [], [], [], b"")
    flat: list[str] = []
    for path, text in files:
        chunks = chunk_markdown(text, *chunking)
        out.file_chunks.append(len(chunks))
        for c in chunks:
            out.chunk_id.append(chunk_id(path, c.start_line, c.end_line, c.hash, model))
            stored = reuse.get(c.hash)
            if stored is None:
                toks = tokenize(c.text)
            else:
                toks = stored.split(TOKEN_SEP) if stored else []
            out.start_line.append(c.start_line)
            out.end_line.append(c.end_line)
            out.text.append(c.text)
            out.hash.append(c.hash)
            out.lengths.append(len(toks))
            flat.extend(toks)
    local = defaultdict(None)
    local.default_factory = local.__len__  # a new token's id is the count before it
    out.ids = np.fromiter(map(local.__getitem__, flat), np.int32, len(flat)).tobytes()
    out.vocab = list(local)
    return out


def _consistent(texts: list[str], part: Analysed) -> bool:
    n = part.size
    columns = (part.chunk_id, part.start_line, part.end_line, part.hash, part.lengths)
    return (len(part.file_chunks) == len(texts) and sum(part.file_chunks) == n
            and all(len(c) == n for c in columns)
            and len(part.ids) == 4 * sum(part.lengths)
            and (not part.ids or int(np.frombuffer(part.ids, np.int32).max()) < len(part.vocab)))


def analyse_files(files: list[tuple[str, str]], chunking: tuple[int, int, int],
                  reuse: dict[str, str], model: str, *, fork: bool = True):
    """:func:`analyse` over the batch, split in two parts across cores when it is big and
    ``fork`` allows (yields the parts in order)."""
    return forked_parts(partial(analyse, chunking=chunking, reuse=reuse, model=model), files,
                        Analysed, fork=fork, valid=_consistent, size=lambda f: len(f[1]))


def global_ids(part: Analysed, vocab: Vocabulary) -> np.ndarray:
    """The part's token ids in ``vocab`` (adding its new terms), as one int64 array."""
    mapped = vocab.add_all(part.vocab)
    return mapped[np.frombuffer(part.ids, np.int32)]
