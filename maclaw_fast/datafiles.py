"""Where the bundled sample data lives (``data/`` beside the package, or ``$MACLAW_DATA_DIR``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from maclaw_fast.errors import MaclawError


def data_dir() -> Path:
    """The bundled data folder."""
    env = os.environ.get("MACLAW_DATA_DIR")
    path = Path(env) if env else Path(__file__).resolve().parent.parent / "data"
    if not path.is_dir():
        raise MaclawError(f"sample data folder not found at {path} (set MACLAW_DATA_DIR)")
    return path


def load_json(name: str):
    """Parse one bundled JSON file, e.g. ``load_json("memories.json")``."""
    with open(data_dir() / name, encoding="utf-8") as fh:
        return json.load(fh)


def sample_records(now: float) -> list[dict]:
    """``data/memories.json`` as import records, aged relative to ``now``."""
    from maclaw_fast.memory import validate

    out = []
    for i, m in enumerate(load_json("memories.json")):
        ts = now - float(m.get("age_hours", 0.0)) * 3600.0
        out.append({
            "id": f"sample-{i:04d}", "content": m["content"],
            "category": validate.category(m["category"]), "tags": tuple(m.get("tags", ())),
            "created_at": ts, "updated_at": ts, "access_count": int(m.get("access_count", 1)),
            "strength": 1.0, "status": "active", "pinned": bool(m.get("pinned", False)),
            "compact_form": "", "related_ids": [], "related_strengths": [], "embedding": None,
        })
    return out
