"""Shared argument checks for the adapters: an argument an adapter does not support is an error,
never silently dropped."""

from __future__ import annotations

from maclaw_fast.errors import ValidationError


def reject_unknown(where: str, kwargs: dict) -> None:
    """Raise ``ValidationError`` naming every keyword in ``kwargs`` (those ``where`` ignores)."""
    if kwargs:
        raise ValidationError(f"{where} does not support argument(s) {', '.join(sorted(kwargs))}")


def count(value, name: str) -> int:
    """A non-negative ``int`` (not ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{name} must be a non-negative integer, got {value!r}")
    return value
