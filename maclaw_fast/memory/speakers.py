"""The speaker order of recall (``RecallConfig.speaker_weight``, docs/design.md "Recall"): the
named speakers' lines among the hits the kernel selected, the replies to their questions and
the ``speaker_keep`` best other hits gain the bonus after the graph walk (inside the fusion it
moved the walk's seeds and passed along the links), archived hits before their merge.
"""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.text.speakers import speaks_or_answers
from maclaw_kernels.recall import PART_AFFINITY, PART_REASON, PART_SCORE

_LEADING = (2.0, 3.0)  # the identity and user-fact block (hits.REASONS codes): keeps its place


def raise_and_order(rows: np.ndarray, parts: np.ndarray, m: int, own: np.ndarray, keep: int,
                    bonus: float, weight: float) -> bool:
    """One query's ``rows[:m]`` and ``parts[:, :m]`` (changed in place): after the leading
    block each ``own`` row and the first ``keep`` others gain ``bonus`` in the score part and
    ``weight`` in the affinity part; then they are ordered by score, descending, ties in their
    order. Returns whether any row gained (none: the selection is left as it came)."""
    lead = np.isin(parts[PART_REASON, :m], _LEADING)
    start = m if lead.all() else int(np.argmin(lead))
    mine = own[start:m]
    gain = start + np.flatnonzero(mine | ((np.cumsum(~mine) <= keep) & ~mine))
    if gain.size == 0:
        return False
    parts[PART_SCORE, gain] += bonus
    parts[PART_AFFINITY, gain] += weight
    order = start + np.argsort(-parts[PART_SCORE, start:m], kind="stable")
    rows[start:m] = rows[order]
    parts[:, start:m] = parts[:, order]
    return True


def speaker_order(store, queries: list[str], rows: np.ndarray, parts: np.ndarray,
                  counts: np.ndarray) -> dict[int, tuple[str, ...]]:
    """Raise those rows of each query's selection (``rows`` (q, width), ``parts`` (q, part,
    width), ``counts`` (q,): the kernel's output, changed in place) and order the ranked hits
    again by score; the names of each query that named any."""
    rc = store.config.recall
    index = store.table.speakers() if rc.speaker_weight > 0.0 else None
    if index is None or not index.rows:
        return {}
    named, prev = {}, store.graph.prev
    for q, query in enumerate(queries):
        if not (names := index.named(query)):
            continue
        named[q], m = names, int(counts[q])
        own = np.array(index.marked(names, rows[q, :m].tolist(), prev[rows[q, :m]].tolist(),
                                    rc.speaker_replies), np.bool_)
        raise_and_order(rows[q], parts[q], m, own, rc.speaker_keep, rc.speaker_weight
                        * rc.weight_relevance, rc.speaker_weight)
    return named


def raise_archived(store, hits: list, names: tuple[str, ...]) -> list:
    """Archived ``hits`` that ``names`` spoke or that answer their question (the line before:
    archived, else the store's) with the bonus the store's rows gained."""
    rc, archive, row_of, out = store.config.recall, store.archive, store.table.row_of, []
    for h in hits:
        b = archive.neighbours(h.entry.id)[0] if rc.speaker_replies else None
        b = archive.get(b).content if b in archive else (
            store.entry_at(row_of[b]).content if b in row_of else None)
        if speaks_or_answers(h.entry.content, b, names):
            bd, score = h.breakdown, h.score + rc.speaker_weight * rc.weight_relevance
            bd = msgspec.structs.replace(bd, affinity=bd.affinity + rc.speaker_weight, total=score)
            h = msgspec.structs.replace(h, score=score, breakdown=bd)
        out.append(h)
    return out
