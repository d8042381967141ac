"""A sharded memory service on Ray: actors each own a partition of the stores (one writer per
store, design §8) and a client routes every call by store name.

Stores live under one ``root`` every node sees. A store belongs to shard ``crc32(name) % shards``;
its actor opens it on first use and keeps it open (at most 1,000 per actor: the least recently
used idle one is closed and reopened when asked for). When an actor dies, the client starts a new
one for that shard, which reopens the shard's stores from their snapshots and journals (the
dead process's locks went with it), and retries the call once. A ``save`` returns only after its
journal record is written, so every acknowledged save survives the actor; a save cut off
mid-call is retried, and saving the same content again is harmless (identical content refreshes
the existing entry).

Recalls go many to an actor call: :meth:`ShardedMemory.recall_many` sends each shard its part of
a list in one call (the actor recalls each store's queries as one batch), and
:meth:`ShardedMemory.arecall` gathers the recalls that coroutines start together into such calls.
"""

from __future__ import annotations

import asyncio
import zlib
from collections import defaultdict

import msgspec
import ray

from maclaw_fast import errors
from maclaw_fast.compat.stores import FACADE_CONFIG, LocalStores, check_name
from maclaw_fast.config import MemoryConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.integrations.args import reject_unknown

_SAVE_ARGS = {"category", "tags", "pinned"}
_RECALL_ARGS = {"project", "reinforce"}
MAX_BATCH = 512  # requests per actor call: larger calls delay the first answers for little gain


class _Request(msgspec.Struct, array_like=True):
    """One recall of a batch: store, query, project, reinforce."""

    name: str
    query: str
    project: str | None = None
    reinforce: bool = True


class _Failed(msgspec.Struct, tag="failed"):
    """A request's error: the exception's class name (one of ``maclaw_fast.errors`` or not) and
    message, raised again by the client."""

    kind: str
    message: str


_DECODE_REQUESTS = msgspec.msgpack.Decoder(list[_Request])


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

    def save_many(self, items: list[tuple[str, dict]]) -> list:
        """``(store, item)`` pairs saved as each store's one ``save_many`` (texts embedded in one
        call per store); returns, in order, each saved entry as a dict or a ``_Failed`` (a store
        that fails fails only its own items)."""
        groups: dict[str, list[int]] = defaultdict(list)
        for i, (name, _) in enumerate(items):
            groups[name].append(i)
        out: list = [None] * len(items)
        for name, rows in groups.items():
            try:
                with self._stores.store(name) as store:
                    saved = [msgspec.to_builtins(e)
                             for e in store.save_many([items[i][1] for i in rows])]
            except Exception as exc:
                saved = [_Failed(type(exc).__name__, str(exc))] * len(rows)
            for i, entry in zip(rows, saved):
                out[i] = entry
        return out

    def recall_many(self, payload: bytes) -> bytes:
        """Recalls of a msgpack list of ``_Request``: each store's queries with one reinforce
        setting run as one ``recall_batch``. Returns, in order, each request's hits or a
        ``_Failed``, as msgpack (each hit a dict of builtins, tuples as lists)."""
        requests = _DECODE_REQUESTS.decode(payload)
        groups: dict[tuple[str, bool], list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            groups[(r.name, r.reinforce)].append(i)
        out: list = [None] * len(requests)
        for (name, reinforce), rows in groups.items():
            try:
                with self._stores.store(name) as store:
                    hits = store.recall_batch([requests[i].query for i in rows],
                                              projects=[requests[i].project for i in rows],
                                              reinforce=reinforce)
            except Exception as exc:  # this store's requests fail, the batch's others do not
                hits = [_Failed(type(exc).__name__, str(exc))] * len(rows)
            for i, h in zip(rows, hits):
                out[i] = h
        return msgspec.msgpack.encode(out)

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
        # arecall's requests not yet sent, per event loop (a loop flushes only its own)
        self._pending: dict[asyncio.AbstractEventLoop, list] = {}

    def _spawn(self):
        return self._actor_cls.options(**self._options).remote(self.root, self.embedder,
                                                                self.config)

    def shard_of(self, name: str) -> int:
        """The shard that owns store ``name`` (stable across processes and runs)."""
        return zlib.crc32(check_name(name).encode()) % len(self.actors)

    def _call(self, name: str, method: str, *args):
        return self._on_shard(self.shard_of(name), method, name, *args)

    def _on_shard(self, shard: int, method: str, *args):
        for attempt in (0, 1):
            actor = self.actors[shard]
            try:
                return ray.get(getattr(actor, method).remote(*args))
            except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError):
                if attempt:
                    raise
                self._replace(shard, actor)

    def _replace(self, shard: int, actor) -> None:
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
        [hits] = self.recall_many([(name, query, kwargs.get("project"))],
                                  reinforce=kwargs.get("reinforce", True))
        return hits

    def save_many(self, items) -> list[dict]:
        """Many saves in one actor call per shard: ``items`` are ``(store, content, category)``
        or ``(store, {"content", "category", "tags", "pinned"})``; each store's items are saved
        together (new texts embedded in one call). Returns the saved entries in order; a store
        that fails raises its error after the others are saved. An actor that dies mid-call is
        replaced and the call retried (saving the same content again is harmless)."""
        pairs = [_save_item(it) for it in items]
        by_shard: dict[int, list[int]] = defaultdict(list)
        for i, (name, _) in enumerate(pairs):
            by_shard[self.shard_of(name)].append(i)
        refs = {shard: self.actors[shard].save_many.remote([pairs[i] for i in rows])
                for shard, rows in by_shard.items()}
        out: list = [None] * len(pairs)
        for shard, rows in by_shard.items():
            try:
                saved = ray.get(refs[shard])
            except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError):
                self._replace(shard, self.actors[shard])
                saved = self._on_shard(shard, "save_many", [pairs[i] for i in rows])
            for i, entry in zip(rows, saved):
                out[i] = entry
        return [_raise_failed(e) for e in out]

    def recall_many(self, requests, *, reinforce: bool = True) -> list[list[dict]]:
        """Many recalls in few actor calls: ``requests`` are ``(store, query)`` or ``(store,
        query, project)``; each shard gets its part in calls of at most :data:`MAX_BATCH`, all in
        flight together. Returns each request's hits (as :meth:`recall` gives them), in order;
        a request that fails raises its error after the others have run."""
        reqs = [_request(r, reinforce) for r in requests]
        by_shard: dict[int, list[int]] = defaultdict(list)
        for i, r in enumerate(reqs):
            by_shard[self.shard_of(r.name)].append(i)
        calls = [(shard, rows[j:j + MAX_BATCH]) for shard, rows in by_shard.items()
                 for j in range(0, len(rows), MAX_BATCH)]
        refs = [self.actors[shard].recall_many.remote(
            msgspec.msgpack.encode([reqs[i] for i in rows])) for shard, rows in calls]
        out: list = [None] * len(reqs)
        for (shard, rows), ref in zip(calls, refs):
            try:
                payload = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError):
                self._replace(shard, self.actors[shard])  # retried once, as every call is
                payload = self._on_shard(shard, "recall_many",
                                         msgspec.msgpack.encode([reqs[i] for i in rows]))
            for i, hits in zip(rows, _decode(payload)):
                out[i] = hits
        return [_raise_failed(h) for h in out]

    async def arecall(self, name: str, query: str, *, project: str | None = None,
                      reinforce: bool = True) -> list[dict]:
        """:meth:`recall` for asyncio code: the recalls that coroutines start before the event
        loop next runs go to the actors together, as :meth:`recall_many` sends them."""
        req = _request((name, query, project), reinforce)
        self.shard_of(name)  # a bad name fails here, not in the batch
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        pending = self._pending.setdefault(loop, [])
        pending.append((req, fut))
        if len(pending) == 1:
            loop.call_soon(self._flush, loop)
        return await fut

    def _flush(self, loop) -> None:
        pending = self._pending.pop(loop, [])
        by_shard: dict[int, list[tuple[_Request, asyncio.Future]]] = defaultdict(list)
        for req, fut in pending:
            by_shard[self.shard_of(req.name)].append((req, fut))
        for shard, items in by_shard.items():
            for j in range(0, len(items), MAX_BATCH):
                asyncio.ensure_future(self._send(shard, items[j:j + MAX_BATCH]))

    async def _send(self, shard: int, items) -> None:
        payload = msgspec.msgpack.encode([r for r, _ in items])
        try:
            for attempt in (0, 1):
                actor = self.actors[shard]
                try:
                    answer = await actor.recall_many.remote(payload)
                    break
                except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError):
                    if attempt:
                        raise
                    self._replace(shard, actor)
            results = _decode(answer)
        except Exception as exc:  # every request of the call fails alike
            for _, fut in items:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), hits in zip(items, results):
            if fut.done():  # the caller gave up waiting
                continue
            if isinstance(hits, _Failed):
                fut.set_exception(_error(hits))
            else:
                fut.set_result(hits)

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


def _save_item(item) -> tuple[str, dict]:
    if isinstance(item, (tuple, list)) and len(item) == 3:
        name, content, category = item
        fields = {"content": content, "category": category}
    elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], dict):
        name, fields = item[0], dict(item[1])
        reject_unknown("ShardedMemory.save_many", {k: v for k, v in fields.items()
                                                   if k not in _SAVE_ARGS | {"content"}})
    else:
        raise ValidationError("an item is (store, content, category) or (store, {content, "
                              "category, tags, pinned})")
    return check_name(name), fields


def _request(r, reinforce) -> _Request:
    if isinstance(r, (str, bytes)) or not isinstance(r, (tuple, list)) or len(r) not in (2, 3):
        raise ValidationError("a request is (store, query) or (store, query, project)")
    if not isinstance(reinforce, bool):
        raise ValidationError("reinforce must be True or False")
    name, query, project = (*r, None)[:3]
    check_name(name)
    if not isinstance(query, str) or not (project is None or isinstance(project, str)):
        raise ValidationError("query must be a string and project a string or None")
    return _Request(name, query, project, reinforce)


_DECODE_RESULTS = msgspec.msgpack.Decoder(list[_Failed | list[dict]])


def _decode(payload: bytes) -> list:
    return _DECODE_RESULTS.decode(payload)


def _error(failed: _Failed) -> Exception:
    cls = getattr(errors, failed.kind, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls(failed.message)
    return RuntimeError(f"{failed.kind}: {failed.message}")


def _raise_failed(hits):
    if isinstance(hits, _Failed):
        raise _error(hits)
    return hits
