"""A mem0-compatible ``Memory``: code written for ``mem0.Memory`` runs by changing its import.

Memories of a ``user_id`` (else ``agent_id``, else ``run_id``: the primary id) live in one store
named after it; the other ids, the metadata, the role and the history of each memory are kept in
the store's journaled ``meta``; ids are UUIDs, as mem0's (``mem0_ids`` finds their store).
``search`` ranks by cosine like mem0 (threshold 0.1 by default).
``add(infer=True)`` extracts facts with the project's KnowledgeExtractor through the configured
LLM; differences from mem0 are listed in the README.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import uuid
from datetime import datetime, timezone
from urllib.parse import quote, unquote

import msgspec

from maclaw_fast.compat import mem0_filters
from maclaw_fast.compat.mem0_ids import MemoryIds
from maclaw_fast.compat.stores import LocalStores
from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.embedding import embed_checked
from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm import LLMClient, LLMConfig

_KINDS = {"user_id": "user", "agent_id": "agent", "run_id": "run"}
_META = "mem0/"  # + entry id: the memory's record; "mem0h/" + entry id: its history
_MEM0_DEFAULT_MODEL = "gpt-5-mini"


class _Record(msgspec.Struct, omit_defaults=True):
    created_at: str
    updated_at: str
    id: str | None = None  # the memory's UUID (stores written before UUIDs: None)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    role: str | None = None
    actor_id: str | None = None
    metadata: dict = {}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _hash(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # mem0's content hash (not for security)


class Memory:
    """mem0's ``Memory`` API over maclaw_fast stores.

    ``config`` takes mem0's dict keys ``llm`` (providers openai, anthropic), ``vector_store``
    (provider ``maclaw``: ``{"path": DIR}``), ``embedder`` (provider ``maclaw``:
    ``{"model": "default"|"hash"}``, or mem0's ``langchain``: ``{"model": <a LangChain
    Embeddings>}``) and ``version``; any other key is refused. Without an
    ``llm`` the LLM comes from ``MACLAW_LLM_*``, else from ``OPENAI_API_KEY`` (and
    ``OPENAI_BASE_URL``) with mem0's default model, as mem0 does.

    Examples
    --------
    >>> m = Memory({"embedder": {"provider": "maclaw", "config": {"model": "hash"}}})
    >>> r = m.add("I like green tea", user_id="lin", infer=False)
    >>> r["results"][0]["event"]
    'ADD'
    >>> m.search("tea", filters={"user_id": "lin"})["results"][0]["memory"]
    'I like green tea'
    """

    def __init__(self, config: dict | None = None) -> None:
        cfg = dict(config or {})
        unknown = set(cfg) - {"llm", "vector_store", "embedder", "version"}
        if unknown:
            raise ValidationError(f"unsupported mem0 config key(s) {sorted(unknown)}: the "
                                  "stores, embedder and history are maclaw_fast's own")
        if cfg.get("version", "v1.1") != "v1.1":
            raise ValidationError("only mem0's v1.1 API (results under 'results') is provided")
        path = _provider(cfg.get("vector_store"), "vector_store", {"path"}).get("path")
        self._stores = LocalStores(path, embedder=_embedder(cfg.get("embedder")))
        self._ids = MemoryIds(self._stores.path)
        llm = _llm_config(cfg.get("llm"))
        self.llm = None if llm is None else LLMClient(llm)
        self._lock = threading.RLock()

    @classmethod
    def from_config(cls, config_dict: dict) -> Memory:
        """As mem0: a ``Memory`` from a config dict."""
        return cls(config_dict)

    def close(self) -> None:
        self._stores.close()
        self._ids.close()
        if self.llm is not None:
            self.llm.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def add(self, messages, *, user_id=None, agent_id=None, run_id=None, metadata=None,
            timestamp=None, expiration_date=None, infer: bool = True, memory_type=None,
            prompt=None) -> dict:
        """Remember ``messages`` (a string, a message dict or a list of them) for the given
        ids; ``infer=True`` extracts facts with the LLM, ``infer=False`` stores each non-system
        message as it is. Returns ``{"results": [{"id", "memory", "event": "ADD"}, ...]}``."""
        for name, value in (("timestamp", timestamp), ("expiration_date", expiration_date),
                            ("memory_type", memory_type), ("prompt", prompt)):
            if value is not None:
                raise ValidationError(f"add() does not support {name}")
        ids = _entity_ids(user_id=user_id, agent_id=agent_id, run_id=run_id)
        metadata = _metadata(metadata)
        msgs = _messages(messages)
        if not isinstance(infer, bool):
            raise ValidationError("infer must be True or False")
        if infer and self.llm is None:
            raise ValidationError("infer=True needs an LLM: configure 'llm' (or MACLAW_LLM_*, "
                                  "OPENAI_API_KEY), or pass infer=False")
        name = _store_name(ids)
        results = []
        with self._lock, self._stores.store(name) as store:
            if infer:
                from maclaw_fast.maintenance.extractor import KnowledgeExtractor

                report = KnowledgeExtractor(store, self.llm, MaintenanceConfig(
                    extract_cooldown_s=0.0)).extract(msgs)
                if report.error:
                    raise LLMError(f"fact extraction failed: {report.error}")
                saved = [(store.get(i), None) for i in report.saved_ids]
            else:
                saved = []
                for m in msgs:
                    if m["role"] == "system" or not m["content"].strip():
                        continue
                    known = len(store)
                    entry = store.save(m["content"], category="user_fact")
                    if len(store) > known:  # identical content refreshes the stored memory
                        saved.append((entry, m))
            for entry, msg in saved:
                now = _now()
                rec = _Record(created_at=now, updated_at=now, metadata=metadata,
                              role=None if msg is None else msg["role"],
                              actor_id=None if msg is None else msg.get("name"),
                              id=str(uuid.uuid4()), **ids)
                store.set_meta(_META + entry.id, msgspec.json.encode(rec).decode())
                self._ids.add(rec.id, name, entry.id)
                self._log(store, entry.id, None, entry.content, "ADD", rec)
                results.append({"id": rec.id, "memory": entry.content,
                                "event": "ADD", "actor_id": rec.actor_id, "role": rec.role})
        return {"results": results}

    def update(self, memory_id, text=None, metadata=None, expiration_date=None,
               data=None) -> dict:
        """Change a memory's text (``data`` is mem0's older name for it) and/or metadata."""
        if expiration_date is not None:
            raise ValidationError("update() does not support expiration_date")
        if text is not None and data is not None:
            raise ValidationError("give text or data, not both")
        text = text if text is not None else data
        if text is None and metadata is None:
            raise ValidationError("update() needs text and/or metadata")
        metadata = None if metadata is None else _metadata(metadata)
        name, entry_id = self._locate(memory_id)
        with self._lock, self._stores.store(name) as store:
            rec, old = self._record(store, entry_id, memory_id)
            entry = store.update(entry_id, content=text) if text is not None else old
            rec.updated_at = _now()
            if metadata is not None:  # mem0 merges new keys into the stored metadata
                rec.metadata = {**rec.metadata, **metadata}
            store.set_meta(_META + entry_id, msgspec.json.encode(rec).decode())
            self._log(store, entry_id, old.content, entry.content, "UPDATE", rec)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id) -> dict:
        """Forget one memory (its history stays)."""
        name, entry_id = self._locate(memory_id)
        with self._lock, self._stores.store(name) as store:
            self._delete(store, entry_id, memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id=None, agent_id=None, run_id=None) -> dict:
        """Forget every memory of these ids."""
        ids = _entity_ids(user_id=user_id, agent_id=agent_id, run_id=run_id,
                          hint=" (reset() deletes everything)")
        with self._lock:
            for name in self._scope_stores(ids):
                with self._stores.store(name) as store:
                    for entry_id, _ in list(self._matching(store, ids)):
                        self._delete(store, entry_id, f"{name}/{entry_id}")
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Forget every memory and every history of every store."""
        with self._lock:
            for name in self._stores.names():
                with self._stores.store(name) as store:
                    for e in store.entries():
                        store.delete(e.id)
                    for key, value in list(store.meta.items()):
                        if key.startswith(("mem0/", "mem0h/")) and value:
                            store.set_meta(key, "")
            self._ids.clear()

    # ------------------------------------------------------------------ reading
    def get(self, memory_id) -> dict | None:
        """One memory as mem0 shapes it, or None (an unknown id, as mem0)."""
        try:
            name, entry_id = self._locate(memory_id)
        except ValidationError:
            return None
        with self._stores.store(name) as store:
            if entry_id not in store or not store.meta.get(_META + entry_id):
                return None
            got = _shape(name, store.get(entry_id), self._record(store, entry_id, memory_id)[0])
            return {**got, "score": None}  # mem0's get carries a score key set to None

    def get_all(self, *, filters=None, top_k: int = 20, show_expired: bool = False,
                **kwargs) -> dict:
        """``{"results": [...]}``: the memories passing ``filters`` (which name an id)."""
        ids, rest = self._scope("get_all", filters, kwargs)
        top_k = _top_k(top_k)
        out = []
        for name in self._scope_stores(ids):
            with self._stores.store(name) as store:
                for entry_id, rec in self._matching(store, ids, rest):
                    if len(out) == top_k:
                        return {"results": out}
                    out.append(_shape(name, store.get(entry_id), rec))
        return {"results": out}

    def search(self, query: str, *, top_k: int = 20, filters=None, threshold: float = 0.1,
               rerank: bool = False, explain: bool = False, reference_date=None,
               show_expired: bool = False, **kwargs) -> dict:
        """``{"results": [...]}``: memories by cosine to ``query`` (≥ ``threshold``), best first,
        each with its ``score``."""
        if rerank or explain or reference_date is not None:
            raise ValidationError("search() does not support rerank, explain or reference_date")
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query must be a non-empty string")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ValidationError("threshold must be a number")
        if not 0.0 <= threshold <= 1.0:
            raise ValidationError(f"threshold must be between 0 and 1, got {threshold}")
        ids, rest = self._scope("search", filters, kwargs)
        top_k = _top_k(top_k)
        out = []
        qvec = None
        for name in self._scope_stores(ids):
            with self._stores.store(name) as store:
                if not len(store) or top_k == 0:
                    continue
                if qvec is None:
                    qvec = embed_checked(store.embedder, [query.strip()])[0]
                out += self._ranked(store, name, qvec, top_k, threshold, ids, rest)
        out.sort(key=lambda x: -x["score"])
        return {"results": out[:top_k]}

    def history(self, memory_id) -> list[dict]:
        """Every ADD / UPDATE / DELETE of a memory, oldest first."""
        name, entry_id = self._locate(memory_id)
        with self._stores.store(name) as store:
            raw = store.meta.get("mem0h/" + entry_id)
            return msgspec.json.decode(raw) if raw else []

    # ------------------------------------------------------------------ helpers
    def _locate(self, memory_id) -> tuple[str, str]:
        """The store and entry id of a memory id: a UUID this facade gave, else the
        ``<store>/<entry id>`` of memories saved before ids were UUIDs."""
        found = self._ids.find(memory_id) if isinstance(memory_id, str) else None
        return found if found is not None else _split_id(memory_id)

    def _scope(self, where: str, filters, kwargs) -> tuple[dict, dict]:
        if kwargs:
            named = sorted(set(kwargs) & set(_KINDS))
            if named:
                raise ValidationError(f"{where}() takes ids in filters, e.g. "
                                      f"filters={{'{named[0]}': ...}}, as mem0 does")
            raise ValidationError(f"{where}() does not support {sorted(kwargs)}")
        if filters is None:
            raise ValidationError("filters must contain at least one of: user_id, agent_id, "
                                  "run_id. Example: filters={'user_id': 'u1'}")
        rest = mem0_filters.check(filters)
        ids = _entity_ids(**{k: rest.pop(k) for k in _KINDS if k in rest})
        return ids, rest

    def _ranked(self, store, name, qvec, top_k, threshold, ids, rest) -> list[dict]:
        """The store's best ``top_k`` passing memories: the engine ranks only as many as needed
        (doubling while filters reject candidates) rather than the whole store."""
        want, total = max(2 * top_k, 32), len(store)
        while True:
            found, ranked = [], store.similar(qvec, k=min(want, total))
            for entry, score in ranked:
                if score < threshold or len(found) == top_k:
                    return found
                rec = self._record_or_none(store, entry.id)
                if rec is not None and _passes(rec, ids, rest):
                    found.append({**_shape(name, entry, rec), "score": score})
            if want >= total:
                return found
            want *= 2

    def _scope_stores(self, ids: dict) -> list[str]:
        """The stores that can hold memories of ``ids``: a memory lives in the store of its
        primary id (user, else agent, else run), so a filter without ``user_id`` also looks in
        the stores of the ids ranked above its own (mem0 finds those memories too)."""
        primary = _store_name(ids)
        kind = primary.partition("-")[0]
        above = {"user": (), "agent": ("user-",), "run": ("user-", "agent-")}[kind]
        others = [n for n in self._stores.names() if n.startswith(above)] if above else []
        return [primary, *sorted(n for n in others if n != primary)]

    def _record_or_none(self, store, entry_id: str) -> _Record | None:
        raw = store.meta.get(_META + entry_id)
        return msgspec.json.decode(raw, type=_Record) if raw else None

    def _record(self, store, entry_id: str, memory_id) -> tuple[_Record, object]:
        rec = self._record_or_none(store, entry_id)
        if rec is None or entry_id not in store:
            raise ValidationError(f"Memory with id {memory_id} not found")
        return rec, store.get(entry_id)

    def _matching(self, store, ids: dict, rest: dict | None = None):
        for e in store.entries():
            rec = self._record_or_none(store, e.id)
            if rec is not None and _passes(rec, ids, rest or {}):
                yield e.id, rec

    def _delete(self, store, entry_id: str, memory_id) -> None:
        rec, entry = self._record(store, entry_id, memory_id)
        store.delete(entry_id)
        store.set_meta(_META + entry_id, "")  # its id stays known: history() answers for it
        self._log(store, entry_id, entry.content, None, "DELETE", rec)

    def _log(self, store, entry_id: str, old, new, event, rec: _Record) -> None:
        memory_id = rec.id or f"{_home(rec)}/{entry_id}"
        raw = store.meta.get("mem0h/" + entry_id)
        events = msgspec.json.decode(raw) if raw else []
        now = _now()
        events.append({"id": str(uuid.uuid4()), "memory_id": memory_id, "old_memory": old,
                       "new_memory": new, "event": event, "created_at": rec.created_at,
                       "updated_at": now, "is_deleted": event == "DELETE",
                       "actor_id": rec.actor_id, "role": rec.role})
        store.set_meta("mem0h/" + entry_id, msgspec.json.encode(events).decode())


def _passes(rec: _Record, ids: dict, rest: dict) -> bool:
    if any(getattr(rec, k) != v for k, v in ids.items()):
        return False
    fields = {**rec.metadata, **{k: getattr(rec, k) for k in (*_KINDS, "role", "actor_id")
                                 if getattr(rec, k) is not None}}
    return mem0_filters.matches(fields, rest)


def _home(rec: _Record) -> str:
    """The store a memory's record lives in (that of its primary id)."""
    return _store_name({k: getattr(rec, k) for k in _KINDS if getattr(rec, k) is not None})


def _shape(name: str, entry, rec: _Record) -> dict:
    # mem0's keys: metadata is None when there is none; ids, actor and role only when set
    out = {"id": rec.id or f"{name}/{entry.id}", "memory": entry.content,
           "hash": _hash(entry.content),
           "metadata": dict(rec.metadata) if rec.metadata else None,
           "created_at": rec.created_at, "updated_at": rec.updated_at}
    for key in ("user_id", "agent_id", "run_id", "actor_id", "role"):
        if getattr(rec, key) is not None:
            out[key] = getattr(rec, key)
    return out


def _entity_ids(hint: str = "", **ids) -> dict:
    out = {}
    for key, value in ids.items():
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"{key} must be a non-empty string")
        out[key] = value.strip()
    if not out:
        raise ValidationError(f"one of user_id, agent_id, run_id is required{hint}")
    return out


def _store_name(ids: dict) -> str:
    """The store of the primary id: ``user-…`` else ``agent-…`` else ``run-…``, the id
    percent-encoded (so no ``/``, ``..`` or control character reaches the file system)."""
    key = next(k for k in _KINDS if k in ids)
    return f"{_KINDS[key]}-{quote(ids[key], safe='').replace('.', '%2E')}"


def _split_id(memory_id) -> tuple[str, str]:
    if not isinstance(memory_id, str) or "/" not in memory_id:
        raise ValidationError(f"Memory with id {memory_id!r} not found (not an id of this "
                              "Memory)")
    name, entry_id = memory_id.rsplit("/", 1)
    kind, _, encoded = name.partition("-")
    if kind not in _KINDS.values() or not encoded or quote(unquote(encoded), safe="").replace(
            ".", "%2E") != encoded:
        raise ValidationError(f"Memory with id {memory_id!r} not found (not an id of this "
                              "Memory)")
    return name, entry_id


def _top_k(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("top_k must be a non-negative integer")
    return value  # 0 gives an empty result, as mem0


def _metadata(metadata) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise ValidationError("metadata must be a dict with string keys")
    try:
        return msgspec.json.decode(msgspec.json.encode(metadata))
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from None


def _messages(messages) -> list[dict]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list) or not messages:
        raise ValidationError("messages must be a string, a message dict or a list of them")
    out = []
    for m in messages:
        if (not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool")
                or not isinstance(m.get("content"), str)):
            raise ValidationError("each message needs a role (system, user, assistant, tool) "
                                  "and a string content")
        out.append(m)
    return out


def _embedder(section):
    """The facade's embedder from mem0's ``embedder`` section: provider ``maclaw`` (a model
    name) or ``langchain`` (a LangChain ``Embeddings`` instance under ``model``)."""
    if isinstance(section, dict) and section.get("provider") == "langchain":
        from langchain_core.embeddings import Embeddings

        from maclaw_fast.integrations.langchain.embeddings import EmbeddingsEmbedder

        conf = dict(section.get("config") or {})
        extra = set(section) - {"provider", "config"} | set(conf) - {"model", "embedding_dims"}
        if extra:
            raise ValidationError(f"embedder does not support {sorted(extra)}")
        if not isinstance(conf.get("model"), Embeddings):
            raise ValidationError("embedder provider 'langchain' needs config {'model': <a "
                                  "langchain_core Embeddings instance>}, as mem0's")
        return EmbeddingsEmbedder(conf["model"], dim=conf.get("embedding_dims"))
    return _provider(section, "embedder", {"model"}).get("model", "default")


def _provider(section, what: str, allowed: set) -> dict:
    if section is None:
        return {}
    if not isinstance(section, dict) or section.get("provider") != "maclaw":
        also = " and 'langchain' (config {'model': <Embeddings>})" if what == "embedder" else ""
        raise ValidationError(f"{what}: provider 'maclaw' (config keys {sorted(allowed)}){also} "
                              "are available")
    conf = dict(section.get("config") or {})
    extra = set(section) - {"provider", "config"} | set(conf) - allowed
    if extra:
        raise ValidationError(f"{what} does not support {sorted(extra)}")
    return conf


def _llm_config(section) -> LLMConfig | None:
    if section is None:
        env = LLMConfig.from_env()
        if env is not None:
            return env
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            return None
        return LLMConfig(base_url=os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
                         model=_MEM0_DEFAULT_MODEL, api_key=key)
    if not isinstance(section, dict) or section.get("provider") not in ("openai", "anthropic"):
        raise ValidationError("llm: providers 'openai' and 'anthropic' are available")
    conf = dict(section.get("config") or {})
    allowed = {"model", "api_key", "openai_base_url", "anthropic_base_url", "temperature",
               "max_tokens"}
    extra = set(section) - {"provider", "config"} | set(conf) - allowed
    if extra:
        raise ValidationError(f"llm does not support {sorted(extra)}")
    protocol = section["provider"]
    env_key = "OPENAI_API_KEY" if protocol == "openai" else "ANTHROPIC_API_KEY"
    default_url = ("https://api.openai.com/v1" if protocol == "openai"
                   else "https://api.anthropic.com")
    base = conf.get(f"{protocol}_base_url") or os.environ.get(
        "OPENAI_BASE_URL" if protocol == "openai" else "ANTHROPIC_BASE_URL") or default_url
    kwargs = {k: conf[k] for k in ("temperature", "max_tokens") if k in conf}
    return LLMConfig(protocol=protocol, base_url=base,
                     model=conf.get("model", _MEM0_DEFAULT_MODEL),
                     api_key=conf.get("api_key") or os.environ.get(env_key, ""), **kwargs)


class AsyncMemory:
    """mem0's ``AsyncMemory``: the same calls as :class:`Memory`, awaited; each runs in a worker
    thread (``asyncio.to_thread``) so the event loop is not blocked by disk or embedding work;
    calls run one at a time (reads and writes of a store never interleave)."""

    def __init__(self, config: dict | None = None) -> None:
        self._memory = Memory(config)
        self._one = threading.Lock()

    def _run(self, fn, *args, **kwargs):
        with self._one:
            return fn(*args, **kwargs)

    @classmethod
    async def from_config(cls, config_dict: dict) -> AsyncMemory:
        return cls(config_dict)

    async def add(self, messages, **kwargs) -> dict:
        return await asyncio.to_thread(self._run, self._memory.add, messages, **kwargs)

    async def search(self, query: str, **kwargs) -> dict:
        return await asyncio.to_thread(self._run, self._memory.search, query, **kwargs)

    async def get(self, memory_id) -> dict | None:
        return await asyncio.to_thread(self._run, self._memory.get, memory_id)

    async def get_all(self, **kwargs) -> dict:
        return await asyncio.to_thread(self._run, self._memory.get_all, **kwargs)

    async def update(self, memory_id, *args, **kwargs) -> dict:
        return await asyncio.to_thread(self._run, self._memory.update, memory_id, *args, **kwargs)

    async def delete(self, memory_id) -> dict:
        return await asyncio.to_thread(self._run, self._memory.delete, memory_id)

    async def delete_all(self, **kwargs) -> dict:
        return await asyncio.to_thread(self._run, self._memory.delete_all, **kwargs)

    async def history(self, memory_id) -> list[dict]:
        return await asyncio.to_thread(self._run, self._memory.history, memory_id)

    async def reset(self) -> None:
        await asyncio.to_thread(self._run, self._memory.reset)

    def close(self) -> None:
        self._memory.close()
