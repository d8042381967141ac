"""Plain vector similarity over a store's live entries: the exact cosine ranking that vector-store
adapters (LangChain, LangGraph) expose next to the hybrid recall."""

from __future__ import annotations

import numpy as np

from maclaw_fast.embedding import check_vectors
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import validate


def similar(store, query_vector, k: int | None = None) -> list:
    """The ``k`` live entries (all when ``k`` is None) most similar to ``query_vector`` by cosine,
    best first, as ``(Entry, cosine)``; ties keep store order. Entries without a vector score 0.
    """
    if not store.dim:
        raise ValidationError("this store has no embedder (BM25-only): there are no vectors")
    limit = validate.limit(k)
    query = np.ascontiguousarray(check_vectors(query_vector, store.dim, what="query_vector")[0])
    with store.lock:
        store.check_open()
        table = store.table
        rows = table.live_rows()
        if rows.size == 0 or limit == 0:
            return []
        scores = store.vectors.scores(query, int(table.n_rows))[rows]
        # stable: equal scores stay in store order
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(store.entry_at(int(rows[i])), float(scores[i])) for i in order]
