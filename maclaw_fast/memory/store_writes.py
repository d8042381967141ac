"""Writing to a :class:`~maclaw_fast.memory.store.MemoryStore`: save, update, delete, touch and
meta, each validated before anything changes and journaled after (SPEC §1, §4, §5, §8)."""

from __future__ import annotations

import random
import time

import msgspec
import numpy as np

from maclaw_fast.config import CATEGORY_TABLE
from maclaw_fast.embedding import check_vectors, embed_checked
from maclaw_fast.embedding.auto import CJK_SHARE
from maclaw_fast.errors import DuplicateError, ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.persist.journal import DeleteOp, MetaOp, PutOp, TouchOp
from maclaw_fast.records import Entry
from maclaw_fast.text.tokenizer import analysed_text, tokenize


def new_id(clock_ns: int) -> str:
    """``"<unix_nanos>-<4 hex>"`` (SPEC §1). The suffix only separates ids of one nanosecond:
    ``random`` (reseeded in a forked child) spares a ``getrandom`` call per save, which cost
    ~15 µs inside the save loop."""
    return f"{clock_ns}-{random.getrandbits(16):04x}"


def vec_bytes(vec: np.ndarray | None) -> bytes | None:
    """A vector as the journal stores it (float32 bytes), or None."""
    return None if vec is None else np.asarray(vec, np.float32).tobytes()


def replace_entry(entry: Entry, **changes) -> Entry:
    """A copy of ``entry`` with ``changes`` (msgspec validates nothing here: callers do)."""
    return msgspec.structs.replace(entry, **changes)


class StoreWrites:
    """The write side of :class:`~maclaw_fast.memory.store.MemoryStore` (a mixin over its
    columns, indexes, journal and lock)."""

    def embed_text(self, text: str, vector) -> np.ndarray | None:
        if vector is not None:
            if not self.dim:
                raise ValidationError("this store has no embedder (BM25-only): vectors are unused")
            return check_vectors(vector, self.dim)[0].copy()  # ours, whatever the caller does
        if self.embedder is None:
            return None
        return embed_checked(self.embedder, [text])[0]

    def index_row(self, row: int) -> list[str]:
        t = self.table
        tokens = tokenize(analysed_text(t.content[row], t.tags[row]))
        self.bm25.add(row, tokens)
        return tokens

    def save(self, content: str, *, category: str, tags=(), pinned: bool = False,
             vector=None, thread: str | None = None) -> Entry:
        """Remember ``content``; identical content updates the existing entry instead (SPEC §5).

        ``vector`` (optional) is used instead of calling the embedder. ``thread`` (optional, e.g.
        the agent's session id) links the entry after the previous one saved in that thread;
        without it, after the previous save without a thread when that came within
        ``GraphConfig.adjacency_gap_s`` (SPEC R5). Recall passes relevance along these links.
        """
        content = validate.content(content)
        category = validate.category(category)
        tags = validate.tags(tags)
        pinned = validate.flag(pinned, "pinned")
        thread = validate.thread(thread)
        with self.lock:
            self.check_open()
            row = self.table.row_of_content.get(content)
            if row is not None:
                return self.save_existing(row, tags)
        if vector is None and self.auto_embedder:
            self.check_embedder_choice((content,))
        vec = self.embed_text(analysed_text(content, tags), vector)  # outside the lock: ~4 ms
        with self.lock:
            self.check_open()
            row = self.table.row_of_content.get(content)
            if row is not None:
                return self.save_existing(row, tags)
            now = float(self.clock())
            entry = Entry(id=new_id(time.time_ns()), content=content, category=category,
                          tags=tags, created_at=now, updated_at=now, access_count=1,
                          strength=1.0, status="active", scope=CATEGORY_TABLE[category][1],
                          pinned=pinned)
            row = self.insert_row(entry, vec)
            links = self.auto_link_row(row) + self.link_adjacent(row, thread)
            self.journal(PutOp(self.entry_at(row), vec_bytes(vec)), *links)
            result = self.entry_at(row)
            self.enforce_capacity()
            return result

    def save_many(self, items, *, category: str | None = None, tags=()) -> list[Entry]:
        """Save many memories with one embedder call for all new texts (see ``memory.batch``).

        ``items``: texts (then ``category`` applies to all) or dicts with ``content`` and
        optional ``category``, ``tags``, ``pinned``, ``thread``.

        >>> from maclaw_fast.memory.store import MemoryStore
        >>> with MemoryStore.in_memory(embedder="hash") as s:
        ...     [e.category for e in s.save_many(["likes tea"], category="preference")]
        ['preference']
        """
        from maclaw_fast.memory.batch import save_many

        return save_many(self, items, category=category, tags=tags)

    def check_embedder_choice(self, pending=()) -> bool:
        """With ``embedder="auto"``: move to the multilingual model (re-embedding every memory)
        once the stored text, with ``pending`` texts, is substantially Chinese or mixed."""
        if not self.auto_embedder or (not pending and self.language.share < CJK_SHARE):
            return False  # the per-call cost of recall: two attribute reads
        from maclaw_fast.memory.model_choice import check

        return check(self, pending)

    def save_existing(self, row: int, tags: tuple[str, ...]) -> Entry:
        t = self.table
        old = self.entry_at(row)
        merged = tuple(sorted(set(old.tags) | set(tags)))
        status, strength = old.status, old.strength
        if status == "dormant":
            status, strength = "active", 1.0
        entry = replace_entry(old, tags=merged, updated_at=float(self.clock()),
                              access_count=old.access_count + 1, status=status,
                              strength=strength)
        t.write(row, entry)
        if merged != old.tags:
            self.index_row(row)
        self.journal(PutOp(entry, None, False))
        return self.entry_at(row)

    def insert_row(self, entry: Entry, vec: np.ndarray | None, row: int | None = None) -> int:
        row = self.table.insert(entry, row)
        self.language.add(entry.content)
        self.graph.reserve(row + 1)
        self.last_tokens = self.index_row(row)
        if self.dim:
            self.vectors.set(row, vec)
        return row

    def auto_link_row(self, row: int) -> list:
        """Link a new row (SPEC §4) when enabled; returns the journal ops recording it."""
        if not self.config.auto_link:
            return []
        from maclaw_fast.memory.linking import auto_link

        return auto_link(self, row)

    def link_adjacent(self, row: int, thread: str | None) -> list:
        """Link a new row into its conversation (SPEC R5); returns the journal op recording it."""
        from maclaw_fast.memory.linking import link_adjacent

        return link_adjacent(self, row, thread)

    def update(self, entry_id: str, *, content: str | None = None, tags=None,
               category: str | None = None) -> Entry:
        """Change content, tags and/or category; re-indexes and clears ``compact_form``."""
        new_content = validate.content(content) if content is not None else None
        new_tags = validate.tags(tags) if tags is not None else None
        new_cat = validate.category(category) if category is not None else None
        with self.lock:
            self.check_open()
            row = self.row_of_id(entry_id)
            old = self.entry_at(row)
            if new_content is not None:
                other = self.table.row_of_content.get(new_content)
                if other is not None and other != row:
                    raise DuplicateError(f"content duplicates memory {self.table.ids[other]!r}")
        text_changed = new_content is not None and new_content != old.content
        tags_final = new_tags if new_tags is not None else old.tags
        vec = (self.embed_text(analysed_text(new_content, tags_final), None)
               if text_changed and self.dim else None)
        with self.lock:
            self.check_open()
            row = self.row_of_id(entry_id)
            old = self.entry_at(row)
            cat = new_cat or old.category
            entry = replace_entry(
                old, content=new_content if new_content is not None else old.content,
                tags=tags_final, category=cat, scope=CATEGORY_TABLE[cat][1], compact_form="",
                updated_at=float(self.clock()))
            self.table.write(row, entry)
            self.index_row(row)
            if vec is not None:
                self.vectors.set(row, vec)
            # new text without a model here: the record clears the vector it had, so an open
            # with the model replaying it embeds the entry again
            self.journal(PutOp(entry, vec_bytes(vec), vec is not None or text_changed))
            return self.entry_at(row)

    def set_fields(self, entry_id: str, **fields) -> Entry:
        """Low-level field change used by maintenance (status, strength, compact_form, ...);
        content/tags/category go through :meth:`update`."""
        fields = validate.fields(fields)
        with self.lock:
            self.check_open()
            row = self.row_of_id(entry_id)
            entry = replace_entry(self.entry_at(row), **fields)
            self.table.write(row, entry)
            self.journal(PutOp(entry, None, False))
            return self.entry_at(row)

    def delete(self, entry_id: str) -> Entry:
        """Forget an entry; returns what it was."""
        with self.lock:
            self.check_open()
            row = self.row_of_id(entry_id)
            entry = self.entry_at(row)
            self.remove_row(row)
            self.journal(DeleteOp(entry_id))
            return entry

    def remove_row(self, row: int) -> None:
        changed = self.graph.remove_node(row)
        self.table.touched(changed)
        self.bm25.remove(row)
        if self.dim:
            self.vectors.set(row, None)
        self.table.release(row)

    def pin(self, entry_id: str) -> Entry:
        """Protect an entry from eviction and compression."""
        return self.set_fields(entry_id, pinned=True)

    def unpin(self, entry_id: str) -> Entry:
        return self.set_fields(entry_id, pinned=False)

    def touch(self, ids) -> None:
        """``access_count += 1`` for each id; ``updated_at`` unchanged."""
        ids = validate.ids(ids)
        with self.lock:
            self.check_open()
            rows = [self.row_of_id(i) for i in ids]
            self.apply_touch(rows, 1, 0.0, None)
            self.journal(TouchOp(ids, 1, 0.0, None))

    def apply_touch(self, rows, access_add: int, strength_add: float, updated_at) -> None:
        self.table.touch(list(rows), access_add, strength_add, updated_at)

    def set_meta(self, key: str, value: str) -> None:
        """Persist a small named value with the store (e.g. the last reflection time)."""
        key, value = validate.meta_key(key), validate.text(str(value), "value")
        with self.lock:
            self.check_open()
            self.meta[key] = value
            self.journal(MetaOp(key, value))
