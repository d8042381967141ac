"""Named stores for the facades: in this process (``path=None``) or one directory per name."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from maclaw_fast.config import CapacityConfig, MemoryConfig
from maclaw_fast.embedding import resolve_embedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory.store import MemoryStore

# a facade's memories are the user's: the design's 500-entry capacity (eviction to the archive)
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
    """Stores by name, opened on first use; one embedder serves all of them. In this process
    they stay open; under a directory they go through a :class:`StorePool`, which keeps at most
    ``max_open`` open (the least recently used idle one is closed, and reopened when asked for).
    """

    def __init__(self, path=None, *, embedder="default",
                 config: MemoryConfig = FACADE_CONFIG, max_open: int = 1000) -> None:
        self.path = None if path is None else Path(path)
        self.embedder = resolve_embedder(embedder)
        self.config = config
        self._open: dict[str, MemoryStore] = {}
        self._lock = threading.Lock()
        self._pool = None
        if self.path is not None:
            from maclaw_fast.memory.pool import StorePool

            self._pool = StorePool(self.path, max_open=max_open, embedder=self.embedder,
                                   config=config)

    @contextlib.contextmanager
    def store(self, name: str):
        """The store ``name`` (opened or created on demand), for the block."""
        check_name(name)
        if self._pool is not None:
            with self._pool.store(name) as s:
                yield s
            return
        with self._lock:
            s = self._open.get(name)
            if s is None:
                s = MemoryStore.in_memory(embedder=self.embedder, config=self.config)
                self._open[name] = s
        yield s

    def names(self) -> list[str]:
        """Every store name, open or on disk."""
        on_disk = ([p.name for p in self.path.iterdir() if p.is_dir()
                    and not p.name.startswith(".")]
                   if self.path is not None and self.path.exists() else [])
        return sorted(set(on_disk) | set(self._open))

    def open_names(self) -> list[str]:
        """The stores open now (under a directory: at most ``max_open``)."""
        if self._pool is not None:
            return self._pool.open_names()
        with self._lock:
            return sorted(self._open)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        with self._lock:
            for s in self._open.values():
                s.close()
            self._open.clear()
