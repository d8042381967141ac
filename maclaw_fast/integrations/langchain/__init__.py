"""LangChain adapters: a ``VectorStore`` over a ``MemoryStore``, a hybrid retriever over
recall, and the project's embedders as LangChain ``Embeddings``.

Example
-------
>>> from langchain_core.embeddings import DeterministicFakeEmbedding
>>> from maclaw_fast.integrations.langchain import MaclawVectorStore
>>> vs = MaclawVectorStore(DeterministicFakeEmbedding(size=8))
>>> ids = vs.add_texts(["tea in the afternoon", "deploy.sh needs AWS_REGION"], ids=["a", "b"])
>>> vs.similarity_search("deploy.sh needs AWS_REGION", k=1)[0].id
'b'
"""

from maclaw_fast.integrations.langchain.embeddings import EmbeddingsEmbedder, MaclawEmbeddings
from maclaw_fast.integrations.langchain.retriever import MaclawRetriever
from maclaw_fast.integrations.langchain.vectorstore import MaclawVectorStore

__all__ = ["EmbeddingsEmbedder", "MaclawEmbeddings", "MaclawRetriever", "MaclawVectorStore"]
