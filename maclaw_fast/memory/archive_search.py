"""Archive search (design R9): a recall with no strong match in the store consults the archive.

Archived entries keep their text and vectors in the store's columnar form
(:class:`maclaw_fast.memory.archive.ArchiveColumns`); those a query cues strongly join the
ranked hits where their score places them (``reason="archived"``), and with them the archived
entries within ``adjacency_hops`` conversation links (the reply to an archived question),
scored as recall's link walk scores a reached row. A reinforcing recall restores the archived
entries it returns (design §9).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maclaw_fast.config import CATEGORY_TABLE
from maclaw_fast.memory.columns import budget_tokens
from maclaw_fast.memory.lifecycle import restore_locked
from maclaw_fast.memory.speakers import raise_archived
from maclaw_fast.persist.arrow_numpy import arrow_of, column_of, strings_of
from maclaw_fast.records import Entry, RecallHit, ScoreBreakdown


def with_archive(store, plan, work, tokens: list[str], qvec, hits: list[RecallHit],
                 rows: np.ndarray, project, dynamic: bool, category,
                 now: float, scale, names=()) -> list[RecallHit]:
    """``hits`` (of store ``rows``) with up to ``archive_max_hits`` archived entries of the
    query's scope cued at least ``archive_min_cue`` strongly, and those within
    ``adjacency_hops`` conversation links of them, merged where their score places them
    (``reason="archived"``) within the recall's entry and token limits (design R9). ``work``:
    the recall's scratch (every row's BM25, cosine and thread prior): an archived entry has no
    thread in the store, so the merge compares the store's hits without their prior.
    ``scale``: the model's cosine floor, ``cos_spread`` and the BM25 and cosine weights for the
    query's language;
    ``names``: the query's speakers (memory.speakers)."""
    fc = store.config.forgetting
    if not fc.archive_search or len(store.archive) == 0:
        return hits
    rc = store.config.recall
    n = plan.n
    prior = work.mat[5, :n] if plan.threads(store).n_threads > 0 else None
    # the query's weights (a Chinese query's differ); an embedder-less store keeps the config's
    bw, cw = (float(scale[2]), float(scale[3])) if store.dim else (rc.bm25_weight, rc.cos_weight)
    found = store.archive.search(tokens, qvec, bm25_weight=bw, cos_weight=cw,
                                 min_cue=fc.archive_min_cue,
                                 limit=4 * fc.archive_max_hits + 4,
                                 cos_floor=scale[0])
    found = [f for f in found if _in_scope(store, f[0], project, dynamic, category)
             ][:fc.archive_max_hits]
    if not found:
        return hits
    eligible = plan.scope(store, project)[0].eligible[0]
    ranges = _ranges(work.bm25[:n][eligible], work.cos[0, :n][eligible], scale, (bw, cw))
    seeds = [_archive_hit(store, entry, bm25, cos, ranges, now)
             for entry, _, bm25, cos in found]
    extra = [h for h, _ in seeds]
    extra += _linked_hits(store, seeds, tokens, qvec, ranges, now,
                          lambda e: _in_scope(store, e, project, dynamic, category))
    extra = raise_archived(store, extra, names) if names else extra
    lead = sum(1 for h in hits if h.reason in ("self_identity", "user_fact"))
    key = {}  # the store hits' scores without the thread prior (by position)
    if prior is not None:
        w = rc.weight_relevance
        key = {id(h): h.score - w * float(prior[r]) for h, r in zip(hits, rows.tolist())}
    ranked = sorted(hits[lead:] + extra,  # stable: store order kept
                    key=lambda h: -key.get(id(h), h.score))
    merged = hits[:lead] + ranked
    limit = rc.dynamic_max_entries if dynamic else rc.max_entries
    budget = rc.dynamic_token_budget if dynamic else rc.token_budget
    out, used = [], 0
    for h in merged:
        cost = budget_tokens(h.entry.compact_form or h.entry.content)
        if len(out) >= limit:
            break
        if used + cost > budget and h.reason != "self_identity":
            continue
        out.append(h)
        used += cost
    return out


def _in_scope(store, entry: Entry, project, dynamic: bool, category) -> bool:
    if entry.status == "superseded" or entry.content in store.table.row_of_content:
        return False
    if category is not None and entry.category != category:
        return False
    if dynamic and entry.category == "user_fact":
        return False
    if project and entry.scope == "project":
        return any(t.lower() == project.lower() for t in entry.tags)
    return True


def _linked_hits(store, seeds: list[tuple[RecallHit, float]], tokens, qvec, ranges,
                 now: float, in_scope) -> list[RecallHit]:
    """Hits for the archived entries within ``adjacency_hops`` conversation links of the
    archived ``seeds``, scored as recall's link walk scores a row it reaches: the ``h``-th step
    carries the seed's relevance × ``adjacency_factor``^h; a walk stops at a missing link, a
    seed or an entry no longer archived."""
    rc = store.config.recall
    archive = store.archive
    if rc.adjacency_hops <= 0 or not seeds or not store.config.forgetting.archive_links:
        return []
    is_seed = {h.entry.id for h, _ in seeds}
    best: dict[str, float] = {}
    for h, rel in seeds:
        for side in (0, 1):
            node, value = h.entry.id, rel
            for _ in range(rc.adjacency_hops):
                node = archive.neighbours(node)[side]
                if not node or node in is_seed or node not in archive:
                    break
                value *= rc.adjacency_factor
                best[node] = max(best.get(node, 0.0), value)
    reached = [(archive.get(i), v) for i, v in best.items() if v > 0.0]
    reached = [(e, v) for e, v in reached if in_scope(e)]
    scores = archive.scores([e.id for e, _ in reached], tokens, qvec)
    return [_archive_hit(store, e, bm25, cos, ranges, now, link=v)[0]
            for (e, v), (bm25, cos) in zip(reached, scores)]


def _ranges(bm25: np.ndarray, cos: np.ndarray, scale, weights) -> tuple:
    """(BM25 lo, hi over the hits, cosine lo, hi, the query's (floor, spread), its (BM25,
    cosine) ``weights``) of the store's candidates for this query: archived entries are
    normalised and weighed by them as the kernel does a row."""
    hits = bm25[bm25 > 0]
    b_lo, b_hi = (float(hits.min()), float(hits.max())) if hits.shape[0] else (np.inf, 0.0)
    c_lo, c_hi = (float(cos.min()), float(cos.max())) if cos.shape[0] else (np.inf, -np.inf)
    return b_lo, b_hi, c_lo, c_hi, (float(scale[0]), float(scale[1])), weights


def _normalised(store, bm25: float, cos: float, ranges) -> tuple[float, float]:
    """An archived entry's raw BM25 and cosine normalised by the configured modes over the
    store's candidates (:func:`_ranges`), each capped to [0, 1]."""
    rc = store.config.recall
    b_lo, b_hi, c_lo, c_hi, (floor, spread), _ = ranges
    x = bm25
    if rc.bm25_norm == "max" and x > 0:
        x = min(1.0, x / b_hi) if b_hi > 0 else 1.0
    elif rc.bm25_norm == "minmax" and x > 0:
        x = 1.0 if b_hi <= b_lo else min(1.0, max(0.0, (x - b_lo) / (b_hi - b_lo)))
    if rc.cos_norm == "minmax":
        c = (min(1.0, max(0.0, (cos - c_lo) / (c_hi - c_lo))) if c_hi > c_lo
             else float(cos > 0.0))
    elif rc.cos_norm == "raw":
        c = max(cos, 0.0)
    else:  # the ends as the kernel's cos_ends gives them, tied to the model's floor
        least = spread * (1.0 - floor)
        lo, hi = {"floor": (floor, 1.0), "floor_best": (floor, max(c_hi, floor + least)),
                  "spread": (c_lo, max(c_hi, c_lo + least))}[rc.cos_norm]
        c = min(1.0, max((cos - lo) / (hi - lo), 0.0)) if hi > lo else 0.0
    return x, c


def _archive_hit(store, entry: Entry, bm25: float, cos: float, ranges, now: float,
                 link: float = 0.0) -> tuple[RecallHit, float]:
    """A hit for an archived entry scored as recall scores a row (design §6), and its own
    relevance; ``link``: what a conversation link walk gave it (then its relevance is the
    kernel's ``linked_relevance``: its own plus ``adjacency_mix`` × ``link``, or the larger of
    the two when the mix is 0)."""
    rc = store.config.recall
    hours = max(now - entry.updated_at, 0.0) / 3600.0
    recency = math.exp(-rc.recency_decay_per_hour * hours)
    importance = CATEGORY_TABLE[entry.category][0] + math.log1p(entry.access_count)
    x, c = _normalised(store, bm25, cos, ranges)
    # an embedder-less store weighs BM25 alone, with both weights, as the kernel does
    bw, cw = ranges[5]  # the query's weights (:func:`_ranges`)
    own = bw * x + cw * c if store.dim else (bw + cw) * x
    rel = own
    if link > 0.0:
        rel = max(own, own + rc.adjacency_mix * link if rc.adjacency_mix > 0.0 else link)
    total = (rc.weight_recency * recency + rc.weight_importance * importance
             + rc.weight_relevance * rel)
    breakdown = ScoreBreakdown(recency, importance, x, max(cos, 0.0), 0.0, rel - own, total)
    return RecallHit(entry, total, breakdown, "archived"), own


def batch_with_archive(store, result, weak: np.ndarray, rows, counts, recall_one,
                       reasons: tuple[str, ...], as_arrow: bool):
    """The archive step of a batch: each ``weak`` query is recalled alone (read-only, on the
    same snapshot: ``recall_one(q)``), which gives it its archive hits exactly as a single
    recall would. Returns (the result with those queries' hits replaced, the store rows to
    reinforce, the ids of the archived entries returned)."""
    replaced: dict[int, list[RecallHit]] = {}
    for q in np.flatnonzero(weak).tolist():
        hits = recall_one(q)
        if any(h.reason == "archived" for h in hits):
            replaced[q] = hits
    row_of = store.table.row_of
    sel = rows[np.arange(rows.shape[1])[None, :] < counts[:, None]]  # each query's rows in turn
    if replaced:  # a replaced query's rows are those of its store hits
        sel = []
        for q in range(rows.shape[0]):
            if q in replaced:
                sel.extend(row_of[h.entry.id] for h in replaced[q] if h.reason != "archived")
            else:
                sel.extend(rows[q, :counts[q]].tolist())
    archived = list(dict.fromkeys(h.entry.id for hits in replaced.values() for h in hits
                                  if h.reason == "archived"))
    if as_arrow and replaced:
        result = _replace_arrow(result, replaced, reasons)
    elif not as_arrow:
        for q, hits in replaced.items():
            result[q] = hits
    return result, np.asarray(sel, np.int64), archived


def _replace_arrow(table, replaced: dict[int, list[RecallHit]], reasons: tuple[str, ...]):
    keep = pc.invert(pc.is_in(table.column("query_index"),
                              value_set=arrow_of(np.array(list(replaced), np.int32))))
    flat = [(q, rank, h) for q, hits in replaced.items() for rank, h in enumerate(hits)]
    cols = {"query_index": [q for q, _, _ in flat], "rank": [r for _, r, _ in flat],
            "id": [h.entry.id for _, _, h in flat], "score": [h.score for _, _, h in flat]}
    for name in ("recency", "importance", "bm25", "cos", "affinity", "graph"):
        cols[name] = [getattr(h.breakdown, name) for _, _, h in flat]
    cols["reason"] = pa.DictionaryArray.from_arrays(
        arrow_of(np.array([reasons.index(h.reason) for _, _, h in flat], np.int8)),
        strings_of(reasons))
    arrays = [cols[f.name] if f.name == "reason" else column_of(cols[f.name], f.type)
              for f in table.schema]
    extra = pa.Table.from_arrays(arrays, schema=table.schema)
    merged = pa.concat_tables([table.filter(keep), extra])
    return merged.sort_by([("query_index", "ascending"), ("rank", "ascending")])


def restore_returned(store, ids, now: float) -> None:
    """Restore archived entries a reinforcing batch returned (design §9)."""
    for entry_id in ids:
        if entry_id in store.archive and entry_id not in store:
            restore_locked(store, entry_id, now)
