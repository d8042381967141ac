"""The langchain-tests standard suites, unmodified, on the LangChain adapters."""

from __future__ import annotations

import pytest
from langchain_tests.integration_tests import (EmbeddingsIntegrationTests,
                                               RetrieversIntegrationTests,
                                               VectorStoreIntegrationTests)

from maclaw_fast import MemoryStore
from maclaw_fast.integrations.langchain import (MaclawEmbeddings, MaclawRetriever,
                                                MaclawVectorStore)


class TestMaclawVectorStoreInMemory(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self):
        vs = MaclawVectorStore(self.get_embeddings())
        yield vs
        vs.close()


class TestMaclawVectorStoreOnDisk(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path):
        vs = MaclawVectorStore(self.get_embeddings(), path=tmp_path / "vs")
        yield vs
        vs.close()


class TestMaclawEmbeddingsHash(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self):
        return MaclawEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {"embedder": "hash"}


class TestMaclawEmbeddingsOnnx(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self):
        return MaclawEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {"embedder": "default"}


def _store() -> MemoryStore:
    store = MemoryStore.in_memory(embedder="hash")
    for text in ["the deploy script deploy.sh fails on staging without AWS_REGION",
                 "deploy.sh was rewritten to read the region from the environment",
                 "the staging deploy needs the VPN up first",
                 "rollback of a failed deploy uses deploy.sh --rollback",
                 "Lin prefers green tea in the afternoon"]:
        store.save(text, category="project_knowledge")
    return store


class TestMaclawRetriever(RetrieversIntegrationTests):
    _shared = _store()

    @property
    def retriever_constructor(self):
        return MaclawRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"store": self._shared, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "how do I deploy to staging?"
