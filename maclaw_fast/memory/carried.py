"""The vectors of a store opened without a model (``embedder="none"``), kept for its next
snapshot: a process that cannot embed must not drop what a model made. The snapshot it writes
holds the vectors and fingerprint it read, for the entries whose content is unchanged; an entry
saved or edited here gets none (a null row), so the next open with the model embeds only those
(``Durability._reembed_missing``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maclaw_fast.persist.arrow_numpy import arrow_of, numpy_of, strings_of, valid_of


class CarriedVectors:
    """A snapshot's vectors by entry id, each valid for the content it was read with."""

    def __init__(self, fingerprint: str, dim: int, ids: pa.Array, content: pa.Array,
                 embedding: pa.FixedSizeListArray) -> None:
        self.fingerprint, self.dim = fingerprint, int(dim)
        self._ids, self._content = ids, content
        self._embedding = embedding
        # a journal replayed over the snapshot: id -> (content, vector or None)
        self._changes: dict[str, tuple[str, np.ndarray | None]] = {}

    def set(self, entry_id: str, content: str, vector: np.ndarray | None) -> None:
        """What a replayed journal record says ``entry_id``'s vector is now (None: none)."""
        if vector is not None and vector.shape != (self.dim,):
            vector = None
        self._changes[entry_id] = (content, vector)

    def matrix(self, ids: list[str], contents: list[str]) -> np.ndarray:
        """``(len(ids), dim)`` float32: each entry's vector, NaN where it has none (a new
        entry, or one whose content changed since its vector was made)."""
        out = np.full((len(ids), self.dim), np.nan, np.float32)
        pos = numpy_of(pc.index_in(strings_of(ids), value_set=self._ids), fill=-1)
        pos = pos.astype(np.int64)
        have = np.flatnonzero(pos >= 0)
        if have.size:
            src = arrow_of(pos[have])
            emb = self._embedding.take(src)
            was = self._content.take(src).to_pylist()
            same = np.array([a == contents[i] for a, i in zip(was, have.tolist())], np.bool_)
            has = valid_of(emb)
            full = np.full((have.size, self.dim), np.nan, np.float32)
            # flatten holds the valid rows' values, in order
            full[has] = numpy_of(emb.flatten()).reshape(-1, self.dim)
            out[have[same & has]] = full[same & has]
        if self._changes:
            for i, (entry_id, content) in enumerate(zip(ids, contents)):
                change = self._changes.get(entry_id)
                if change is not None:
                    ok = change[1] is not None and change[0] == content
                    out[i] = change[1] if ok else np.nan
        return out
