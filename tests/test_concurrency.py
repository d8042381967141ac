"""design §5: mutations are safe under concurrent readers and writers from several threads, and
nothing a call returned for is lost (checked after a reopen)."""

from __future__ import annotations

import random
import threading

from maclaw_fast import MemoryStore, NotFoundError


def test_threads_saving_recalling_deleting_keep_a_consistent_store(tmp_path):
    path = tmp_path / "store"
    store = MemoryStore.open(path, embedder="hash")
    saved: list[str] = []
    deleted: set[str] = set()
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            for i in range(60):
                e = store.save(f"thread {seed} note {i} about {rnd.choice(['tea', 'deploy', '部署'])}",
                               category=rnd.choice(["preference", "project", "instruction"]),
                               tags=[f"t{seed}"])
                with lock:
                    saved.append(e.id)
                if i % 7 == 0:
                    with lock:
                        victim = rnd.choice(saved)
                    try:
                        store.delete(victim)
                        with lock:
                            deleted.add(victim)
                    except NotFoundError:  # another thread deleted it first
                        pass
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(80):
                hits = store.recall("deploy tea 部署", reinforce=True)
                assert len({h.entry.id for h in hits}) == len(hits)
                store.recall_batch(["tea", "deploy"], reinforce=False)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    expected = set(saved) - deleted
    assert {e.id for e in store.entries()} == expected
    store.close()
    with MemoryStore.open(path, embedder="hash") as again:
        assert {e.id for e in again.entries()} == expected
        assert len(again) == len(expected)


def test_blas_limit_is_restored_when_batches_overlap():
    """The batch recall runs its BLAS product on one thread; overlapping batches on several
    threads share that limit, and the BLAS thread count the process had comes back once the
    last one ends."""
    import threadpoolctl

    import numpy as np
    from maclaw_fast.threads import blas_threads

    def blas_count() -> int:  # the BLAS (numba's OpenMP runtime may be listed first)
        return next(i["num_threads"] for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas")

    before = blas_count()
    with blas_threads(1):
        assert blas_count() == 1
    assert blas_count() == before
    errors = []

    def work():
        try:
            for _ in range(100):
                with blas_threads(1):
                    np.ones((8, 8)) @ np.ones(8)
        except Exception as exc:  # surfaced below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert blas_count() == before
