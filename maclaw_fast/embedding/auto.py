"""``embedder="auto"``: the model that reads the content's language, and the fallbacks.

MiniLM (English, 6 ms a query) for English content; multilingual-e5-small for content that is
substantially Chinese or mixed (MiniLM puts every Chinese text in one corner of its space:
HammerBench-zh vector Hit@5 0.073 against 0.860 for e5-small). The share that decides is the
share of Han characters among the non-space characters of all the text, at least
:data:`CJK_SHARE` (0.1: about a quarter of the words, since a Han character stands for a word
and an English word for ~5 letters).

A model package that is missing or broken never raises here: a warning names the package and
the fallback taken (the other model for English, else the hashing embedder).
"""

from __future__ import annotations

import warnings

from maclaw_fast.embedding.bge import shared_bge
from maclaw_fast.embedding.base import (AUTO_NAMES, CJK_SHARE, NAMES, Embedder, cjk_share,
                                        is_auto)
from maclaw_fast.embedding.cache import disk_cached
from maclaw_fast.embedding.e5 import shared_e5
from maclaw_fast.embedding.hashing import HashEmbedder
from maclaw_fast.embedding.onnx import shared_minilm
from maclaw_fast.embedding.pair import PAIR_NAME, shared_minilm_bge
from maclaw_fast.errors import EmbeddingError, ValidationError

MODELS = ("minilm", "e5", "bge", PAIR_NAME)


def choose_model(texts, *, threshold: float = CJK_SHARE) -> str:
    """``"e5"`` when the texts are substantially Chinese (or mixed), else ``"minilm"``.

    Examples
    --------
    >>> choose_model(["deploy the service", "run the tests"])
    'minilm'
    >>> choose_model(["部署服务到生产环境", "run the tests"])
    'e5'
    """
    return "e5" if cjk_share(texts) >= threshold else "minilm"


def model_of(fingerprint: str | None) -> str | None:
    """Which bundled model made vectors with ``fingerprint`` (None: another embedder)."""
    if not fingerprint:
        return None
    if fingerprint.startswith("e5:"):
        return "e5"
    if fingerprint.startswith("onnx:all-MiniLM"):
        return "minilm"
    if fingerprint.startswith("onnx:bge-small"):
        return "bge"
    if fingerprint.startswith(PAIR_NAME + ":"):
        return PAIR_NAME
    return None


def load_model(name: str):
    """The process-wide instance of a bundled model (in the process's disk cache when one is
    enabled); raises ``EmbeddingError`` naming the package when it is missing or broken."""
    if name == "e5":
        return disk_cached(shared_e5())
    if name == "minilm":
        return disk_cached(shared_minilm())
    if name == "bge":
        return disk_cached(shared_bge())
    if name == PAIR_NAME:
        return disk_cached(shared_minilm_bge())
    raise ValidationError(f"unknown model {name!r}: use one of {MODELS}")


_WARNED: set[str] = set()


def load_or_fallback(name: str):
    """:func:`load_model`, or the hashing embedder with a warning (once per process and
    cause) that names the missing or broken package and the fallback."""
    try:
        return load_model(name)
    except EmbeddingError as exc:
        reason = str(exc)
    fallback = HashEmbedder()
    if reason not in _WARNED:  # once per process and cause: a CLI run prints it once
        _WARNED.add(reason)
        warnings.warn(f"{reason}; falling back to the hashing embedder (lexical vectors, "
                      f"{fallback.fingerprint})", RuntimeWarning, stacklevel=3)
    return fallback


def resolve_auto(texts=None, *, recorded: str | None = None):
    """The embedder ``"auto"`` picks: the model named by ``recorded`` (the fingerprint the
    store or cache was built with) when it is a bundled one, else by the language of ``texts``
    (MiniLM when there are none)."""
    name = model_of(recorded) or choose_model(texts or ())
    return load_or_fallback(name)


def resolve_embedder(embedder, *, texts=None, recorded: str | None = None) -> Embedder | None:
    """An embedder from a name or object.

    ``"auto"`` (also ``"default"``) → MiniLM for English, multilingual-e5-small when ``texts``
    are substantially Chinese or mixed, or the bundled model ``recorded`` names (a fingerprint
    the data was embedded with); ``"minilm"``/``"onnx"`` → MiniLM; ``"e5"``/``"multilingual"`` →
    e5-small; ``"bge"`` → bge-small-en-v1.5; ``"minilm+bge"`` → both, their unit vectors
    side by side (:mod:`maclaw_fast.embedding.pair`); ``"hash"`` → :class:`HashEmbedder`;
    ``None``/``"none"`` → BM25 only; an object →
    itself (checked). A missing or broken model package: with ``"auto"`` a warning naming it and
    the hashing embedder; a model asked for by name raises ``EmbeddingError`` naming it. One
    instance of each model per process.

    Examples
    --------
    >>> resolve_embedder("hash").fingerprint
    'hash-v1:384:maclaw-tok-...'
    >>> resolve_embedder("none") is None
    True
    """
    if embedder is None:
        return None
    if isinstance(embedder, str):
        if embedder in AUTO_NAMES:
            return resolve_auto(texts, recorded=recorded)
        if embedder in ("minilm", "onnx"):
            return load_model("minilm")
        if embedder in ("e5", "multilingual"):
            return load_model("e5")
        if embedder in ("bge", PAIR_NAME):
            return load_model(embedder)
        if embedder == "hash":
            return HashEmbedder()
        if embedder == "none":
            return None
        raise ValidationError(f"unknown embedder {embedder!r}: use one of {', '.join(NAMES)}, "
                              "None or an object with dim, fingerprint and embed()")
    # what ``isinstance(embedder, Embedder)`` checks, without the ~40 µs a runtime-checkable
    # Protocol costs (paid by every store a pool opens)
    if not all(hasattr(embedder, name) for name in ("dim", "fingerprint", "embed")):
        raise ValidationError("embedder must have dim, fingerprint and embed(texts)")
    return embedder


def tool_text(tool) -> str:
    """The text a tool is embedded under (name, description, body summary)."""
    return (f"{getattr(tool, 'name', '')} {getattr(tool, 'description', '')}\n"
            f"{getattr(tool, 'body_summary', '') or ''}")


def catalog_embedder(embedder, tools):
    """For ``"auto"``, the embedder that reads the catalog's language; anything else as given.

    Examples
    --------
    >>> catalog_embedder("hash", []).fingerprint
    'hash-v1:384:maclaw-tok-...'
    """
    if is_auto(embedder):
        return resolve_embedder(embedder, texts=[tool_text(t) for t in tools])
    return resolve_embedder(embedder) if isinstance(embedder, str) else embedder


def folder_texts(root, *, pattern: str = "**/*.md", max_bytes: int = 1 << 20) -> list[str]:
    """Up to ``max_bytes`` of the Markdown text under ``root`` (what ``"auto"`` reads to pick a
    workspace's model); hidden folders are skipped."""
    from pathlib import Path

    out, left = [], max_bytes
    for path in sorted(Path(root).glob(pattern)):
        if left <= 0:
            break
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read(min(left, 64 << 10))
        except OSError:
            continue
        left -= len(data)
        out.append(data.decode("utf-8", "ignore"))
    return out
