"""Compress (design §10): exact dedup, semantic merge, LLM compression, compact-form backfill.

Only exact dedup needs no LLM; it always runs. The LLM steps apply a reply only after checking
every field of it, and stop at the first LLM failure of a run (the pipeline's circuit breaker
counts that run as failed).
"""

from __future__ import annotations

import logging

import msgspec
import numpy as np

from maclaw_fast.config import CATEGORIES, MaintenanceConfig
from maclaw_fast.errors import DuplicateError, LLMError, NotFoundError
from maclaw_fast.llm import chat_json
from maclaw_fast.memory.columns import SELF_IDENTITY
from maclaw_fast.memory.lifecycle import delete_many, embed_text, replace_entries
from maclaw_fast.maintenance import prompts

log = logging.getLogger("maclaw_fast.maintenance")


class CompressReport(msgspec.Struct, kw_only=True):
    """What the compress step did. ``llm_errors`` non-empty = a failed run for the breaker."""

    skipped: str = ""
    deduplicated: int = 0
    dedup_ids: list[str] = []
    merged_groups: int = 0
    merged_removed: int = 0
    merge_rejected: int = 0
    compressed: int = 0
    compress_rejected: int = 0
    compact_filled: int = 0
    compact_rejected: int = 0
    llm_calls: int = 0
    llm_errors: list[str] = []


# --- exact dedup ----------------------------------------------------------------------------

def find_exact_duplicates(store, min_substring: int = 20) -> list[str]:
    """Ids that exact dedup removes (design §10 Compress step 2), without removing them.

    Two entries are duplicates when ``lower(trim(content))`` is equal (any category) or, within
    one category, one contains the other and the shorter has ≥ ``min_substring`` characters.
    The shorter goes; on equal length the one with fewer accesses, then the older one.
    Self-identity and pinned entries are never removed, but they do count as the entry a
    duplicate repeats.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> a = s.save("Run tests with pytest -x", category="instruction")
    >>> b = s.save("  run tests with PYTEST -x ", category="preference")
    >>> find_exact_duplicates(s) == [b.id] or find_exact_duplicates(s) == [a.id]
    True
    """
    with store.lock:
        t = store.table
        rows = t.live_rows().tolist()
        norm = {r: t.content[r].strip().lower() for r in rows}
        protected = {r for r in rows if t.category[r] == SELF_IDENTITY or t.pinned[r]}
        t_access, t_updated, t_seq = t.access, t.updated_at, t.seq
        cats = {r: int(t.category[r]) for r in rows}

        def rank(r):  # higher survives
            return (len(norm[r]), int(t_access[r]), float(t_updated[r]), -int(t_seq[r]))

        removed: set[int] = set()
        groups: dict[str, list[int]] = {}
        for r in rows:
            groups.setdefault(norm[r], []).append(r)
        for members in groups.values():
            if len(members) < 2:
                continue
            keep = [r for r in members if r in protected] or [max(members, key=rank)]
            removed.update(r for r in members if r not in keep)
        by_cat: dict[int, list[int]] = {}
        for r in rows:
            by_cat.setdefault(cats[r], []).append(r)
        for members in by_cat.values():
            removed.update(_contained(members, norm, protected, min_substring))
        return [t.ids[r] for r in rows if r in removed]


def _contained(members: list[int], norm: dict, protected: set, min_len: int) -> list[int]:
    """Unprotected rows whose text lies inside a strictly longer text of the same group."""
    texts = sorted({norm[r] for r in members}, key=lambda s: (-len(s), s))
    if len(texts) < 2:
        return []
    # One joined haystack, longest first: str.find runs in C, far faster than testing every
    # pair in Python, and every text that can contain ``s`` lies before ``s`` itself.
    sep = "\x00"
    hay = sep.join(texts)
    inside: set[str] = set()
    pos = 0
    for s in texts:
        if len(s) >= min_len and sep not in s and hay.find(s, 0, max(pos - 1, 0)) != -1:
            inside.add(s)
        pos += len(s) + 1
    return [r for r in members if norm[r] in inside and r not in protected]


def exact_dedup(store, config: MaintenanceConfig = MaintenanceConfig()) -> list[str]:
    """Remove exact and substring duplicates (one journaled change); returns removed ids."""
    with store.lock:
        ids = find_exact_duplicates(store, config.dedup_min_substring)
        delete_many(store, ids)
        return ids


# --- semantic merge -------------------------------------------------------------------------

def _mergeable_rows(store) -> dict[int, list[int]]:
    t = store.table
    rows = t.live_rows()
    ok = (t.status[rows] == 0) & ~t.pinned[rows] & (t.category[rows] != SELF_IDENTITY)
    out: dict[int, list[int]] = {}
    for r in rows[ok].tolist():
        out.setdefault(int(t.category[r]), []).append(r)
    return out


def merge_batches(store, config: MaintenanceConfig = MaintenanceConfig()
                  ) -> list[tuple[str, list[str]]]:
    """(category, ids) batches of at most ``merge_batch`` entries to show the LLM.

    With vectors, only entries with a same-category neighbour at cosine ≥ ``merge_min_cos``
    are sent, each cluster kept in one batch where it fits; without vectors every
    eligible entry is sent (the reference behaviour).
    """
    size = max(1, config.merge_batch)
    out = []
    with store.lock:
        t = store.table
        for cat, rows in _mergeable_rows(store).items():
            if len(rows) < 2:
                continue
            if store.dim:
                clusters = _clusters(store, rows, config.merge_min_cos)
            else:
                clusters = [rows]
            batches: list[list[int]] = [[]]
            for cl in clusters:
                for start in range(0, len(cl), size):
                    part = cl[start:start + size]
                    if len(batches[-1]) + len(part) > size:
                        batches.append([])
                    batches[-1] += part
            out += [(CATEGORIES[cat], [t.ids[r] for r in b]) for b in batches if len(b) > 1]
    return out


def _clusters(store, rows: list[int], min_cos: float) -> list[list[int]]:
    vecs = store.vectors
    rows = [r for r in rows if vecs.has_vec[r]]
    if len(rows) < 2:
        return []
    m = vecs.matrix[rows]
    sim = m @ m.T
    np.fill_diagonal(sim, -1.0)
    parent = list(range(len(rows)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(sim >= min_cos))):
        parent[find(int(i))] = find(int(j))
    comps: dict[int, list[int]] = {}
    for i in range(len(rows)):
        comps.setdefault(find(i), []).append(rows[i])
    return [c for c in comps.values() if len(c) > 1]


def validate_merge_reply(reply, n: int) -> tuple[list[tuple[int, list[int], str]], int]:
    """Accepted ``(keep, remove, merged)`` groups of a merge reply and how many were rejected.

    A group is accepted when ``keep`` is an index, ``remove`` a non-empty list of distinct
    indices without ``keep``, no index was used by an earlier accepted group, and ``merged``
    is non-empty text.

    Examples
    --------
    >>> validate_merge_reply([{"keep": 0, "remove": [1], "merged": "x"},
    ...                       {"keep": 1, "remove": [2], "merged": "y"}], 3)
    ([(0, [1], 'x')], 1)
    """
    if not isinstance(reply, list):
        return [], 1
    used: set[int] = set()
    accepted, rejected = [], 0
    for item in reply:
        if not isinstance(item, dict):
            rejected += 1
            continue
        keep, remove, merged = item.get("keep"), item.get("remove"), item.get("merged")
        idx_ok = (_is_index(keep, n) and isinstance(remove, list) and remove
                  and all(_is_index(i, n) for i in remove))
        if (not idx_ok or keep in remove or len(set(remove)) != len(remove)
                or not isinstance(merged, str) or not merged.strip()
                or used & ({keep} | set(remove))):
            rejected += 1
            continue
        used |= {keep} | set(remove)
        accepted.append((keep, list(remove), merged.strip()))
    return accepted, rejected


def _is_index(value, n: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n


def _apply_merge(store, ids: list[str], keep: int, remove: list[int], merged: str) -> int:
    """Merge one validated group; returns how many entries it removed (0 = not applied)."""
    members = [ids[keep]] + [ids[i] for i in remove]
    try:
        entries = [store.get(i) for i in members]
    except NotFoundError:
        return 0  # changed since the batch was built
    # The most-used member survives: its id is what other memories and callers know best.
    survivor = max(entries, key=lambda e: (e.access_count, e.id == ids[keep]))
    tags = tuple(dict.fromkeys(t for e in [survivor, *entries] for t in e.tags))
    vec = embed_text(store, merged, tags)
    others = [e.id for e in entries if e.id != survivor.id]
    try:
        replace_entries(store, survivor.id, content=merged, tags=tags, remove_ids=others,
                        updated_at=max(e.updated_at for e in entries), vec=vec)
    except (DuplicateError, NotFoundError):
        return 0
    return len(others)


def semantic_merge(store, llm, config: MaintenanceConfig, report: CompressReport) -> None:
    for cat, ids in merge_batches(store, config):
        try:
            contents = [prompts.cut_bytes(store.get(i).content, config.merge_cut_bytes)
                        for i in ids]
        except NotFoundError:
            continue
        report.llm_calls += 1
        reply = chat_json(llm, prompts.merge_messages(contents, cat), expect=list)
        groups, rejected = validate_merge_reply(reply, len(ids))
        report.merge_rejected += rejected
        for keep, remove, merged in groups:
            n = _apply_merge(store, ids, keep, remove, merged)
            if n:
                report.merged_groups += 1
                report.merged_removed += n
            else:
                report.merge_rejected += 1


# --- LLM compression and compact forms -------------------------------------------------------

def _eligible(store, *, min_chars: int, pinned_ok: bool, need_no_compact: bool) -> list:
    t = store.table
    out = []
    for r in t.live_rows().tolist():
        if (t.status[r] != 0 or t.category[r] == SELF_IDENTITY
                or (t.pinned[r] and not pinned_ok) or len(t.content[r]) < min_chars
                or (need_no_compact and t.compact[r])):
            continue
        out.append(store.entry_at(r))
    return out


def compression_ok(old: str, new: str, max_ratio: float) -> bool:
    """A compression is kept only when non-empty and shorter than ``max_ratio`` of the
    original (the reference accepted any shorter text).

    Examples
    --------
    >>> compression_ok("x" * 200, "y" * 99, 0.5), compression_ok("x" * 200, "y" * 100, 0.5)
    (True, False)
    """
    return bool(new.strip()) and len(new) < max_ratio * len(old)


def llm_compress(store, llm, config: MaintenanceConfig, report: CompressReport) -> None:
    with store.lock:
        todo = _eligible(store, min_chars=config.compress_min_chars, pinned_ok=False,
                         need_no_compact=False)
    todo.sort(key=lambda e: -len(e.content))
    for e in todo[: config.compress_max_per_run]:
        limit = int(len(e.content) * config.compress_max_ratio)
        report.llm_calls += 1
        text = prompts.plain_reply(llm.complete(prompts.compress_messages(e.content, limit)).text)
        if not compression_ok(e.content, text, config.compress_max_ratio):
            report.compress_rejected += 1
            continue
        try:
            current = store.get(e.id)
            if current.content != e.content:  # edited meanwhile: the reply is stale
                raise NotFoundError(e.id)
            replace_entries(store, e.id, content=text, tags=current.tags,
                            vec=embed_text(store, text, current.tags))
            report.compressed += 1
        except (DuplicateError, NotFoundError):
            report.compress_rejected += 1


def backfill_compact(store, llm, config: MaintenanceConfig, report: CompressReport) -> None:
    with store.lock:
        todo = _eligible(store, min_chars=config.compact_min_chars + 1, pinned_ok=True,
                         need_no_compact=True)
    todo.sort(key=lambda e: (-e.access_count, -e.updated_at))
    todo = todo[: config.compact_backfill_max]
    if not todo:
        return
    report.llm_calls += 1
    reply = chat_json(llm, prompts.compact_messages([e.content for e in todo]), expect=list)
    used: set[int] = set()
    for item in reply:
        idx = item.get("index") if isinstance(item, dict) else None
        text = item.get("compact") if isinstance(item, dict) else None
        if (not _is_index(idx, len(todo)) or idx in used or not isinstance(text, str)
                or not text.strip() or len(text.strip()) >= len(todo[idx].content)):
            report.compact_rejected += 1
            continue
        used.add(idx)
        e = todo[idx]
        try:
            with store.lock:
                if store.get(e.id).content != e.content:
                    raise NotFoundError(e.id)
                store.set_fields(e.id, compact_form=text.strip())
            report.compact_filled += 1
        except NotFoundError:
            report.compact_rejected += 1


def compress(store, llm=None, config: MaintenanceConfig = MaintenanceConfig()) -> CompressReport:
    """Run Compress steps 2–5 (the backup and breaker are the pipeline's).

    Parameters
    ----------
    store : MemoryStore
    llm : LLMClient, optional
        Without one only exact dedup runs.
    config : MaintenanceConfig

    Returns
    -------
    CompressReport

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> _ = s.save("Deploy with make release", category="instruction")
    >>> _ = s.save("deploy with make release", category="instruction")
    >>> compress(s).deduplicated
    1
    """
    report = CompressReport()
    report.dedup_ids = exact_dedup(store, config)
    report.deduplicated = len(report.dedup_ids)
    if llm is None:
        return report
    for step in (semantic_merge, llm_compress, backfill_compact):
        try:
            step(store, llm, config, report)
        except LLMError as exc:
            # One failure usually means the next calls fail too (down, rate-limited): stop.
            log.warning("compress: %s failed: %s", step.__name__, exc)
            report.llm_errors.append(f"{step.__name__}: {exc}")
            break
    return report
