"""Checks at the API boundary: every bad input raises ValidationError before anything changes."""

from __future__ import annotations

import math

from maclaw_fast.config import CATEGORIES, CATEGORY_ALIASES
from maclaw_fast.errors import ValidationError


def category(value) -> str:
    """Canonical category name; aliases map to their category (SPEC §1)."""
    if not isinstance(value, str):
        raise ValidationError(f"category must be a string, got {type(value).__name__}")
    name = value.strip().lower()
    name = CATEGORY_ALIASES.get(name, name)
    if name not in CATEGORIES:
        raise ValidationError(f"unknown category {value!r}; expected one of {', '.join(CATEGORIES)}"
                              f" (aliases: {', '.join(CATEGORY_ALIASES)})")
    return name


def content(value) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"content must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError("content must not be empty")
    return value


def tags(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        raise ValidationError("tags must be a sequence of strings, not one string")
    try:
        items = list(value)
    except TypeError:
        raise ValidationError("tags must be a sequence of strings") from None
    out: list[str] = []
    for tag in items:
        if not isinstance(tag, str):
            raise ValidationError(f"tag {tag!r} is not a string")
        tag = tag.strip()
        if tag and tag not in out:
            out.append(tag)
    return tuple(out)


def flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be True or False")
    return value


def query(value) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"query must be a string, got {type(value).__name__}")
    return value


def project(value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"project must be a string or None, got {type(value).__name__}")
    return value


def limit(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("limit must be a non-negative integer or None")
    return value


def timestamp(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{name} must be a finite number of seconds")
    return float(value)


def thread(value) -> str | None:
    """A conversation name for ``save(thread=...)``: a string that can be stored, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"thread must be a string or None, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("thread must be valid Unicode (no lone surrogates)") from None
    return value
