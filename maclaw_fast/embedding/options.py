"""The embedder options every command line entry point shares (CLI, MCP server, chat)."""

from __future__ import annotations

CHOICES = ("auto", "default", "minilm", "onnx", "e5", "multilingual", "bge", "minilm+bge",
           "hash", "none")


def add_embedder_args(parser) -> None:
    """``--embedder`` (default ``auto``), ``--embed-cache DIR`` and ``--no-embed-cache``."""
    parser.add_argument(
        "--embedder", default="auto", choices=CHOICES,
        help="embedding model: auto (MiniLM for English, multilingual-e5-small for Chinese or "
             "mixed text), minilm, e5, bge (bge-small-en-v1.5, English), minilm+bge (both "
             "English models together), hash, none (BM25 only)")
    parser.add_argument(
        "--embed-cache", default=None, metavar="DIR",
        help="folder of the vector cache by content hash and model (default: $MACLAW_CACHE_DIR "
             "or ~/.cache/maclaw_fast)")
    parser.add_argument("--no-embed-cache", action="store_true",
                        help="embed everything anew (no disk cache)")


def embedder_from_args(args):
    """The ``embedder=`` value for the API (a name, or None for BM25 only), with the disk cache
    enabled unless ``--no-embed-cache``."""
    name = getattr(args, "embedder", "auto")
    if not getattr(args, "no_embed_cache", False):
        from maclaw_fast.embedding.cache import enable_disk_cache

        directory = enable_disk_cache(getattr(args, "embed_cache", None)) if name != "none" \
            else _cache_dir(getattr(args, "embed_cache", None))
        if directory is not None:  # jieba's cuts of Han text beside the vectors
            from maclaw_fast.text.segments import enable_cut_cache

            enable_cut_cache(directory)
    return None if name == "none" else name


def _cache_dir(directory):
    """The cache folder :func:`enable_disk_cache` would use (None when caching is off)."""
    import os
    from pathlib import Path

    from maclaw_fast.embedding.cache import default_cache_dir

    if os.environ.get("MACLAW_EMBED_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return Path(directory) if directory is not None else default_cache_dir()
