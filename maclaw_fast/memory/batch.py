"""Batched writes of a MemoryStore: ``save_many`` embeds every new text in one embedder call
(the model's cost per text falls with the batch), then each item goes through
:meth:`MemoryStore.save` with its vector, so a batch behaves exactly like the same saves one by
one (dedup, links, journal, capacity)."""

from __future__ import annotations

from maclaw_fast.embedding import embed_checked
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.records import Entry
from maclaw_fast.text.tokenizer import analysed_text

ITEM_KEYS = frozenset({"content", "category", "tags", "pinned", "thread"})


def _items(items, category, tags) -> list[dict]:
    if isinstance(items, (str, bytes, dict)) or not hasattr(items, "__iter__"):
        raise ValidationError("items must be a list of texts or of dicts with 'content'")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"content": item}
        elif not isinstance(item, dict):
            raise ValidationError(f"item {i} must be a text or a dict, got {type(item).__name__}")
        bad = set(item) - ITEM_KEYS
        if bad:
            raise ValidationError(f"item {i} has unknown keys {sorted(bad)}; "
                                  f"allowed: {sorted(ITEM_KEYS)}")
        cat = item.get("category", category)
        if cat is None:
            raise ValidationError(f"item {i} has no category (give one per item or category=)")
        rec = dict(item)
        rec["content"] = validate.content(item.get("content"))
        rec["category"] = validate.category(cat)
        rec["tags"] = validate.tags(item.get("tags", tags))
        rec["pinned"] = validate.flag(item.get("pinned", False), "pinned")
        rec["thread"] = validate.thread(item.get("thread"))  # a bad one changes nothing
        out.append(rec)
    return out


def save_many(store, items, *, category: str | None = None, tags=()) -> list[Entry]:
    """Save ``items`` (texts, or dicts with content/category/tags/pinned/thread); every item is
    validated before anything changes, and every text not yet stored is embedded in one call.
    Returns the saved entries in item order (an existing or repeated content updates the
    entry, as :meth:`MemoryStore.save` does)."""
    recs = _items(items, category, tags)
    store.check_embedder_choice([r["content"] for r in recs])  # switch first, embed once
    vectors: dict[str, object] = {}
    if store.embedder is not None and recs:
        with store.lock:
            store.check_writable()
            stored = store.table.row_of_content
            todo = {r["content"]: analysed_text(r["content"], r["tags"])
                    for r in recs if r["content"] not in stored}
        if todo:  # first tags of a repeated content, as sequential saves would embed it
            vecs = embed_checked(store.embedder, list(todo.values()))
            vectors = dict(zip(todo, vecs))
    out = []
    for rec in recs:
        out.append(store.save(rec["content"], category=rec["category"], tags=rec["tags"],
                              pinned=rec["pinned"], vector=vectors.get(rec["content"]),
                              thread=rec["thread"]))
    return out
