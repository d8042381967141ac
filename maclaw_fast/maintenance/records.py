"""The record of the last maintenance run, kept in the store (``maintenance/last``), and the
6-hour schedule computed from it.

``stats`` and ``chat`` read :func:`last_maintenance`; :class:`Maintenance` writes a record after
every run (``maintain``, ``maintain --now``, the schedule of ``chat`` and ``serve``).
"""

from __future__ import annotations

import msgspec

from maclaw_fast.memory import metadata

LAST_KEY = "maintenance/last"


class MaintenanceRecord(msgspec.Struct, kw_only=True):
    """A maintenance run in brief: when, how long, whether every step ran, what changed.

    ``counts``: backup entries, archived (GC), dormant (decay), deduplicated, merged,
    compressed, compact forms, promoted, reflected. ``summary`` is the one-line form.
    """

    started_at: float
    duration_ms: float = 0.0
    scheduled: bool = False
    ok: bool = True
    summary: str = ""
    counts: dict[str, int] = {}
    errors: list[str] = []


def _step_errors(report) -> list[str]:
    out = list(report.errors)
    for name in ("promote", "reflect"):
        err = getattr(getattr(report, name), "error", "")
        if err:
            out.append(f"{name}: {err}")
    if report.compress.llm_errors:
        out.append(f"compress: {len(report.compress.llm_errors)} LLM error(s)")
    if report.backup.error:
        out.append(f"backup: {report.backup.error}")
    return out


def record_of(report) -> MaintenanceRecord:
    """The :class:`MaintenanceRecord` of a :class:`~maclaw_fast.maintenance.pipeline.
    MaintenanceReport`.

    Examples
    --------
    >>> from maclaw_fast.maintenance.pipeline import MaintenanceReport
    >>> record_of(MaintenanceReport(started_at=0.0)).summary
    'backup 0, archived 0, dormant 0, deduplicated 0, merged 0, compressed 0, compact 0, promoted 0, reflected 0'
    """
    c = report.compress
    counts = {"backup": report.backup.entries, "archived": report.gc.archived,
              "dormant": report.decay.dormant, "deduplicated": c.deduplicated,
              "merged": c.merged_removed, "compressed": c.compressed,
              "compact": c.compact_filled, "promoted": report.promote.promoted,
              "reflected": report.reflect.insights}
    errors = _step_errors(report)
    summary = ", ".join(f"{k} {v}" for k, v in counts.items())
    if errors:
        summary += f"; {len(errors)} error(s)"
    return MaintenanceRecord(started_at=report.started_at, duration_ms=report.duration_ms,
                             scheduled=report.scheduled, ok=not errors, summary=summary,
                             counts=counts, errors=errors)


def save_record(store, report) -> MaintenanceRecord | None:
    """Persist the record of ``report`` in ``store`` (nothing for a store without named
    values); returns it."""
    if not metadata.can_persist(store):
        return None
    rec = record_of(report)
    metadata.set_struct(store, LAST_KEY, rec)
    return rec


def last_maintenance(store) -> MaintenanceRecord | None:
    """The last maintenance run of ``store`` (None when it never ran).

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> from maclaw_fast.maintenance.pipeline import Maintenance
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> last_maintenance(s) is None
    True
    >>> _ = Maintenance(s).run_once()
    >>> last_maintenance(s).ok
    True
    """
    return metadata.get_struct(store, LAST_KEY, MaintenanceRecord)


def seconds_until_due(store, interval_h: float, now: float) -> float:
    """Seconds until the next scheduled run (0 = due now): ``interval_h`` after the start of
    the last run; a store never maintained is due once it holds a memory.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> seconds_until_due(s, 6.0, now=0.0)   # empty: nothing to maintain yet
    21600.0
    """
    last = last_maintenance(store)
    interval = float(interval_h) * 3600.0
    if last is None:
        return 0.0 if len(store) > 0 else interval
    # min(): a run stamped in the future (the clock was set back) waits one interval
    return min(interval, max(0.0, last.started_at + interval - float(now)))


class Activity(msgspec.Struct, kw_only=True):
    """What the background features of a store did (for ``stats``): the last maintenance run,
    seconds until the next is due, the route log beside the store, and when the knowledge
    extractor last started (its 1 h cooldown runs from then)."""

    last_maintenance: MaintenanceRecord | None = None
    maintenance_due_in_s: float = 0.0
    route_log: object = None  # a maclaw_fast.tools.routelog.RouteLogStats
    extractor_last_started: float | None = None


def activity(store, *, interval_h: float | None = None, now: float | None = None) -> Activity:
    """The :class:`Activity` of ``store``; its route log is ``<store>/tool_route.log``.

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.memory import MemoryStore
    >>> with MemoryStore.open(tempfile.mkdtemp(), embedder=None) as s:
    ...     a = activity(s)
    >>> a.last_maintenance is None, a.route_log.decisions
    (True, 0)
    """
    from maclaw_fast.config import MaintenanceConfig
    from maclaw_fast.maintenance.extractor import LAST_STARTED
    from maclaw_fast.tools.routelog import ROUTE_LOG_NAME, RouteLogStats, route_log_stats

    interval = MaintenanceConfig().interval_h if interval_h is None else interval_h
    now = float(store.clock()) if now is None else float(now)
    path = getattr(store, "path", None)
    log = (route_log_stats(path / ROUTE_LOG_NAME) if path is not None
           else RouteLogStats(path=""))
    return Activity(last_maintenance=last_maintenance(store),
                    maintenance_due_in_s=seconds_until_due(store, interval, now),
                    route_log=log,
                    extractor_last_started=metadata.get_float(store, LAST_STARTED))
