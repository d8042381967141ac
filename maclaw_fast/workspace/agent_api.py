"""Agent-facing tools over a workspace index: ``memory_search`` and ``memory_get`` (design §14).

Both return JSON-ready dicts and never raise: a bad query, a failing embedder or a refused path
comes back as ``{"ok": false, "error": ...}`` or as a result that says what happened (``mode``,
``degraded``, ``fallback``, ``reason``). ``memory_get`` reads only memory files inside the
workspace.
"""

from __future__ import annotations

import os
import threading

import msgspec

from maclaw_fast.config import SearchConfig
from maclaw_fast.workspace.files import resolve_memory_file
from maclaw_fast.workspace.index import WorkspaceIndex

TOOL_SPECS = [
    {"name": "memory_search",
     "description": "Search the workspace memory files (MEMORY.md, memory/*.md) for prior work, "
                    "decisions, dates, people, preferences and todos. Returns snippets with "
                    "citations path#Lstart-Lend.",
     "input_schema": {"type": "object", "properties": {
         "query": {"type": "string"},
         "max_results": {"type": "integer", "minimum": 1},
         "min_score": {"type": "number"}}, "required": ["query"]}},
    {"name": "memory_get",
     "description": "Read lines of a workspace memory file (e.g. after memory_search).",
     "input_schema": {"type": "object", "properties": {
         "path": {"type": "string"},
         "from_line": {"type": "integer", "minimum": 1},
         "lines": {"type": "integer", "minimum": 1}}, "required": ["path"]}},
]

_OPEN: dict[tuple[str, str | None, str], WorkspaceIndex] = {}
_OPEN_LOCK = threading.Lock()


def get_index(workspace, *, embedder="auto", config: SearchConfig = SearchConfig(),
              index_dir=None) -> WorkspaceIndex:
    """The process-wide index of ``workspace`` (opened and synced on first use).

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> get_index(d, embedder=None) is get_index(d, embedder=None)
    True
    """
    emb_key = embedder if isinstance(embedder, str) or embedder is None else id(embedder)
    key = (os.path.realpath(workspace), None if index_dir is None else str(index_dir),
           repr((emb_key, config)))
    with _OPEN_LOCK:
        ix = _OPEN.get(key)
        if ix is None:
            ix = _OPEN[key] = WorkspaceIndex.open(workspace, embedder=embedder, config=config,
                                                  index_dir=index_dir)
        return ix


def _index_for(index, workspace) -> WorkspaceIndex:
    if index is not None:
        return index
    if workspace is None:
        raise ValueError("pass index= or workspace=")
    return get_index(workspace)


def memory_search(query, *, index: WorkspaceIndex | None = None, workspace=None,
                  max_results: int | None = None, min_score: float | None = None) -> dict:
    """Search workspace memory; a JSON-ready dict that never raises.

    Examples
    --------
    >>> import tempfile; from pathlib import Path
    >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "MEMORY.md").write_text("Alice likes tea")
    >>> ix = WorkspaceIndex.open(ws, embedder=None)
    >>> r = memory_search("tea", index=ix)
    >>> r["ok"], r["mode"], r["results"][0]["citation"]
    (True, 'text', 'MEMORY.md#L1-L1')
    >>> memory_search(None, index=ix)["reason"]
    'query must be a string, got NoneType'
    """
    try:
        ix = _index_for(index, workspace)
        resp = ix.search(query, max_results=max_results, min_score=min_score)
        out = msgspec.to_builtins(resp)
        out["ok"] = True
        out["status"] = msgspec.to_builtins(ix.status())
        return out
    except Exception as exc:  # the agent must get an answer, whatever broke
        return {"ok": False, "query": query if isinstance(query, str) else None,
                "results": [], "error": f"{type(exc).__name__}: {exc}"}


def memory_get(path, from_line=1, lines=None, *, index: WorkspaceIndex | None = None,
               workspace=None) -> dict:
    """Read ``lines`` lines (all when ``None``) of a memory file from ``from_line`` (1-based).

    Paths outside the workspace, through symlinks, or not memory files are refused.

    Examples
    --------
    >>> import tempfile; from pathlib import Path
    >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "MEMORY.md").write_text("a\\nb\\nc\\n")
    >>> ix = WorkspaceIndex.open(ws, embedder=None)
    >>> memory_get("MEMORY.md", 2, 1, index=ix)["text"]
    'b'
    >>> memory_get("../secret.md", index=ix)["ok"]
    False
    """
    try:
        ix = _index_for(index, workspace)
        for name, value, low in (("from_line", from_line, 1), ("lines", lines, 1)):
            if value is None and name == "lines":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
        rel, full = resolve_memory_file(ix.root, path, ix.extra_paths)
        with open(full, encoding="utf-8", errors="replace") as fh:
            all_lines = fh.read().split("\n")
        if len(all_lines) > 1 and all_lines[-1] == "":
            all_lines.pop()
        stop = len(all_lines) if lines is None else min(len(all_lines), from_line - 1 + lines)
        picked = all_lines[from_line - 1: stop]
        return {"ok": True, "path": rel, "from_line": from_line,
                "to_line": from_line - 1 + len(picked), "total_lines": len(all_lines),
                "text": "\n".join(picked)}
    except Exception as exc:
        return {"ok": False, "path": path if isinstance(path, str) else None,
                "error": f"{type(exc).__name__}: {exc}"}


class MemoryTools:
    """The two tools bound to one index, for an agent's tool table.

    Examples
    --------
    >>> import tempfile
    >>> tools = MemoryTools(WorkspaceIndex.open(tempfile.mkdtemp(), embedder=None))
    >>> tools.memory_search("")["reason"]
    'empty query'
    """

    specs = TOOL_SPECS

    def __init__(self, index: WorkspaceIndex) -> None:
        self.index = index

    def memory_search(self, query, max_results=None, min_score=None) -> dict:
        return memory_search(query, index=self.index, max_results=max_results,
                             min_score=min_score)

    def memory_get(self, path, from_line=1, lines=None) -> dict:
        return memory_get(path, from_line, lines, index=self.index)

    def call(self, name: str, arguments: dict) -> dict:
        """Dispatch a tool call by name; unknown names and bad arguments come back as errors."""
        fn = {"memory_search": self.memory_search, "memory_get": self.memory_get}.get(name)
        if fn is None or not isinstance(arguments, dict):
            return {"ok": False, "error": f"unknown tool {name!r} or arguments not an object"}
        try:
            return fn(**arguments)
        except TypeError as exc:
            return {"ok": False, "error": f"bad arguments for {name}: {exc}"}
