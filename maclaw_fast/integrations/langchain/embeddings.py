"""Embedders across the boundary both ways: ours as LangChain ``Embeddings``, and any LangChain
``Embeddings`` as our ``Embedder`` (so a store embeds with the model a LangChain app uses)."""

from __future__ import annotations

import numpy as np
from langchain_core.embeddings import Embeddings

from maclaw_fast.embedding import embed_checked, l2_normalise, resolve_embedder
from maclaw_fast.errors import EmbeddingError, ValidationError


def _texts(texts, where: str) -> list[str]:
    if isinstance(texts, str):
        raise ValidationError(f"{where} takes a list of strings, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise ValidationError(f"{where} takes strings, got {type(t).__name__}")
    return out


class MaclawEmbeddings(Embeddings):
    """One of the project's embedders (``"default"`` ONNX MiniLM, ``"onnx"``, ``"hash"`` or an
    ``Embedder`` object) as LangChain ``Embeddings``; vectors are L2-normalised floats.

    Examples
    --------
    >>> emb = MaclawEmbeddings(embedder="hash")
    >>> len(emb.embed_query("green tea")) == emb.embedder.dim
    True
    """

    def __init__(self, embedder="default") -> None:
        resolved = resolve_embedder(embedder)
        if resolved is None:
            raise ValidationError("embedder=None has no vectors; use 'default', 'hash' or a model")
        self.embedder = resolved

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed_checked(self.embedder, _texts(texts, "embed_documents")).tolist()

    def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise ValidationError(f"embed_query takes a string, got {type(text).__name__}")
        return embed_checked(self.embedder, [text])[0].tolist()


class EmbeddingsEmbedder:
    """A LangChain ``Embeddings`` as this project's ``Embedder`` (``dim``, ``fingerprint``,
    ``embed``). ``dim`` is measured once by embedding a probe text unless given.

    ``embed`` calls ``embed_documents``: the ``Embedder`` protocol has no separate query form, so
    models that prefix queries differently embed stored texts and queries alike.

    Examples
    --------
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> EmbeddingsEmbedder(DeterministicFakeEmbedding(size=6)).dim
    6
    """

    def __init__(self, embeddings: Embeddings, *, dim: int | None = None,
                 fingerprint: str | None = None) -> None:
        if not isinstance(embeddings, Embeddings):
            raise ValidationError("embeddings must be a langchain_core Embeddings")
        self.embeddings = embeddings
        if dim is None:
            dim = len(embeddings.embed_query("dimension probe"))
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValidationError(f"dim must be a positive integer, got {dim!r}")
        self.dim = dim
        self.fingerprint = fingerprint or _fingerprint(embeddings, dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = self.embeddings.embed_documents(list(texts))
        out = np.asarray(rows, dtype=np.float32)
        if out.shape != (len(texts), self.dim):
            raise EmbeddingError(f"{self.fingerprint} returned shape {out.shape}, "
                                 f"expected ({len(texts)}, {self.dim})")
        return l2_normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        """One query through the model's query form (``embed_query``), normalised."""
        out = np.asarray([self.embeddings.embed_query(text)], dtype=np.float32)
        if out.shape != (1, self.dim) or not np.isfinite(out).all():
            raise EmbeddingError(f"{self.fingerprint} returned a query vector of shape {out.shape}")
        return l2_normalise(out)[0]


def _fingerprint(embeddings: Embeddings, dim: int) -> str:
    """Model identity: the class and its model-naming field when it has one."""
    name = type(embeddings).__qualname__
    for attr in ("model", "model_name", "model_id", "size"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"langchain:{name}:{value}:{dim}"
    return f"langchain:{name}:{dim}"
