"""Maintenance of per-user stores (``serve --stores``): each open store of a StorePool is
maintained when it is due — looked at when it opens and on every sweep — and the run is recorded
in that store's ``maintenance/last``; stores not due, not open, or empty are left alone."""

from __future__ import annotations

import time

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.config import FeaturesConfig
from maclaw_fast.maintenance.pipeline import Maintenance
from maclaw_fast.maintenance.pool_schedule import PoolMaintenanceSchedule
from maclaw_fast.maintenance.records import last_maintenance
from maclaw_fast.memory.pool import StorePool
from maclaw_fast.server.features import ServeFeatures
from maclaw_fast.server.mcp_server import Backend

pytestmark = pytest.mark.timeout(120)
HOUR = 3600.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def seed(root, name, clock, *, maintained: bool) -> None:
    with MemoryStore.open(root / name, embedder=None, clock=clock) as s:
        s.save(f"{name} prefers green tea", category="preference")
        if maintained:
            Maintenance(s).run_once()  # a record: not due for 6 h


def started_at(root, name):
    with MemoryStore.open(root / name, embedder=None) as s:
        rec = last_maintenance(s)
        return None if rec is None else (rec.started_at, rec.scheduled)


def collect(sched, want: set, at: float | None = None, timeout: float = 30.0) -> dict:
    """The runs reported until every store in ``want`` ran (at clock ``at`` when given)."""
    done, deadline = {}, time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, report in sched.take_finished():
            if at is None or report.started_at == at:
                done[name] = report
        if want <= set(done):
            break
        time.sleep(0.05)
    return done


def test_each_open_store_is_maintained_when_due(tmp_path):
    clock = Clock(1_000_000.0)
    t0 = clock.t
    root = tmp_path / "stores"
    seed(root, "alice", clock, maintained=False)  # never maintained: due once open
    seed(root, "carol", clock, maintained=True)   # maintained just now: not due
    seed(root, "dave", clock, maintained=False)   # never opened by the server: left alone
    pool = StorePool(root, embedder=None, clock=clock)
    made = []

    def make(store):
        made.append(store.path.name)
        return Maintenance(store)

    sched = PoolMaintenanceSchedule(pool, make, recheck_s=0.2)
    try:
        with pool.store("carol"):
            pass
        sched.start()  # carol is open before the start: the first sweep looks at it
        pool.save("alice", "alice deploys on Fridays", category="project")  # due on open
        assert sched.wait_idle(30)
        first = sched.take_finished()
        assert [(n, r.scheduled, r.started_at) for n, r in first] == [("alice", True, t0)]
        assert "carol" in made  # looked at, not due
        # a new user's store is empty when it opens; the next sweep finds its first memory
        pool.save("erin", "a brand-new user", category="user_fact")
        assert set(collect(sched, {"erin"})) == {"erin"}
        # six hours later every open store is due again
        clock.t += 6 * HOUR + 1
        done = collect(sched, {"alice", "carol", "erin"}, at=clock.t)
        assert set(done) == {"alice", "carol", "erin"}
    finally:
        sched.stop()
        pool.close()
    for name in ("alice", "carol", "erin"):
        assert started_at(root, name) == (clock.t, True), name
    assert started_at(root, "dave") is None


def test_a_closed_store_is_not_reopened_by_the_schedule(tmp_path):
    clock = Clock(1_000_000.0)
    root = tmp_path / "stores"
    seed(root, "alice", clock, maintained=True)
    seed(root, "bob", clock, maintained=True)
    pool = StorePool(root, embedder=None, clock=clock, max_open=1)
    sched = PoolMaintenanceSchedule(pool, Maintenance, recheck_s=0.2).start()
    try:
        with pool.store("bob"):
            pass
        assert sched.wait_idle(30)  # its look at bob done (a look holds the store open)
        with pool.store("alice"):
            pass  # max_open=1: bob's store is closed now
        assert pool.open_names() == ["alice"]
        clock.t += 6 * HOUR + 1  # both due, only alice open
        runs = collect(sched, {"alice"}, at=clock.t)
        time.sleep(0.5)  # two more sweeps
        runs.update(collect(sched, set(), timeout=0))
        assert set(runs) == {"alice"} and pool.open_names() == ["alice"]
    finally:
        sched.stop()
        pool.close()
    assert started_at(root, "alice") == (clock.t, True)
    assert started_at(root, "bob") == (1_000_000.0, False)  # the seed's run only


def test_serve_features_schedule_the_per_user_stores(tmp_path):
    clock = Clock(1_000_000.0)
    root = tmp_path / "stores"
    seed(root, "alice", clock, maintained=False)
    pool = StorePool(root, embedder=None, clock=clock)
    backend = Backend(None, pool=pool, owns=True)
    feats = ServeFeatures(backend, None, installed=[]).start()
    try:
        assert isinstance(feats.schedule, PoolMaintenanceSchedule)
        with pool.store("alice"):
            pass
        assert feats.schedule.wait_idle(30)
        assert [n for n, _ in feats.schedule.take_finished()] == ["alice"]
    finally:
        feats.close()
        backend.close()
    assert started_at(root, "alice") == (clock.t, True)
    off = ServeFeatures(Backend(None, pool=StorePool(root, embedder=None), owns=True), None,
                        FeaturesConfig(maintenance=False), installed=[])
    assert off.schedule is None
    off.backend.close()
