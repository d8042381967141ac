"""Checks at the API boundary: every bad input raises ValidationError before anything changes.

Text must be storable as it is: a lone surrogate (``"\\ud800"``, or a byte that Python decoded
with ``surrogateescape``, e.g. a non-UTF-8 command-line argument) cannot be encoded as UTF-8, so
it would enter memory and then fail every journal append and snapshot. ``str`` subclasses
(``numpy.str_``) are copied to plain ``str``: the encoders refuse them.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from maclaw_fast.config import CATEGORIES, CATEGORY_ALIASES
from maclaw_fast.errors import ValidationError

STATUSES = ("active", "superseded", "dormant")
# times are unix seconds; beyond year 9999 datetime (export, RFC 3339) cannot represent them
MAX_TIMESTAMP = 253_402_300_799.0


def text(value, name: str, *, allow_nul: bool = True) -> str:
    """``value`` as a plain ``str`` that UTF-8 can encode (no lone surrogates).

    Examples
    --------
    >>> text("ok", "content")
    'ok'
    >>> text("bad \\udcff", "content")
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: content contains text that cannot be stored (a lone surrogate at index 4)
    """
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type(value).__name__}")
    if type(value) is not str:
        value = str.__str__(value)  # a plain copy of a subclass (numpy.str_, enum members)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(f"{name} contains text that cannot be stored (a lone "
                                  f"surrogate at index {exc.start})") from None
    if not allow_nul and "\x00" in value:
        raise ValidationError(f"{name} must not contain NUL characters")
    return value


def category(value) -> str:
    """Canonical category name; aliases map to their category (design §1)."""
    if not isinstance(value, str):
        raise ValidationError(f"category must be a string, got {type(value).__name__}")
    name = str.__str__(value).strip().lower()
    name = CATEGORY_ALIASES.get(name, name)
    if name not in CATEGORIES:
        raise ValidationError(f"unknown category {value!r}; expected one of {', '.join(CATEGORIES)}"
                              f" (aliases: {', '.join(CATEGORY_ALIASES)})")
    return name


def content(value) -> str:
    value = text(value, "content")
    if not value.strip():
        raise ValidationError("content must not be empty")
    return value


def tags(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)):
        raise ValidationError("tags must be a sequence of strings, not one string")
    try:
        items = list(value)
    except TypeError:
        raise ValidationError("tags must be a sequence of strings") from None
    stripped = (text(tag, "tag").strip() for tag in items)
    return tuple(dict.fromkeys(tag for tag in stripped if tag))  # first-seen order, no repeats


def entry_id(value) -> str:
    """An entry id: non-empty text without NUL."""
    value = text(value, "id", allow_nul=False)
    if not value:
        raise ValidationError("id must not be empty")
    return value


def ids(value) -> list[str]:
    """One id or a sequence of ids."""
    if isinstance(value, str):
        return [entry_id(value)]
    if value is None or isinstance(value, (bytes, dict)):
        raise ValidationError("ids must be an id or a sequence of ids")
    try:
        items = list(value)
    except TypeError:
        raise ValidationError("ids must be an id or a sequence of ids") from None
    return [entry_id(v) for v in items]


def flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be True or False, got {value!r}")
    return value


def query(value) -> str:
    return text(value, "query")


def project(value) -> str | None:
    return None if value is None else text(value, "project")


def projects(value, n: int) -> list[str | None]:
    """One project (or None) for all ``n`` queries, or a sequence of ``n`` of them."""
    if value is None or isinstance(value, str):
        return [project(value)] * n
    if isinstance(value, (bytes, dict)) or not hasattr(value, "__iter__"):
        raise ValidationError("projects must be a string, None or a list of them")
    out = [project(p) for p in value]
    if len(out) != n:
        raise ValidationError(f"{len(out)} projects for {n} queries")
    return out


def limit(value) -> int | None:
    return None if value is None else count(value, "limit")


def count(value, name: str, low: int = 0) -> int:
    """An integer ``>= low`` (``bool`` is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def number(value, name: str, low: float | None = None) -> float:
    """A finite float (``bool`` refused), optionally ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be a number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:
        raise ValidationError(f"{name} is too large") from None
    if not math.isfinite(value) or (low is not None and value < low):
        raise ValidationError(f"{name} must be a finite number"
                              + (f" >= {low}" if low is not None else "") + f", got {value!r}")
    return value


def timestamp(value, name: str) -> float:
    value = number(value, name)
    if abs(value) > MAX_TIMESTAMP:
        raise ValidationError(f"{name} must be unix seconds before year 10000, got {value!r}")
    return value


def status(value) -> str:
    if not isinstance(value, str) or value not in STATUSES:
        raise ValidationError(f"unknown status {value!r}; expected one of {', '.join(STATUSES)}")
    return str.__str__(value)


# set_fields: field -> checker (content/tags/category go through update)
FIELD_CHECKS = {
    "status": status,
    "strength": lambda v: number(v, "strength"),
    "compact_form": lambda v: text(v, "compact_form"),
    "access_count": lambda v: count(v, "access_count"),
    "updated_at": lambda v: timestamp(v, "updated_at"),
    "pinned": lambda v: flag(v, "pinned"),
}


def fields(values: dict) -> dict:
    """Checked copies of ``set_fields`` arguments."""
    bad = set(values) - set(FIELD_CHECKS)
    if bad:
        raise ValidationError(f"set_fields cannot change {sorted(bad)}; it changes "
                              f"{', '.join(FIELD_CHECKS)}")
    return {k: FIELD_CHECKS[k](v) for k, v in values.items()}


def store_dir(path) -> Path:
    """``path`` as a store directory, or a clear error (a file, NUL, not a path)."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ValidationError(f"path must be a directory path, got {type(path).__name__}")
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw:
        raise ValidationError("path must be a non-empty directory path")
    text(raw, "path", allow_nul=False)
    p = Path(raw)
    if p.exists() and not p.is_dir():
        raise ValidationError(f"{raw} exists and is not a directory (a store is a directory)")
    return p


def thread(value) -> str | None:
    """A conversation name for ``save(thread=...)``: a string that can be stored, or None."""
    return None if value is None else text(value, "thread")


MAX_NAME_BYTES = 200


def check_store_name(name) -> str:
    """``name`` if it is a safe store name, else a :class:`ValidationError`.

    A name becomes one directory under the pool's root, so it may not contain ``/``, ``\\``,
    ``..`` or NUL (or other control characters), start with ``.``, be empty, or exceed 200
    UTF-8 bytes.

    Examples
    --------
    >>> check_store_name("user-42")
    'user-42'
    >>> check_store_name("../etc")
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: store name '../etc' may not contain '/', '\\\\' or '..'
    """
    name = text(name, "store name")  # a string UTF-8 can encode
    if not name:
        raise ValidationError("store name must not be empty")
    if "/" in name or "\\" in name or ".." in name:
        raise ValidationError(f"store name {name!r} may not contain '/', '\\\\' or '..'")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValidationError(f"store name {name!r} may not contain NUL or control characters")
    if name.startswith("."):
        raise ValidationError(f"store name {name!r} may not start with '.'")
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise ValidationError(f"store name is {size} bytes long; at most {MAX_NAME_BYTES}")
    return name
