"""Shared pieces of the LangGraph tests: a character-trigram embedding (similar texts get
similar vectors, unlike a hash-seeded random one) and a scripted tool-calling chat model."""

from __future__ import annotations

import zlib

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class TrigramEmbeddings(Embeddings):
    """Counts of lower-cased character trigrams hashed (CRC32) into ``dims`` buckets."""

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims

    def _one(self, text: str) -> list[float]:
        v = np.zeros(self.dims)
        t = f"  {text.lower()}  "
        for i in range(len(t) - 2):
            v[zlib.crc32(t[i:i + 3].encode()) % self.dims] += 1.0
        return v.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


class ScriptedChatModel(BaseChatModel):
    """Replies with the next scripted ``AIMessage`` (tool calls included) on every call."""

    script: list
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        reply = self.script[self.calls]
        object.__setattr__(self, "calls", self.calls + 1)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def tool_call(name: str, args: dict, call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id,
                                               "type": "tool_call"}])
