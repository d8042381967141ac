"""The MCP server's optional features, on and off, against the local LLM server: what
route_tools, memory_save, memory_recall, memory_extract and select_coding_agent return, what the
store holds afterwards, the route log and the maintenance record."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.config import FeaturesConfig
from maclaw_fast.maintenance.records import activity, last_maintenance
from maclaw_fast.server.features import ServeFeatures, add_feature_tools
from maclaw_fast.server.mcp_server import Backend, build_server
from maclaw_fast.tools import ToolRegistry, ToolRouter
from tests.feature_brain import Brain, pick_containing, rerank_candidates
from tests.test_agent_features import SPACES, TABS, runnable_catalog
from tests.test_agent import ROOT

pytestmark = pytest.mark.timeout(120)
ALL = FeaturesConfig()


def serve(tmp_path, llm, off=(), store=None):
    store = store if store is not None else MemoryStore.open(tmp_path / "st", embedder="hash")
    router = ToolRouter(ToolRegistry(runnable_catalog()), embedder="hash")
    backend = Backend(store, router=router, owns=True)
    backend.features = ServeFeatures(backend, llm, ALL.without(off), installed=[])
    mcp = build_server(backend)
    add_feature_tools(mcp, backend, backend.features)
    return backend, mcp


def call(mcp, name, args):
    result = asyncio.run(mcp.call_tool(name, args))
    assert not result.is_error, result.content[0].text
    return result.structured_content


def tool_names(mcp) -> set[str]:
    return {t.name for t in asyncio.run(mcp.list_tools())}


@pytest.mark.parametrize("on", [True, False])
def test_route_tools_rerank_and_route_log(tmp_path, llm_server, on):
    brain = Brain(rerank=lambda body: [rerank_candidates(body)[-1]])
    llm_server.default = brain
    backend, mcp = serve(tmp_path, llm_server.client(), () if on else ("rerank", "route_log"))
    out = call(mcp, "route_tools", {"message": "query the orders table in the database"})
    names = [t["name"] for t in out["tools"]]
    if on:
        promoted = rerank_candidates(brain.bodies["rerank"][0])[-1]
        assert out["reranked"] == [promoted] and promoted in names
        assert activity(backend.store).route_log.decisions == 1
    else:
        assert out["reranked"] == [] and "rerank" not in brain.seen
        assert not activity(backend.store).route_log.exists
    backend.close()


@pytest.mark.parametrize("on", [True, False])
def test_memory_save_conflicts(tmp_path, llm_server, on):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    old = store.save(TABS, category="preference")
    llm_server.default = Brain(conflict={"conflict": True, "reason": "tabs vs spaces"})
    backend, mcp = serve(tmp_path, llm_server.client(), () if on else ("conflicts",),
                         store=store)
    out = call(mcp, "memory_save", {"content": SPACES, "category": "preference"})
    if on:
        assert [s["id"] for s in out["superseded"]] == [old.id]
        assert store.get(old.id).status == "superseded"
    else:
        assert "superseded" not in out and store.get(old.id).status == "active"
    backend.close()


@pytest.mark.parametrize("on", [True, False])
def test_memory_recall_filter(tmp_path, llm_server, on):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    store.save("My name is Claw", category="self_identity")
    for i in range(9):
        store.save(f"release note {i}: the atlas pipeline deploys stage {i}",
                   category="project_knowledge")
    brain = Brain(filter=pick_containing("stage 3", "stage 7"))
    llm_server.default = brain
    backend, mcp = serve(tmp_path, llm_server.client(), () if on else ("recall_filter",),
                         store=store)
    access = {e.content: e.access_count for e in store.entries()}
    out = call(mcp, "memory_recall", {"query": "how does the atlas pipeline deploy?"})
    contents = [r["content"] for r in out["results"]]
    assert contents[0] == "My name is Claw"  # the always-on block is never filtered away
    # only what is returned is strengthened
    assert sorted(e.content for e in store.entries()
                  if e.access_count == access[e.content] + 1) == sorted(contents)
    assert all(e.access_count == access[e.content] for e in store.entries()
               if e.content not in contents)
    if on:
        assert sorted(contents[1:]) == ["release note 3: the atlas pipeline deploys stage 3",
                                        "release note 7: the atlas pipeline deploys stage 7"]
        assert out["filtered"] == {"dropped": 7, "kept": 2}
    else:
        assert len(contents) == 10 and "filtered" not in out and "filter" not in brain.seen
    backend.close()


@pytest.mark.parametrize("on", [True, False])
def test_memory_extract_and_selector_tools(tmp_path, llm_server, on):
    fact = "Staging Postgres is pg-staging-2 on port 6432"
    llm_server.default = Brain(extract=[{"content": fact, "category": "project_knowledge"}])
    backend, mcp = serve(tmp_path, llm_server.client(),
                         () if on else ("extractor", "selector"))
    assert ({"memory_extract", "select_coding_agent"} <= tool_names(mcp)) is on
    if not on:
        backend.close()
        return
    convo = [{"role": "user", "content": "staging runs on pg-staging-2, port 6432"},
             {"role": "assistant", "content": "Got it."}]
    assert call(mcp, "memory_extract", {"messages": convo})["saved"] == 1
    again = call(mcp, "memory_extract", {"messages": convo})
    assert again["skipped"].startswith("cooldown")
    assert [e.content for e in backend.store.list(keyword="pg-staging-2")] == [fact]
    assert call(mcp, "select_coding_agent",
                {"task": "fix the failing react component tests"})["agent"] == "codex"
    backend.close()


def test_without_an_llm_no_llm_tools(tmp_path):
    backend, mcp = serve(tmp_path, None)
    assert "memory_extract" not in tool_names(mcp) and "select_coding_agent" in tool_names(mcp)
    assert backend.router.reranker is None and backend.router.route_log is not None
    backend.close()


def test_serve_command_runs_the_features(tmp_path, llm_server):
    """``serve --llm-url`` over stdio: maintenance runs on schedule at start, the extractor and
    the route log leave their records in the store; ``--off`` turns them off."""
    from maclaw_fast.tools.mcp import McpManager, McpServerConfig

    store_dir = tmp_path / "store"
    with MemoryStore.open(store_dir, embedder="hash") as s:
        s.save("likes green tea", category="preference")
    llm_server.default = Brain(extract=[{"content": "CI runs on ci-atlas-04",
                                         "category": "project_knowledge"}])

    def run(*extra):
        cfg = McpServerConfig(
            name="maclaw", command=sys.executable, timeout_s=60,
            args=("-m", "maclaw_fast.cli", "serve", "--embedder", "hash", "--store",
                  str(store_dir), "--catalog", str(ROOT / "data" / "tools.json"),
                  "--llm-url", llm_server.url + "/v1", "--model", "m", *extra),
            env={"PYTHONPATH": str(ROOT), "MACLAW_HOME": str(tmp_path / "home"),
                 "PATH": os.environ.get("PATH", "")})
        client = ToolRegistry()
        with McpManager(client, [cfg]) as mgr:
            names = {t.name for t in client.list()}
            json.loads(mgr.call_tool("route_tools", {"message": "read the config file"}))
            if "memory_extract" in names:
                json.loads(mgr.call_tool("memory_extract", {"messages": [
                    {"role": "user", "content": "our CI runner is ci-atlas-04"}]}))
        return names

    names = run("--off", "maintenance", "--off", "route-log", "--off", "extractor")
    assert "memory_extract" not in names
    with MemoryStore.open(store_dir, embedder="hash") as s:
        act = activity(s)
        assert act.last_maintenance is None and not act.route_log.exists
    names = run()
    assert "memory_extract" in names
    with MemoryStore.open(store_dir, embedder="hash") as s:
        act = activity(s)
        assert act.route_log.decisions == 1 and act.extractor_last_started
        assert last_maintenance(s).scheduled
        assert s.list(keyword="ci-atlas-04")
