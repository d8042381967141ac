"""Forgetting, archive restore and GC over a :class:`~maclaw_fast.memory.store.MemoryStore`
(design §7, §9).

Every function takes the store and holds its lock for the whole multi-step change, so readers
never see a half-applied pass. Changes are journaled like the store's own mutations; where one
logical change touches several entries (a decay pass, a merge) it goes into a single journal
record, so a crash keeps all of it or none of it.
"""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.config import CATEGORIES, CATEGORY_ALIASES
from maclaw_fast.errors import DuplicateError, ValidationError
from maclaw_fast.memory import replies, validate
from maclaw_fast.memory.columns import CATEGORY_CODE, SELF_IDENTITY
from maclaw_fast.memory.linking import least_used, relink_restored
from maclaw_fast.persist.journal import DeleteOp, PutOp
from maclaw_fast.records import Entry, GcReport, replace_entry, vec_bytes
from maclaw_fast.text.tokenizer import analysed_text
from maclaw_fast.threads import in_ranges

# One pass does 100k rows in a few ms and decay runs every 6 h: row ranges go to the thread pool
# only from this size (or when asked).
PARALLEL_DECAY_ROWS = 2_000_000


def decay_pass(strength, updated_at, exempt, active, now, rate, threshold, out_strength,
               out_dormant) -> int:
    """``S = strength·exp(-rate·hours)`` (0 for a strength ≤ 0); rows that are ``active`` and
    not ``exempt`` (self identity) with ``S < threshold`` become dormant (``out_dormant``) and
    keep ``S`` as strength; every other row keeps its stored strength. Returns how many became
    dormant."""
    s = strength * np.exp(-rate * np.maximum(now - updated_at, 0.0) / 3600.0)
    s[strength <= 0.0] = 0.0
    np.logical_and(active & ~exempt, s < threshold, out=out_dormant)
    np.copyto(out_strength, strength)
    np.copyto(out_strength, s, where=out_dormant)
    return int(np.count_nonzero(out_dormant))


class DecayReport(msgspec.Struct, kw_only=True):
    """What one decay pass did (design §7, §0 R9): ``checked`` entries the curve applies to
    (active, not self_identity), the ``dormant_ids`` that turned dormant in this pass, and the
    ``faded`` ones below the threshold that stay active because their category is semantic."""

    checked: int = 0
    dormant: int = 0
    dormant_ids: list[str] = []
    faded: int = 0


def dormant_mask(config, category: np.ndarray) -> np.ndarray:
    """Which rows (by category code) may turn dormant by decay under ``config`` (a
    ``MemoryConfig``): those of ``forgetting.dormant_categories``, never self_identity."""
    lut = np.zeros(len(CATEGORY_CODE), np.bool_)
    for cat in config.forgetting.dormant_categories:  # (the config refuses self_identity)
        lut[CATEGORY_CODE[CATEGORY_ALIASES.get(cat, cat)]] = True
    return lut[category]


def _now(store, now) -> float:
    return float(store.clock()) if now is None else validate.timestamp(now, "now")


def decay(store, *, now: float | None = None, parallel: bool | None = None) -> DecayReport:
    """Run the forgetting curve over every entry and mark the faded episodes dormant.

    Active entries other than self_identity have ``S(t)`` computed; those below
    ``config.forgetting.dormant_below`` become ``dormant`` with ``strength = S`` when their
    category is one of ``forgetting.dormant_categories`` (the episodic ones by default, design
    §0 R9). Semantic entries below it stay active (counted as ``faded``): their strength keeps
    decaying, recomputed from ``updated_at`` like every active entry's, so recency still ranks
    them. Everything else keeps its stored (peak) strength. ``now``: unix seconds (default the
    store's clock); ``parallel``: force the threaded kernel on or off (default: from
    ``PARALLEL_DECAY_ROWS`` rows on).

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None, clock=lambda: 0.0)
    >>> e = s.save("talked about the weekend", category="conversation_summary")
    >>> f = s.save("allergic to peanuts", category="user_fact")
    >>> r = decay(s, now=768 * 3600.0)
    >>> r.dormant_ids == [e.id], r.faded, s.get(f.id).status
    (True, 1, 'active')
    """
    cfg = store.config.forgetting
    with store.lock:
        store.check_writable()
        now = _now(store, now)
        t = store.table
        n = t.n_rows
        exempt = np.ascontiguousarray(t.category[:n] == SELF_IDENTITY)
        active = np.ascontiguousarray(t.alive[:n] & (t.status[:n] == 0))
        out_strength = np.empty(n, np.float64)
        out_dormant = np.empty(n, np.bool_)
        cols = (t.strength[:n], t.updated_at[:n], exempt, active)

        def run(lo: int, hi: int) -> None:
            decay_pass(*(c[lo:hi] for c in cols), now, cfg.decay_per_hour, cfg.dormant_below,
                       out_strength[lo:hi], out_dormant[lo:hi])

        if parallel if parallel is not None else n >= PARALLEL_DECAY_ROWS:
            in_ranges(n, run)
        else:
            run(0, n)
        may_sleep = dormant_mask(store.config, t.category[:n])
        faded = int((out_dormant & ~may_sleep).sum())
        rows = np.flatnonzero(out_dormant & may_sleep)
        ops = []
        for r in rows.tolist():
            entry = replace_entry(store.entry_at(r), status="dormant",
                                  strength=float(out_strength[r]))
            t.write(r, entry)
            ops.append(PutOp(entry, None, False))
        if ops:
            store.journal(*ops)
        return DecayReport(checked=int((active & ~exempt).sum()), dormant=len(ops),
                           dormant_ids=[t.ids[r] for r in rows.tolist()], faded=faded)


def restore_locked(store, entry_id: str, now: float, vec=None) -> tuple[Entry, list[Entry]]:
    """:func:`restore` for a caller that holds the store's lock (``vec``: the entry's fresh
    embedding, made here when None); returns it and what the capacity check then archived."""
    archive, t = store.archive, store.table
    if entry_id in t.row_of:
        # An earlier restore died between the store write and the archive removal: finish it.
        if entry_id in archive:
            archive.remove(entry_id)
        return store.entry_at(t.row_of[entry_id]), []
    old = archive.get(entry_id)
    other = t.row_of_content.get(old.content)
    if other is not None:
        raise DuplicateError(f"archived memory {entry_id!r} duplicates memory "
                             f"{t.ids[other]!r} in the store")
    if vec is None:
        vec = embed_text(store, old.content, old.tags)
    status = "superseded" if old.status == "superseded" else "active"
    entry = replace_entry(old, updated_at=now, access_count=1, status=status, strength=1.0,
                          related_ids=(), related_strengths=())
    row = store.insert_row(entry, vec)
    put = PutOp(store.entry_at(row), vec_bytes(vec))
    links = store.auto_link_row(row)
    relinks = relink_restored(store, row, *archive.neighbours(entry_id))
    store.relinked(row, replies.answer_after(store, row))  # back between question and reply
    store.journal(put, *links, *relinks)
    # Store first, archive second: a crash in between leaves a copy in both (finished above),
    # never the entry in neither.
    archive.remove(entry_id)
    result = store.entry_at(row)
    return result, store.enforce_capacity()


def restore(store, entry_id: str, *, now: float | None = None) -> Entry:
    """Move an archived entry back into the store (design §9).

    It comes back with ``updated_at = now``, ``access_count = 1``, strength 1.0, ``active``
    (a superseded entry stays superseded), fully re-indexed and re-linked in the graph; then
    the capacity check runs. NotFoundError when no archived entry has this id, DuplicateError
    when the store holds its content.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> e = s.save("likes green tea", category="preference")
    >>> _ = s.archive_rows([s.row_of_id(e.id)])
    >>> restore(s, e.id).access_count
    1
    """
    if not isinstance(entry_id, str):
        raise ValidationError(f"id must be a string, got {type(entry_id).__name__}")
    with store.lock:
        store.check_writable()
        archived = store.archive.get(entry_id) if entry_id not in store else None
    # embedded outside the lock (a model call takes milliseconds)
    vec = embed_text(store, archived.content, archived.tags) if archived is not None else None
    with store.lock:
        store.check_writable()
        return restore_locked(store, entry_id, _now(store, now), vec)[0]


def gc(store, *, now: float | None = None) -> GcReport:
    """Archive least-used entries below the GC threshold, then revive related archived ones.

    When the store holds ≥ ``gc_threshold`` (450) entries, unprotected entries (not
    self_identity, not pinned) are archived by (access_count asc, updated_at asc, store order)
    until it holds fewer than the threshold. Then the tags and categories of the top
    ``revive_top`` (20) active entries by (access_count desc, updated_at desc) select up to
    ``revive_max`` (10) archived entries to restore — never one archived in this same run,
    never a superseded or dormant one, never one whose content is already in the store. In the
    returned :class:`GcReport`, ``before = after + archived − revived`` always holds.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> _ = s.save("likes green tea", category="preference")
    >>> r = gc(s); (r.archived, r.revived, r.before, r.after)
    (0, 0, 1, 1)
    """
    cap = store.config.capacity
    with store.lock:
        store.check_writable()
        now = _now(store, now)
        t = store.table
        store.archive.remove_held(store)
        before = len(t)
        archived_ids: set[str] = set()
        if before >= cap.gc_threshold:
            moved = store.archive_rows(least_used(store, before - cap.gc_threshold + 1))
            archived_ids.update(e.id for e in moved)
        candidates = _revival_candidates(store, archived_ids, cap)
        room = cap.gc_threshold - 1 - len(t)
        if before >= cap.gc_threshold and len(candidates) > room:
            # archive as many more as will be revived, so the store ends below the
            # threshold (design §9) and the next run does not archive again at once
            moved = store.archive_rows(least_used(store, len(candidates) - room))
            archived_ids.update(e.id for e in moved)
            room = cap.gc_threshold - 1 - len(t)
        archived = len(archived_ids)
        revived = 0
        for entry_id in candidates[:max(room, 0)]:
            archived += len(restore_locked(store, entry_id, now)[1])
            revived += 1
        return GcReport(archived=archived, revived=revived, before=before, after=len(t))


def _revival_candidates(store, exclude: set[str], cap) -> list[str]:
    t = store.table
    rows = t.live_rows()
    rows = rows[t.status[rows] == 0]
    if rows.size == 0 or len(store.archive) == 0 or cap.revive_max <= 0:
        return []
    top = rows[np.lexsort((t.seq[rows], -t.updated_at[rows], -t.access[rows]))[: cap.revive_top]]
    tags = {tag for r in top.tolist() for tag in t.tags[r]}
    cats = {CATEGORIES[t.category[r]] for r in top.tolist()}
    out: list[str] = []
    seen_content: set[str] = set()
    for e in store.archive.find_relevant(tags, cats):
        # nor a dormant one: a faded episode comes back through a cue (archive search,
        # design R9), not because its category resembles what is in use (then every old
        # conversation summary would cycle back as new)
        if (e.id in exclude or e.status in ("superseded", "dormant") or e.id in t.row_of
                or e.content in t.row_of_content or e.content in seen_content):
            continue
        out.append(e.id)
        seen_content.add(e.content)
        if len(out) >= cap.revive_max:
            break
    return out


def replace_entries(store, survivor_id: str, *, content: str, tags, remove_ids=(),
                    updated_at: float | None = None, vec=None) -> Entry:
    """Rewrite one entry's content/tags and delete others in one journal record.

    The building block of merge and compression: a crash keeps either the old entries or the
    finished result. ``compact_form`` is cleared and ``updated_at`` kept unless given, so that
    rewording a memory does not make it look recently used; ``vec`` is the new text's
    embedding (None without an embedder). DuplicateError when ``content`` is another entry's.
    """
    content = validate.content(content)
    tags = validate.tags(tags)
    remove_ids = [i for i in remove_ids if i != survivor_id]
    with store.lock:
        store.check_writable()
        t = store.table
        row = store.row_of_id(survivor_id)
        gone = [store.row_of_id(i) for i in remove_ids]
        other = t.row_of_content.get(content)
        if other is not None and other != row and other not in gone:
            raise DuplicateError(f"content duplicates memory {t.ids[other]!r}")
        ops: list = []
        for r in gone:  # before the rewrite: the survivor may take over a removed entry's text
            ops.append(DeleteOp(t.ids[r]))
            store.remove_row(r)
        old = store.entry_at(row)
        entry = replace_entry(old, content=content, tags=tags, compact_form="",
                         updated_at=old.updated_at if updated_at is None else float(updated_at))
        t.write(row, entry)
        store.index_row(row)
        if store.dim and vec is not None:
            store.vectors.set(row, vec)
        entry = store.entry_at(row)
        ops.append(PutOp(entry, vec_bytes(vec), bool(store.dim and vec is not None)))
        store.journal(*ops)
        return entry


def delete_many(store, ids) -> list[Entry]:
    """Delete several entries as one journaled change; returns what they were."""
    ids = list(dict.fromkeys(ids))
    with store.lock:
        store.check_writable()
        rows = [store.row_of_id(i) for i in ids]
        gone = [store.entry_at(r) for r in rows]
        for r in rows:
            store.remove_row(r)
        if ids:
            store.journal(*[DeleteOp(i) for i in ids])
        return gone


def embed_text(store, content: str, tags=()):
    """The store's embedding of an entry's analysed text, or None without an embedder."""
    # also for a restored entry: archived vectors carry no fingerprint, so one made by an
    # earlier model could slip back in (design §3 forbids mixing)
    return store.embed_text(analysed_text(content, tuple(tags)), None)
