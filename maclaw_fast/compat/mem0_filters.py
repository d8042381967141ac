"""mem0's search/get_all filter language over a memory's fields: exact values, ``"*"``, the
operators eq/ne/in/nin/gt/gte/lt/lte/contains/icontains and AND/OR/NOT lists."""

from __future__ import annotations

from collections.abc import Mapping

from maclaw_fast.errors import ValidationError

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")


def check(filters) -> dict:
    """A copy of ``filters`` with every operator checked (``ValidationError`` otherwise)."""
    if not isinstance(filters, Mapping):
        raise ValidationError("filters must be a dict")
    for key, want in filters.items():
        if key in ("AND", "OR", "NOT"):
            if not isinstance(want, list) or not want:
                raise ValidationError(f"{key} takes a non-empty list of filters")
            for sub in want:
                check(sub)
        elif isinstance(want, Mapping):
            bad = [op for op in want if op not in OPERATORS]
            if bad:
                raise ValidationError(f"unsupported filter operator(s) {bad}; use {OPERATORS}")
            for op in ("in", "nin"):
                if op in want and not isinstance(want[op], list):
                    raise ValidationError(f"'{op}' takes a list")
    return dict(filters)


def matches(fields: Mapping, filters: Mapping) -> bool:
    """Whether a memory (its ids and metadata merged in ``fields``) passes ``filters``."""
    for key, want in filters.items():
        if key == "AND":
            ok = all(matches(fields, f) for f in want)
        elif key == "OR":
            ok = any(matches(fields, f) for f in want)
        elif key == "NOT":
            ok = not any(matches(fields, f) for f in want)
        elif want == "*":
            ok = key in fields  # the key is there, with any value
        elif isinstance(want, Mapping):
            ok = key in fields and all(_apply(fields[key], op, arg) for op, arg in want.items())
        else:
            ok = key in fields and fields[key] == want
        if not ok:
            return False
    return True


def _apply(have, op: str, arg) -> bool:
    if op == "eq":
        return have == arg
    if op == "ne":
        return have != arg
    if op == "in":
        return have in arg
    if op == "nin":
        return have not in arg
    if op in ("contains", "icontains"):
        if not isinstance(have, str) or not isinstance(arg, str):
            return False
        return arg in have if op == "contains" else arg.lower() in have.lower()
    try:
        a, b = float(have), float(arg)
    except (TypeError, ValueError):
        return False
    return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]
