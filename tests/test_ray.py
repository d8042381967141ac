"""Ray scale-out on a local Ray instance (ray.init(num_cpus=2)): batch recall over 200 stores x
50 queries equal to the local recall bit for bit, and the sharded service surviving an actor
killed in the middle of a stream of saves without losing an acknowledged one."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")

from maclaw_fast import MemoryStore  # noqa: E402
from maclaw_fast.compat.stores import FACADE_CONFIG  # noqa: E402
from maclaw_fast.config import MemoryConfig, PersistConfig  # noqa: E402
from maclaw_fast.errors import ValidationError  # noqa: E402
from maclaw_fast.integrations.ray_batch import (_with_rows, read_requests,  # noqa: E402
                                                recall_batch_ray)
from maclaw_fast.integrations.ray_service import ShardedMemory  # noqa: E402

NOW = 1_750_000_000.0
WORDS = ["deploy", "staging", "tea", "region", "cluster", "ray", "atlas", "jazz", "tennis",
         "lisbon", "python", "rollback", "vpn", "coffee", "build", "cache"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def many_stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("stores")
    rng = np.random.default_rng(11)
    for s in range(200):
        with MemoryStore.open(root / f"s{s:03d}", embedder="hash", clock=lambda: NOW - 3600,
                              config=MemoryConfig(persist=PersistConfig(fsync="never"))) as st:
            for i in range(12):
                st.save(" ".join(rng.choice(WORDS, 4)) + f" fact {s}.{i}",
                        category=["project", "preference", "user_fact"][i % 3],
                        tags=[rng.choice(["atlas", "zeus"])])
    return root


def _requests(stores=200, per_store=50, seed=5):
    rng = np.random.default_rng(seed)
    names, queries, projects = [], [], []
    for q in range(stores * per_store):
        names.append(f"s{rng.integers(stores):03d}")
        queries.append(" ".join(rng.choice(WORDS, 2)))
        projects.append(rng.choice(["atlas", "zeus", None]))
    return pa.table({"store": names, "query": queries, "project": pa.array(projects, pa.string())})


def _local(requests: pa.Table, root) -> pa.Table:
    names = np.asarray(requests.column("store").to_pylist())
    parts = []
    for name in sorted(set(names)):
        rows = np.flatnonzero(names == name)
        with MemoryStore.open(root / name, embedder="hash", clock=lambda: NOW) as st:
            hits = st.recall_batch_arrow(requests.column("query").take(rows).to_pylist(),
                                         projects=requests.column("project").take(rows)
                                         .to_pylist(), reinforce=False)
        parts.append(_with_rows(hits, name, rows))
    return pa.concat_tables(parts).sort_by([("row", "ascending"), ("rank", "ascending")])


def test_batch_recall_on_ray_equals_local_bit_for_bit(local_ray, many_stores, tmp_path):
    requests = _requests()
    assert len(set(requests.column("store").to_pylist())) == 200
    path = tmp_path / "requests.parquet"
    pq.write_table(requests, path)
    got = recall_batch_ray(path, many_stores, embedder="hash", now=NOW, workers=2)
    want = _local(requests, many_stores)
    assert got.num_rows == want.num_rows > 10_000
    assert set(got.column("row").to_pylist()) == set(range(requests.num_rows))
    assert got.equals(want)  # every column, every value, bit for bit


def test_batch_requests_are_checked(local_ray, many_stores):
    for bad in (pa.table({"store": ["s000"]}), pa.table({"store": ["s000"], "query": [1]}),
                pa.table({"store": [None], "query": ["x"]}, schema=pa.schema(
                    [("store", pa.string()), ("query", pa.string())])),
                pa.table({"store": ["s000"], "query": ["x"], "user": ["u"]}), "not a table"):
        with pytest.raises(ValidationError):
            read_requests(bad)
    with pytest.raises(ValidationError):
        recall_batch_ray(pa.table({"store": ["s000"], "query": ["x"]}), many_stores,
                         embedder="hash", workers=0)
    with pytest.raises(Exception, match="no store"):
        recall_batch_ray(pa.table({"store": ["missing"], "query": ["x"]}), many_stores,
                         embedder="hash")


def test_sharded_service_routes_by_store_name(local_ray, tmp_path):
    mem = ShardedMemory(tmp_path / "svc", shards=2, embedder="hash")
    for i in range(8):
        mem.save(f"user{i}", f"user{i} prefers tea number {i}", category="preference")
    assert {mem.shard_of(f"user{i}") for i in range(8)} == {0, 1}
    hits = mem.recall("user3", "tea number 3", reinforce=False)
    assert hits[0]["entry"]["content"] == "user3 prefers tea number 3"
    assert mem.contents("user5") == ["user5 prefers tea number 5"]
    with pytest.raises(ValidationError):
        mem.save("user1", "x", category="preference", vector=[0.0])
    with pytest.raises(ValidationError):
        mem.recall("../etc", "x")
    mem.close()
    with MemoryStore.open(tmp_path / "svc" / "user5", embedder="hash",
                          config=FACADE_CONFIG) as st:
        assert [e.content for e in st.entries()] == ["user5 prefers tea number 5"]


def test_batched_and_async_recalls_equal_single_ones(local_ray, tmp_path):
    """recall_many and arecall give each request the hits recall gives it, in order, with
    several stores per shard in one call; one bad store fails only its own requests."""
    import asyncio

    mem = ShardedMemory(tmp_path / "svc", shards=2, embedder="hash")
    for i in range(6):
        for j in range(4):
            mem.save(f"u{i}", f"u{i} likes {WORDS[(i + j) % 16]} and {WORDS[j]}",
                     category="preference", tags=["atlas"] if j % 2 else [])
    reqs = [(f"u{i % 6}", f"{WORDS[i % 16]} {WORDS[i % 5]}", ["atlas", None][i % 2])
            for i in range(60)]

    def ids(results):
        return [[(h["entry"]["id"], h["reason"], round(h["breakdown"]["bm25"], 9))
                 for h in hits] for hits in results]

    single = [mem.recall(n, q, project=p, reinforce=False) for n, q, p in reqs]
    many = mem.recall_many(reqs, reinforce=False)

    async def gathered():
        return await asyncio.gather(*[mem.arecall(n, q, project=p, reinforce=False)
                                      for n, q, p in reqs])

    assert ids(many) == ids(single) == ids(asyncio.run(gathered()))
    assert any(len(h) > 1 for h in single) and single[0][0]["entry"]["content"].startswith("u0")
    with pytest.raises(ValidationError):
        mem.recall_many([("u1", "tea"), ("u2", "tea", 5)])
    with pytest.raises(ValidationError):
        mem.recall_many([("../x", "tea")])
    saved = mem.save_many([("u1", "u1 plays chess", "preference"),
                           ("u4", {"content": "u4 sails", "category": "preference",
                                   "tags": ["atlas"]}),
                           ("u1", "u1 plays go", "preference")])
    assert [e["content"] for e in saved] == ["u1 plays chess", "u4 sails", "u1 plays go"]
    assert {"u1 plays chess", "u1 plays go"} <= set(mem.contents("u1"))
    assert list(saved[1]["tags"]) == ["atlas"] and "u4 sails" in mem.contents("u4")
    with pytest.raises(ValidationError):  # refused before anything is sent
        mem.save_many([("u2", "fine", "preference"), ("u2", {"content": "x", "vector": [0]})])
    with pytest.raises(ValidationError):  # the store refuses the category: its items only
        mem.save_many([("u3", "u3 kept", "preference"), ("u2", "bad", "no-such-category")])
    assert "u3 kept" in mem.contents("u3") and "fine" not in mem.contents("u2")
    mem.close()


def test_actor_killed_mid_write_loses_no_acknowledged_save(local_ray, tmp_path):
    mem = ShardedMemory(tmp_path / "svc", shards=2, embedder="hash")
    names = [f"tenant{i}" for i in range(6)]
    victim = mem.shard_of(names[0])
    acked: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    started = threading.Event()

    def writer():
        try:
            for i in range(150):
                name = names[i % len(names)]
                mem.save(name, f"{name} fact {i}", category="project")
                acked.append((name, f"{name} fact {i}"))
                if len(acked) == 30:
                    started.set()
        except BaseException as exc:  # reported below
            errors.append(exc)
            started.set()

    t = threading.Thread(target=writer)
    t.start()
    started.wait(120)
    ray.kill(mem.actors[victim], no_restart=True)  # SIGKILL while saves are in flight
    t.join(240)
    assert not errors and not t.is_alive()
    assert mem.restarts >= 1 and len(acked) == 150
    for name in names:
        stored = set(mem.contents(name))
        assert {c for n, c in acked if n == name} <= stored
    mem.close()


def test_ray_batch_job_example(local_ray, tmp_path):
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parent.parent / "examples" / "ray_batch_job.py"
    main = runpy.run_path(str(example), run_name="example")["main"]
    hits = main(["--demo", str(tmp_path / "demo"), "--out", str(tmp_path / "hits.parquet")])
    assert set(hits.column("row").to_pylist()) == set(range(200))
    assert pq.read_table(tmp_path / "hits.parquet").equals(hits)
