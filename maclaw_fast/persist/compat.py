"""[compat] The reference system's ``memories.json`` / ``archive.json``: a JSON array of entries
with the field names of SPEC §1 (RFC 3339 times, ``embedding`` as a list), 2-space indent."""

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


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _ts(value, field: str) -> float:
    if value in (None, ""):
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValidationError(f"{field}: not an RFC 3339 time: {value!r}") from None


def export_maclaw(store, path: str | os.PathLike) -> int:
    """Write every entry of ``store`` in the reference format (atomically)."""
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
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(rows, fh, ensure_ascii=False, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return len(rows)


def parse_maclaw(path: str | os.PathLike) -> list[dict]:
    """Read and check a reference file; returns normalised records (nothing is changed on error)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise ValidationError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, list):
        raise ValidationError(f"{path}: expected a JSON array of entries")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValidationError(f"{path}[{i}]: expected an object")
        rec = {
            "id": str(item.get("id") or ""),
            "content": validate.content(item.get("content")),
            "category": validate.category(item.get("category")),
            "tags": validate.tags(item.get("tags") or ()),
            "created_at": _ts(item.get("created_at"), "created_at"),
            "updated_at": _ts(item.get("updated_at"), "updated_at"),
            "access_count": int(item.get("access_count") or 1),
            "strength": float(item.get("strength", 1.0) if item.get("strength") is not None
                              else 1.0),
            "status": item.get("status") or "active",
            "pinned": bool(item.get("pinned", False)),
            "compact_form": item.get("compact_form") or "",
            "related_ids": list(item.get("related_ids") or ()),
            "related_strengths": list(item.get("related_strengths") or ()),
            "embedding": item.get("embedding"),
        }
        if rec["status"] not in ("active", "superseded", "dormant"):
            raise ValidationError(f"{path}[{i}]: unknown status {rec['status']!r}")
        out.append(rec)
    return out


def import_maclaw(store, path: str | os.PathLike) -> int:
    """Add the entries of a reference file to ``store``; existing ids/contents are skipped.
    Edges without strengths (the reference kept none) come back at 1.0."""
    records = parse_maclaw(path)
    return store.import_records(records)


def import_records(store, records: list[dict]) -> int:
    """Insert checked records (see ``persist.compat.parse_maclaw``) keeping their ids and
    times. Foreign vectors are never mixed with ours: entries are embedded anew."""
    from maclaw_fast.memory.store import _vec_bytes, new_id

    with store._lock:
        store._check_open()
        fresh = [r for r in records if r["id"] not in store._table.row_of
                 and r["content"] not in store._table.row_of_content]
    texts = [analysed_text(r["content"], r["tags"]) for r in fresh]
    vecs = embed_checked(store.embedder, texts) if store.embedder is not None and texts else None
    with store._lock:
        store._check_open()
        ops, added = [], []
        for i, r in enumerate(fresh):
            if r["id"] in store._table.row_of or r["content"] in store._table.row_of_content:
                continue
            now = float(store.clock())
            entry = Entry(
                id=r["id"] or new_id(time.time_ns()), content=r["content"],
                category=r["category"], tags=r["tags"], created_at=r["created_at"] or now,
                updated_at=r["updated_at"] or now, access_count=max(r["access_count"], 1),
                strength=r["strength"], status=r["status"],
                scope=CATEGORY_TABLE[r["category"]][1], pinned=r["pinned"],
                compact_form=r["compact_form"])
            vec = vecs[i] if vecs is not None else None
            row = store._insert(entry, vec)
            added.append((row, r))
            ops.append(PutOp(entry, _vec_bytes(vec)))
            # in file order: consecutive records of one conversation are linked (SPEC R5)
            ops += store._link_adjacent(row, None)
        for row, r in added:
            strengths = r["related_strengths"] or [1.0] * len(r["related_ids"])
            for other, s in zip(r["related_ids"], strengths):
                if other in store._table.row_of:
                    store._graph.link(row, store._table.row_of[other], float(s))
        touched = {row for row, _ in added}
        for row, _ in added:
            touched.update(t for t, _ in store._graph.neighbours(row))
        store._table.touched(touched)
        ops += [EdgesOp(store._table.ids[r], *map(list, store._related(r)))
                for r in sorted(touched)]
        if ops:
            store._log(*ops)
        store._enforce_capacity()
        return len(added)
