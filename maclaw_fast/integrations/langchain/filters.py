"""The metadata filter language Chroma/PGVector users write: plain values (equality) and the
operators $eq $ne $gt $gte $lt $lte $in $nin, combined with $and / $or; anything else is refused."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from maclaw_fast.errors import ValidationError

FIELD_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
LOGIC_OPS = ("$and", "$or")


def compile_filter(spec) -> Callable[[dict], bool]:
    """A predicate over a metadata dict; ``ValidationError`` (a ``ValueError``) for an unknown
    operator or a malformed clause, raised here, before any document is looked at."""
    if not isinstance(spec, Mapping):
        raise ValidationError("a filter clause must be a dict")
    tests = [_clause(key, want) for key, want in spec.items()]
    return lambda meta: all(t(meta) for t in tests)


def _clause(key, want) -> Callable[[dict], bool]:
    if not isinstance(key, str):
        raise ValidationError(f"filter keys must be strings, got {key!r}")
    if key in LOGIC_OPS:
        if not isinstance(want, list) or not want:
            raise ValidationError(f"{key} takes a non-empty list of filters")
        subs = [compile_filter(s) for s in want]
        if key == "$and":
            return lambda meta: all(s(meta) for s in subs)
        return lambda meta: any(s(meta) for s in subs)
    if key.startswith("$"):
        raise ValidationError(f"unsupported filter operator {key!r}; use {LOGIC_OPS} or a "
                              f"field with {FIELD_OPS}")
    if isinstance(want, Mapping):
        ops = [_op(key, op, arg) for op, arg in want.items()]
        if not ops:
            raise ValidationError(f"the filter on {key!r} names no operator")
        return lambda meta: all(o(meta) for o in ops)
    return _op(key, "$eq", want)


def _op(key: str, op, arg) -> Callable[[dict], bool]:
    if op not in FIELD_OPS:
        raise ValidationError(f"unsupported filter operator {op!r} on {key!r}; use {FIELD_OPS}")
    if op in ("$in", "$nin"):
        if not isinstance(arg, (list, tuple, set)):
            raise ValidationError(f"{op} on {key!r} takes a list")
        values = list(arg)
        if op == "$in":
            return lambda meta: key in meta and meta[key] in values
        return lambda meta: key not in meta or meta[key] not in values
    if op == "$eq":
        return lambda meta: key in meta and meta[key] == arg
    if op == "$ne":
        return lambda meta: key not in meta or meta[key] != arg
    compare = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
               "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}[op]

    def ordered(meta: dict) -> bool:
        if key not in meta:
            return False
        try:
            return bool(compare(meta[key], arg))
        except TypeError:  # values of unlike types never match, as in SQL stores
            return False
    return ordered
