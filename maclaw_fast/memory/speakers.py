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
from maclaw_kernels.speakers import raise_and_order

_LEADING = (2.0, 3.0)  # the identity and user-fact block (hits.REASONS codes): keeps its place


def speaker_order(store, queries: list[str], rows: np.ndarray, parts: np.ndarray,
                  counts: np.ndarray) -> dict[int, tuple[str, ...]]:
    """Raise those rows of each query's selection (``rows`` (q, width), ``parts`` (q, part,
    width), ``counts`` (q,): the kernel's output, changed in place) and order the ranked hits
    again by score; the names of each query that named any."""
    rc = store.config.recall
    index = store.table.speakers() if rc.speaker_weight > 0.0 else None
    if not index or not index.rows:
        return {}
    named, prev = {}, store.graph.prev
    for q, query in enumerate(queries):
        if not (names := index.named(query)):
            continue
        named[q], m = names, int(counts[q])
        own = np.array(index.marked(names, rows[q, :m].tolist(), prev[rows[q, :m]].tolist(),
                                    rc.speaker_replies), np.bool_)
        raise_and_order(rows[q], parts[q], m, own, rc.speaker_keep, rc.speaker_weight
                        * rc.weight_relevance, rc.speaker_weight, PART_SCORE, PART_AFFINITY,
                        PART_REASON, *_LEADING)
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
