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
    import msgspec

    from maclaw_fast.config import CATEGORIES
    from maclaw_fast.maintenance.records import activity

    base = store.stats()
    counts = Counter(e.category for e in store.entries())
    fp = store.embedder.fingerprint if store.embedder is not None else None
    act = activity(store)
    last = act.last_maintenance
    maintenance = None
    if last is not None:
        maintenance = msgspec.to_builtins(last)
        maintenance["at"] = _iso(last.started_at)
    report = {
        "path": base["path"],
        "model": _model_name(fp),
        "embedder": fp, "dim": base["dim"],
        "entries": base["entries"], "archived": base["archived"],
        "status": {k: base[k] for k in ("active", "dormant", "superseded")},
        "pinned": base["pinned"],
        "categories": {c: counts.get(c, 0) for c in CATEGORIES},
        "disk": None, "maintenance": maintenance,
        "maintenance_due_in_s": round(act.maintenance_due_in_s, 1),
        "route_log": msgspec.to_builtins(act.route_log) if store.path is not None else None,
        "extractor_last_started": (_iso(act.extractor_last_started)
                                   if act.extractor_last_started is not None else None),
    }
    if store.path is not None:
        files = disk_usage(store.path)
        report["disk"] = {"total_bytes": sum(files.values()), "files": files}
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
    due = report["maintenance_due_in_s"]
    when = "due now" if due <= 0 else f"next in {due / 3600:.1f} h"
    if m is None:
        lines.append(f"maintained never ({when}; maclaw-fast maintain runs it)")
    else:
        lines.append(f"maintained {m['at']}{'' if m['ok'] else ' (with errors)'}: "
                     f"{m['summary']}; {when}")
    r = report["route_log"]
    if r is not None:
        lines.append(f"route log  {r['decisions']} decisions, {r['reranked']} reranked "
                     f"({_size(r['size_bytes'])})"
                     + (f", last {r['last_at']}" if r["last_at"] else ""))
    if report["extractor_last_started"]:
        lines.append(f"extractor  last ran {report['extractor_last_started']}")
    return lines


def _model_name(fingerprint: str | None) -> str | None:
    """``e5:multilingual-e5-small-q4:…`` → the model's name; ``hash-v1:384:…`` → ``hash-v1``."""
    if not fingerprint or ":" not in fingerprint:
        return fingerprint
    kind, rest = fingerprint.split(":", 1)
    return rest.split(":", 1)[0] if kind in ("e5", "onnx") else kind


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
