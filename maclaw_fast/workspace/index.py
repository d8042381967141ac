"""The workspace index (design §14): columnar chunk state kept in sync with the memory files.

Chunks live in rows of flat columns (live flag, line range, decay timestamp, plus text/hash/path
lists); a deleted chunk's row goes on a free list and is reused, so row numbers stay dense without
renumbering the BM25 keys or the vector matrix. BM25 is the shared :class:`Bm25Index`, queried
through its numba mirror; its RAM tantivy copy is off unless ``config.keep_tantivy`` (this index's
record is its own Arrow chunk table, and nothing here queries tantivy, which would cost ~45% of
build and reopen time). Vectors live in the shared exact :class:`VectorColumn`.

Persistence (``persistence.py`` over ``state.py``) under ``<workspace>/.maclaw/`` (or
``index_dir``): an Arrow snapshot of the chunk table with the analysed tokens (a reopen skips the
segmenter) plus a journal of later syncs, and one ``embeddings-<model>.arrow``
:class:`DiskEmbeddingCache` per embedder fingerprint, keyed by sha256(chunk text) = the chunk hash,
so unchanged text is never embedded twice, across edits, renames and restarts. The cache is saved
with each snapshot and on :meth:`close`; after a crash, vectors it had not saved are embedded again
once.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from maclaw_fast.config import Bm25Config, SearchConfig
from maclaw_fast.embedding import DiskEmbeddingCache, QueryCache, resolve_embedder
from maclaw_fast.embedding.base import is_auto
from maclaw_fast.errors import EmbeddingError, ValidationError
from maclaw_fast.index import Bm25Index, VectorColumn
from maclaw_fast.index.arrays import grow
from maclaw_fast.text.bulk import FORK_MIN_CHARS, paused_gc
from maclaw_fast.text.vocabulary import Vocabulary
from maclaw_fast.workspace.analyse import analyse_files, global_ids
from maclaw_fast.workspace.chunking import chunk_id
from maclaw_fast.workspace.files import check_extra_paths, discover, file_timestamp_days
from maclaw_fast.workspace.persistence import IndexPersistence
from maclaw_fast.workspace.reports import SyncReport, WorkspaceStatus
from maclaw_fast.workspace.search import FUSION_WEIGHTS
from maclaw_fast.workspace.state import FileRecord, IndexState, JournalEntry

FUSIONS = tuple(FUSION_WEIGHTS)  # SearchConfig.fusion (see workspace.search)

EMBED_BATCH = 256


class WorkspaceIndex(IndexPersistence):
    """Search over a workspace's Markdown memory files, kept in sync with them.

    Use :meth:`open`; the index syncs on open, on search when files changed, on an interval and
    from a folder watcher (:meth:`watch`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "MEMORY.md").write_text("The deploy key is in vault.")
    >>> ix = WorkspaceIndex.open(ws, embedder="hash")
    >>> ix.search("deploy key").results[0].citation
    'MEMORY.md#L1-L1'
    >>> ix.close()
    """

    def __init__(self, root: Path, index_dir: Path, embedder, config: SearchConfig, clock,
                 embedder_error: str | None) -> None:
        self.root = root
        self.index_dir = index_dir
        self.config = config
        self.embedder = embedder
        self.clock = clock
        self.extra_paths = check_extra_paths(root, config.extra_paths)
        self.model = embedder.fingerprint if embedder is not None else None
        self.last_error = embedder_error
        self.last_sync: float | None = None
        self.lock = threading.RLock()
        self._dirty = False  # set by the watcher; without one, is_dirty() compares stat data
        self._watcher = None
        self.bm25 = (Bm25Index(Bm25Config(k1=config.bm25_k1, b=config.bm25_b),
                               tantivy_index=config.keep_tantivy) if config.text_search
                     else None)
        self.vocab = self.bm25.vocab if self.bm25 is not None else Vocabulary()
        # quantized: search reads int8 codes first, a quarter of the float32 matrix's bytes
        self.vectors = (VectorColumn(embedder.dim, quantized=True) if embedder is not None
                        else None)
        self.query_cache = QueryCache(embedder, size=256) if embedder is not None else None
        self.cache = None
        if embedder is not None:
            tag = hashlib.sha256(embedder.fingerprint.encode()).hexdigest()[:16]
            self.cache = DiskEmbeddingCache(index_dir / f"embeddings-{tag}.arrow", embedder)
        self._files: dict[str, FileRecord] = {}
        self._file_rows: dict[str, list[int]] = {}
        self._free: list[int] = []
        self.n_rows = 0
        self.live = np.zeros(64, np.bool_)
        self.start_line = np.zeros(64, np.int32)
        self.end_line = np.zeros(64, np.int32)
        self.ts_days = np.full(64, np.nan)
        self.paths: list[str | None] = []
        self.texts: list[str | None] = []
        self.hashes: list[str | None] = []
        self.ids: list[str | None] = []
        self.token_ids: list[np.ndarray | None] = []  # int32 ids into self.vocab, per row
        self.state = IndexState(index_dir, self._chunking())
        self.mmr_tokens: dict[str, np.ndarray] = {}
        self.vec_out = np.empty(0, np.float32)  # search's score buffer (searches hold the lock)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, workspace_dir, *, embedder="auto", config: SearchConfig = SearchConfig(),
             index_dir=None, sync: bool = True, clock=time.time) -> WorkspaceIndex:
        """Open (and by default sync) the index of ``workspace_dir``.

        Parameters
        ----------
        workspace_dir : the workspace folder.
        embedder : ``"auto"`` (MiniLM, or multilingual-e5-small for Chinese or mixed files),
            ``"minilm"``, ``"e5"``, ``"hash"``, ``None``
            (text-only) or an object with ``dim``, ``fingerprint`` and ``embed``. An embedder that
            cannot be loaded leaves the index text-only and says so in :meth:`status`.
        config : :class:`SearchConfig`.
        index_dir : where the index state lives (default ``<workspace>/.maclaw``).
        sync : sync now (the session-start sync).
        clock : epoch seconds, injectable for temporal-decay tests.

        Examples
        --------
        >>> import tempfile
        >>> ix = WorkspaceIndex.open(tempfile.mkdtemp(), embedder=None)
        >>> ix.status().mode, ix.status().files
        ('text', 0)
        """
        if not isinstance(config, SearchConfig):
            raise ValidationError("config must be a SearchConfig")
        if not isinstance(workspace_dir, (str, os.PathLike)) or not os.path.isdir(workspace_dir):
            raise ValidationError(f"workspace {workspace_dir!r} is not a folder")
        if config.chunk_tokens < 1 or config.chunk_overlap < 0 or config.chars_per_token < 1:
            raise ValidationError("chunk_tokens and chars_per_token must be ≥ 1, overlap ≥ 0")
        if config.fusion not in FUSIONS:
            raise ValidationError(f"fusion must be one of {FUSIONS}, got {config.fusion!r}")
        if not (config.bm25_k1 >= 0 and 0 <= config.bm25_b <= 1):
            raise ValidationError("bm25_k1 must be ≥ 0 and bm25_b within [0, 1]")
        root = Path(os.path.realpath(workspace_dir))
        idx_dir = Path(index_dir) if index_dir is not None else root / ".maclaw"
        error = None
        try:
            if is_auto(embedder):  # the model that reads the workspace's language
                from maclaw_fast.embedding.auto import folder_texts

                emb = resolve_embedder(embedder, texts=folder_texts(root))
            else:
                emb = resolve_embedder(embedder)
        except EmbeddingError as exc:  # e.g. the model package is missing
            emb, error = None, f"embedder unavailable ({exc}); text-only"
        if emb is None and not config.text_search:
            raise ValidationError("text_search=False needs an embedder (vector-only mode)")
        ix = cls(root, idx_dir, emb, config, clock, error)
        ix.load_state()
        if sync:
            ix.sync()
        return ix

    def close(self) -> None:
        """Stop the watcher and save the embedding cache."""
        self.unwatch()
        with self.lock:
            if self.cache is not None and self.cache.dirty:
                self.cache.save()

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def mode(self) -> str:
        if self.embedder is None:
            return "text"
        return "hybrid" if self.bm25 is not None else "vector"

    # ------------------------------------------------------------------ rows
    def _alloc_rows(self, k: int) -> list[int]:
        """``k`` rows: free ones first (last freed first), then new ones at the end."""
        rows = [self._free.pop() for _ in range(min(k, len(self._free)))]
        extra = k - len(rows)
        if extra:
            start = self.n_rows
            self.n_rows += extra
            if self.n_rows > self.live.shape[0]:
                for name, fill in (("live", False), ("start_line", 0), ("end_line", 0),
                                   ("ts_days", np.nan)):
                    setattr(self, name, grow(getattr(self, name), self.n_rows, fill))
                if self.vectors is not None:
                    self.vectors.reserve(self.live.shape[0])
            for col in (self.paths, self.texts, self.hashes, self.ids, self.token_ids):
                col.extend([None] * extra)
            rows.extend(range(start, self.n_rows))
        return rows

    def _add_rows(self, paths: list[str], starts, ends, texts: list[str], hashes: list[str],
                  ts, term_ids: np.ndarray, lengths, ids: list[str] | None = None) -> list[int]:
        """Add chunk rows (columns, one item per chunk) and index them in BM25: ``term_ids``
        holds every chunk's token ids in :attr:`vocab`, chunk after chunk, ``lengths`` how many
        each has. ``ids``: the chunk ids, when already computed. Returns the rows."""
        rows = self._alloc_rows(len(texts))
        if not rows:
            return rows
        idx = np.asarray(rows, np.int64)
        self.live[idx] = True
        self.start_line[idx], self.end_line[idx], self.ts_days[idx] = starts, ends, ts
        if ids is None:
            model = self.model or "none"
            ids = [chunk_id(*key, model) for key in zip(paths, starts, ends, hashes)]
        term_ids = np.asarray(term_ids, np.int32)
        per_chunk = np.split(term_ids, np.cumsum(lengths)[:-1]) if len(rows) > 1 else [term_ids]
        contiguous = rows[-1] - rows[0] == len(rows) - 1 and (idx[1:] > idx[:-1]).all()
        for col, values in ((self.paths, paths), (self.texts, texts), (self.hashes, hashes),
                            (self.ids, ids), (self.token_ids, per_chunk)):
            if contiguous:  # a fresh build: one slice assignment per column
                col[rows[0]: rows[-1] + 1] = values
            else:
                for r, v in zip(rows, values):
                    col[r] = v
        file_rows = self._file_rows
        for r, path in zip(rows, paths):
            file_rows.setdefault(path, []).append(r)
        if self.bm25 is not None:
            self.bm25.add_many_ids(rows, term_ids, lengths)
        return rows

    def _remove_file_rows(self, path: str, reuse: dict[str, str]) -> int:
        rows = self._file_rows.pop(path, [])
        for r in rows:
            reuse[self.hashes[r]] = self._token_text(r)
            if self.bm25 is not None:
                self.bm25.remove(r)
            if self.vectors is not None:
                self.vectors.set(r, None)
            self.live[r] = False
            self.ts_days[r] = np.nan
            for col in (self.paths, self.texts, self.hashes, self.ids, self.token_ids):
                col[r] = None
            self._free.append(r)
        return len(rows)

    def _embed_rows(self, rows: list[int], progress=None) -> int:
        """Fill vectors of ``rows`` from the cache, embedding misses; on failure leave them empty
        (back-filled by the next sync) and record why."""
        if self.vectors is None or not rows:
            return 0
        before = self.cache.embedded
        try:
            for lo in range(0, len(rows), EMBED_BATCH):
                part = rows[lo: lo + EMBED_BATCH]
                # the chunk hash is the cache key (sha256 of the text): no second hashing
                vecs = self.cache.embed([self.texts[r] for r in part],
                                        [self.hashes[r] for r in part])
                self.vectors.set_rows(part, vecs)  # the cache returns normalised rows
                if progress is not None:
                    progress("embedding chunks", lo + len(part), len(rows))
        except EmbeddingError as exc:
            self.last_error = f"embedding failed ({exc}); affected chunks are text-only until " \
                              "the next sync"
        else:
            if self.last_error and self.last_error.startswith("embedding failed"):
                self.last_error = None  # every chunk has its vector again
        return self.cache.embedded - before

    # ------------------------------------------------------------------ sync
    def _scan(self):
        return discover(self.root, self.extra_paths, exclude=(self.index_dir,))

    def _stat_changed(self) -> bool:
        found = self._scan()
        if len(found) != len(self._files):
            return True
        for f in found:
            rec = self._files.get(f.rel)
            if rec is None or rec.size != f.size or rec.mtime_ns != f.mtime_ns:
                return True
        return False

    def is_dirty(self) -> bool:
        """Whether the files changed since the last sync (watcher flag, else a stat scan)."""
        with self.lock:
            if self._dirty or self.last_sync is None:
                return True
            return False if self.watching else self._stat_changed()

    def mark_dirty(self) -> None:
        """Note that files changed (the watcher calls this); the next search syncs."""
        self._dirty = True

    def sync(self, *, force: bool = False, progress=None) -> SyncReport:
        """Bring the index up to date with the files.

        Unchanged size and mtime → skipped; otherwise the file is hashed and re-chunked only when
        its content changed. Chunk tokens and vectors are reused by chunk hash, so an edit costs
        the new text only. ``progress``: an optional callback ``(stage, done, total)``.

        Examples
        --------
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "memory.md").write_text("hello")
        >>> ix = WorkspaceIndex.open(ws, embedder="hash", sync=False)
        >>> ix.sync().added, ix.sync().added
        (1, 0)
        """
        t0 = time.perf_counter()
        rep = SyncReport()
        with self.lock:
            self._dirty = False
            found = self._scan()
            rep.files = len(found)
            current = {f.rel for f in found}
            reuse: dict[str, str] = {}
            entry = JournalEntry(g=self.state.generation)
            for gone in [p for p in self._files if p not in current]:
                rep.chunks_removed += self._remove_file_rows(gone, reuse)
                del self._files[gone]
                entry.removed.append(gone)
            todo = []
            for i, f in enumerate(found):
                if progress is not None and (i % 50 == 0 or i + 1 == len(found)):
                    progress("reading files", i + 1, len(found))
                rec = self._files.get(f.rel)
                if not force and rec is not None and rec.size == f.size \
                        and rec.mtime_ns == f.mtime_ns:
                    continue
                try:
                    with open(f.abs_path, "rb") as fh:
                        data = fh.read()
                except OSError:  # vanished or unreadable since the scan: next sync sees it
                    continue
                digest = hashlib.sha256(data).hexdigest()
                new_rec = FileRecord(f.rel, f.size, f.mtime_ns, digest)
                self._files[f.rel] = new_rec
                entry.files.append(new_rec)
                if not force and rec is not None and rec.hash == digest:
                    ts = file_timestamp_days(f.rel, f.mtime_ns)
                    self.ts_days[self._file_rows.get(f.rel, [])] = ts  # mtime-dated files age
                    rep.touched += 1
                    continue
                if rec is not None:
                    rep.changed += 1
                    rep.chunks_removed += self._remove_file_rows(f.rel, reuse)
                else:
                    rep.added += 1
                todo.append((f, data.decode("utf-8", errors="replace")))
                entry.rechunked.append(f.rel)
            rep.removed = len(entry.removed)
            big = sum(len(text) for _, text in todo) >= FORK_MIN_CHARS
            with paused_gc(big):  # a big sync makes millions of objects and no cycles
                self._apply(todo, reuse, entry, rep, progress)
            self.last_sync = self.clock()
        rep.seconds = time.perf_counter() - t0
        return rep

    def _apply(self, todo: list, reuse: dict[str, str], entry: JournalEntry,
               rep: SyncReport, progress=None) -> None:
        """Chunk, tokenise, index, embed and persist the files of a sync (``todo``)."""
        new_rows: list[int] = []
        if progress is not None and todo:
            progress("chunking files", 0, len(todo))
        # chunking and tokenising the files is most of a big sync: two cores when big
        parts = analyse_files([(f.rel, text) for f, text in todo], self._chunking(), reuse,
                              self.model or "none", fork=self.config.fork_workers)
        files = iter(todo)
        with self.bm25.bulk() if self.bm25 is not None else nullcontext():
            self._add_parts(parts, files, new_rows)
        rep.chunks_added = len(new_rows)
        if progress is not None and todo:
            progress("chunking files", len(todo), len(todo))
        if self.vectors is not None:
            n = self.n_rows
            missing = np.flatnonzero(self.live[:n] & ~self.vectors.has_vec[:n]).tolist()
            rep.embedded = self._embed_rows(missing, progress)
            if missing:
                self.cache.max_entries = max(20_000, 2 * self.chunk_count)
        self._persist(entry, new_rows)

    def _add_parts(self, parts, files, new_rows: list[int]) -> None:
        """Add the chunk rows of analysed parts (``files`` yields each part's files in order)."""
        for part in parts:
            paths: list[str] = []
            ts: list[float] = []
            for n_chunks in part.file_chunks:
                f, _ = next(files)
                paths += [f.rel] * n_chunks
                ts += [file_timestamp_days(f.rel, f.mtime_ns)] * n_chunks
            new_rows += self._add_rows(paths, part.start_line, part.end_line, part.text,
                                       part.hash, ts, global_ids(part, self.vocab),
                                       part.lengths, part.chunk_id)

    # ------------------------------------------------------------------ queries
    @property
    def chunk_count(self) -> int:
        return self.n_rows - len(self._free)

    @property
    def file_count(self) -> int:
        return len(self._files)

    @property
    def watching(self) -> bool:
        return self._watcher is not None and self._watcher.running

    def status(self) -> WorkspaceStatus:
        """Mode, model, files, chunks, dirty flag, last sync and the last embedder problem."""
        with self.lock:
            missing = 0
            if self.vectors is not None:
                n = self.n_rows
                missing = int((self.live[:n] & ~self.vectors.has_vec[:n]).sum())
            return WorkspaceStatus(
                workspace=str(self.root), index_dir=str(self.index_dir), mode=self.mode,
                model=self.model, files=self.file_count, chunks=self.chunk_count,
                dirty=self.is_dirty(), last_sync=self.last_sync,
                chunks_without_vectors=missing, watching=self.watching,
                last_error=self.last_error)

    def search(self, query, *, max_results: int | None = None, min_score: float | None = None):
        """Hybrid search; see :func:`maclaw_fast.workspace.search.search`."""
        from maclaw_fast.workspace.search import search

        return search(self, query, max_results=max_results, min_score=min_score)

    def read_lines(self, rel: str) -> list[str]:
        """Lines of an indexed file, read from disk."""
        with open(self.root / rel, encoding="utf-8", errors="replace") as fh:
            return fh.read().split("\n")

    # ------------------------------------------------------------------ watching
    def watch(self, *, files: bool = True, interval_s: float | None = None):
        """Start syncing in the background: on file changes (debounced) and/or on an interval."""
        from maclaw_fast.workspace.watch import WorkspaceWatcher

        with self.lock:
            if self._watcher is None:
                self._dirty = True  # edits made before the watch began are seen by no event
                self._watcher = WorkspaceWatcher(self, files=files, interval_s=interval_s)
                self._watcher.start()
            return self._watcher

    def unwatch(self) -> None:
        w, self._watcher = self._watcher, None
        if w is not None:
            w.stop()
