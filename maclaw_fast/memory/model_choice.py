"""``embedder="auto"`` for a MemoryStore: the model follows the language of what is stored.

A store opened with ``"auto"`` starts with the model its snapshot was embedded with (when it is
a bundled one), else MiniLM. It keeps a running count of Han characters in saved content; once
the store is substantially Chinese or mixed (:data:`maclaw_fast.embedding.auto.CJK_SHARE`), the
next save or recall moves it to multilingual-e5-small: every memory is re-embedded in batches
(with a progress bar on a terminal), the vectors replaced in place, and a snapshot written so
the new fingerprint is on disk before anything else is. Vectors of two models are never mixed:
queries switch with the memories, under the store lock. The move is one way (e5 reads English).
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np

from maclaw_fast import progress
from maclaw_fast.embedding import QueryCache, embed_checked
from maclaw_fast.embedding.auto import CJK_SHARE, load_model, model_of
from maclaw_fast.errors import EmbeddingError
from maclaw_fast.persist.snapshot import peek_meta
from maclaw_fast.text.tokenizer import analysed_text

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = re.compile(r"\s")
REEMBED_BATCH = 64


def _counts(text: str) -> tuple[int, int]:
    """(Han characters, non-space characters) of ``text``."""
    return len(_HAN.findall(text)), len(text) - len(_SPACE.findall(text))


class LanguageTally:
    """Running count of Han and non-space characters over saved content."""

    __slots__ = ("han", "chars")

    def __init__(self) -> None:
        self.han = self.chars = 0

    def add(self, text: str) -> None:
        han, chars = _counts(text)
        self.han += han
        self.chars += chars

    @property
    def share(self) -> float:
        return self.han / self.chars if self.chars else 0.0

    def share_with(self, texts) -> float:
        """The share once ``texts`` are stored too."""
        han, chars = self.han, self.chars
        for text in texts:
            more_han, more_chars = _counts(text)
            han, chars = han + more_han, chars + more_chars
        return han / chars if chars else 0.0


def recorded_fingerprint(path: str | os.PathLike | None) -> str | None:
    """The embedder fingerprint a store directory's snapshot records (None: no readable one).
    Reads the snapshot through its checksum, so damaged bytes never reach the Arrow reader."""
    if path is None:
        return None
    meta = peek_meta(Path(path) / "snapshot.arrow")
    return meta.fingerprint if meta is not None else None


def check(store, pending=()) -> bool:
    """Move an auto store to the multilingual model when its content (with ``pending`` texts
    about to be saved, so they are embedded once, by the new model) calls for it; returns
    whether it moved. A missing model package leaves the store as it is, with one warning."""
    if not (store.auto_embedder and store.embedder is not None
            and model_of(store.embedder.fingerprint) != "e5"
            and store.language.share_with(pending) >= CJK_SHARE):
        return False  # not auto, already multilingual, or not substantially Chinese yet
    try:
        new = load_model("e5")
    except EmbeddingError as exc:
        store.auto_embedder = False  # warn once, keep the current model
        warnings.warn(f"{exc}; the store's text is mostly Chinese but keeps "
                      f"{store.embedder.fingerprint}", RuntimeWarning, stacklevel=3)
        return False
    if new.dim != store.dim:
        store.auto_embedder = False
        return False
    switch_embedder(store, new)
    return True


def switch_embedder(store, new) -> None:
    """Re-embed every memory with ``new`` (same width) and make it the store's embedder."""
    with store.lock:
        store.check_writable()
        rows = store.table.live_rows().tolist()
        # nothing changes until every vector is made: a failure leaves the old model in place
        vecs = embed_rows(new, store.table, rows,
                          f"re-embedding with {new.fingerprint.split(':')[1]}")
        store.vectors.set_rows(rows, vecs)
        store.embedder = new
        store.query_cache = QueryCache(new, store.config.query_cache_size)
        if store.durability is not None:
            store.durability.snapshot()  # the new fingerprint on disk before the next save


def embed_rows(embedder, table, rows: list[int], desc: str) -> np.ndarray:
    """The analysed text of ``table``'s ``rows`` embedded ``REEMBED_BATCH`` at a time, under a
    progress bar named ``desc`` (shown on a terminal, or with ``--progress``)."""
    texts = [analysed_text(table.content[r], table.tags[r]) for r in rows]
    if not texts:
        return np.zeros((0, embedder.dim), np.float32)
    parts = []
    with progress.bar(None, len(texts), desc, "memories") as shown:
        for start in range(0, len(texts), REEMBED_BATCH):
            parts.append(embed_checked(embedder, texts[start:start + REEMBED_BATCH]))
            shown.update(len(parts[-1]))
    return np.concatenate(parts)
