"""A reopened store keeps its text packed (bytes + offsets) and its vocabulary as one joined
string until a use needs Python lists: every read and edit of a packed table or vocabulary must
give what the unpacked one gives, and a reopen + recall must leave both packed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.config import CATEGORIES
from maclaw_fast.memory.columns import EntryTable
from maclaw_fast.memory.packed import PackedText
from maclaw_fast.records import Entry
from maclaw_fast.text.vocabulary import Vocabulary

WORDS = ["tea", "deploy", "部署", "boat", "Atlas", "atlas", "émigré", "x"]


def _entries(rng, n):
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS, int(rng.integers(0, 5))))
        tags = tuple(rng.choice(WORDS, int(rng.integers(0, 3))).tolist())
        out.append(Entry(id=f"id{i}-{rng.integers(1 << 30)}", content=f"{text} {i % 7}",
                         category=CATEGORIES[int(rng.integers(1, len(CATEGORIES)))], tags=tags,
                         compact_form="" if i % 3 else f"c{i}"))
    return out


def _numeric(entries):
    from maclaw_fast.memory.columns import CATEGORY_CODE

    n = len(entries)
    return {"category": np.array([CATEGORY_CODE[e.category] for e in entries], np.int8),
            "status": np.zeros(n, np.int8), "scope": np.zeros(n, np.int8),
            "access": np.ones(n, np.int64), "created_at": np.arange(n, dtype=np.float64),
            "updated_at": np.arange(n, dtype=np.float64), "strength": np.ones(n),
            "pinned": np.zeros(n, np.bool_), "tokens": np.full(n, 3, np.int64)}


def _tables(entries):
    listed, packed = EntryTable(), EntryTable()
    listed.load_rows([e.id for e in entries], [e.content for e in entries],
                     [e.tags for e in entries], [e.compact_form for e in entries],
                     _numeric(entries))
    text = PackedText(pa.array([e.id for e in entries], pa.string()),
                      pa.array([e.content for e in entries], pa.string()),
                      pa.array([list(e.tags) for e in entries], pa.list_(pa.string())),
                      pa.array([e.compact_form for e in entries], pa.string()))
    packed.load_packed(text, _numeric(entries))
    return listed, packed


def _view(t: EntryTable, rows, tags=True):
    view = {"entries": [t.entry(r) for r in rows], "ids": t.ids_of(rows), "len": len(t),
            "id_array": t.id_array().to_pylist()}
    if tags:  # (the tag index is made with the lists: it unpacks)
        view["tags"] = {w.lower(): sorted(t.rows_with_tag(w)) for w in WORDS}
    return view


@pytest.mark.parametrize("seed", range(6))
def test_a_packed_table_reads_and_edits_as_a_listed_one(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 150))  # below and above the initial capacity of 64
    entries = _entries(rng, n)
    listed, packed = _tables(entries)
    rows = rng.integers(0, n, 20).tolist()
    assert packed.is_packed and not listed.is_packed
    assert _view(packed, rows, tags=False) == _view(listed, rows, tags=False)
    assert packed.is_packed  # reading rows and ids by row never unpacks
    assert _view(packed, rows) == _view(listed, rows)
    extra = _entries(rng, 5)
    for step in range(12):  # edits, in a random order: each table must stay the same
        op = rng.integers(0, 3)
        for t in (listed, packed):
            if op == 0:
                e = extra[step % len(extra)]
                if e.id not in t.row_of:
                    t.insert(e)
            elif op == 1 and len(t):
                row = int(sorted(t.row_of.values())[step % len(t)])
                t.write(row, entries[(row + step) % n])
            elif op == 2 and len(t) > 1:
                t.release(int(sorted(t.row_of.values())[0]))
        live = sorted(listed.row_of.values())
        assert sorted(packed.row_of.values()) == live
        assert _view(packed, live) == _view(listed, live)
        assert packed.row_of_content == listed.row_of_content


def test_packing_copies_out_of_the_source_buffer():
    arr = pa.array(["tea", "boat", "部署"], pa.string()).slice(1)
    text = PackedText(arr, arr, pa.array([["a"], [], ["b", "c"]]).slice(1), arr)
    assert text.row(1) == ("部署", "部署", ("b", "c"), "部署")
    assert text.tags.tolist() == [(), ("b", "c")]
    assert isinstance(text.content.data, bytes)  # its own bytes, not a view of the file's


@pytest.mark.parametrize("seed", range(4))
def test_a_vocabulary_filled_joined_answers_as_one_filled_from_a_list(seed):
    rng = np.random.default_rng(seed)
    tokens = list(dict.fromkeys(
        "".join(rng.choice(list("abcdé部"), int(rng.integers(1, 5)))) for _ in range(300)))
    listed, joined = Vocabulary(), Vocabulary()
    assert listed.fill(tokens) and joined.fill("\n".join(tokens))
    probes = tokens[::7] + ["", "zz", tokens[0][:-1] or "q", "\n", tokens[-1] + "\n"]
    assert len(joined) == len(listed)
    assert [joined.get(t) for t in probes] == [listed.get(t) for t in probes]
    assert joined.ids(probes).tolist() == listed.ids(probes).tolist()
    new = ["new", tokens[3], "other"]
    assert joined.add_all(new).tolist() == listed.add_all(new).tolist()  # unjoins
    assert joined.tokens == listed.tokens and joined.ids_dict == listed.ids_dict


def test_an_empty_joined_vocabulary():
    v = Vocabulary()
    assert v.fill("") and len(v) == 0 and v.get("") == -1 and v.tokens == []


def test_a_reopen_and_its_first_recalls_keep_text_and_vocabulary_packed(tmp_path):
    with MemoryStore.open(tmp_path / "s", embedder="hash") as s:
        for i in range(40):
            s.save(f"note {i} about tea and the deploy script", category="project",
                   tags=["atlas"] if i % 2 else [])
    with MemoryStore.open(tmp_path / "s", embedder="hash") as s:
        hits = s.recall("deploy tea", reinforce=False)
        assert hits and all(h.entry.content.startswith("note ") for h in hits)
        s.recall("部署 tea", reinforce=False)
        assert s.table.is_packed, "a reopen + recall made the text lists"
        assert s.bm25.vocab._joined is not None, "a reopen + recall made the vocabulary dict"
        s.recall("tea", reinforce=True)  # journals the touched ids, still packed
        assert s.table.is_packed
        s.save("a write unpacks", category="project")
        assert not s.table.is_packed
