"""The speaker order of recall (``RecallConfig.speaker_weight``, docs/design.md "Recall").

A query that names the speaker of transcript lines (``"Melanie: ..."``,
:mod:`maclaw_fast.text.speakers`) puts that speaker's lines forward among the hits the kernel
selected: each gains ``speaker_weight`` of relevance (shown as affinity), after the graph walk
and the seeds it starts from, so the bonus neither moves the walk's seeds nor passes along the
links to the other speaker's replies (both cost most of the gain when tried inside the fusion).
On LoCoMo 96 % of the evidence of a question that names one speaker is that speaker's own
lines; a bonus for any row holding the name lifted half of a conversation and was not kept.
"""

from __future__ import annotations

import numpy as np

from maclaw_kernels.recall import PART_AFFINITY, PART_REASON, PART_SCORE
from maclaw_kernels.speakers import raise_and_order

_LEADING = (2.0, 3.0)  # the identity and user-fact block (hits.REASONS codes): keeps its place


def speaker_order(store, queries: list[str], rows: np.ndarray, parts: np.ndarray,
                  counts: np.ndarray) -> bool:
    """Raise the named speakers' rows of each query's selection (``rows`` (q, width),
    ``parts`` (q, part, width), ``counts`` (q,): the kernel's output, changed in place) and
    order the ranked hits again by score; whether any query named a speaker."""
    rc = store.config.recall
    if rc.speaker_weight <= 0.0:
        return False
    index = store.table.speakers()
    if not index.rows:
        return False
    bonus = rc.speaker_weight * rc.weight_relevance
    named = False
    for q, query in enumerate(queries):
        names = index.named(query)
        if not names:
            continue
        named = True
        m = int(counts[q])
        sets = [index.rows[name] for name in names]
        mine = sets[0] if len(sets) == 1 else set().union(*sets)
        own = np.array([r in mine for r in rows[q, :m].tolist()], np.bool_)
        raise_and_order(rows[q], parts[q], m, own, bonus, rc.speaker_weight, PART_SCORE,
                        PART_AFFINITY, PART_REASON, *_LEADING)
    return named
