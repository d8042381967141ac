"""Promote (design §10): recurring episodic themes become semantic memories (MemGPT style)."""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.config import EPISODIC, MaintenanceConfig
from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm import chat_json
from maclaw_fast.maintenance import prompts
from maclaw_fast.memory import validate
from maclaw_fast.memory.columns import CATEGORY_CODE

PROMOTE_CATEGORIES = ("preference", "instruction", "user_fact")


class PromoteReport(msgspec.Struct, kw_only=True):
    """What promote did; ``skipped`` says why it did not run, ``error`` why the LLM failed."""

    skipped: str = ""
    error: str = ""
    promoted: int = 0
    promoted_ids: list[str] = []
    rejected: int = 0


def latest_episodic(store, limit: int) -> list:
    """Active episodic entries, newest (by created_at, then store order) first."""
    with store.lock:
        out = [e for e in store.entries() if e.category in EPISODIC and e.status == "active"]
    out.reverse()  # store order ascending → newest insert first among equal created_at
    out.sort(key=lambda e: -e.created_at)
    return out[:limit]


def count_episodic(store) -> int:
    """How many active episodic entries the store holds."""
    codes = [CATEGORY_CODE[c] for c in EPISODIC]
    with store.lock:
        t = store.table
        rows = t.live_rows()
        return int(((t.status[rows] == 0) & np.isin(t.category[rows], codes)).sum())


def pick_category(value, allowed: tuple[str, ...], default: str) -> str:
    """The canonical category named by ``value`` if it is allowed, else ``default``.

    Examples
    --------
    >>> pick_category("feedback", PROMOTE_CATEGORIES, "preference")
    'instruction'
    >>> pick_category("self_identity", PROMOTE_CATEGORIES, "preference")
    'preference'
    """
    try:
        cat = validate.category(value)
    except ValidationError:
        return default
    return cat if cat in allowed else default


def save_new(store, content: str, category: str, tags) -> str | None:
    """Save unless the store already holds this text (ignoring case and surrounding space);
    returns the new id or None."""
    norm = content.strip().lower()
    with store.lock:
        t = store.table
        if any((c or "").strip().lower() == norm for c in t.content[: t.n_rows] if c):
            return None
        return store.save(content.strip(), category=category, tags=tags).id


def _evidence(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def promote(store, llm=None, config: MaintenanceConfig = MaintenanceConfig()) -> PromoteReport:
    """Ask the LLM for themes recurring in the latest episodic memories; store those with
    ``evidence_count ≥ promote_min_evidence`` as semantic entries tagged
    ``[promoted, auto_generated]``, at most ``promote_max`` per run.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> promote(MemoryStore.in_memory(embedder=None)).skipped
    'no LLM configured'
    """
    report = PromoteReport()
    if llm is None:
        report.skipped = "no LLM configured"
        return report
    n = count_episodic(store)
    if n < config.promote_min_episodic:
        report.skipped = f"{n} active episodic entries (< {config.promote_min_episodic})"
        return report
    recent = latest_episodic(store, config.promote_window)
    contents = [prompts.cut_bytes(e.content, config.promote_cut_bytes) for e in recent]
    try:
        reply = chat_json(llm, prompts.promote_messages(contents, config.promote_min_evidence,
                                                        config.promote_max), expect=list)
    except LLMError as exc:
        report.error = str(exc)
        return report
    for item in reply:
        if report.promoted >= config.promote_max:
            report.rejected += 1
            continue
        content = item.get("content") if isinstance(item, dict) else None
        evidence = _evidence(item.get("evidence_count")) if isinstance(item, dict) else None
        if (not isinstance(content, str) or not content.strip() or evidence is None
                or evidence < config.promote_min_evidence):
            report.rejected += 1
            continue
        cat = pick_category(item.get("category", "preference"), PROMOTE_CATEGORIES,
                            "preference")
        new_id = save_new(store, content, cat, ["promoted", "auto_generated"])
        if new_id is None:
            report.rejected += 1
            continue
        report.promoted += 1
        report.promoted_ids.append(new_id)
    return report
