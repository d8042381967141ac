"""Named stores for the facades: in this process (``path=None``) or one directory per name."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from maclaw_fast.config import CapacityConfig, MemoryConfig
from maclaw_fast.embedding import resolve_embedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory.store import MemoryStore

# a facade's memories are the user's: the SPEC's 500-entry capacity (eviction to the archive)
# is for an agent's own working memory
FACADE_CONFIG = MemoryConfig(capacity=CapacityConfig(store_capacity=2**31 - 1))


def check_name(name) -> str:
    """``name`` if it can be one directory under a root (no ``/``, ``\\``, ``..``, control
    characters or leading ``.``), else ``ValidationError``.

    Examples
    --------
    >>> check_name("user-42")
    'user-42'
    """
    if not isinstance(name, str) or not name:
        raise ValidationError("a store name must be a non-empty string")
    if ("/" in name or "\\" in name or ".." in name or name.startswith(".")
            or any(ord(c) < 32 or ord(c) == 127 for c in name)):
        raise ValidationError(f"store name {name!r} may not contain '/', '\\', '..', control "
                              "characters or start with '.'")
    return name


class LocalStores:
    """Stores by name, opened on first use and kept open; one embedder serves all of them."""

    def __init__(self, path=None, *, embedder="default",
                 config: MemoryConfig = FACADE_CONFIG) -> None:
        self.path = None if path is None else Path(path)
        self.embedder = resolve_embedder(embedder)
        self.config = config
        self._open: dict[str, MemoryStore] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def store(self, name: str):
        """The store ``name`` (opened or created on demand)."""
        check_name(name)
        with self._lock:
            s = self._open.get(name)
            if s is None:
                s = (MemoryStore.in_memory(embedder=self.embedder, config=self.config)
                     if self.path is None else
                     MemoryStore.open(self.path / name, embedder=self.embedder,
                                      config=self.config))
                self._open[name] = s
        yield s

    def names(self) -> list[str]:
        """Every store name, open or on disk."""
        on_disk = ([p.name for p in self.path.iterdir() if p.is_dir()]
                   if self.path is not None and self.path.exists() else [])
        return sorted(set(on_disk) | set(self._open))

    def close(self) -> None:
        with self._lock:
            for s in self._open.values():
                s.close()
            self._open.clear()
