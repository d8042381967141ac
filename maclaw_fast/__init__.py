"""maclaw_fast: long-term memory and tool routing for AI agents, on numba kernels.

Examples
--------
>>> from maclaw_fast import MemoryStore
>>> with MemoryStore.in_memory(embedder="hash") as store:
...     _ = store.save("User prefers green tea", category="preference")
...     [h.entry.content for h in store.recall("tea")]
['User prefers green tea']
"""

from maclaw_fast.config import (MaintenanceConfig, MemoryConfig, RecallConfig, RouterConfig,
                                SearchConfig)
from maclaw_fast.errors import (DuplicateError, MaclawError, NotFoundError, StoreLockedError,
                                ValidationError)
from maclaw_fast.records import Entry, GcReport, RecallHit, ScoreBreakdown

__version__ = "0.1.0"

__all__ = [
    "DuplicateError", "Entry", "GcReport", "MaclawError", "MaintenanceConfig", "MemoryConfig",
    "MemoryStore", "NotFoundError", "RecallConfig", "RecallHit", "RouterConfig", "ScoreBreakdown",
    "SearchConfig", "StoreLockedError", "StorePool", "ValidationError",
]


def __getattr__(name):  # each part loads its own dependencies on demand (a route needs no store)
    lazy = {
        "MemoryStore": "maclaw_fast.memory.store", "StorePool": "maclaw_fast.memory.pool",
        "ToolRegistry": "maclaw_fast.tools", "ToolRouter": "maclaw_fast.tools",
        "RegisteredTool": "maclaw_fast.tools", "WorkspaceIndex": "maclaw_fast.workspace",
        "Maintenance": "maclaw_fast.maintenance", "Agent": "maclaw_fast.agent",
    }
    if name in lazy:
        import importlib

        return getattr(importlib.import_module(lazy[name]), name)
    raise AttributeError(name)
