"""Two embedders as one: each text's two unit vectors side by side, weighted.

With weights ``w`` and ``1 − w`` the pair vector is ``[√w·a, √(1−w)·b]``: it keeps unit length
and the cosine of two pair vectors is ``w·cos_a + (1 − w)·cos_b``, so every index and kernel that
takes unit rows takes it unchanged (only the width is the sum of the two). Two models that err
on different texts average some of their errors away.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from maclaw_fast.embedding.base import embed_checked
from maclaw_fast.embedding.bge import shared_bge
from maclaw_fast.embedding.onnx import shared_minilm
from maclaw_fast.errors import EmbeddingError


class PairEmbedder:
    """The weighted concatenation of two embedders' unit vectors.

    Parameters
    ----------
    first, second : embedders (``dim``, ``fingerprint``, ``embed``; ``embed_queries`` is used
        for queries when one has it).
    weight : the first model's share of the cosine, in (0, 1).
    cosine_floor : the pair's cosine of unrelated texts mapped onto MiniLM's scale
        (``embedding.base.cosine_floor``); fitted per pair, 0 when not given.
    name : the pair's name in the fingerprint.

    Examples
    --------
    >>> from maclaw_fast.embedding.hashing import HashEmbedder
    >>> p = PairEmbedder(HashEmbedder(dim=8), HashEmbedder(dim=4), 0.6)
    >>> v = p.embed(["deploy the service"]); v.shape, round(float((v * v).sum()), 5)
    ((1, 12), 1.0)
    """

    def __init__(self, first, second, weight: float = 0.5, *, cosine_floor: float = 0.0,
                 name: str = "pair") -> None:
        if not 0.0 < float(weight) < 1.0:
            raise EmbeddingError(f"the pair's weight must be in (0, 1), got {weight!r}")
        self.first, self.second, self.weight = first, second, float(weight)
        self.dim = int(first.dim) + int(second.dim)
        self.cosine_floor = float(cosine_floor)
        self.fingerprint = (f"{name}:{self.weight:g}:{first.fingerprint}+{second.fingerprint}"
                            f":{self.dim}")
        # a pair reads what both of its models read
        langs = [getattr(m, "languages", None) for m in (first, second)]
        self.languages = (tuple(x for x in langs[0] if x in langs[1])
                          if all(langs) else None)
        self._scale = (np.float32(math.sqrt(self.weight)),
                       np.float32(math.sqrt(1.0 - self.weight)))

    def _both(self, texts: list[str], query: bool) -> np.ndarray:
        a = embed_checked(self.first, texts, query=query)
        b = embed_checked(self.second, texts, query=query)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        out[:, :a.shape[1]] = a * self._scale[0]
        out[:, a.shape[1]:] = b * self._scale[1]
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        """Texts (stored passages) → unit rows of width ``first.dim + second.dim``."""
        return self._both(list(texts), False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Search queries → unit rows (each model's query embedding when it has one)."""
        return self._both(list(texts), True)


# ---------------------------------------------------------------------- the bundled pair
PAIR_NAME = "minilm+bge"
# MiniLM's share of the pair's cosine: the best on LoCoMo's tuning half (conversations 0-4,
# mean turn R@10 of both clocks, default recall) of 0.2 ... 0.7
# (`benchmarks/quality_embedder_pair.py`, results/quality_embedder_pair.md)
MINILM_SHARE = 0.2
# the pair's cosine of unrelated texts mapped onto MiniLM's scale, fitted as bge's 0.375 was
# (LoCoMo conversations 0-4, 40 questions x 40 turns: different-conversation median 0.382 against
# MiniLM's 0.118; `benchmarks/fit_cosine_floor.py --models minilm+bge`)
PAIR_FLOOR = 0.3

_SHARED: dict[int, PairEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def make_minilm_bge(threads: int = 1) -> PairEmbedder:
    """MiniLM and bge-small-en-v1.5 as one embedder (768-d; the process-wide sessions of both
    models); raises ``EmbeddingError`` naming the missing model package."""
    try:
        first, second = shared_minilm(threads), shared_bge(threads)
    except EmbeddingError as exc:
        raise EmbeddingError(f"embedder {PAIR_NAME!r} needs both models: {exc}") from exc
    return PairEmbedder(first, second, MINILM_SHARE, cosine_floor=PAIR_FLOOR, name=PAIR_NAME)


def shared_minilm_bge(threads: int = 1) -> PairEmbedder:
    """The process-wide MiniLM + bge-small pair (one per process, whoever asks)."""
    with _SHARED_LOCK:
        emb = _SHARED.get(int(threads))
        if emb is None:
            emb = _SHARED[int(threads)] = make_minilm_bge(threads)
        return emb
