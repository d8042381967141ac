"""Where each mem0 memory id (a UUID, as mem0 gives) lives: its store and entry id.

In this process a dict; under a directory, also the journaled meta of a store of its own at
``<root>/.mem0-ids`` (a leading dot: never listed as a memory store), so ids survive a reopen.
"""

from __future__ import annotations

from pathlib import Path

from maclaw_fast.compat.stores import FACADE_CONFIG
from maclaw_fast.memory.store import MemoryStore

_KEY = "id/"  # + UUID -> "<store name>/<entry id>"
INDEX_DIR = ".mem0-ids"


class MemoryIds:
    """UUID → ``(store name, entry id)`` for a mem0 facade (the facade serialises writes)."""

    def __init__(self, root: Path | None) -> None:
        self._store = (None if root is None else
                       MemoryStore.open(Path(root) / INDEX_DIR, embedder=None,
                                        config=FACADE_CONFIG))
        self._where: dict[str, tuple[str, str]] = {}
        if self._store is not None:
            for key, value in self._store.meta.items():
                if key.startswith(_KEY):
                    name, _, entry_id = value.rpartition("/")
                    self._where[key[len(_KEY):]] = (name, entry_id)

    def find(self, memory_id: str) -> tuple[str, str] | None:
        """The store and entry id of ``memory_id``, or None when no memory has it."""
        return self._where.get(memory_id)

    def add(self, memory_id: str, name: str, entry_id: str) -> None:
        self._where[memory_id] = (name, entry_id)
        if self._store is not None:
            self._store.set_meta(_KEY + memory_id, f"{name}/{entry_id}")

    def drop(self, memory_id: str) -> None:
        if self._where.pop(memory_id, None) is not None and self._store is not None:
            self._store.set_meta(_KEY + memory_id, "")

    def clear(self) -> None:
        for memory_id in list(self._where):
            self.drop(memory_id)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
