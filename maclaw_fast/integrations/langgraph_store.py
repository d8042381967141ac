"""A LangGraph ``BaseStore`` over a ``MemoryStore``: what ``create_react_agent(..., store=)``,
``get_store()`` and LangGraph's memory tools read and write.

Items live in the store's journaled ``meta`` (key ``langgraph/[namespace, key]``, the value as
JSON with its times and TTL), so they survive a reopen. Each indexed text of an item is a store
entry with the text's vector; a natural-language ``search`` ranks items by the engine's recall
of their texts (BM25, cosine, recency, importance, graph: ``ranking="hybrid"``, the default) or
by their best cosine exactly as LangGraph's ``InMemoryStore`` does (``ranking="cosine"``). Within
one ``batch`` the reads see the store as it was before the batch and the last write to a key wins
(as in ``InMemoryStore``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import msgspec
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (BaseStore, GetOp, IndexConfig, Item, ListNamespacesOp, Op,
                                  PutOp, Result, SearchItem, SearchOp, TTLConfig,
                                  ensure_embeddings, get_text_at_path, tokenize_path,
                                  validate_op_namespace)

from maclaw_fast.config import CapacityConfig, GraphConfig, MemoryConfig, RecallConfig
from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.integrations.args import count
from maclaw_fast.memory.store import MemoryStore

META_PREFIX = "langgraph/"
HYBRID_CANDIDATES = 1000  # entries a hybrid search ranks by recall; further ones by cosine
# items are not a conversation: no links between consecutive saves; recall ranks as many entries
# as a search may page through, whatever their length
STORE_CONFIG = MemoryConfig(capacity=CapacityConfig(store_capacity=2**31 - 1),
                            recall=RecallConfig(max_entries=HYBRID_CANDIDATES,
                                                token_budget=2**31 - 1),
                            graph=GraphConfig(adjacency=False))
RANKINGS = ("hybrid", "cosine")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_DISTANCES = ("cosine",)


class _Record(msgspec.Struct):
    """One item: value, times (unix seconds), the entry id of each indexed text, TTL."""

    v: dict
    c: float
    u: float
    p: dict[str, str] = {}
    t: float | None = None  # TTL in minutes
    x: float | None = None  # expiry time


class MaclawLangGraphStore(BaseStore):
    """LangGraph ``BaseStore`` (get/put/search/delete/list_namespaces, TTL) on a MemoryStore.

    ``index`` is LangGraph's ``{"dims", "embed", "fields"}`` (with the SQL stores'
    ``text_fields``, ``distance_type="cosine"`` and ``ann_index_config``, which changes nothing:
    search is exact);
    without it a given ``store``'s own embedder indexes whole values (``fields=["$"]``), and a
    store made here has no vectors (``search(query=...)`` then lists in order, as LangGraph's
    stores do without an index). ``ranking`` is ``"hybrid"`` (the engine's recall: an item's
    score is the best recall score of its texts; among the store's first
    :data:`HYBRID_CANDIDATES` recalled entries, the store's own ``max_entries`` for a given
    ``store``, and by cosine after them) or ``"cosine"`` (``InMemoryStore``'s ranking and scores).
    ``ttl`` is LangGraph's ``TTLConfig``; expired items are deleted by :meth:`sweep_ttl` (also run
    by writes every ``sweep_interval_minutes``, default 1) and not returned before that unless
    ``omit_expired`` is ``False``.

    Examples
    --------
    >>> s = MaclawLangGraphStore()
    >>> s.put(("users", "lin"), "tea", {"text": "prefers green tea"})
    >>> s.get(("users", "lin"), "tea").value
    {'text': 'prefers green tea'}
    >>> s.list_namespaces(prefix=("users",))
    [('users', 'lin')]
    """

    supports_ttl = True

    def __init__(self, *, store: MemoryStore | None = None, path=None,
                 index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 ranking: str = "hybrid", clock=time.time) -> None:
        if ranking not in RANKINGS:
            raise ValidationError(f"ranking must be one of {RANKINGS}, got {ranking!r}")
        self.ranking = ranking
        self.embeddings, self.fields, dims = _index(index, store)
        self.index_config = index
        self.ttl_config = _ttl_config(ttl)
        self._clock = clock
        self._owns_store = store is None
        if store is None:
            from maclaw_fast.integrations.langchain.embeddings import EmbeddingsEmbedder

            embedder = None if self.embeddings is None else EmbeddingsEmbedder(self.embeddings,
                                                                                dim=dims)
            store = (MemoryStore.in_memory(embedder=embedder, config=STORE_CONFIG) if path is None
                     else MemoryStore.open(path, embedder=embedder, config=STORE_CONFIG))
        elif not isinstance(store, MemoryStore):
            raise ValidationError("store must be a MemoryStore")
        elif path is not None:
            raise ValidationError("give either store or path, not both")
        elif dims is not None and store.dim != dims:
            raise ValidationError(f"index dims {dims} differ from the store's {store.dim}")
        self.store = store
        self._lock = threading.RLock()
        self._items: dict[tuple[str, ...], dict[str, _Record]] = {}
        self._refs: Counter[str] = Counter()
        self._last_sweep = clock()
        for meta_key, raw in list(store.meta.items()):
            if meta_key.startswith(META_PREFIX) and raw:
                ns, key = msgspec.json.decode(meta_key[len(META_PREFIX):])
                rec = msgspec.json.decode(raw, type=_Record)
                rec.p = {path: e for path, e in rec.p.items() if e in store}
                self._items.setdefault(tuple(ns), {})[key] = rec
                self._refs.update(rec.p.values())

    def close(self) -> None:
        """Close the store when this object made it."""
        if self._owns_store:
            self.store.close()

    # ------------------------------------------------------------------ the batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; reads see the store before the batch's writes."""
        ops = list(ops)
        for op in ops:
            _check_op(op, self.embeddings is not None)
        with self._lock:
            now = float(self._clock())
            results: list[Result] = []
            writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
            refreshed: list[tuple[tuple[str, ...], str]] = []
            queries = {op.query for op in ops if isinstance(op, SearchOp) and op.query}
            qvec = ({q: self.embeddings.embed_query(q) for q in queries}
                    if self.embeddings is not None else {})
            for op in ops:
                if isinstance(op, GetOp):
                    rec = self._live(op.namespace, op.key, now)
                    results.append(None if rec is None
                                   else _item(op.namespace, op.key, rec, search=False))
                    if rec is not None and op.refresh_ttl and rec.t is not None:
                        refreshed.append((op.namespace, op.key))
                elif isinstance(op, SearchOp):
                    found = self._search(op, now, qvec.get(op.query) if op.query else None)
                    results.append(found)
                    if op.refresh_ttl:
                        refreshed += [(i.namespace, i.key) for i in found
                                      if self._items[i.namespace][i.key].t is not None]
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list(op, now))
                else:
                    writes[(tuple(op.namespace), op.key)] = op
                    results.append(None)
            texts = self._texts(writes.values())
            vectors = (self.embeddings.embed_documents([t for _, _, t in texts])
                       if texts else [])
            for ns, key in refreshed:
                if (ns, key) not in writes:
                    rec = self._items[ns][key]
                    rec.x = now + rec.t * 60.0
                    self._persist(ns, key, rec)
            self._apply(writes, texts, vectors, now)
            if writes and now - self._last_sweep >= 60.0 * self._sweep_minutes():
                self.sweep_ttl()
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the embedder and the store are synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete every expired item now; returns how many."""
        with self._lock:
            now = float(self._clock())
            self._last_sweep = now
            dead = [(ns, key) for ns, keys in self._items.items() for key, rec in keys.items()
                    if rec.x is not None and rec.x <= now]
            for ns, key in dead:
                self._remove(ns, key)
            return len(dead)

    def _sweep_minutes(self) -> float:
        minutes = (self.ttl_config or {}).get("sweep_interval_minutes")
        return 1.0 if minutes is None else float(minutes)

    # ------------------------------------------------------------------ reads
    def _expired(self, rec: _Record, now: float) -> bool:
        """Past its TTL and to be left out (``omit_expired=False`` keeps it until the sweep)."""
        return rec.x is not None and rec.x <= now and self._omit_expired

    @property
    def _omit_expired(self) -> bool:
        return (self.ttl_config or {}).get("omit_expired", True) is not False

    def _live(self, ns, key, now) -> _Record | None:
        rec = self._items.get(tuple(ns), {}).get(key)
        if rec is None or self._expired(rec, now):
            return None
        return rec

    def _search(self, op: SearchOp, now: float, query_vector) -> list[SearchItem]:
        n = len(op.namespace_prefix)
        candidates = [(ns, key, rec) for ns, keys in self._items.items()
                      if ns[:n] == tuple(op.namespace_prefix)
                      for key, rec in keys.items()
                      if not self._expired(rec, now)
                      and (not op.filter or _matches(rec.v, op.filter))]
        if query_vector is None:
            return [_item(ns, key, rec, None)
                    for ns, key, rec in candidates[op.offset:op.offset + op.limit]]
        scored, rest = [], candidates
        if self.ranking == "hybrid":
            recalled = {h.entry.id: h.score for h in
                        self.store.recall(op.query, reinforce=False, query_vector=query_vector)}
            scored, rest = _best(candidates, recalled)
        if len(scored) < op.offset + op.limit and rest:  # past the recalled entries: cosine
            cosine = {e.id: s for e, s in self.store.similar(query_vector)}
            more, rest = _best(rest, cosine)
            scored += more
        kept = scored[op.offset:op.offset + op.limit]
        skip = max(op.offset - len(scored), 0)
        kept += [(None, ns, key, rec)
                 for ns, key, rec in rest[skip:skip + max(op.limit - len(kept), 0)]]
        return [_item(ns, key, rec, score) for score, ns, key, rec in kept]

    def _list(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        names = [ns for ns, keys in self._items.items()
                 if any(not self._expired(r, now) for r in keys.values())]
        for cond in op.match_conditions or ():
            names = [ns for ns in names if _namespace_matches(cond.match_type, cond.path, ns)]
        if op.max_depth is not None:
            names = list({ns[:op.max_depth] for ns in names})
        return sorted(names)[op.offset:op.offset + op.limit]

    # ------------------------------------------------------------------ writes
    def _texts(self, writes: Iterable[PutOp]) -> list[tuple[tuple, str, str]]:
        """``(namespace + (key,), path, text)`` of every text to embed, in order."""
        if self.embeddings is None:
            return []
        out = []
        for op in writes:
            if op.value is None or op.index is False:
                continue
            paths = self.fields if op.index is None else list(op.index)
            for path in paths:
                found = get_text_at_path(dict(op.value), path if path == "$"
                                         else tokenize_path(path))
                if len(found) == 1:
                    out.append((tuple(op.namespace) + (op.key,), path, found[0]))
                else:
                    out += [(tuple(op.namespace) + (op.key,), f"{path}.{i}", t)
                            for i, t in enumerate(found)]
        return out

    def _apply(self, writes, texts, vectors, now: float) -> None:
        by_item: dict[tuple, dict[str, str]] = {}
        for (where, path, text), vec in zip(texts, vectors):
            if text.strip():
                entry = self.store.save(text, category="project_knowledge", vector=vec)
                self._refs[entry.id] += 1
                by_item.setdefault(where, {})[path] = entry.id
        for (ns, key), op in writes.items():
            old = self._items.get(ns, {}).get(key)
            if op.value is None:
                if old is not None:
                    self._remove(ns, key)
                continue
            ttl = op.ttl
            rec = _Record(v=_json_copy(op.value), c=old.c if old is not None else now, u=now,
                          p=by_item.get(ns + (key,), {}), t=ttl,
                          x=None if ttl is None else now + ttl * 60.0)
            if old is not None:
                self._release(old)
            self._items.setdefault(ns, {})[key] = rec
            self._persist(ns, key, rec)

    def _remove(self, ns, key) -> None:
        rec = self._items[ns].pop(key)  # an emptied namespace keeps its place in the order
        self._release(rec)
        self.store.set_meta(_meta_key(ns, key), "")  # "" removes the meta key

    def _release(self, rec: _Record) -> None:
        for entry_id in rec.p.values():
            self._refs[entry_id] -= 1
            if self._refs[entry_id] <= 0:
                del self._refs[entry_id]
                try:
                    self.store.delete(entry_id)
                except NotFoundError:  # removed through another API already
                    pass

    def _persist(self, ns, key, rec: _Record) -> None:
        self.store.set_meta(_meta_key(ns, key), msgspec.json.encode(rec).decode())


# ---------------------------------------------------------------------- helpers
def _best(candidates, scores: dict[str, float]) -> tuple[list, list]:
    """Candidates with a score (their texts' best, best first) and those without, in order."""
    scored, rest = [], []
    for ns, key, rec in candidates:
        marks = [scores[e] for e in rec.p.values() if e in scores]
        if marks:
            scored.append((max(marks), ns, key, rec))
        else:
            rest.append((ns, key, rec))
    scored.sort(key=lambda t: -t[0])  # stable: equal scores keep insertion order
    return scored, rest


def _meta_key(ns, key) -> str:
    return META_PREFIX + msgspec.json.encode([list(ns), key]).decode()


def _item(ns, key, rec: _Record, score: float | None = None, *, search: bool = True):
    times = dict(created_at=datetime.fromtimestamp(rec.c, timezone.utc),
                 updated_at=datetime.fromtimestamp(rec.u, timezone.utc))
    value = _json_copy(rec.v)
    if not search:
        return Item(value=value, key=key, namespace=tuple(ns), **times)
    return SearchItem(namespace=tuple(ns), key=key, value=value, score=score, **times)


def _json_copy(value) -> dict:
    return msgspec.json.decode(msgspec.json.encode(value))


def _index(index, store) -> tuple[Embeddings | None, list[str], int | None]:
    if index is None:
        if store is not None and getattr(store, "embedder", None) is not None:
            from maclaw_fast.integrations.langchain.embeddings import MaclawEmbeddings

            return MaclawEmbeddings(store.embedder), ["$"], store.dim
        return None, [], None
    if not isinstance(index, Mapping):
        raise ValidationError("index must be a dict with dims, embed and optional fields")
    unknown = set(index) - {"dims", "embed", "fields", "text_fields", "distance_type",
                            "ann_index_config", "__tokenized_fields", "__estimated_num_vectors"}
    if unknown:
        raise ValidationError(f"index does not support {sorted(unknown)}")
    distance = index.get("distance_type", "cosine")
    if distance not in _DISTANCES:
        raise ValidationError(f"distance_type {distance!r} is not supported: the store compares "
                              f"unit vectors by cosine (distance_type='cosine')")
    ann = index.get("ann_index_config")
    if ann is not None and not isinstance(ann, Mapping):
        raise ValidationError("ann_index_config must be a dict")
    dims = count(index.get("dims"), "index['dims']")
    embeddings = ensure_embeddings(index.get("embed"))
    fields = index.get("fields") or index.get("text_fields") or ["$"]  # SqliteStore's name
    if index.get("fields") and index.get("text_fields") and \
            index["fields"] != index["text_fields"]:
        raise ValidationError("give fields or text_fields (SqliteStore's name), not both")
    fields = [fields] if isinstance(fields, str) else list(fields)
    if not all(isinstance(f, str) and f for f in fields):
        raise ValidationError("index['fields'] must be non-empty strings")
    return embeddings, fields, dims


def _ttl_config(ttl) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise ValidationError("ttl must be a TTLConfig dict")
    unknown = set(ttl) - {"refresh_on_read", "default_ttl", "sweep_interval_minutes",
                          "omit_expired"}
    if unknown:
        raise ValidationError(f"ttl does not support {sorted(unknown)}")
    if not isinstance(ttl.get("omit_expired", True), bool):
        raise ValidationError("ttl['omit_expired'] must be True or False")
    return dict(ttl)


def _check_op(op, indexed: bool) -> None:
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise ValidationError(f"unknown store operation {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        if not op.namespace:
            raise ValidationError("a namespace needs at least one label")
        if not isinstance(op.key, str):
            raise ValidationError("key must be a string")
        if op.value is not None:
            if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
                raise ValidationError("value must be a mapping with string keys")
            try:
                msgspec.json.encode(op.value)
            except (TypeError, msgspec.EncodeError) as exc:
                raise ValidationError(f"value must be JSON-serialisable: {exc}") from None
        if op.index not in (None, False):
            if not indexed:
                raise ValidationError("index=[...] needs a store made with an index config")
            if isinstance(op.index, str) or not all(isinstance(p, str) for p in op.index):
                raise ValidationError("index must be False, None or a list of field paths")
        if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float))
                                   or op.ttl <= 0):
            raise ValidationError("ttl must be a positive number of minutes or None")
    elif isinstance(op, SearchOp):
        count(op.limit, "limit")
        count(op.offset, "offset")
        if op.query is not None and not isinstance(op.query, str):
            raise ValidationError("query must be a string or None")
        if op.filter is not None:
            if not isinstance(op.filter, Mapping):
                raise ValidationError("filter must be a dict")
            _check_filter(op.filter)
    elif isinstance(op, ListNamespacesOp):
        count(op.limit, "limit")
        count(op.offset, "offset")
        if op.max_depth is not None and count(op.max_depth, "max_depth") == 0:
            raise ValidationError("max_depth must be at least 1")
        for cond in op.match_conditions or ():
            if cond.match_type not in ("prefix", "suffix"):
                raise ValidationError(f"unknown match type {cond.match_type!r}")
    elif not isinstance(op.key, str):
        raise ValidationError("key must be a string")


def _check_filter(filter: Mapping) -> None:
    for value in filter.values():
        if isinstance(value, Mapping):
            ops = [k for k in value if isinstance(k, str) and k.startswith("$")]
            bad = [k for k in ops if k not in _OPERATORS]
            if bad:
                raise ValidationError(f"unsupported filter operator(s) {bad}; use {_OPERATORS}")
            if not ops:
                _check_filter(value)


def _matches(value: Mapping, filter: Mapping) -> bool:
    return all(_equal(_field(value, k), want) for k, want in filter.items())


def _field(value: Mapping, key: str) -> Any:
    """``value[key]``, else a dotted path into nested dicts (``"a.b"``), as the SQL stores read
    filter keys."""
    if key in value or "." not in key:
        return value.get(key)
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _equal(have: Any, want: Any) -> bool:
    """JSON-style comparison: operator dicts, nested dicts by key, lists element-wise."""
    if isinstance(want, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            return all(_compare(have, op, arg) for op, arg in want.items())
        return isinstance(have, Mapping) and all(_equal(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (isinstance(have, (list, tuple)) and len(have) == len(want)
                and all(_equal(h, w) for h, w in zip(have, want)))
    return have == want


def _compare(have, op: str, arg) -> bool:
    if op == "$eq":
        return have == arg
    if op == "$ne":
        return have != arg
    try:
        a, b = float(have), float(arg)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not in range
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _namespace_matches(kind: str, path, ns: tuple[str, ...]) -> bool:
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if kind == "prefix" else zip(reversed(ns), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)
