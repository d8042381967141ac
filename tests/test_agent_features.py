"""Each optional feature of the agent, on and off, against the local LLM server: what the model
is sent, what the store holds afterwards, and what the turn reports."""

from __future__ import annotations

import json

import msgspec
import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.agent import Agent, AgentConfig
from maclaw_fast.agent.features import AgentFeatures, notes_line
from maclaw_fast.config import FeaturesConfig, MaintenanceConfig, RouterConfig
from maclaw_fast.maintenance.records import activity, last_maintenance
from maclaw_fast.tools import RegisteredTool, ToolRegistry, ToolRouter, UsageTracker, load_catalog
from tests.feature_brain import Brain, filter_candidates, pick_containing, rerank_candidates
from tests.llm_server import Reply, call
from tests.maint_helpers import prompt_text
from tests.test_agent import CATALOG

pytestmark = pytest.mark.timeout(90)
ALL = FeaturesConfig()


def session_tool() -> RegisteredTool:
    return RegisteredTool(name="create_session", description="Start a coding-agent session",
                          category="builtin", tags=["session"], handler=lambda a: {"ok": True},
                          input_schema={"type": "object", "properties": {}})


def runnable_catalog() -> list[RegisteredTool]:
    """The sample catalog with a handler on each of its non-core tools (as if their servers
    were attached), so that they are routed; the core ones are the agent's own."""
    core = set(RouterConfig().core_tools)

    def echo(args):
        return {"ok": True, "args": args}
    return [t if t.name in core or t.handler else msgspec.structs.replace(t, handler=echo)
            for t in load_catalog(CATALOG)]


def build(tmp_path, llm, *, off=(), store=None, maintenance=MaintenanceConfig(), **kw):
    store = store if store is not None else MemoryStore.open(tmp_path / "st", embedder="hash")
    registry = ToolRegistry(runnable_catalog())
    registry.register_many([session_tool()])
    usage = UsageTracker()
    router = ToolRouter(registry, embedder="hash", usage=usage)
    feats = AgentFeatures(store, llm, router, config=ALL.without(off), maintenance=maintenance,
                          installed=[], **kw)
    agent = Agent(store, registry, router, llm, usage=usage, features=feats,
                  config=AgentConfig(sandbox_dir=str(tmp_path)))
    return agent, feats


def system_of(body) -> str:
    msgs = body.get("messages", [])
    if body.get("system"):
        return json.dumps(body["system"]) if not isinstance(body["system"], str) else body["system"]
    return msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""


def sent_tools(body) -> set[str]:
    return {t.get("name") or t["function"]["name"] for t in body.get("tools", [])}


@pytest.mark.parametrize("on", [True, False])
def test_rerank_and_route_log(tmp_path, llm_server, on):
    # the reranker promotes the last of its candidates that the fused order leaves out
    def promote(body):
        left_out = [c for c in rerank_candidates(body) if c not in plain]
        assert left_out, "every rerank candidate is routed without the reranker"
        return [left_out[-1]]

    brain = Brain(rerank=promote)
    llm_server.default = brain
    agent, feats = build(tmp_path, llm_server.client(),
                         off=() if on else ("rerank", "route_log"))
    message = "query the orders table in the database and export it"
    # the same routing without any reranker, for comparison
    plain = set(ToolRouter(agent.registry, embedder="hash").route(message).names)
    turn = agent.run(message)
    chat = brain.bodies["chat"][0]
    if on:
        promoted = [c for c in rerank_candidates(brain.bodies["rerank"][0])
                    if c not in plain][-1]
        assert turn.features.reranked == [promoted]
        assert promoted in turn.routed and promoted in sent_tools(chat)
        assert f"rerank: {promoted}" in notes_line(turn.features)
        stats = activity(agent.store).route_log
        assert stats.decisions == 1 and stats.reranked == 1
    else:
        assert "rerank" not in brain.seen and turn.features.reranked == []
        assert not (tmp_path / "st" / "tool_route.log").exists()
        assert "rerank" not in notes_line(turn.features)
    assert (set(turn.routed) != plain) is on
    feats.close()
    agent.store.close()


@pytest.mark.parametrize("on", [True, False])
def test_recall_filter(tmp_path, llm_server, on):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    for i in range(12):
        store.save(f"deploy note {i}: the release pipeline step {i} runs on the atlas cluster",
                   category="project_knowledge")
    keep: list[str] = []

    def pick(body):
        keep[:] = filter_candidates(body)[-2:]  # the two the recall ranked last
        return keep
    brain = Brain(filter=pick)
    llm_server.default = brain
    agent, feats = build(tmp_path, llm_server.client(), store=store,
                         off=("rerank",) + (() if on else ("recall_filter",)))
    access = {e.id: e.access_count for e in store.entries()}
    turn = agent.run("how does the release pipeline deploy to the atlas cluster?")
    system = system_of(brain.bodies["chat"][0])
    shown = [e.id for e in store.entries() if f"(id {e.id})" in system]
    # recall strengthens what reaches the prompt, not what the filter dropped
    grew = sorted(e.id for e in store.entries() if e.access_count == access[e.id] + 1)
    assert grew == sorted(shown) and len(grew) + sum(
        e.access_count == access[e.id] for e in store.entries()) == len(access)
    if on:
        assert sorted(shown) == sorted(keep) and len(keep) == 2
        assert [h.entry.id for h in turn.recalled] == keep
        assert turn.features.filter_dropped == len(filter_candidates(
            brain.bodies["filter"][0])) - 2 > 0
        assert "filter dropped" in notes_line(turn.features)
    else:
        assert "filter" not in brain.seen and len(shown) > 5
        assert turn.features.filter_dropped == -1
    feats.close()
    store.close()


def test_recall_filter_failure_keeps_the_recall(tmp_path, llm_server):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    for i in range(8):
        store.save(f"deploy note {i} about the atlas release", category="project_knowledge")
    brain = Brain(filter=Reply(text="not json at all"))
    llm_server.default = brain
    agent, feats = build(tmp_path, llm_server.client(), store=store, off=("rerank",))
    turn = agent.run("atlas release deploy notes")
    assert turn.features.filter_error and len(turn.recalled) >= 6
    assert "filter failed" in notes_line(turn.features)
    feats.close()
    store.close()


@pytest.mark.parametrize("on", [True, False])
def test_conflict_on_save(tmp_path, llm_server, on):
    store = MemoryStore.open(tmp_path / "st", embedder=None)  # BM25 candidates
    old = store.save("User prefers tabs for indentation in Python", category="preference")
    for i in range(10):
        store.save(f"unrelated fact number {i} about the garden", category="user_fact")
    brain = Brain(conflict={"conflict": True, "reason": "tabs vs spaces"})
    brain.chat(Reply(tool_calls=[call("memory", id="s1", action="save", category="preference",
                                      content="User prefers spaces for indentation in Python")]),
               Reply(text="Noted: spaces."))
    llm_server.default = brain
    agent, feats = build(tmp_path, llm_server.client(), store=store,
                         off=("rerank", "recall_filter") + (() if on else ("conflicts",)))
    turn = agent.run("I switched to spaces for indentation in Python now")
    result = json.loads(turn.tool_calls[0].result)
    if on:
        assert store.get(old.id).status == "superseded"
        assert result["superseded"][0]["id"] == old.id
        assert turn.features.superseded == [old.id]
        assert "conflict found: superseded 1" in notes_line(turn.features)
        # the model saw it in the tool result
        assert "superseded" in prompt_text(brain.bodies["chat"][1])
    else:
        assert store.get(old.id).status == "active" and "superseded" not in result
        assert "conflict" not in brain.seen
    feats.close()
    store.close()


@pytest.mark.parametrize("on", [True, False])
def test_selector_in_prompt(tmp_path, llm_server, on):
    brain = Brain()
    llm_server.default = brain
    agent, feats = build(tmp_path, llm_server.client(),
                         off=("rerank",) + (() if on else ("selector",)))
    turn = agent.run("fix the failing react component tests")
    system = system_of(brain.bodies["chat"][0])
    assert ("## Coding agent" in system) is on
    if on:
        assert turn.features.selector == "codex" and "`codex`" in system
        assert "selector: codex" in notes_line(turn.features)
    # not a coding task: no recommendation either way
    turn = agent.run("what is the weather in Paris tomorrow?")
    assert turn.features.selector == "" and "## Coding agent" not in system_of(
        brain.bodies["chat"][1])
    feats.close()
    agent.store.close()


@pytest.mark.parametrize("on", [True, False])
def test_extractor_and_persisted_cooldown(tmp_path, llm_server, on):
    fact = "Staging Postgres is pg-staging-2 on port 6432"
    brain = Brain(extract=[{"content": fact, "category": "project_knowledge"}])
    llm_server.default = brain
    off = ("rerank", "recall_filter") + (() if on else ("extractor",))
    agent, feats = build(tmp_path, llm_server.client(), off=off)
    agent.run("our staging database is pg-staging-2, port 6432")
    report = agent.end_conversation()
    store = agent.store
    assert (len(store.list(keyword="pg-staging-2")) == 1) is on
    assert ("extract" in brain.seen) is on
    if not on:
        assert report is None
        feats.close()
        store.close()
        return
    assert report.saved == 1
    turn = agent.run("which host is the staging database on?")
    assert fact in [h.entry.content for h in turn.recalled]
    feats.close()
    store.close()
    # a new process over the same store: the cooldown holds
    agent2, feats2 = build(tmp_path, llm_server.client(), off=off)
    agent2.run("the staging database also has a replica pg-staging-3")
    again = agent2.end_conversation()
    assert again.skipped.startswith("cooldown") and brain.seen.count("extract") == 1
    feats2.close()
    agent2.store.close()


@pytest.mark.parametrize("reflect", [True, False])
def test_scheduled_maintenance_and_reflect(tmp_path, llm_server, reflect):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    store.save("session 1: fixed the flaky atlas test before lunch",
               category="conversation_summary")
    brain = Brain(reflect=[{"content": "User fixes flaky tests first",
                            "category": "preference"}])
    llm_server.default = brain
    cfg = MaintenanceConfig(reflect_min_entries=1, reflect_min_episodic=1)
    off = ("rerank", "recall_filter") + (() if reflect else ("reflect",))
    agent, feats = build(tmp_path, llm_server.client(), store=store, off=off, maintenance=cfg)
    feats.start()  # never maintained and not empty: due now
    assert feats.schedule.wait_idle(30)
    turn = agent.run("hello")
    assert len(turn.features.maintenance) == 1
    assert "maintenance ran (backup 1" in notes_line(turn.features)
    rec = last_maintenance(store)
    assert rec.scheduled and rec.counts["reflected"] == (1 if reflect else 0)
    assert ("reflect" in brain.seen) is reflect
    assert agent.run("hello again").features.maintenance == []  # shown once
    feats.close()
    store.close()


def test_maintenance_off(tmp_path, llm_server):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    store.save("likes green tea", category="preference")
    llm_server.default = Brain()
    agent, feats = build(tmp_path, llm_server.client(), store=store,
                         off=("rerank", "maintenance"))
    feats.start()
    turn = agent.run("hello")
    assert feats.schedule is None and turn.features.maintenance == []
    assert last_maintenance(store) is None
    feats.close()
    store.close()


def test_without_an_llm_only_the_plain_features_run(tmp_path):
    store = MemoryStore.open(tmp_path / "st", embedder="hash")
    registry = ToolRegistry(load_catalog(CATALOG))
    router = ToolRouter(registry, embedder="hash")
    feats = AgentFeatures(store, None, router)
    assert router.reranker is None and router.route_log is not None
    assert feats.extractor is None and feats.conflicts is None and feats.schedule is not None
    router.close()
    store.close()


# ---------------------------------------------------------------------- the chat command
def run_chat(tmp_path, llm_server, lines, *extra):
    """``chat`` in a subprocess over the core tools of the sample catalog, with the rest of the
    catalog served by a real MCP server over stdio (tests/mcp_catalog_server.py)."""
    import os
    import subprocess
    import sys

    from tests.test_agent import ROOT

    data = json.loads(CATALOG.read_text(encoding="utf-8"))
    tools = data if isinstance(data, list) else data["tools"]
    core = set(RouterConfig().core_tools)
    (tmp_path / "core.json").write_text(json.dumps([t for t in tools if t["name"] in core]))
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"catalog": {
        "command": sys.executable, "args": [str(ROOT / "tests" / "mcp_catalog_server.py")],
        "env": {"PYTHONPATH": str(ROOT)}}}}))
    env = dict(os.environ, MACLAW_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "maclaw_fast.cli", "chat", "--llm-url", llm_server.url + "/v1",
         "--model", "m", "--embedder", "hash", "--store", str(tmp_path / "store"),
         "--catalog", str(tmp_path / "core.json"), "--mcp-config", str(tmp_path / "mcp.json"),
         *extra],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120, env=env,
        cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def seeded_store(tmp_path):
    with MemoryStore.open(tmp_path / "store", embedder="hash") as s:
        old = s.save(TABS, category="preference").id
        for i in range(8):
            s.save(f"python style note {i}: indentation and line length rules for module {i}",
                   category="project_knowledge")
        for i in range(6):
            s.save(f"unrelated fact number {i} about the garden", category="user_fact")
    return old


TABS = "User prefers tabs for indentation in Python code, in every repository and file"
SPACES = "User prefers spaces for indentation in Python code, in every repository and file"


def chat_brain():
    fact = "The CI runner for atlas is ci-atlas-04"
    brain = Brain(
        rerank=lambda body: [rerank_candidates(body)[-1]],
        filter=pick_containing("ci-atlas", "spaces"),
        conflict=lambda body: {"conflict": "Older memory: User prefers tabs" in prompt_text(body),
                               "reason": "changed preference"},
        extract=[{"content": fact, "category": "project_knowledge"}])
    brain.chat(Reply(tool_calls=[call("memory", id="s1", action="save", category="preference",
                                      content=SPACES)]),
               Reply(text="Noted: spaces from now on."))
    return brain, fact


FIRST = ("From now on use spaces for indentation in Python when you write files, search the "
         "web or query the database")


def test_chat_shows_what_each_feature_did(tmp_path, llm_server):
    old = seeded_store(tmp_path)
    brain, fact = chat_brain()
    llm_server.default = brain
    ws = tmp_path / "ws"
    ws.mkdir()
    out = run_chat(tmp_path, llm_server, [
        FIRST, "/new",
        "our CI runner for atlas is ci-atlas-04", "and the garden?", "/new",
        "which CI runner does atlas use?", "/exit"], "--enable-bash", "--workspace", str(ws))
    feature_lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("[")]
    first = feature_lines[0]
    assert first.startswith("[rerank: ") and "filter dropped" in first
    assert "conflict found: superseded 1" in first
    # a Python task, and create_session (a shell session, with --enable-bash) was routed
    assert "selector: claude" in first
    reranked = [ln for ln in feature_lines if ln.startswith("[rerank: ")]
    assert any("maintenance ran (backup 15" in ln for ln in feature_lines)
    assert "knowledge extraction skipped: the conversation already saved to memory" in out
    assert "knowledge extraction saved 1 memory" in out
    assert "knowledge extraction skipped: cooldown:" in out  # at /exit, within the hour
    with MemoryStore.open(tmp_path / "store", embedder="hash") as s:
        assert s.get(old).status == "superseded"
        assert [e.content for e in s.list(keyword="ci-atlas-04")] == [fact]
        act = activity(s)
        assert act.route_log.decisions == 4
        assert act.route_log.reranked == len(reranked) == brain.seen.count("rerank") > 0
        assert act.last_maintenance.scheduled and act.extractor_last_started
    recalled = prompt_text(brain.bodies["chat"][-1])
    assert fact in recalled  # the next conversation recalled what the extractor saved


def test_chat_with_every_feature_off(tmp_path, llm_server):
    old = seeded_store(tmp_path)
    brain, fact = chat_brain()
    llm_server.default = brain
    off = [a for n in FeaturesConfig.names() for a in ("--off", n.replace("_", "-"))]
    out = run_chat(tmp_path, llm_server, [
        FIRST, "/new", "/exit"], *off)
    assert not [ln for ln in out.splitlines() if ln.strip().startswith("[")]
    assert "(new conversation)" in out and "extraction" not in out
    assert set(brain.seen) == {"chat"}
    with MemoryStore.open(tmp_path / "store", embedder="hash") as s:
        assert s.get(old).status == "active" and not s.list(keyword="ci-atlas-04")
        act = activity(s)
        assert act.last_maintenance is None and not act.route_log.exists
