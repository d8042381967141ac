"""Workspace memory search over Markdown files (design §14, the OpenClaw design).

The public names load lazily: the CLI imports ``maclaw_fast.commands.workspace`` on every run and
must not pay for numba, tantivy and pyarrow just to print ``--help``.

Examples
--------
>>> import tempfile; from pathlib import Path
>>> from maclaw_fast.workspace import WorkspaceIndex, memory_search
>>> ws = Path(tempfile.mkdtemp()); _ = (ws / "MEMORY.md").write_text("Lin is allergic to peanuts")
>>> ix = WorkspaceIndex.open(ws, embedder="hash")
>>> memory_search("peanuts", index=ix)["results"][0]["path"]
'MEMORY.md'
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "WorkspaceIndex": "maclaw_fast.workspace.index",
    "WorkspaceStatus": "maclaw_fast.workspace.reports",
    "SyncReport": "maclaw_fast.workspace.reports",
    "FileRecord": "maclaw_fast.workspace.index",
    "SearchResponse": "maclaw_fast.workspace.search",
    "WorkspaceHit": "maclaw_fast.workspace.search",
    "normalise_weights": "maclaw_fast.workspace.search",
    "text_score": "maclaw_fast.workspace.search",
    "Chunk": "maclaw_fast.workspace.chunking",
    "chunk_markdown": "maclaw_fast.workspace.chunking",
    "chunk_id": "maclaw_fast.workspace.chunking",
    "FileInfo": "maclaw_fast.workspace.files",
    "discover": "maclaw_fast.workspace.files",
    "file_timestamp_days": "maclaw_fast.workspace.files",
    "WorkspaceWatcher": "maclaw_fast.workspace.watch",
    "memory_search": "maclaw_fast.workspace.agent_api",
    "memory_get": "maclaw_fast.workspace.agent_api",
    "MemoryTools": "maclaw_fast.workspace.agent_api",
    "get_index": "maclaw_fast.workspace.agent_api",
    "TOOL_SPECS": "maclaw_fast.workspace.agent_api",
    "demo_search": "maclaw_fast.commands.workspace",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'maclaw_fast.workspace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
