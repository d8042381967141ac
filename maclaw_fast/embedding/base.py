"""The Embedder protocol, the boundary check every embedder output passes, and resolution."""

from __future__ import annotations

import math
import re
from typing import Protocol, runtime_checkable

import numpy as np

from maclaw_fast.errors import EmbeddingError, ValidationError


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows.

    ``fingerprint`` names the model identity: vectors made under another fingerprint are never
    mixed with current ones. ``embed`` embeds stored text (documents, passages); a model that
    embeds search queries differently (e5's ``"query: "`` prefix) also has
    ``embed_queries(texts)``, which :func:`embed_checked` uses with ``query=True``. A model
    whose cosines of unrelated texts run high may say so in ``cosine_floor``
    (:func:`cosine_floor`), and one whose Chinese best matches reach less high above it in
    ``cosine_reach_cjk`` (:func:`cosine_reach`).
    """

    dim: int
    fingerprint: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


# a text is Chinese (or mixed) when Han characters are this share of its non-space characters
# (about a quarter of the words: a Han character stands for a word, an English word ~5 letters)
CJK_SHARE = 0.1
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = re.compile(r"\s")


def cjk_share(texts) -> float:
    """Share of Han characters among the non-space characters of ``texts`` (0 for none).

    Examples
    --------
    >>> round(cjk_share(["部署 deploy", "hello"]), 3)
    0.154
    """
    han = chars = 0
    for text in texts:
        han += len(_HAN.findall(text))
        chars += len(text) - len(_SPACE.findall(text))
    return han / chars if chars else 0.0


def cosine_floor(embedder, text: str | None = None) -> float:
    """The cosine below which ``embedder``'s vectors are no evidence of relatedness in a memory's
    cue strength (:func:`maclaw_kernels.revival.cue_strength` maps ``[floor, 1]`` onto
    ``[0, 1]``): its ``cosine_floor`` attribute, 0 when it has none (or no embedder). For a
    ``text`` that is Chinese or mixed (:data:`CJK_SHARE`), its ``cosine_floor_cjk`` when it has
    one: a model's unrelated texts may sit higher in one language than in another.

    >>> class Model: cosine_floor, cosine_floor_cjk = 0.5, 0.75
    >>> cosine_floor(Model()), cosine_floor(Model(), "用户在哪个时区"), cosine_floor(None)
    (0.5, 0.75, 0.0)
    """
    return _language_value(embedder, text, "cosine_floor", 0.0)


def cosine_reach(embedder, text: str | None = None) -> float:
    """How high a Chinese or mixed ``text``'s best match reaches on ``embedder``'s floor-mapped
    scale (:func:`cosine_floor`), as a share of MiniLM's on English, the scale on which
    ``RecallConfig.cos_spread`` was set: the model's ``cosine_reach_cjk``; 1 for other text or
    a model without one.

    >>> class Model: cosine_reach_cjk = 0.6
    >>> cosine_reach(Model()), cosine_reach(Model(), "用户在哪个时区"), cosine_reach(None, "时区")
    (1.0, 0.6, 1.0)
    """
    if text is None or text.isascii() or not hasattr(embedder, "cosine_reach_cjk"):
        return 1.0
    return _language_value(embedder, text, "cosine_reach", 1.0)


def _language_value(embedder, text: str | None, name: str, default: float) -> float:
    """``embedder``'s attribute ``name`` (``name + "_cjk"`` for a Chinese or mixed ``text`` when
    it has one), ``default`` when it has none; a number in [0, 1]."""
    if text is not None and not text.isascii() and hasattr(embedder, name + "_cjk") \
            and cjk_share((text,)) >= CJK_SHARE:
        name += "_cjk"
    value = getattr(embedder, name, default) if embedder is not None else default
    closed = not name.startswith("cosine_floor")  # a floor of 1 would leave no scale above it
    if not isinstance(value, (int, float)) or not (0.0 <= value < 1.0 or closed and value == 1.0):
        raise EmbeddingError(f"{type(embedder).__name__}.{name} must be a number in "
                             f"[0, 1{']' if closed else ')'}, got {value!r}")
    return float(value)


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Row-normalise in float32; all-zero rows stay zero."""
    m = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return np.ascontiguousarray(m / norms, dtype=np.float32)


_FLOAT32 = np.dtype(np.float32)  # native float32: NumPy keeps one instance, so ``is`` tests it


def plain_vector(vector, dim: int) -> bool:
    """``vector`` is a writeable, C-contiguous float32 NumPy array of shape ``(dim,)``: the form
    the kernels take as it is (a read-only array would make them compile another signature)."""
    return (type(vector) is np.ndarray and vector.dtype is _FLOAT32 and vector.shape == (dim,)
            and (flags := vector.flags).c_contiguous and flags.writeable)


def check_vectors(vectors, dim: int, *, what: str = "vector") -> np.ndarray:
    """Validate user-given vectors: shape ``(n, dim)`` or ``(dim,)``, finite; returns normalised rows.

    Rows already of unit length (within 1e-6) come back as they are: a float32 unit vector of
    shape ``(dim,)`` as a view of itself, a C-contiguous float32 matrix of unit rows as itself
    (read them, do not keep them).
    """
    if plain_vector(vectors, dim):
        sq = float(np.dot(vectors, vectors))
        if abs(sq - 1.0) < 1e-6:  # finite and already unit length: use it as given (read only)
            return vectors[None, :]
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be numeric: {exc}") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ValidationError(f"{what} has shape {tuple(np.shape(vectors))}, expected (…, {dim})")
    if arr.shape[0] == 1:  # the per-query path: NaN/inf propagate into the dot product
        sq = float(np.dot(arr[0], arr[0]))
        if math.isfinite(sq):
            return np.ascontiguousarray(arr / np.float32(max(math.sqrt(sq), 1e-12)))
    sq = np.einsum("ij,ij->i", arr, arr)
    if np.all(np.abs(sq - 1.0) < 1e-6):  # finite and unit length already (NaN fails the test)
        # kept as given, as the one-vector path keeps it (a read-only array is copied: the
        # kernels would compile another signature for it)
        return np.require(arr, requirements=["C", "W"])
    if not np.isfinite(arr).all():
        raise ValidationError(f"{what} contains NaN or infinity")
    return l2_normalise(arr)


def embed_checked(embedder: Embedder, texts: list[str], *, query: bool = False) -> np.ndarray:
    """Run an embedder and check what it returned (float32, (n, dim), finite, normalised).

    ``query``: the texts are search queries (``embed_queries`` when the embedder has one).
    """
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    run = getattr(embedder, "embed_queries", None) if query else None
    try:
        out = (run or embedder.embed)(list(texts))
    except EmbeddingError:
        raise
    except Exception as exc:  # an embedder is user code: wrap whatever it raised
        raise EmbeddingError(f"embedder {embedder.fingerprint!r} failed: {exc}") from exc
    out = np.asarray(out, dtype=np.float32)
    if out.shape != (len(texts), embedder.dim) or not np.isfinite(out).all():
        raise EmbeddingError(
            f"embedder {embedder.fingerprint!r} returned shape {out.shape}, "
            f"expected ({len(texts)}, {embedder.dim}) finite values")
    return l2_normalise(out)


AUTO_NAMES = ("auto", "default")  # "default" is the older name of "auto"
NAMES = AUTO_NAMES + ("minilm", "onnx", "e5", "multilingual", "bge", "minilm+bge", "hash",
                      "none")


def is_auto(embedder) -> bool:
    """``embedder`` asks for the language-based choice (``"auto"`` or ``"default"``)."""
    return isinstance(embedder, str) and embedder in AUTO_NAMES
