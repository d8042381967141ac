"""Typed records exchanged at the API boundary (msgspec Structs)."""

from __future__ import annotations

import random

import msgspec
import numpy as np


# gc=False: an entry holds strings, numbers and tuples of them, so it can never be part of a
# reference cycle; untracked, the thousands a store makes (its hits, listings) never trigger
# or lengthen a garbage collection
class Entry(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    """One memory (design §1), as a read-only snapshot. Times are UTC unix seconds (float).

    Entries are immutable: change one through the store (``update``, ``pin``, ...). The vector is
    not carried here (``MemoryStore.vector(id)`` returns it) so that recall stays cheap.

    Examples
    --------
    >>> e = Entry(id="1-abcd", content="likes tea", category="preference")
    >>> e.status
    'active'
    """

    id: str
    content: str
    category: str
    tags: tuple[str, ...] = ()
    created_at: float = 0.0
    updated_at: float = 0.0
    access_count: int = 1
    related_ids: tuple[str, ...] = ()
    related_strengths: tuple[float, ...] = ()
    strength: float = 1.0
    status: str = "active"  # active | superseded | dormant
    scope: str = "global"  # global | project
    pinned: bool = False
    compact_form: str = ""


class ScoreBreakdown(msgspec.Struct, frozen=True, gc=False):
    """Why a hit ranked where it did.

    ``total = w_rec·recency + w_imp·importance + w_rel·(bm25_w·bm25 + cos_w·cos + affinity + graph)``
    where ``bm25`` is the normalised BM25 used in the fusion and ``graph`` the relevance a graph
    neighbour gained from a seed (0 when none).
    """

    recency: float
    importance: float
    bm25: float
    cos: float
    affinity: float
    graph: float
    total: float


class RecallHit(msgspec.Struct, frozen=True, gc=False):
    """One recalled memory with its score breakdown."""

    entry: Entry
    score: float
    breakdown: ScoreBreakdown
    reason: str = "scored"  # self_identity | user_fact | scored | graph


class GcReport(msgspec.Struct, kw_only=True):
    """Result of a GC run (design §9)."""

    archived: int = 0
    revived: int = 0
    before: int = 0
    after: int = 0


def new_id(clock_ns: int) -> str:
    """``"<unix_nanos>-<4 hex>"`` (design §1). The suffix only separates ids of one nanosecond:
    ``random`` (reseeded in a forked child) spares a ``getrandom`` call per save, which cost
    ~15 µs inside the save loop."""
    return f"{clock_ns}-{random.getrandbits(16):04x}"


def vec_bytes(vec: np.ndarray | None) -> bytes | None:
    """A vector as the journal stores it (float32 bytes), or None."""
    return None if vec is None else np.asarray(vec, np.float32).tobytes()


def replace_entry(entry: Entry, **changes) -> Entry:
    """A copy of ``entry`` with ``changes`` (msgspec validates nothing here: callers do)."""
    return msgspec.structs.replace(entry, **changes)
