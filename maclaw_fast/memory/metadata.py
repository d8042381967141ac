"""Typed access to the small named values a store keeps with its memories (``store.meta``,
written through :meth:`MemoryStore.set_meta`, so they are journaled and survive a restart).

Features that must remember something across runs keep it here: the knowledge extractor's
cooldown, the last maintenance run, the last reflection.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import msgspec

from maclaw_fast.errors import ValidationError

T = TypeVar("T")


def get_text(store, key: str, default: str | None = None) -> str | None:
    """The value stored under ``key``, or ``default``.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> get_text(s, "missing", "none")
    'none'
    """
    meta = getattr(store, "meta", None)
    if not isinstance(meta, dict):
        return default
    value = meta.get(key)
    return value if isinstance(value, str) else default


def get_float(store, key: str, default: float | None = None) -> float | None:
    """The number stored under ``key``; ``default`` when absent or not a finite number.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> set_float(s, "extractor/last_started", 1.5)
    >>> get_float(s, "extractor/last_started")
    1.5
    """
    raw = get_text(store, key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def set_float(store, key: str, value: float) -> None:
    """Persist a number under ``key`` (``repr`` keeps every digit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{key}: expected a finite number, got {value!r}")
    store.set_meta(key, repr(float(value)))


def get_struct(store, key: str, type_: type[T]) -> T | None:
    """The msgspec value stored as JSON under ``key`` decoded as ``type_``; None when absent
    or unreadable (a value written by another version must not break the caller)."""
    raw = get_text(store, key)
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw, type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def set_struct(store, key: str, value: Any) -> None:
    """Persist ``value`` (a msgspec Struct or plain data) as JSON under ``key``."""
    store.set_meta(key, msgspec.json.encode(value).decode())


def can_persist(store) -> bool:
    """True when ``store`` keeps named values (a :class:`MemoryStore`; not a store pool)."""
    return isinstance(getattr(store, "meta", None), dict) and callable(
        getattr(store, "set_meta", None))
