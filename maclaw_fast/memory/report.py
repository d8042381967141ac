"""What ``maclaw-fast stats`` reports about a store: the model its vectors come from, counts per
category and status, the files on disk, the last maintenance run and the route log.

Everything is read from the store and its directory (never from command-line flags), so the
report says what the store holds.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

ROUTE_LOG = "tool_route.log"
ROUTE_BLOCK = "=== Tool Route ["  # the first line of each decision in the route log


def store_embedder(path: str | os.PathLike) -> str | None:
    """The ``embedder=`` that opens the store at ``path`` with the model its vectors were made
    with (so opening it to look changes nothing): ``"auto"`` for a bundled model (or a store
    without a snapshot yet), ``"hash"`` for the hashing embedder, None for a BM25-only store.

    Examples
    --------
    >>> import tempfile
    >>> store_embedder(tempfile.mkdtemp())
    'auto'
    """
    from maclaw_fast.memory.model_choice import recorded_fingerprint

    fp = recorded_fingerprint(path)
    if fp is None:
        return "auto"
    if fp == "":
        return None
    if fp.startswith("hash"):
        return "hash"
    return "auto"


def disk_usage(path: str | os.PathLike) -> dict[str, int]:
    """Bytes on disk of each top-level file or folder of a store directory (folders summed).

    Examples
    --------
    >>> import tempfile
    >>> disk_usage(tempfile.mkdtemp())
    {}
    """
    out: dict[str, int] = {}
    root = Path(path)
    if not root.is_dir():
        return out
    for item in sorted(root.iterdir()):
        try:
            if item.is_dir():
                out[item.name + "/"] = sum(p.stat().st_size for p in item.rglob("*")
                                           if p.is_file())
            elif item.is_file():
                out[item.name] = item.stat().st_size
        except OSError:  # a file removed while we look
            continue
    return out


def route_log_stats(path: str | os.PathLike) -> dict:
    """Decisions recorded in a route log file, its size and when it was last written."""
    p = Path(path)
    if not p.is_file():
        return {"path": str(p), "decisions": 0, "bytes": 0, "last_written": None}
    decisions = 0
    with open(p, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(ROUTE_BLOCK):
                decisions += 1
    st = p.stat()
    return {"path": str(p), "decisions": decisions, "bytes": st.st_size,
            "last_written": _iso(st.st_mtime)}


def last_maintenance(store) -> dict | None:
    """The last maintenance run the store records, else the newest backup it wrote (every run
    starts with one), else None."""
    try:
        from maclaw_fast.maintenance.records import last_maintenance as recorded
    except ImportError:
        recorded = None
    if recorded is not None:
        import msgspec

        rec = recorded(store)
        if rec is not None:
            out = msgspec.to_builtins(rec)
            out["at"] = _iso(rec.started_at)
            return out
    if store.path is None:
        return None
    from maclaw_fast.maintenance.pipeline import list_backups

    backups = list_backups(store.path / "backups")
    if not backups:
        return None
    newest = backups[-1]
    return {"at": _iso(newest.stat().st_mtime), "backup": newest.name,
            "backups": len(backups)}


def store_report(store) -> dict:
    """Everything ``maclaw-fast stats`` shows, as plain data.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> _ = s.save("Lin drinks green tea", category="preference")
    >>> r = store_report(s)
    >>> r["entries"], r["categories"]["preference"], r["model"]
    (1, 1, None)
    """
    from maclaw_fast.config import CATEGORIES

    base = store.stats()
    counts = Counter(e.category for e in store.entries())
    fp = store.embedder.fingerprint if store.embedder is not None else None
    report = {
        "path": base["path"],
        "model": fp.split(":")[1] if fp and ":" in fp else fp,
        "embedder": fp, "dim": base["dim"],
        "entries": base["entries"], "archived": base["archived"],
        "status": {k: base[k] for k in ("active", "dormant", "superseded")},
        "pinned": base["pinned"],
        "categories": {c: counts.get(c, 0) for c in CATEGORIES},
        "disk": None, "maintenance": last_maintenance(store), "route_log": None,
    }
    if store.path is not None:
        files = disk_usage(store.path)
        report["disk"] = {"total_bytes": sum(files.values()), "files": files}
        report["route_log"] = route_log_stats(store.path / ROUTE_LOG)
    return report


def format_report(report: dict) -> list[str]:
    """The report as lines for people."""
    status = ", ".join(f"{v} {k}" for k, v in report["status"].items())
    lines = [f"store      {report['path'] or '(in memory)'}",
             f"model      {report['model'] or 'none (BM25 only)'}"
             + (f"  ({report['embedder']}, {report['dim']}-d)" if report["embedder"] else ""),
             f"memories   {report['entries']} ({status}; {report['pinned']} pinned), "
             f"{report['archived']} archived",
             "categories " + ", ".join(f"{k} {v}" for k, v in report["categories"].items())]
    disk = report["disk"]
    if disk is not None:
        lines.append(f"disk       {_size(disk['total_bytes'])}: "
                     + ", ".join(f"{k} {_size(v)}" for k, v in disk["files"].items()))
    m = report["maintenance"]
    if m is None:
        lines.append("maintained never (maclaw-fast maintain runs it)")
    else:
        what = m.get("summary") or (f"backup {m['backup']}, {m['backups']} kept"
                                    if "backup" in m else "")
        lines.append(f"maintained {m['at']}" + (f": {what}" if what else ""))
    r = report["route_log"]
    if r is not None:
        lines.append(f"route log  {r['decisions']} decisions ({_size(r['bytes'])})"
                     + (f", last {r['last_written']}" if r["last_written"] else ""))
    return lines


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
