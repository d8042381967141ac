"""The reference system's ``memories.json`` / ``archive.json``: a JSON array of entries
with the field names of design §1 (RFC 3339 times, ``embedding`` as a list), 2-space indent."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import time

from maclaw_fast.config import CATEGORY_TABLE
from maclaw_fast.embedding import embed_checked
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.persist.journal import EdgesOp, PutOp
from maclaw_fast.records import Entry
from maclaw_fast.text.tokenizer import analysed_text

IMPORT_BATCH = 64  # texts per embedder call when an import reports progress


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _ts(value, field: str) -> float:
    if value in (None, ""):
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return validate.timestamp(value, field)
    if not isinstance(value, str):
        raise ValidationError(f"{field}: expected an RFC 3339 time, got {type(value).__name__}")
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"{field}: not an RFC 3339 time: {value!r}") from None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return validate.timestamp(ts.timestamp(), field)


def _optional(item: dict, key: str, check, default):
    value = item.get(key)
    return default if value is None else check(value)


def _strs(value, field: str) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise ValidationError(f"{field} must be a list of strings")
    return [validate.entry_id(v) for v in value]


def _floats(value, field: str) -> list[float]:
    if not isinstance(value, (list, tuple)):
        raise ValidationError(f"{field} must be a list of numbers")
    return [validate.number(v, field) for v in value]


def _record(item, where: str) -> dict:
    if not isinstance(item, dict):
        raise ValidationError(f"{where}: expected an object")
    try:
        rec = {
            "id": _optional(item, "id", validate.entry_id, "") if item.get("id") != "" else "",
            "content": validate.content(item.get("content")),
            "category": validate.category(item.get("category")),
            "tags": validate.tags(item.get("tags") or ()),
            "created_at": _ts(item.get("created_at"), "created_at"),
            "updated_at": _ts(item.get("updated_at"), "updated_at"),
            "access_count": _optional(item, "access_count",
                                      lambda v: validate.count(v, "access_count"), 1),
            "strength": _optional(item, "strength", lambda v: validate.number(v, "strength"),
                                  1.0),
            "status": _optional(item, "status", validate.status, "active"),
            "pinned": _optional(item, "pinned", lambda v: validate.flag(v, "pinned"), False),
            "compact_form": _optional(item, "compact_form",
                                      lambda v: validate.text(v, "compact_form"), ""),
            "related_ids": _optional(item, "related_ids",
                                     lambda v: _strs(v, "related_ids"), []),
            "related_strengths": _optional(item, "related_strengths",
                                           lambda v: _floats(v, "related_strengths"), []),
            "embedding": item.get("embedding"),
            # the sample format's age (hours before the import) stands for absent times
            "age_hours": _optional(item, "age_hours",
                                   lambda v: validate.number(v, "age_hours", low=0.0), None),
        }
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    if rec["related_strengths"] and len(rec["related_strengths"]) != len(rec["related_ids"]):
        raise ValidationError(f"{where}: related_strengths and related_ids differ in length")
    return rec


def file_path(path, what: str) -> str:
    """``path`` as a file path to read or write, or a :class:`ValidationError` that says why
    (not a path, text that cannot name a file, a directory)."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ValidationError(f"{what} must be a file path, got {type(path).__name__}")
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw:
        raise ValidationError(f"{what} must be a non-empty file path")
    validate.text(raw, what, allow_nul=False)
    if os.path.isdir(raw):
        raise ValidationError(f"{what} {raw!r} is a directory; name a file")
    return raw


def export_maclaw(store, path: str | os.PathLike) -> int:
    """Write every entry of ``store`` in the reference format (atomically: a temporary file
    beside it, renamed over it; nothing is left behind when the write fails)."""
    path = file_path(path, "export path")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValidationError(f"export path {path!r}: the folder {parent!r} does not exist")
    rows = []
    for e in store.entries():
        vec = store.vector(e.id)
        rows.append({
            "id": e.id, "content": e.content, "category": e.category, "tags": list(e.tags),
            "created_at": _iso(e.created_at), "updated_at": _iso(e.updated_at),
            "access_count": e.access_count,
            "embedding": None if vec is None else [round(float(x), 7) for x in vec],
            "related_ids": list(e.related_ids), "related_strengths": list(e.related_strengths),
            "strength": e.strength, "status": e.status, "scope": e.scope, "pinned": e.pinned,
            "compact_form": e.compact_form,
        })
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, ensure_ascii=False, indent=2)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ValidationError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    return len(rows)


def parse_maclaw(path: str | os.PathLike) -> list[dict]:
    """Read and check a reference file; returns normalised records (nothing is changed on error).

    Every field is checked (types, finite numbers, storable text); repeated ids are an error,
    not silently collapsed."""
    path = file_path(path, "import path")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise ValidationError(f"cannot read {path!r}: {reason}") from None
    if not isinstance(data, list):
        raise ValidationError(f"{path}: expected a JSON array of entries")
    return check_records(data, str(path))


def check_records(records, where: str = "records") -> list[dict]:
    """Each record checked and normalised (see :func:`parse_maclaw`); repeated ids refused."""
    if isinstance(records, (str, bytes, dict)) or not hasattr(records, "__iter__"):
        raise ValidationError(f"{where}: expected a list of entry objects")
    out = [_record(item, f"{where}[{i}]") for i, item in enumerate(records)]
    seen: dict[str, int] = {}
    for i, rec in enumerate(out):
        if rec["id"]:
            if rec["id"] in seen:
                raise ValidationError(f"{where}[{i}]: id {rec['id']!r} repeats entry "
                                      f"{seen[rec['id']]}")
            seen[rec["id"]] = i
    return out


def import_maclaw(store, path: str | os.PathLike, *, progress=None) -> int:
    """Add the entries of a reference file to ``store``; existing ids/contents are skipped.
    Edges without strengths (the reference kept none) come back at 1.0."""
    records = parse_maclaw(path)
    return store.import_records(records, progress=progress)


def _embed(store, texts: list[str], progress):
    """The vectors of ``texts``, in batches of :data:`IMPORT_BATCH` when ``progress`` (a
    callback ``(stage, done, total)``) follows them."""
    if store.embedder is None or not texts:
        return None
    if progress is None:
        return embed_checked(store.embedder, texts)
    import numpy as np

    parts = []
    progress("embedding", 0, len(texts))
    for start in range(0, len(texts), IMPORT_BATCH):
        parts.append(embed_checked(store.embedder, texts[start:start + IMPORT_BATCH]))
        progress("embedding", min(start + IMPORT_BATCH, len(texts)), len(texts))
    return np.concatenate(parts)


def import_records(store, records: list[dict], *, progress=None) -> int:
    """Insert checked records (see ``persist.compat.parse_maclaw``) keeping their ids and
    times (a record without times but with ``age_hours`` is dated that many hours ago).
    Foreign vectors are never mixed with ours: entries are embedded anew. ``progress``: an
    optional callback ``(stage, done, total)`` called as the texts are embedded."""
    from maclaw_fast.records import new_id, vec_bytes

    records = check_records(records)
    with store.lock:
        store.check_writable()
        fresh = [r for r in records if r["id"] not in store.table.row_of
                 and r["content"] not in store.table.row_of_content]
    texts = [analysed_text(r["content"], r["tags"]) for r in fresh]
    vecs = _embed(store, texts, progress)
    with store.lock:
        store.check_writable()
        ops, added = [], []
        for i, r in enumerate(fresh):
            if r["id"] in store.table.row_of or r["content"] in store.table.row_of_content:
                continue
            now = float(store.clock())
            if r["age_hours"] is not None:
                now -= r["age_hours"] * 3600.0
            entry = Entry(
                id=r["id"] or new_id(time.time_ns()), content=r["content"],
                category=r["category"], tags=r["tags"], created_at=r["created_at"] or now,
                updated_at=r["updated_at"] or now, access_count=max(r["access_count"], 1),
                strength=r["strength"], status=r["status"],
                scope=CATEGORY_TABLE[r["category"]][1], pinned=r["pinned"],
                compact_form=r["compact_form"])
            vec = vecs[i] if vecs is not None else None
            row = store.insert_row(entry, vec)
            added.append((row, r))
            ops.append(PutOp(entry, vec_bytes(vec)))
            # in file order: consecutive records of one conversation are linked (design R5)
            ops += store.link_adjacent(row, None)
            if progress is not None and (i % 50 == 49 or i + 1 == len(fresh)):
                progress("adding", i + 1, len(fresh))
        for row, r in added:
            strengths = r["related_strengths"] or [1.0] * len(r["related_ids"])
            for other, s in zip(r["related_ids"], strengths):
                if other in store.table.row_of:
                    store.graph.link(row, store.table.row_of[other], float(s))
        touched = {row for row, _ in added}
        for row, _ in added:
            touched.update(t for t, _ in store.graph.neighbours(row))
        store.table.touched(touched)
        ops += [EdgesOp(store.table.ids[r], *map(list, store.related_of(r)))
                for r in sorted(touched)]
        if ops:
            store.journal(*ops)
        store.enforce_capacity()
        return len(added)
