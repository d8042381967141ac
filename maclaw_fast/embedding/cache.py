"""Embedding caches: an in-memory query LRU (optional TTL) and an on-disk cache keyed by text hash,
separated by embedder fingerprint (SPEC §3, §12, §14)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from maclaw_fast.embedding.base import Embedder, embed_checked


class QueryCache:
    """LRU of query text → vector, with an optional time-to-live.

    Examples
    --------
    >>> from maclaw_fast.embedding.hashing import HashEmbedder
    >>> qc = QueryCache(HashEmbedder(dim=8), size=2)
    >>> _ = qc.get("a"); _ = qc.get("a"); qc.misses
    1
    """

    def __init__(self, embedder: Embedder, size: int = 256, ttl_s: float | None = None,
                 clock=time.monotonic) -> None:
        self.embedder = embedder
        self.size = int(size)
        self.ttl_s = ttl_s
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0

    def get(self, text: str) -> np.ndarray:
        return self.get_many([text])[0]

    def get_many(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts`` as one ``(n, dim)`` array; misses are embedded in one call."""
        now = self._clock()
        out = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                hit = self._items.get(text)
                if hit is not None and (self.ttl_s is None or now - hit[0] <= self.ttl_s):
                    self._items.move_to_end(text)
                    out[i] = hit[1]
                else:
                    missing.setdefault(text, []).append(i)
        if missing:
            keys = list(missing)
            vecs = embed_checked(self.embedder, keys)
            self.misses += len(keys)
            with self._lock:
                for key, vec in zip(keys, vecs):
                    out[missing[key]] = vec
                    self._items[key] = (now, vec)
                    self._items.move_to_end(key)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return out

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DiskEmbeddingCache:
    """sha256(text) → vector, persisted as Arrow IPC beside a fingerprint; a file made by another
    fingerprint or dimension is discarded. Saved by temp file + rename; ``max_entries`` keeps the
    most recently used.

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.embedding.hashing import HashEmbedder
    >>> d = tempfile.mkdtemp()
    >>> c = DiskEmbeddingCache(os.path.join(d, "emb.arrow"), HashEmbedder(dim=8))
    >>> c.embed(["x", "y"]).shape
    (2, 8)
    >>> c.save(); DiskEmbeddingCache(os.path.join(d, "emb.arrow"), HashEmbedder(dim=8)).size
    2
    """

    def __init__(self, path: str | os.PathLike, embedder: Embedder,
                 max_entries: int | None = None) -> None:
        self.path = Path(path)
        self.embedder = embedder
        self.max_entries = max_entries
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.dirty = False
        self.embedded = 0  # texts actually sent to the embedder (for tests and stats)
        self._load()

    @property
    def size(self) -> int:
        return len(self._items)

    def _load(self) -> None:
        if not self.path.is_file():
            return
        try:
            with ipc.open_file(str(self.path)) as reader:
                table = reader.read_all()
            meta = table.schema.metadata or {}
            if (meta.get(b"fingerprint", b"").decode() != self.embedder.fingerprint
                    or int(meta.get(b"dim", b"0")) != self.embedder.dim):
                return
            keys = table.column("key").to_pylist()
            flat = table.column("vector").combine_chunks().flatten().to_numpy()
            mat = flat.reshape(len(keys), self.embedder.dim).astype(np.float32)
            for k, v in zip(keys, mat):
                self._items[k] = v
        except (OSError, pa.ArrowException, ValueError, KeyError):
            self._items.clear()  # a cache: unreadable means empty, never an error

    def embed(self, texts: list[str], keys: list[str] | None = None) -> np.ndarray:
        """Vectors for ``texts``; only texts not cached are embedded (in one call). ``keys``:
        the texts' :func:`text_key` when the caller already has them (chunk hashes)."""
        if keys is None:
            keys = [text_key(t) for t in texts]
        elif len(keys) != len(texts):
            raise ValueError("one key per text")
        out = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        with self._lock:
            for i, k in enumerate(keys):
                v = self._items.get(k)
                if v is None:
                    todo.setdefault(k, []).append(i)
                else:
                    self._items.move_to_end(k)
                    out[i] = v
        if todo:
            first = [texts[idx[0]] for idx in todo.values()]
            vecs = embed_checked(self.embedder, first)
            self.embedded += len(first)
            with self._lock:
                for (k, idx), v in zip(todo.items(), vecs):
                    out[idx] = v
                    self._items[k] = v
                if self.max_entries is not None:
                    while len(self._items) > self.max_entries:
                        self._items.popitem(last=False)
                self.dirty = True
        return out

    def save(self) -> None:
        with self._lock:
            keys = list(self._items)
            mat = (np.stack(list(self._items.values())) if keys
                   else np.zeros((0, self.embedder.dim), np.float32))
            self.dirty = False
        vec_type = pa.list_(pa.float32(), self.embedder.dim)
        table = pa.table(
            {"key": pa.array(keys, pa.string()),
             "vector": pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1)), self.embedder.dim)
             if keys else pa.array([], vec_type)},
            metadata={"fingerprint": self.embedder.fingerprint, "dim": str(self.embedder.dim)})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
