"""Reflect (design §10): higher-level insights over recent episodes (Generative Agents style)."""

from __future__ import annotations

import msgspec

from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.errors import LLMError
from maclaw_fast.llm import chat_json
from maclaw_fast.maintenance import prompts
from maclaw_fast.maintenance.promote import (count_episodic, latest_episodic, pick_category,
                                             save_new)

REFLECT_CATEGORIES = ("preference", "instruction", "user_fact")
LAST_REFLECTION = "last_reflection"  # store.meta key: unix seconds of the last success


class ReflectReport(msgspec.Struct, kw_only=True):
    """What reflect did; ``skipped`` says why it did not run, ``error`` why the LLM failed."""

    skipped: str = ""
    error: str = ""
    insights: int = 0
    insight_ids: list[str] = []
    rejected: int = 0


def last_reflection(store) -> float:
    """Unix seconds of the last successful reflection (0 when never), persisted with the store
    (the reference forgot it on restart and reflected again)."""
    try:
        return float(store.meta.get(LAST_REFLECTION, "0"))
    except ValueError:
        return 0.0


def reflect(store, llm=None, config: MaintenanceConfig = MaintenanceConfig(), *,
            now: float | None = None) -> ReflectReport:
    """Store LLM insights over the latest episodic memories as semantic entries tagged
    ``[reflection, auto_generated]`` (at most ``reflect_max``).

    Runs only with ≥ ``reflect_min_entries`` entries, ≥ ``reflect_min_hours`` since the last
    success and ≥ ``reflect_min_episodic`` active episodic entries.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> reflect(MemoryStore.in_memory(embedder=None)).skipped
    'no LLM configured'
    """
    report = ReflectReport()
    now = float(store.clock()) if now is None else float(now)
    if llm is None:
        report.skipped = "no LLM configured"
        return report
    if len(store) < config.reflect_min_entries:
        report.skipped = f"{len(store)} entries (< {config.reflect_min_entries})"
        return report
    since_h = (now - last_reflection(store)) / 3600.0
    if since_h < config.reflect_min_hours:
        report.skipped = (f"last reflection {since_h:.1f} h ago "
                          f"(< {config.reflect_min_hours:g} h)")
        return report
    n = count_episodic(store)
    if n < config.reflect_min_episodic:
        report.skipped = f"{n} active episodic entries (< {config.reflect_min_episodic})"
        return report
    recent = latest_episodic(store, config.reflect_window)
    contents = [prompts.cut_bytes(e.content, config.reflect_cut_bytes) for e in recent]
    try:
        reply = chat_json(llm, prompts.reflect_messages(contents, config.reflect_max),
                          expect=list)
    except LLMError as exc:
        report.error = str(exc)
        return report
    for item in reply:
        content = item.get("content") if isinstance(item, dict) else None
        if (report.insights >= config.reflect_max or not isinstance(content, str)
                or not content.strip()):
            report.rejected += 1
            continue
        cat = pick_category(item.get("category", "preference"), REFLECT_CATEGORIES,
                            "preference")
        new_id = save_new(store, content, cat, ["reflection", "auto_generated"])
        if new_id is None:
            report.rejected += 1
            continue
        report.insights += 1
        report.insight_ids.append(new_id)
    store.set_meta(LAST_REFLECTION, repr(now))
    return report
