"""Metadata filters as LangChain vector-store users write them for Chroma or PGVector, and the
metadata types that survive a store round trip.

A filter is a dict: ``{"field": value}`` means equal; ``{"field": {"$op": value, …}}`` applies
every operator given (``$eq $ne $gt $gte $lt $lte $in $nin``); ``{"$and": [f, …]}`` and
``{"$or": [f, …]}`` combine filters; several keys in one dict must all hold. Anything else is a
:class:`ValueError` (a :class:`~maclaw_fast.errors.ValidationError`). A field a document lacks
fails every test but ``$ne`` and ``$nin``; an ordering between values that cannot be compared
is false, not an error.

Metadata is stored as JSON; ``datetime`` and ``date`` values are tagged on the way in and come
back as themselves (:func:`encode_metadata`, :func:`decode_metadata`).
"""

from __future__ import annotations

import datetime as _dt
import operator
from typing import Any, Callable

import msgspec

from maclaw_fast.errors import ValidationError

_ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
_TAGS = {"$datetime": _dt.datetime.fromisoformat, "$date": _dt.date.fromisoformat}


def _tagged(value):
    if isinstance(value, _dt.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, _dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dict):
        return {k: _tagged(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tagged(v) for v in value]
    return value


def encode_metadata(metadata: dict) -> dict:
    """``metadata`` as plain JSON values (dates tagged), or a ValidationError."""
    try:
        return msgspec.json.decode(msgspec.json.encode(_tagged(metadata)))
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from None


def decode_metadata(value):
    """A fresh copy of stored metadata with tagged dates as ``datetime`` / ``date`` again."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key, raw), = value.items()
            if key in _TAGS and isinstance(raw, str):
                try:
                    return _TAGS[key](raw)
                except ValueError:
                    pass
        return {k: decode_metadata(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_metadata(v) for v in value]
    return value


_MISSING = object()


def _field_test(field: str, condition) -> Callable[[dict], bool]:
    if not isinstance(condition, dict):
        return lambda meta: meta.get(field, _MISSING) == condition
    if not condition:
        raise ValidationError(f"filter {field!r}: an empty condition (give a value or operators)")
    tests = []
    for op, arg in condition.items():
        if op == "$eq":
            tests.append(lambda v, a=arg: v is not _MISSING and v == a)
        elif op == "$ne":
            tests.append(lambda v, a=arg: v is _MISSING or v != a)
        elif op in _ORDER:
            tests.append(lambda v, a=arg, f=_ORDER[op]: v is not _MISSING and _ordered(f, v, a))
        elif op in ("$in", "$nin"):
            if not isinstance(arg, (list, tuple, set)):
                raise ValidationError(f"filter {field!r}: {op} takes a list, got {arg!r}")
            values = list(arg)
            if op == "$in":
                tests.append(lambda v, a=values: v is not _MISSING and v in a)
            else:
                tests.append(lambda v, a=values: v is _MISSING or v not in a)
        else:
            raise ValidationError(f"filter {field!r}: unsupported operator {op!r} (supported: "
                                  "$eq $ne $gt $gte $lt $lte $in $nin, $and $or)")
    return lambda meta: all(t(meta.get(field, _MISSING)) for t in tests)


def _ordered(f, value, arg) -> bool:
    try:
        return bool(f(value, arg))
    except TypeError:  # e.g. a string against a number: no order, no match
        return False


def compile_filter(spec: dict) -> Callable[[dict], bool]:
    """A predicate on a document's metadata for a filter dict (see the module doc)."""
    if not isinstance(spec, dict):
        raise ValidationError(f"filter must be a dict, got {type(spec).__name__}")
    tests = []
    for key, value in spec.items():
        if key in ("$and", "$or"):
            if not isinstance(value, (list, tuple)) or not value:
                raise ValidationError(f"filter {key} takes a non-empty list of filters")
            parts = [compile_filter(v) for v in value]
            tests.append((lambda m, p=parts: all(t(m) for t in p)) if key == "$and"
                         else (lambda m, p=parts: any(t(m) for t in p)))
        elif key.startswith("$"):
            raise ValidationError(f"filter: unsupported operator {key!r} at the top level "
                                  "(supported: $and, $or)")
        else:
            tests.append(_field_test(key, decode_metadata(encode_metadata({"v": value}))["v"]))
    return lambda meta: all(t(meta) for t in tests)


def matches(spec: dict, metadata: dict[str, Any]) -> bool:
    """Whether ``metadata`` passes the filter ``spec`` (compiled on each call)."""
    return compile_filter(spec)(metadata)
