"""Embedding caches: an in-memory query LRU (optional TTL) and an on-disk cache keyed by text hash,
separated by embedder fingerprint (design §3, §12, §14)."""

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
            vecs = embed_checked(self.embedder, keys, query=True)
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
        self.last_embedded: list[str] = []  # keys of the last call's misses
        self._mtime = None
        self._load()

    @property
    def size(self) -> int:
        return len(self._items)

    def _load(self) -> None:
        keys, mat = self._read()
        for k, v in zip(keys, mat):
            self._items[k] = v

    def _read(self) -> tuple[list[str], np.ndarray]:
        """The file's keys and vectors (none when absent, unreadable or of another model)."""
        none = ([], np.zeros((0, self.embedder.dim), np.float32))
        dim = self.embedder.dim
        try:
            self._mtime = self.path.stat().st_mtime_ns
            with ipc.open_file(str(self.path)) as reader:
                meta = reader.schema.metadata or {}
                if (meta.get(b"fingerprint", b"").decode() != self.embedder.fingerprint
                        or int(meta.get(b"dim", b"0")) != dim):
                    return none
                keys, parts = [], []
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    keys += batch.column("key").to_pylist()
                    parts.append(_fixed_rows(batch.column("vector"), dim))
            mat = np.concatenate(parts) if parts else none[1]
            if len(mat) != len(keys):
                return none
            return keys, mat
        except (OSError, pa.ArrowException, ValueError, KeyError, TypeError, IndexError):
            return none  # a cache: unreadable means empty, never an error

    def embed(self, texts: list[str], keys: list[str] | None = None, *,
              query: bool = False) -> np.ndarray:
        """Vectors for ``texts``; only texts not cached are embedded (in one call). ``keys``:
        the texts' :func:`text_key` when the caller already has them (chunk hashes);
        ``query``: embed them as search queries (the caller keys them apart)."""
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
            vecs = embed_checked(self.embedder, first, query=query)
            self.embedded += len(first)
            self.last_embedded = [k for k in todo]
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
        """Write the cache (temp file + rename). Entries another process wrote since this one
        read the file are kept (older than ours in the LRU order)."""
        try:
            changed = self.path.stat().st_mtime_ns != self._mtime
        except OSError:
            changed = False
        if changed:
            keys, mat = self._read()
            with self._lock:
                for k, v in zip(keys, mat):
                    if k not in self._items:
                        self._items[k] = v
                        self._items.move_to_end(k, last=False)
                if self.max_entries is not None:
                    while len(self._items) > self.max_entries:
                        self._items.popitem(last=False)
        with self._lock:
            keys = list(self._items)
            mat = (np.stack(list(self._items.values())) if keys
                   else np.zeros((0, self.embedder.dim), np.float32))
            self.dirty = False
        table = pa.Table.from_arrays(
            [_string_array(keys), _fixed_array(mat, self.embedder.dim)], names=["key", "vector"],
            metadata={"fingerprint": self.embedder.fingerprint, "dim": str(self.embedder.dim)})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        try:
            self._mtime = self.path.stat().st_mtime_ns
        except OSError:
            pass


# Arrow arrays built from and read into numpy buffers directly: ``pa.array`` on a list or an
# ndarray, and ``to_numpy``/``flatten`` on a list column, import pandas and pyarrow.compute
# (~1 s of a CLI run's start when pandas is installed), and pandas cannot be imported during
# the interpreter's shutdown, where the atexit save runs.
def _string_array(keys: list[str]) -> pa.Array:
    data = [k.encode("utf-8") for k in keys]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum(np.fromiter(map(len, data), np.int32, len(data)), out=offsets[1:])
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets),
                                  pa.py_buffer(b"".join(data)))


def _fixed_array(mat: np.ndarray, dim: int) -> pa.Array:
    flat = np.ascontiguousarray(mat, np.float32).reshape(-1)
    values = pa.Array.from_buffers(pa.float32(), len(flat), [None, pa.py_buffer(flat)])
    return pa.FixedSizeListArray.from_arrays(values, dim)


def _fixed_rows(col: pa.Array, dim: int) -> np.ndarray:
    """The ``(n, dim)`` float32 rows of a fixed-size-list column (a copy)."""
    if col.type != pa.list_(pa.float32(), dim) or col.null_count:
        raise ValueError("not a column of float32 vectors")
    values = col.values  # the whole child array: the column's own offset is applied below
    start = values.offset + col.offset * dim
    flat = np.frombuffer(values.buffers()[1], np.float32)[start:start + len(col) * dim]
    return flat.reshape(len(col), dim).copy()


class CachedEmbedder:
    """An embedder whose vectors (documents and queries apart) are kept on disk by content
    hash, for every process that uses the same folder and model: a text is embedded once.

    Same ``dim``, ``fingerprint`` and ``languages`` as the model it wraps, so stores and caches
    treat its vectors as the model's. The file is written by :meth:`save` (at process exit when
    made by :func:`enable_disk_cache`). ``MACLAW_EMBED_LOG=<file>`` appends one line per text
    actually sent to the model (``<fingerprint> <q|p> <sha256>``): a diagnostic of what a
    command embedded.

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.embedding.hashing import HashEmbedder
    >>> d = tempfile.mkdtemp()
    >>> e = CachedEmbedder(HashEmbedder(dim=8), d)
    >>> _ = e.embed(["a", "b"]); _ = e.embed_queries(["a"]); e.save()
    >>> e2 = CachedEmbedder(HashEmbedder(dim=8), d); _ = e2.embed(["a", "b"]); e2.embedded
    0
    """

    def __init__(self, inner: Embedder, directory: str | os.PathLike,
                 max_entries: int = 50_000) -> None:
        self.inner = inner
        self.dim, self.fingerprint = inner.dim, inner.fingerprint
        self.languages = getattr(inner, "languages", None)
        self.cosine_floor = getattr(inner, "cosine_floor", 0.0)
        for name in ("cosine_floor_cjk", "cosine_reach_cjk"):
            if hasattr(inner, name):
                setattr(self, name, getattr(inner, name))
        tag = hashlib.sha256(inner.fingerprint.encode()).hexdigest()[:16]
        self.cache = DiskEmbeddingCache(Path(directory) / f"vectors-{tag}.arrow", inner,
                                        max_entries)
        self._log = os.environ.get("MACLAW_EMBED_LOG") or None

    @property
    def embedded(self) -> int:
        """Texts sent to the model by this process."""
        return self.cache.embedded

    def _get(self, texts: list[str], query: bool) -> np.ndarray:
        texts = list(texts)
        kind = "q" if query else "p"
        # queries and passages of one text are different vectors for e5: keyed apart
        keys = [text_key(kind + "\x00" + t) for t in texts]
        before = self.cache.embedded
        out = self.cache.embed(texts, keys, query=query)
        if self._log and self.cache.embedded != before:
            with open(self._log, "a", encoding="utf-8") as fh:
                fh.writelines(f"{self.fingerprint} {kind} {k}\n"
                              for k in self.cache.last_embedded)
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._get(texts, False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._get(texts, True)

    def save(self) -> None:
        """Write new vectors to disk (nothing when none were made)."""
        if self.cache.dirty:
            self.cache.save()


_DISK: dict = {"dir": None, "wrapped": {}}
_DISK_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """``$MACLAW_CACHE_DIR``, else ``$XDG_CACHE_HOME/maclaw_fast`` (``~/.cache/maclaw_fast``)."""
    env = os.environ.get("MACLAW_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "maclaw_fast"


def enable_disk_cache(directory: str | os.PathLike | None = None) -> Path | None:
    """Keep every bundled model's vectors in ``directory`` (default :func:`default_cache_dir`)
    from now on in this process; saved at exit. ``MACLAW_EMBED_CACHE=0`` turns it off (returns
    None). The CLI, MCP server and chat call this.

    Examples
    --------
    >>> import tempfile
    >>> enable_disk_cache(tempfile.mkdtemp()) is not None   # doctest: +SKIP
    True
    """
    if os.environ.get("MACLAW_EMBED_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    path = Path(directory) if directory is not None else default_cache_dir()
    with _DISK_LOCK:
        if _DISK["dir"] is None:
            import atexit

            # the atexit save hands lists to pyarrow, which may import pandas, which imports
            # concurrent.futures.thread — and that module cannot register its own atexit hook
            # during shutdown; imported now (a few ms), it is already there then
            import concurrent.futures.thread  # noqa: F401

            atexit.register(save_disk_caches)
        if _DISK["dir"] != path:
            save_disk_caches()
            _DISK["wrapped"] = {}
        _DISK["dir"] = path
    return path


def disk_cached(embedder: Embedder) -> Embedder:
    """``embedder`` wrapped in the process's :class:`CachedEmbedder` for its model when
    :func:`enable_disk_cache` was called (one wrapper per model), else itself."""
    with _DISK_LOCK:
        if _DISK["dir"] is None or isinstance(embedder, CachedEmbedder):
            return embedder
        wrapped = _DISK["wrapped"].get(embedder.fingerprint)
        if wrapped is None:
            wrapped = _DISK["wrapped"][embedder.fingerprint] = CachedEmbedder(
                embedder, _DISK["dir"])
        return wrapped


def save_disk_caches() -> None:
    """Write every model's disk cache of this process (errors ignored: it is a cache)."""
    for wrapped in list(_DISK["wrapped"].values()):
        try:
            wrapped.save()
        except OSError:
            pass
