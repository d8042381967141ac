"""The route log (design §12): one human-readable block per routing decision in
``tool_route.log``; a file grown past 5 MB is truncated first and restarts with a marker line."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import msgspec

TRUNCATED_MARKER = "=== log truncated (over {limit} bytes) at {ts} ==="


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


class RouteLog:
    """Appends route decisions to a file.

    Examples
    --------
    >>> import tempfile, os
    >>> log = RouteLog(os.path.join(tempfile.mkdtemp(), "tool_route.log"))
    >>> log.write("hi", total=30, core=23, candidates=7, hybrid=True, body_aware=True,
    ...           top=[("db_query", 0.9)], selected=["bash", "db_query"])
    >>> "Selected tools (2):" in open(log.path).read()
    True
    """

    def __init__(self, path: str | os.PathLike, max_bytes: int = 5 * 1024 * 1024,
                 clock=time.time) -> None:
        self.path = Path(path)
        self.max_bytes = int(max_bytes)
        self.clock = clock
        self._lock = threading.Lock()

    def format(self, message: str, *, total: int, core: int, candidates: int, hybrid: bool,
               body_aware: bool, top: list[tuple[str, float]], selected: list[str],
               reranked: list[str] | None = None, within_budget: bool = False) -> str:
        lines = [f"=== Tool Route [{_stamp(self.clock())}] ===",
                 f"Message: {message[:100]}",
                 f"Total tools: {total} | Core: {core} | Candidates: {candidates} | "
                 f"Hybrid: {str(hybrid).lower()}",
                 f"Body-aware: {str(body_aware).lower()}",
                 ("Within budget: the whole catalog is offered (nothing scored)"
                  if within_budget else "Top-20 candidates by fused score:")]
        lines += [f"  #{i} {name} = {score:.4f}" for i, (name, score) in enumerate(top[:20], 1)]
        lines.append(f"Selected tools ({len(selected)}):")
        lines += [f"  - {name}" for name in selected]
        if reranked:
            lines.append(f"Reranker output ({len(reranked)}): "
                         + " ".join(f"#{i} {n}" for i, n in enumerate(reranked, 1)))
        lines.append("---")
        return "\n".join(lines) + "\n"

    def write(self, message: str, **fields) -> None:
        block = self.format(message, **fields)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size > self.max_bytes:
                marker = TRUNCATED_MARKER.format(limit=self.max_bytes, ts=_stamp(self.clock()))
                with open(self.path, "w", encoding="utf-8") as fh:
                    fh.write(marker + "\n")
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(block)

    def write_whole(self, messages: list[str], results: list, candidates: int, *,
                    body_aware: bool) -> None:
        """Log the routing of ``messages`` when the whole catalog fitted the budget (design §12
        step 1): no scores, every routable tool selected."""
        for message, res in zip(messages, results):
            self.write(message, total=res.total, core=res.n_core, candidates=candidates,
                       hybrid=False, body_aware=body_aware, top=[], selected=res.names,
                       within_budget=True)


ROUTE_LOG_NAME = "tool_route.log"  # beside the store, as chat and serve write it


class RouteLogStats(msgspec.Struct, kw_only=True):
    """What a route log holds: routing decisions, how many the LLM reranked, the last one's
    time (local, as written), the file size, and whether it was truncated at its size limit."""

    path: str
    exists: bool = False
    decisions: int = 0
    reranked: int = 0
    last_at: str = ""
    size_bytes: int = 0
    truncated: bool = False


def route_log_stats(path: str | os.PathLike) -> RouteLogStats:
    """Count the decisions in a route log (a missing file counts nothing).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), ROUTE_LOG_NAME)
    >>> RouteLog(p).write("hi", total=3, core=1, candidates=2, hybrid=False, body_aware=True,
    ...                   top=[], selected=["memory"], reranked=["memory"])
    >>> s = route_log_stats(p)
    >>> (s.decisions, s.reranked)
    (1, 1)
    """
    p = Path(path)
    out = RouteLogStats(path=str(p))
    try:
        raw = p.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return out
    out.exists, out.size_bytes = True, len(raw)
    head = "=== Tool Route ["
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if line.startswith(head):
            out.decisions += 1
            out.last_at = line[len(head):].split("]", 1)[0]
        elif line.startswith("Reranker output"):
            out.reranked += 1
        elif line.startswith("=== log truncated"):
            out.truncated = True
    return out
