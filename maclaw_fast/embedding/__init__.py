"""Embedders (ONNX model, hashing fallback), the boundary checks, and caches."""

from maclaw_fast.embedding.auto import resolve_embedder
from maclaw_fast.embedding.base import Embedder, check_vectors, embed_checked, l2_normalise
from maclaw_fast.embedding.cache import DiskEmbeddingCache, QueryCache
from maclaw_fast.embedding.hashing import HashEmbedder

__all__ = ["DiskEmbeddingCache", "Embedder", "HashEmbedder", "QueryCache", "check_vectors",
           "embed_checked", "l2_normalise", "resolve_embedder"]


def __getattr__(name):  # OnnxEmbedder imports onnxruntime: load it only when asked for
    if name == "OnnxEmbedder":
        from maclaw_fast.embedding.onnx import OnnxEmbedder

        return OnnxEmbedder
    raise AttributeError(name)
