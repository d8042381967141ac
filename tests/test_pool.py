"""StorePool: names checked at the boundary, LRU by count and bytes, clean closes, batch recall
across stores equal to each store's own recall, and many threads over few open stores."""

from __future__ import annotations

import os
import random
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from maclaw_fast import MemoryStore, StorePool, ValidationError
from maclaw_fast.errors import StoreClosedError
from maclaw_fast.memory import pool as pool_module


@pytest.mark.parametrize("name", ["a/b", "..", "x..y", "../up", "a\x00b", "", ".hidden",
                                  "a\\b", "é" * 101, "x" * 201, 7, None, b"bytes"])
def test_bad_store_names_are_refused_before_anything_is_made(tmp_path, name):
    with StorePool(tmp_path / "root", embedder="hash") as pool:
        with pytest.raises(ValidationError):
            pool.save(name, "note", category="preference")
        with pytest.raises(ValidationError):
            pool.recall_batch([("ok", "note"), (name, "note")])
        assert pool.names() == []
    assert sorted(os.listdir(tmp_path)) == ["root"]


def test_names_up_to_200_bytes_are_accepted(tmp_path):
    with StorePool(tmp_path, embedder="hash") as pool:
        pool.save("x" * 200, "note", category="preference")
        pool.save("ü" * 100, "note", category="preference")
        assert sorted(pool.names()) == sorted(["x" * 200, "ü" * 100])


def test_at_most_max_open_stores_least_recently_used_closed_first(tmp_path):
    with StorePool(tmp_path, max_open=3, embedder="hash") as pool:
        for name in "abcd":
            pool.save(name, f"note of {name}", category="preference")
        assert pool.open_names() == ["b", "c", "d"]
        pool.recall("b", "note")  # b is now the most recent
        pool.save("e", "note of e", category="preference")
        assert pool.open_names() == ["d", "b", "e"]
        assert pool.stats()["open"] == 3
        # a closed store was closed cleanly: its snapshot holds the save, the journal is empty
        assert (tmp_path / "a" / "snapshot.arrow").exists()
        with MemoryStore.open(tmp_path / "c", embedder="hash") as c:  # its lock was released
            assert [e.content for e in c.entries()] == ["note of c"]


def test_byte_bound_closes_stores_beyond_it(tmp_path):
    with StorePool(tmp_path, max_open=100, embedder="hash") as probe:
        for i in range(20):
            probe.save("one", f"memory number {i} about tea", category="preference")
        one = probe.stats()["bytes"]
    with StorePool(tmp_path, max_open=100, max_bytes=int(2.5 * one), embedder="hash") as pool:
        for name in ["one", "two", "three", "four"]:
            for i in range(20):
                pool.save(name, f"memory number {i} about tea", category="preference")
        stats = pool.stats()
        assert stats["bytes"] <= 2.5 * one
        assert 1 <= stats["open"] <= 2
        assert pool.open_names()[-1] == "four"


def test_a_store_in_use_is_not_closed_under_its_caller(tmp_path):
    with StorePool(tmp_path, max_open=1, embedder="hash") as pool:
        with pool.store("held") as held:
            held.save("kept open", category="preference")
            pool.save("other", "x", category="preference")  # over the bound, but held is leased
            assert "held" in pool.open_names()
            assert [e.content for e in held.entries()] == ["kept open"]
        pool.save("third", "y", category="preference")
        assert pool.stats()["open"] == 1


def test_close_idle(tmp_path):
    with StorePool(tmp_path, embedder="hash") as pool:
        pool.save("a", "x", category="preference")
        pool.save("b", "y", category="preference")
        assert pool.close_idle(3600) == 0
        assert pool.close_idle(0) == 2
        assert pool.open_names() == []
        assert [h.entry.content for h in pool.recall("a", "x")] == ["x"]


def test_idle_close_s_closes_stores_as_calls_come_in(tmp_path):
    with StorePool(tmp_path, embedder="hash", idle_close_s=0.05) as pool:
        pool.save("old", "x", category="preference")
        time.sleep(1.1)  # sweeps run at most once a second
        pool.save("new", "y", category="preference")
        assert pool.open_names() == ["new"]


def test_closed_pool_refuses_calls(tmp_path):
    pool = StorePool(tmp_path, embedder="hash")
    pool.save("a", "x", category="preference")
    pool.close()
    with pytest.raises(StoreClosedError):
        pool.recall("a", "x")


def test_one_embedder_and_query_cache_for_every_store(tmp_path):
    with StorePool(tmp_path, embedder="hash") as pool:
        with pool.store("a") as a, pool.store("b") as b:
            assert a.embedder is b.embedder is pool.embedder
            assert a.query_cache is b.query_cache is pool.query_cache


def test_pool_arguments_checked(tmp_path):
    for kwargs in ({"max_open": 0}, {"max_open": True}, {"max_bytes": -1},
                   {"idle_close_s": 0}, {"config": {}}):
        with pytest.raises(ValidationError):
            StorePool(tmp_path, embedder="hash", **kwargs)


def _fill(pool, rnd, names):
    topics = ["tea", "deploy", "coffee", "fridays", "python", "部署", "garden", "music"]
    for name in names:
        for i in range(12):
            pool.save(name, f"{name} note {i} on {rnd.choice(topics)} and {rnd.choice(topics)}",
                      category=rnd.choice(["preference", "project", "instruction", "user_fact"]),
                      tags=[rnd.choice(["atlas", "zeus"])])
    return topics


@pytest.mark.parametrize("as_arrow", [False, True])
def test_recall_batch_equals_each_stores_recall(tmp_path, as_arrow):
    rnd = random.Random(3)
    names = ["u1", "u2", "u3", "u4"]
    now = time.time()
    with StorePool(tmp_path, max_open=2, embedder="hash", clock=lambda: now) as pool:
        topics = _fill(pool, rnd, names)
        rows = [(rnd.choice(names), f"{rnd.choice(topics)} {rnd.choice(topics)}",
                 rnd.choice([None, "atlas", "zeus"])) for _ in range(30)]
        if as_arrow:
            arg = pa.table({"store": [r[0] for r in rows], "query": [r[1] for r in rows],
                            "project": [r[2] for r in rows]})
        else:
            arg = rows
        table = pool.recall_batch(arg, reinforce=False)
        assert table.column("row").to_pylist() == sorted(table.column("row").to_pylist())
        for i, (name, query, project) in enumerate(rows):
            with pool.store(name) as s:
                want = s.recall(query, project=project, reinforce=False)
            mine = table.filter(pa.compute.equal(table.column("row"), i))
            assert mine.column("store").to_pylist() == [name] * len(want)
            assert mine.column("id").to_pylist() == [h.entry.id for h in want]
            np.testing.assert_allclose(mine.column("score").to_numpy(),
                                       [h.score for h in want], rtol=1e-6)


def test_recall_batch_checks_rows(tmp_path):
    with StorePool(tmp_path, embedder="hash") as pool:
        for bad in ["store,query", [("a",)], [("a", 5)], pa.table({"store": ["a"]}), 3]:
            with pytest.raises(ValidationError):
                pool.recall_batch(bad)
        assert pool.recall_batch([]).num_rows == 0


class _Watched(MemoryStore):
    """A store that records, per directory, how many handles are open and what it held when it
    was last closed (the stress test's witnesses)."""

    guard = threading.Lock()
    open_count: dict[str, int] = {}
    last_closed: dict[str, pa.Table] = {}
    problems: list[str] = []

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        key = str(self.path)
        with self.guard:
            self.open_count[key] = self.open_count.get(key, 0) + 1
            if self.open_count[key] > 1:
                self.problems.append(f"{key} opened twice")
            before = self.last_closed.get(key)
        if before is not None and not _same(self.to_arrow(), before):
            self.problems.append(f"{key} reopened different from how it closed")

    def close(self):
        if not self.closed:
            state = self.to_arrow()
            with self.guard:
                self.last_closed[str(self.path)] = state
                self.open_count[str(self.path)] -= 1
        super().close()


def _same(a: pa.Table, b: pa.Table) -> bool:
    return a.num_rows == b.num_rows and a.to_pylist() == b.to_pylist()


def test_threads_over_random_stores_lose_nothing(tmp_path, monkeypatch):
    """16 threads × 40 stores through a pool of 8 for MACLAW_POOL_STRESS_S seconds (10 by
    default): no lost write, no store open twice, every closed store reopens as it was."""
    monkeypatch.setattr(pool_module, "MemoryStore", _Watched)
    _Watched.open_count.clear()
    _Watched.last_closed.clear()
    _Watched.problems.clear()
    seconds = float(os.environ.get("MACLAW_POOL_STRESS_S", "10"))
    names = [f"user{i}" for i in range(40)]
    saved: dict[str, set[str]] = {n: set() for n in names}
    deleted: dict[str, set[str]] = {n: set() for n in names}
    record = threading.Lock()
    errors: list[BaseException] = []
    pool = StorePool(tmp_path, max_open=8, embedder="hash")
    stop = time.monotonic() + seconds

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        i = 0
        try:
            while time.monotonic() < stop:
                name = rnd.choice(names)
                op = rnd.random()
                if op < 0.5:
                    content = f"thread {seed} note {i} about {rnd.choice(['tea', 'deploy'])}"
                    i += 1
                    pool.save(name, content, category="preference")
                    with record:
                        saved[name].add(content)
                elif op < 0.6:
                    with pool.store(name) as s:
                        mine = [e for e in s.entries() if e.content.startswith(f"thread {seed} ")]
                        if mine:
                            victim = rnd.choice(mine)
                            s.delete(victim.id)
                            with record:
                                deleted[name].add(victim.content)
                elif op < 0.8:
                    pool.recall(name, rnd.choice(["tea", "deploy", "note"]))
                else:
                    rows = [(rnd.choice(names), "tea deploy") for _ in range(5)]
                    pool.recall_batch(rows)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    opens = pool.stats()["opens"]
    pool.close()
    assert not errors, errors[:3]
    assert not _Watched.problems, _Watched.problems[:3]
    assert opens > len(names)  # stores really were closed and reopened
    for name in names:
        if not saved[name]:
            continue
        with MemoryStore.open(tmp_path / name, embedder="hash") as s:
            contents = {e.content for e in s.entries()}
        assert contents == saved[name] - deleted[name]


def test_batch_buffers_are_not_kept_and_bytes_follow_them(tmp_path):
    with StorePool(tmp_path, embedder="hash") as pool:
        for i in range(200):
            pool.save("u", f"note {i} about tea {i % 7}", category="preference")
        with pool.store("u") as s:
            idle = s.resident_bytes()
            s.recall_batch_arrow(["tea"] * 50, reinforce=False)
            holding = s.resident_bytes()
            # the plan keeps per-row scratch (a few float64 rows), no (queries × rows) buffers
            assert idle < holding < idle + 20 * 200 * 8 + 64 * 1024
            s.trim()
            assert s.resident_bytes() <= idle
        pool.recall_batch([("u", "tea")] * 50, reinforce=False)
        with pool.store("u") as s:
            assert s.resident_bytes() <= idle
        assert pool.stats()["bytes"] <= idle
