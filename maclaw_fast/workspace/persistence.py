"""Persistence of a :class:`~maclaw_fast.workspace.index.WorkspaceIndex`: journal small syncs,
snapshot the chunk table with its token ids (``state.py``), and load it back on open."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from maclaw_fast.workspace.analyse import TOKEN_SEP
from maclaw_fast.workspace.files import file_timestamp_days
from maclaw_fast.workspace.state import ChunkRow, JournalEntry


class IndexPersistence:
    """The snapshot/journal side of :class:`~maclaw_fast.workspace.index.WorkspaceIndex` (a
    mixin over its columns, vocabulary and lock)."""

    # ------------------------------------------------------------------ persistence
    def _chunking(self) -> tuple[int, int, int]:
        c = self.config
        return (c.chunk_tokens, c.chunk_overlap, c.chars_per_token)

    def _token_text(self, r: int) -> str:
        """Row ``r``'s tokens in their journal form (joined by newlines)."""
        words = self.vocab.tokens
        return TOKEN_SEP.join([words[t] for t in self.token_ids[r].tolist()])

    def _chunk_row(self, r: int) -> ChunkRow:
        return ChunkRow(self.paths[r], int(self.start_line[r]), int(self.end_line[r]),
                        self.hashes[r], self.texts[r], self._token_text(r))

    def _persist(self, entry: JournalEntry, new_rows: list[int]) -> None:
        """Journal small changes; snapshot (and save the embedding cache) when there is no
        snapshot yet, the change is large, or the journal has grown."""
        if not (entry.files or entry.removed or entry.rechunked) and self.state.has_snapshot:
            return
        big = len(new_rows) > max(1000, self.chunk_count // 4)
        if big or not self.state.has_snapshot:  # a journal must follow a snapshot we can read
            self.save()
            return
        entry.chunks = [self._chunk_row(r) for r in new_rows]
        self.state.append(entry)
        if self.state.needs_snapshot():
            self.save()

    def save(self) -> None:
        """Write a snapshot of the chunk table, empty the journal and save the embedding cache."""
        with self.lock:
            n = self.n_rows
            rows = np.flatnonzero(self.live[:n])
            if rows.shape[0] == n:  # no free rows: the columns as they are
                pick = (lambda col: col[:n])
            else:
                keep = rows.tolist()
                pick = (lambda col: [col[r] for r in keep])
            token_ids = pick(self.token_ids)
            sizes = np.fromiter(map(len, token_ids), np.int32, len(token_ids))
            offsets = np.zeros(len(token_ids) + 1, np.int32)
            np.cumsum(sizes, out=offsets[1:])
            flat = np.concatenate(token_ids) if token_ids else np.zeros(0, np.int32)
            columns = {"path": pick(self.paths), "start_line": self.start_line[rows],
                       "end_line": self.end_line[rows], "hash": pick(self.hashes),
                       "text": pick(self.texts),
                       "token_ids": pa.ListArray.from_arrays(offsets, flat)}
            self.state.write_snapshot(columns, list(self._files.values()),
                                      self.vocab.tokens)
            if self.cache is not None and self.cache.dirty:
                self.cache.save()

    def load_state(self) -> None:
        loaded = self.state.load()
        if loaded is None:
            return  # no or unreadable state: the first sync rebuilds it
        files, chunks = loaded
        self._files = files
        saved = self.vocab.add_all(chunks.vocab)  # the saved ids → this index's ids
        per_chunk = [saved[ids] if ids is not None
                     else self.vocab.add_all(toks.split(TOKEN_SEP) if toks else [])
                     for ids, toks in zip(chunks.token_ids, chunks.tokens)]
        lengths = [len(ids) for ids in per_chunk]
        flat = np.concatenate(per_chunk) if per_chunk else np.zeros(0, np.int64)
        self._add_rows(chunks.path, chunks.start_line, chunks.end_line, chunks.text,
                       chunks.hash, math.nan, flat, lengths)
        for rel, idx in self._file_rows.items():
            self.ts_days[idx] = file_timestamp_days(rel, files[rel].mtime_ns)
        self._embed_rows(list(range(self.n_rows)))
        self.last_sync = self.state.synced_at  # the state is as fresh as its last write
