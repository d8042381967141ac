"""What the workspace index reports: one sync's changes and the index status."""

from __future__ import annotations

import msgspec


class SyncReport(msgspec.Struct, kw_only=True):
    """What one :meth:`WorkspaceIndex.sync` did."""

    files: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    touched: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    embedded: int = 0
    seconds: float = 0.0
    error: str | None = None


class WorkspaceStatus(msgspec.Struct, kw_only=True):
    """Index status: mode, model, counts, dirty flag and the last sync (epoch seconds)."""

    workspace: str
    index_dir: str
    mode: str
    model: str | None
    files: int
    chunks: int
    dirty: bool
    last_sync: float | None
    chunks_without_vectors: int
    watching: bool
    last_error: str | None
