"""Indexes shared by memory, tools and workspace search: BM25 (tantivy + mirror), vectors, graph."""

from maclaw_fast.index.bm25 import Bm25Index, encode_length
from maclaw_fast.index.vectors import VectorColumn

__all__ = ["Bm25Index", "VectorColumn", "encode_length"]
