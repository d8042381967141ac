"""What the background features keep in the store across runs: the extractor's cooldown, the
maintenance record and its 6-hour schedule, the reflect switch, the route log's counts."""

from __future__ import annotations

import pytest

from maclaw_fast.config import FeaturesConfig, MaintenanceConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.maintenance.extractor import KnowledgeExtractor
from maclaw_fast.maintenance.pipeline import Maintenance
from maclaw_fast.maintenance.records import activity, last_maintenance, seconds_until_due
from maclaw_fast.maintenance.schedule import MaintenanceSchedule
from maclaw_fast.memory import MemoryStore
from maclaw_fast.tools import ToolRegistry, ToolRouter, load_catalog
from maclaw_fast.tools.routelog import ROUTE_LOG_NAME, RouteLog, route_log_stats
from tests.llm_server import Status
from tests.maint_helpers import H, Clock, Router
from tests.test_agent import CATALOG

pytestmark = pytest.mark.timeout(60)
CONVO = [{"role": "user", "content": "our staging database is pg-staging-2 on port 6432"},
         {"role": "assistant", "content": "Understood: staging runs on pg-staging-2:6432."}]
ITEM = [{"content": "Staging Postgres is pg-staging-2, port 6432",
         "category": "project_knowledge"}]


def test_extractor_cooldown_survives_a_restart(tmp_path, llm_server):
    clock = Clock()
    llm_server.default = Router(extract=ITEM)
    with MemoryStore.open(tmp_path / "st", embedder=None, clock=clock) as s:
        assert KnowledgeExtractor(s, llm_server.client(), clock=clock).extract(CONVO).saved == 1
    clock.t += 30 * 60
    with MemoryStore.open(tmp_path / "st", embedder=None, clock=clock) as s:
        fresh = KnowledgeExtractor(s, llm_server.client(), clock=clock)  # a new process
        rep = fresh.extract(CONVO)
        assert rep.skipped == "cooldown: 1800 s left" and len(llm_server.requests) == 1
        clock.t += 30 * 60
        llm_server.default = Router(extract=[{"content": "Deploys need a green CI run",
                                              "category": "instruction"}])
        assert fresh.extract(CONVO).saved == 1
        assert len(s.list(keyword="green CI")) == 1


def test_extractor_cooldown_after_a_clock_set_back(llm_server):
    clock = Clock()
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    ex = KnowledgeExtractor(s, llm_server.client(), clock=clock)
    ex.last_started = clock.t + 10 * H  # stamped in the future
    assert ex.cooldown_left() == MaintenanceConfig().extract_cooldown_s


def test_maintenance_record_and_schedule_survive_a_restart(tmp_path, llm_server):
    clock = Clock()
    path = tmp_path / "st"
    with MemoryStore.open(path, embedder=None, clock=clock) as s:
        assert seconds_until_due(s, 6.0, clock.t) == 6 * H  # empty: nothing to do yet
        s.save("Run the tests with make test", category="instruction")
        s.save("run the tests with make test", category="instruction")
        assert seconds_until_due(s, 6.0, clock.t) == 0.0
        llm_server.default = Status(500)  # every LLM step fails
        Maintenance(s, llm_server.client()).run_once()
    clock.t += 2 * H
    with MemoryStore.open(path, embedder=None, clock=clock) as s:
        rec = last_maintenance(s)
        assert rec.started_at == clock.t - 2 * H and rec.counts["deduplicated"] == 1
        assert not rec.ok and rec.errors and "error(s)" in rec.summary
        assert seconds_until_due(s, 6.0, clock.t) == 4 * H
        assert activity(s).maintenance_due_in_s == 4 * H
        clock.t += 4 * H
        assert seconds_until_due(s, 6.0, clock.t) == 0.0
        Maintenance(s).run_once()  # without an LLM every step that runs succeeds
        assert last_maintenance(s).ok and last_maintenance(s).started_at == clock.t


def test_schedule_runs_only_when_due(tmp_path):
    clock = Clock()
    s = MemoryStore.open(tmp_path / "st", embedder=None, clock=clock)
    s.save("likes green tea", category="preference")
    sched = MaintenanceSchedule(Maintenance(s), recheck_s=0.05)
    sched.start()
    assert sched.wait_idle(20)
    first = sched.take_finished()
    assert [r.scheduled for r in first] == [True] and last_maintenance(s).scheduled
    clock.t += 5 * H  # not due: the thread re-reads the record and waits
    assert sched.wait_idle(20) and sched.take_finished() == []
    clock.t += 1 * H
    for _ in range(400):
        got = sched.take_finished()
        if got:
            break
        sched._stop.wait(0.05)
    sched.stop()
    assert len(got) == 1 and last_maintenance(s).started_at == clock.t
    s.close()


def test_reflect_switch(tmp_path, llm_server):
    clock = Clock()
    cfg = MaintenanceConfig(reflect_min_entries=1, reflect_min_episodic=1)
    reflect_answer = [{"content": "User debugs flaky tests first", "category": "preference"}]
    for on in (False, True):
        s = MemoryStore.in_memory(embedder=None, clock=clock)
        s.save("session 1: fixed the flaky atlas test", category="conversation_summary")
        router = Router(reflect=reflect_answer)
        llm_server.default = router
        rep = Maintenance(s, llm_server.client(), cfg, reflect=on).run_once()
        assert ("reflect" in router.seen) is on
        assert rep.reflect.insights == (1 if on else 0)
        assert (rep.reflect.skipped == "reflect is off") is not on
        assert len(s.list(keyword="flaky tests first")) == (1 if on else 0)


def test_route_log_counts(tmp_path):
    path = tmp_path / ROUTE_LOG_NAME
    assert route_log_stats(path).exists is False
    registry = ToolRegistry(load_catalog(CATALOG))
    router = ToolRouter(registry, embedder=None, route_log=str(path),
                        reranker=lambda msg, cands, k: [cands[-1]["name"]])
    router.route("query the orders table in the database")
    router.route("查询数据库里上个月的订单")
    plain = ToolRouter(registry, embedder=None, route_log=RouteLog(path))
    plain.route("read the config file")
    stats = route_log_stats(path)
    assert stats.exists and stats.decisions == 3 and stats.reranked == 2
    assert stats.size_bytes == path.stat().st_size and not stats.truncated
    RouteLog(path, max_bytes=10).write("x", total=1, core=1, candidates=0, hybrid=False,
                                       body_aware=True, top=[], selected=["memory"])
    stats = route_log_stats(path)
    assert stats.truncated and stats.decisions == 1 and stats.reranked == 0


def test_features_config_switches():
    cfg = FeaturesConfig().without(["recall-filter", "reflect"])
    assert not cfg.recall_filter and not cfg.reflect and cfg.rerank
    with pytest.raises(ValidationError, match="unknown feature"):
        FeaturesConfig().without(["telepathy"])
    with pytest.raises(ValidationError):
        FeaturesConfig(recall_filter_max=0)


def test_schedule_reports_a_run_in_progress(llm_server):
    from tests.llm_server import Reply, Slow

    s = MemoryStore.in_memory(embedder=None)
    s.save("a preference long enough to get a compact form", category="preference")
    llm_server.default = Slow(1.0, Reply(text="[]"))  # every LLM step takes a second
    sched = MaintenanceSchedule(Maintenance(s, llm_server.client()), recheck_s=0.05)
    assert not sched.busy
    sched.start()
    for _ in range(200):
        if sched.busy:
            break
        sched._stop.wait(0.01)
    assert sched.busy
    assert sched.wait_idle(60) and not sched.busy
    assert len(sched.take_finished()) == 1
    sched.stop()
