"""A LangChain retriever over the store's hybrid recall (BM25 + vectors + recency + importance +
project affinity + graph), each hit a ``Document`` carrying its score breakdown."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from maclaw_fast.errors import ValidationError
from maclaw_fast.integrations.args import count, reject_unknown
from maclaw_fast.memory.store import MemoryStore


class MaclawRetriever(BaseRetriever):
    """``store.recall(query)`` as LangChain ``Document``s, best first, at most ``k``.

    ``store`` is a :class:`MemoryStore` or a ``MaclawVectorStore`` (then documents keep their
    LangChain ids and metadata). Each document's ``metadata["maclaw"]`` holds the entry id,
    category, tags, total ``score``, ``reason`` (self_identity | user_fact | scored | graph) and
    the ``breakdown`` (recency, importance, bm25, cos, affinity, graph). ``k``, ``project`` and
    ``reinforce`` may also be given per call (``retriever.invoke(q, k=3)``). ``dynamic=True`` uses
    the agent tool's recall (no user facts first; ``category`` narrows it).

    Examples
    --------
    >>> from maclaw_fast import MemoryStore
    >>> store = MemoryStore.in_memory(embedder="hash")
    >>> _ = store.save("deploy.sh fails without AWS_REGION", category="project")
    >>> doc = MaclawRetriever(store=store, k=1).invoke("deploy.sh")[0]
    >>> doc.metadata["maclaw"]["reason"], doc.metadata["maclaw"]["breakdown"]["bm25"] > 0
    ('scored', True)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    k: int = Field(default=4, ge=0)
    project: str | None = None
    reinforce: bool = False
    dynamic: bool = False
    category: str | None = None

    @field_validator("store")
    @classmethod
    def _check_store(cls, value):
        from maclaw_fast.integrations.langchain.vectorstore import MaclawVectorStore

        if not isinstance(value, (MemoryStore, MaclawVectorStore)):
            raise ValidationError("store must be a MemoryStore or a MaclawVectorStore")
        return value

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        k = count(kwargs.pop("k", self.k), "k")
        project = kwargs.pop("project", self.project)
        reinforce = kwargs.pop("reinforce", self.reinforce)
        reject_unknown("MaclawRetriever", kwargs)
        if not isinstance(query, str):
            raise ValidationError(f"query must be a string, got {type(query).__name__}")
        vs = None if isinstance(self.store, MemoryStore) else self.store
        memory = self.store if vs is None else vs.store
        if self.dynamic:
            hits = memory.recall_dynamic(query, category=self.category, project=project,
                                         reinforce=reinforce)
        else:
            if self.category is not None:
                raise ValidationError("category narrows only the dynamic recall (dynamic=True)")
            hits = memory.recall(query, project=project, reinforce=reinforce)
        out: list[Document] = []
        for hit in hits:
            e, b = hit.entry, hit.breakdown
            info = {"entry_id": e.id, "category": e.category, "tags": list(e.tags),
                    "score": hit.score, "reason": hit.reason,
                    "breakdown": {"recency": b.recency, "importance": b.importance,
                                  "bm25": b.bm25, "cos": b.cos, "affinity": b.affinity,
                                  "graph": b.graph}}
            docs = (vs.documents_of(e) if vs is not None
                    else [Document(id=e.id, page_content=e.content, metadata={})])
            for doc in docs:
                if len(out) == k:
                    return out
                out.append(Document(id=doc.id, page_content=doc.page_content,
                                    metadata={**doc.metadata, "maclaw": info}))
        return out
