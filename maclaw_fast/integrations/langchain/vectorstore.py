"""A LangChain ``VectorStore`` over a ``MemoryStore``.

Each document is a store entry (its ``page_content`` the entry's content, its vector from the
LangChain embedding). The LangChain id and metadata of each document live in the store's
journaled ``meta`` (key ``langchain/doc/<id>``), so they survive a reopen. Identical contents
share one entry (the store keeps content unique); each id still comes back as its own document.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec
import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from maclaw_fast.config import CapacityConfig, MemoryConfig
from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.integrations.args import count, reject_unknown
from maclaw_fast.integrations.langchain.embeddings import EmbeddingsEmbedder
from maclaw_fast.integrations.langchain.filters import compile_filter
from maclaw_fast.memory import validate
from maclaw_fast.memory.store import MemoryStore
from maclaw_fast.records import Entry

META_PREFIX = "langchain/doc/"
# a vector store keeps what it is given: the SPEC's 500-entry capacity is for an agent's memory
VECTORSTORE_CONFIG = MemoryConfig(capacity=CapacityConfig(store_capacity=2**31 - 1))


class MaclawVectorStore(VectorStore):
    """LangChain ``VectorStore`` backed by a :class:`MemoryStore` (exact cosine search).

    ``store`` wraps an existing store (its embedder must have the embedding's dimension);
    otherwise one is made in memory, or on disk at ``path``, embedding with ``embedding``.
    ``category`` is the memory category given to added documents.

    Examples
    --------
    >>> from langchain_core.documents import Document
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> vs = MaclawVectorStore(DeterministicFakeEmbedding(size=8))
    >>> vs.add_documents([Document("green tea", metadata={"who": "Lin"})], ids=["t"])
    ['t']
    >>> vs.get_by_ids(["t"])[0].metadata
    {'who': 'Lin'}
    """

    def __init__(self, embedding: Embeddings, *, store: MemoryStore | None = None,
                 path=None, category: str = "project_knowledge",
                 config: MemoryConfig | None = None) -> None:
        if not isinstance(embedding, Embeddings):
            raise ValidationError("embedding must be a langchain_core Embeddings")
        self.category = validate.category(category)
        self._embedding = embedding
        self._owns_store = store is None
        if store is None:
            embedder = EmbeddingsEmbedder(embedding)
            cfg = VECTORSTORE_CONFIG if config is None else config
            store = (MemoryStore.in_memory(embedder=embedder, config=cfg) if path is None
                     else MemoryStore.open(path, embedder=embedder, config=cfg))
        else:
            if not isinstance(store, MemoryStore):
                raise ValidationError("store must be a MemoryStore")
            if path is not None or config is not None:
                raise ValidationError("give either store or path/config, not both")
            dim = len(embedding.embed_query("dimension probe"))
            if store.dim != dim:
                raise ValidationError(f"the store's vectors have dimension {store.dim}, "
                                      f"the embedding gives {dim}")
        self.store = store
        self._lock = threading.RLock()
        self._docs: dict[str, tuple[str, dict]] = {}  # LangChain id -> (entry id, metadata)
        self._ids_of: dict[str, list[str]] = {}  # entry id -> LangChain ids, in insertion order
        for key, value in list(store.meta.items()):
            if key.startswith(META_PREFIX) and value:
                record = msgspec.json.decode(value)
                if record["e"] in store:
                    self._bind(key[len(META_PREFIX):], record["e"], record["m"])

    @property
    def embeddings(self) -> Embeddings:
        return self._embedding

    def close(self) -> None:
        """Close the store when this object made it."""
        if self._owns_store:
            self.store.close()

    # ------------------------------------------------------------------ id bookkeeping
    def _bind(self, doc_id: str, entry_id: str, metadata: dict) -> None:
        self._docs[doc_id] = (entry_id, metadata)
        self._ids_of.setdefault(entry_id, []).append(doc_id)

    def _unbind(self, doc_id: str) -> None:
        bound = self._docs.pop(doc_id, None)
        if bound is not None:
            others = self._ids_of.get(bound[0], [])
            if doc_id in others:
                others.remove(doc_id)
            if not others:
                self._ids_of.pop(bound[0], None)

    def _entry_of(self, doc_id: str) -> str | None:
        """The entry behind ``doc_id``; an entry saved through other APIs answers to its own id."""
        bound = self._docs.get(doc_id)
        if bound is not None:
            return bound[0] if bound[0] in self.store else None
        return doc_id if doc_id in self.store and doc_id not in self._ids_of else None

    def _release(self, doc_id: str) -> None:
        """Forget ``doc_id``; delete its entry when no other id shares it."""
        entry_id = self._entry_of(doc_id)
        if doc_id in self._docs:
            self._unbind(doc_id)
            self.store.set_meta(META_PREFIX + doc_id, "")  # "" marks a removed id
        if entry_id is not None and not self._ids_of.get(entry_id):
            try:
                self.store.delete(entry_id)
            except NotFoundError:  # already gone through another API
                pass

    def documents_of(self, entry: Entry) -> list[Document]:
        """The documents an entry stands for: one per LangChain id bound to it, or the entry
        under its own id (metadata: category and tags) when it was saved through another API."""
        ids = self._ids_of.get(entry.id)
        if not ids:
            return [Document(id=entry.id, page_content=entry.content,
                             metadata={"category": entry.category, "tags": list(entry.tags)})]
        return [Document(id=i, page_content=entry.content, metadata=_copy(self._docs[i][1]))
                for i in ids]

    # ------------------------------------------------------------------ writing
    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None, *,
                  ids: list[str | None] | None = None, **kwargs: Any) -> list[str]:
        """Add (or replace, by id) texts; returns their ids (new UUIDs where none was given)."""
        # other keyword arguments are ignored, as InMemoryVectorStore does
        if isinstance(texts, str):
            raise ValidationError("texts must be a list of strings, not one string")
        texts = [validate.content(t) for t in texts]
        metadatas = _metadatas(metadatas, len(texts))
        doc_ids = _ids(ids, len(texts))
        encoded = [_encode(m) for m in metadatas]
        if not texts:
            return []
        vectors = np.asarray(self._embedding.embed_documents(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.store.dim) or not np.isfinite(vectors).all():
            raise ValidationError(f"the embedding returned shape {vectors.shape} for "
                                  f"{len(texts)} texts, expected dimension {self.store.dim}")
        with self._lock:
            for text, meta, raw, doc_id, vec in zip(texts, metadatas, encoded, doc_ids, vectors):
                old = self._entry_of(doc_id)
                entry = self.store.save(text, category=self.category, vector=vec)
                if old is not None and old != entry.id:
                    self._release(doc_id)  # deletes the old entry unless another id shares it
                else:
                    self._unbind(doc_id)
                self._bind(doc_id, entry.id, meta)
                self.store.set_meta(META_PREFIX + doc_id,
                                    msgspec.json.encode({"e": entry.id, "m": raw}).decode())
        return doc_ids

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete documents by id; ids that are not there are skipped. ``ids=None`` deletes
        nothing and other keyword arguments are ignored, as InMemoryVectorStore does."""
        if ids is None:
            return True
        doc_ids = _ids(ids, None)
        with self._lock:
            for doc_id in doc_ids:
                self._release(doc_id)
        return True

    # ------------------------------------------------------------------ reading
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids, in the order given; missing ids are skipped."""
        out: list[Document] = []
        with self._lock:
            for doc_id in _ids(ids, None):
                entry_id = self._entry_of(doc_id)
                if entry_id is None:
                    continue
                entry = self.store.get(entry_id)
                if doc_id in self._docs:
                    out.append(Document(id=doc_id, page_content=entry.content,
                                        metadata=_copy(self._docs[doc_id][1])))
                else:
                    out.extend(self.documents_of(entry))
        return out

    def _ranked(self, vector, k: int, filter) -> list[tuple[Document, float, str]]:
        """Up to ``k`` documents by cosine, best first, with their entry ids."""
        test = _filter(filter)
        with self._lock:
            pairs = self.store.similar(vector, k=None if test is not None else k)
            out: list[tuple[Document, float, str]] = []
            for entry, score in pairs:
                for doc in self.documents_of(entry):
                    if test is None or test(doc):
                        out.append((doc, score, entry.id))
                        if len(out) == k:
                            return out
        return out

    def similarity_search_with_score_by_vector(self, embedding: list[float], k: int = 4,
                                               filter=None, **kwargs: Any
                                               ) -> list[tuple[Document, float]]:
        """``(document, cosine)`` best first. ``filter``: a dict of metadata values that must be
        equal, or a callable taking a ``Document``."""
        k = count(k, "k")
        return [(doc, score) for doc, score, _ in self._ranked(embedding, k, filter)]

    def similarity_search_with_score(self, query: str, k: int = 4, filter=None,
                                     **kwargs: Any) -> list[tuple[Document, float]]:
        return self.similarity_search_with_score_by_vector(
            self._query_vector(query), k, filter, **kwargs)

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, filter=None,
                                    **kwargs: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score_by_vector(
            embedding, k, filter, **kwargs)]

    def similarity_search(self, query: str, k: int = 4, filter=None,
                          **kwargs: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def max_marginal_relevance_search_by_vector(self, embedding: list[float], k: int = 4,
                                                fetch_k: int = 20, lambda_mult: float = 0.5,
                                                filter=None, **kwargs: Any) -> list[Document]:
        """Maximal marginal relevance over the ``fetch_k`` nearest documents."""
        k, fetch_k = count(k, "k"), count(fetch_k, "fetch_k")
        if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, (int, float)) \
                or not 0.0 <= lambda_mult <= 1.0:
            raise ValidationError("lambda_mult must be a number in [0, 1]")
        candidates = self._ranked(embedding, max(fetch_k, k), filter)
        if not candidates or k == 0:
            return []
        matrix = np.stack([self.store.vector(entry_id) for _, _, entry_id in candidates])
        query = np.asarray(embedding, dtype=np.float32)
        picked = maximal_marginal_relevance(query, matrix, lambda_mult=lambda_mult, k=k)
        return [candidates[i][0] for i in picked]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20,
                                      lambda_mult: float = 0.5, filter=None,
                                      **kwargs: Any) -> list[Document]:
        return self.max_marginal_relevance_search_by_vector(
            self._query_vector(query), k, fetch_k, lambda_mult, filter, **kwargs)

    def _query_vector(self, query: str) -> list[float]:
        if not isinstance(query, str):
            raise ValidationError(f"query must be a string, got {type(query).__name__}")
        return self._embedding.embed_query(query)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return _cosine_to_unit

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings,
                   metadatas: list[dict] | None = None, *, ids: list[str] | None = None,
                   **kwargs: Any) -> MaclawVectorStore:
        """A new store (keywords ``store``, ``path``, ``category``, ``config`` as for the
        constructor) holding ``texts``."""
        known = {k: kwargs.pop(k) for k in ("store", "path", "category", "config") if k in kwargs}
        reject_unknown("MaclawVectorStore.from_texts", kwargs)
        vs = cls(embedding, **known)
        vs.add_texts(texts, metadatas, ids=ids)
        return vs


def _cosine_to_unit(score: float) -> float:
    """Cosine in [-1, 1] → relevance in [0, 1]."""
    return (score + 1.0) / 2.0


def _copy(metadata: dict) -> dict:
    return msgspec.json.decode(msgspec.json.encode(metadata))  # a deep copy the caller may edit


def _metadatas(metadatas, n: int) -> list[dict]:
    if metadatas is None:
        return [{} for _ in range(n)]
    metadatas = list(metadatas)
    if len(metadatas) != n:
        raise ValidationError(f"{len(metadatas)} metadatas for {n} texts")
    for m in metadatas:
        if not isinstance(m, dict) or not all(isinstance(k, str) for k in m):
            raise ValidationError("each metadata must be a dict with string keys")
    return metadatas


def _encode(metadata: dict):
    try:
        return msgspec.json.decode(msgspec.json.encode(metadata))
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from None


def _ids(ids, n: int | None) -> list[str]:
    """Checked ids; with ``n`` (adding), ``None`` entries get a new UUID."""
    if isinstance(ids, str):
        raise ValidationError("ids must be a list of strings, not one string")
    if ids is None:
        return [str(uuid.uuid4()) for _ in range(n or 0)]
    ids = list(ids)
    if n is not None and len(ids) != n:
        raise ValidationError(f"{len(ids)} ids for {n} texts")
    out = []
    for i in ids:
        if i is None and n is not None:
            i = str(uuid.uuid4())
        if not isinstance(i, str) or not i:
            raise ValidationError(f"ids must be non-empty strings, got {i!r}")
        out.append(i)
    if n is not None and len(set(out)) != len(out):
        raise ValidationError("ids repeat within one call")
    return out


def _filter(filter) -> Callable[[Document], bool] | None:
    if filter is None:
        return None
    if callable(filter):
        return filter
    if isinstance(filter, dict):
        test = compile_filter(filter)
        return lambda doc: test(doc.metadata)
    raise ValidationError("filter must be a dict of metadata values / operators or a "
                          "callable(Document)")
