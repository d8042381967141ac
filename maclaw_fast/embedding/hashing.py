"""A deterministic feature-hashing embedder: tests, and the fallback when no model is installed."""

from __future__ import annotations

import zlib

import numpy as np

from maclaw_fast.embedding.base import l2_normalise
from maclaw_fast.text.tokenizer import TOKENIZER_VERSION, tokenize


class HashEmbedder:
    """Signed feature hashing of tokens and character trigrams into ``dim`` buckets.

    Same text → same vector in every process (crc32, not Python's salted ``hash``). Texts sharing
    words or spellings get a positive cosine; it carries no meaning beyond that.

    Examples
    --------
    >>> e = HashEmbedder(dim=64)
    >>> v = e.embed(["deploy script failed", "deploy script broke"])
    >>> bool(v[0] @ v[1] > 0.3)
    True
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = int(dim)
        # its features are the tokenizer's terms: another analysis makes other vectors
        self.fingerprint = f"hash-v1:{self.dim}:{TOKENIZER_VERSION}"

    def _features(self, text: str) -> list[str]:
        toks = tokenize(text)
        grams = []
        for tok in toks:
            padded = f"#{tok}#"
            grams.extend(padded[i:i + 3] for i in range(max(1, len(padded) - 2)))
        return toks + toks + grams  # words count double against their trigrams

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = zlib.crc32(feat.encode("utf-8"))
                out[row, h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        return l2_normalise(out)
