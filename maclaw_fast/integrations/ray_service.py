"""A sharded memory service on Ray: actors each own a partition of the stores (one writer per
store, design §8) and a client routes every call by store name.

Stores live under one ``root`` every node sees. A store belongs to shard ``crc32(name) % shards``;
its actor opens it on first use and keeps it open. When an actor dies, the client starts a new
one for that shard, which reopens the shard's stores from their snapshots and journals (the
dead process's locks went with it), and retries the call once. A ``save`` returns only after its
journal record is written, so every acknowledged save survives the actor; a save cut off
mid-call is retried, and saving the same content again is harmless (identical content refreshes
the existing entry).
"""

from __future__ import annotations

import zlib

import msgspec
import ray

from maclaw_fast.compat.stores import FACADE_CONFIG, LocalStores, check_name
from maclaw_fast.config import MemoryConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.integrations.args import reject_unknown

_SAVE_ARGS = {"category", "tags", "pinned"}
_RECALL_ARGS = {"project", "reinforce"}


class MemoryShard:
    """The Ray actor behind one shard: its stores, opened on demand under ``root``."""

    def __init__(self, root: str, embedder, config: MemoryConfig) -> None:
        self._stores = LocalStores(root, embedder=embedder, config=config)

    def pid(self) -> int:
        import os

        return os.getpid()

    def save(self, name: str, content: str, kwargs: dict) -> dict:
        with self._stores.store(name) as store:
            return msgspec.to_builtins(store.save(content, **kwargs))

    def recall(self, name: str, query: str, kwargs: dict) -> list[dict]:
        with self._stores.store(name) as store:
            return [msgspec.to_builtins(h) for h in store.recall(query, **kwargs)]

    def contents(self, name: str) -> list[str]:
        with self._stores.store(name) as store:
            return [e.content for e in store.entries()]

    def close(self) -> None:
        self._stores.close()


class ShardedMemory:
    """Client of ``shards`` :class:`MemoryShard` actors over the stores under ``root``.

    Examples
    --------
    >>> mem = ShardedMemory("stores/", shards=2, embedder="hash")     # doctest: +SKIP
    >>> mem.save("alice", "Alice prefers green tea", category="preference")  # doctest: +SKIP
    >>> mem.recall("alice", "tea")[0]["entry"]["content"]            # doctest: +SKIP
    'Alice prefers green tea'
    """

    def __init__(self, root, *, shards: int = 2, embedder="default",
                 config: MemoryConfig = FACADE_CONFIG, actor_options: dict | None = None) -> None:
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise ValidationError("shards must be a positive integer")
        if not isinstance(embedder, str) and embedder is not None:
            raise ValidationError("embedder must be a name ('default', 'onnx', 'hash') or None")
        self.root, self.embedder, self.config = str(root), embedder, config
        self._options = {"num_cpus": 0.5, "max_restarts": 0, **(actor_options or {})}
        self._actor_cls = ray.remote(MemoryShard)
        self.actors = [self._spawn() for _ in range(shards)]
        self.restarts = 0

    def _spawn(self):
        return self._actor_cls.options(**self._options).remote(self.root, self.embedder,
                                                                self.config)

    def shard_of(self, name: str) -> int:
        """The shard that owns store ``name`` (stable across processes and runs)."""
        return zlib.crc32(check_name(name).encode()) % len(self.actors)

    def _call(self, name: str, method: str, *args):
        shard = self.shard_of(name)
        for attempt in (0, 1):
            actor = self.actors[shard]
            try:
                return ray.get(getattr(actor, method).remote(name, *args))
            except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError):
                if attempt:
                    raise
                if self.actors[shard] is actor:  # the first caller to notice replaces it
                    self.actors[shard] = self._spawn()
                    self.restarts += 1

    def save(self, name: str, content: str, **kwargs) -> dict:
        """``MemoryStore.save`` on store ``name`` (category, tags, pinned); the entry as a dict."""
        reject_unknown("ShardedMemory.save", {k: v for k, v in kwargs.items()
                                              if k not in _SAVE_ARGS})
        return self._call(name, "save", content, kwargs)

    def recall(self, name: str, query: str, **kwargs) -> list[dict]:
        """``MemoryStore.recall`` on store ``name`` (project, reinforce); hits as dicts."""
        reject_unknown("ShardedMemory.recall", {k: v for k, v in kwargs.items()
                                                if k not in _RECALL_ARGS})
        return self._call(name, "recall", query, kwargs)

    def contents(self, name: str) -> list[str]:
        """Every entry's content in store ``name``."""
        return self._call(name, "contents")

    def close(self) -> None:
        """Close every store (final snapshots) and end the actors."""
        for actor in self.actors:
            try:
                ray.get(actor.close.remote())
            except ray.exceptions.RayActorError:
                pass
            ray.kill(actor)
