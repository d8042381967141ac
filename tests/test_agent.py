"""The agent loop against the scripted local LLM server: memory through tool calls, routing and
execution, usage records, knowledge extraction, cancellation, iteration limits, the sandbox,
bash, discover_tool, managed background loops, and the ``chat`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.agent import (Agent, AgentConfig, BackgroundLoopManager, Sandbox,
                               self_identity_summary, summarize, user_fact_summary)
from maclaw_fast.errors import ValidationError
from maclaw_fast.tools import RegisteredTool, ToolRegistry, ToolRouter, UsageTracker, load_catalog
from tests.llm_server import Reply, call

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "data" / "tools.json"
pytestmark = pytest.mark.timeout(60)


def weather_tool(calls: list) -> RegisteredTool:
    def handler(args):
        calls.append(args)
        return {"ok": True, "city": args.get("city"), "forecast": "sunny, 24 C"}
    return RegisteredTool(
        name="weather_forecast", description="Get the weather forecast for a city",
        category="mcp", tags=["weather"], priority=1, handler=handler,
        input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]})


def make_agent(tmp_path, llm, *, config=None, extra_tools=(), store=None, usage=None, **kw):
    store = store if store is not None else MemoryStore.in_memory(embedder="hash")
    registry = ToolRegistry(load_catalog(CATALOG))
    registry.register_many(list(extra_tools))
    usage = usage if usage is not None else UsageTracker()
    router = ToolRouter(registry, embedder="hash", usage=usage)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    cfg = config or AgentConfig(sandbox_dir=str(ws))
    kw.setdefault("extractor", None)
    return Agent(store, registry, router, llm, usage=usage, config=cfg, **kw)


def tool_messages(agent):
    return [m for m in agent.history if m["role"] == "tool"]


# ---------------------------------------------------------------------- end to end
def test_conversation_end_to_end(tmp_path, llm_server, llm_protocol):
    store_dir, usage_file = tmp_path / "store", tmp_path / "tool_usage.json"
    weather_calls: list = []
    store = MemoryStore.open(store_dir, embedder="hash")
    usage = UsageTracker(usage_file)
    agent = make_agent(tmp_path, llm_server.client(llm_protocol), store=store, usage=usage,
                       extra_tools=[weather_tool(weather_calls)], extractor="auto")
    assert type(agent.extractor).__name__ == "KnowledgeExtractor"
    fact = "The deploy target is the atlas cluster in eu-west-1"

    # 1. the model saves a memory through a tool call; the reply streams
    llm_server.script(
        Reply(text="Noting that.", tool_calls=[call("memory", id="c1", action="save",
                                                     content=fact, category="instruction")]),
        Reply(text="Saved: deploys go to atlas."))
    pieces: list[str] = []
    t1 = agent.run("Remember: we deploy to the atlas cluster in eu-west-1", on_delta=pieces.append)
    assert t1.stop_reason == "done" and t1.iterations == 2
    assert "".join(pieces).endswith("Saved: deploys go to atlas.")
    assert [(c.name, c.ok) for c in t1.tool_calls] == [("memory", True)]
    assert "memory" in t1.routed
    saved = store.list(keyword="atlas cluster")
    assert [e.content for e in saved] == [fact] and saved[0].category == "instruction"
    first = llm_server.requests[-2].json
    sent_tools = ({t["function"]["name"] for t in first["tools"]} if llm_protocol == "openai"
                  else {t["name"] for t in first["tools"]})
    assert sent_tools == set(t1.routed) and len(sent_tools) <= 28

    # 2. a later message recalls it: into the system prompt, and through the memory tool
    llm_server.script(
        Reply(tool_calls=[call("memory", id="c2", action="recall", query="deploy target")]),
        Reply(text="We deploy to atlas in eu-west-1."))
    t2 = agent.run("Where do we deploy the service?")
    assert fact in [h.entry.content for h in t2.recalled]
    req = llm_server.requests[-2].json
    system = (req["messages"][0]["content"] if llm_protocol == "openai" else req["system"])
    system = system if isinstance(system, str) else json.dumps(system)
    assert "## Relevant memories" in system and fact in system
    recall_result = json.loads(t2.tool_calls[0].result)
    assert recall_result["ok"] and recall_result["results"][0]["content"] == fact
    assert t2.text == "We deploy to atlas in eu-west-1."

    # 3. the right tool is routed and executed; a failing call is recorded as a failure
    llm_server.script(
        Reply(tool_calls=[call("weather_forecast", id="c3", city="Lyon"),
                          {"name": "memory", "id": "c4",
                           "arguments": {"action": "forget", "id": "no-such-id"}}]),
        Reply(text="Sunny in Lyon."))
    t3 = agent.run("What is the weather forecast for Lyon tomorrow?")
    assert "weather_forecast" in t3.routed
    assert weather_calls == [{"city": "Lyon"}]
    assert [(c.name, c.ok) for c in t3.tool_calls] == [("weather_forecast", True),
                                                      ("memory", False)]
    assert "sunny" in t3.tool_calls[0].result
    records = json.loads(usage_file.read_text())
    records = records if isinstance(records, list) else records.get("records", records)
    got = [(r["tool_name"], r["success"]) for r in records]
    assert got == [("memory", True), ("memory", True), ("weather_forecast", True),
                   ("memory", False)]
    assert records[2]["query_tokens"][:3] == ["weather", "forecast", "lyon"]

    # 4. end of conversation: the knowledge extractor reads it (the memory save of message 1
    # is older than its save-signal window) and its knowledge lands in the store
    llm_server.default = Reply(text=json.dumps([
        {"content": "Release builds are signed on the atlas CI runner",
         "category": "project_knowledge"}]))
    report = agent.end_conversation()
    assert report.saved == 1 and not report.skipped and not report.error, report
    assert "we deploy to the atlas cluster" in json.dumps(llm_server.last.json)
    assert agent.history == []
    store.close()
    with MemoryStore.open(store_dir, embedder="hash") as again:
        entry = again.list(keyword="atlas cluster")[0]
        assert entry.access_count >= 3  # saved, then reinforced by two recalls
        extracted = again.list(keyword="signed on the atlas CI")[0]
        assert extracted.category == "project_knowledge" and "extracted" in extracted.tags
    assert len(UsageTracker(usage_file)) == 4


def test_identity_and_user_facts_in_prompt(tmp_path, llm_server):
    store = MemoryStore.in_memory(embedder="hash")
    store.save("I am Claw, a terse assistant", category="self_identity")
    store.save("The user is called Mia", category="user_fact")
    store.save("The user lives in Lyon", category="user")
    agent = make_agent(tmp_path, llm_server.client(), store=store)
    llm_server.script("Hello Mia.")
    turn = agent.run("hello")
    system = llm_server.last.json["messages"][0]["content"]
    assert "## Who you are\nI am Claw, a terse assistant" in system
    # design R4: user facts lead when relevant to the message, the others are ranked with the
    # recalled memories; either way both reach the prompt
    assert "The user is called Mia" in system and "The user lives in Lyon" in system
    assert all(h.entry.category == "user_fact" for h in turn.recalled)
    assert turn.text == "Hello Mia."
    assert self_identity_summary(store) == "I am Claw, a terse assistant"
    assert user_fact_summary(store, 10) == "The user i…"
    assert summarize([], 5) == ""


def test_workspace_search_feeds_prompt_and_memory_search(tmp_path, llm_server):
    from maclaw_fast.workspace import WorkspaceIndex

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Notes\nThe staging database password rotates monthly.\n")
    index = WorkspaceIndex.open(ws, embedder=None)
    store = MemoryStore.in_memory(embedder="hash")
    registry = ToolRegistry(load_catalog(CATALOG))
    router = ToolRouter(registry, embedder="hash")
    agent = Agent(store, registry, router, llm_server.client(), workspace=index, extractor=None)
    assert agent.sandbox.root == os.path.realpath(ws)
    llm_server.script(Reply(tool_calls=[call("memory", id="s1", action="search",
                                             query="password")]), "It rotates monthly.")
    turn = agent.run("when does the staging database password rotate?")
    assert turn.workspace_hits and turn.workspace_hits[0]["citation"].startswith("MEMORY.md#L")
    system = llm_server.requests[0].json["messages"][0]["content"]
    assert "## Workspace notes" in system and "rotates monthly" in system
    found = json.loads(turn.tool_calls[0].result)
    assert found["workspace"]["results"][0]["path"] == "MEMORY.md"
    index.close()


def test_message_embedded_once_for_routing_and_recall(tmp_path, llm_server):
    from maclaw_fast.embedding import HashEmbedder

    class Counting(HashEmbedder):
        texts: list = []

        def embed(self, texts):
            Counting.texts.extend(texts)
            return super().embed(texts)

    store = MemoryStore.in_memory(embedder=Counting())
    registry = ToolRegistry(load_catalog(CATALOG))
    router = ToolRouter(registry, embedder=Counting())
    agent = Agent(store, registry, router, llm_server.client(), extractor=None)
    Counting.texts.clear()
    llm_server.script("hi")
    agent.run("a message about deployments")
    assert Counting.texts.count("a message about deployments") == 1


# ---------------------------------------------------------------------- loop control
def test_cancel_between_tool_calls(tmp_path, llm_server):
    cancel = threading.Event()
    ran: list[str] = []

    def tool(name, cancels=False):
        def handler(args):
            ran.append(name)
            if cancels:
                cancel.set()  # the user hits stop while this call runs
            return "done"
        return RegisteredTool(name=name, description=f"step {name}", handler=handler)

    agent = make_agent(tmp_path, llm_server.client(),
                       extra_tools=[tool("step_a", True), tool("step_b"), tool("step_c")])
    llm_server.script(Reply(tool_calls=[call("step_a", id="a"), call("step_b", id="b"),
                                        call("step_c", id="c")]))
    turn = agent.run("run step_a step_b step_c", cancel=cancel)
    assert turn.stop_reason == "cancelled" and ran == ["step_a"]
    assert [(c.name, c.ok) for c in turn.tool_calls] == [
        ("step_a", True), ("step_b", False), ("step_c", False)]
    assert "cancelled" in turn.tool_calls[1].result
    assert [m["tool_call_id"] for m in tool_messages(agent)] == ["a", "b", "c"]
    assert len(llm_server.requests) == 1
    # the history is still well formed: the (strict) server accepts the next turn
    llm_server.script("ok")
    assert agent.run("continue", cancel=lambda: False).text == "ok"
    assert llm_server.last.problem is None
    # a cancel set before the turn stops it before the model is called
    cancel.set()
    assert agent.run("again", cancel=cancel).stop_reason == "cancelled"
    assert len(llm_server.requests) == 2


def test_iteration_limit(tmp_path, llm_server):
    counter = iter(range(1000))
    llm_server.default = lambda body: Reply(tool_calls=[call(
        "memory", id=f"r{next(counter)}", action="recall", query="loop")])
    agent = make_agent(tmp_path, llm_server.client(),
                       config=AgentConfig(max_iterations=3, sandbox_dir=str(tmp_path)))
    turn = agent.run("keep recalling")
    assert turn.stop_reason == "iteration_limit" and turn.iterations == 3
    assert len(llm_server.requests) == 3 and len(turn.tool_calls) == 3
    with pytest.raises(ValidationError):
        AgentConfig(max_iterations=0)
    with pytest.raises(ValidationError):
        agent.run("   ")


def test_managed_background_loop_stops(tmp_path, llm_server):
    mgr = BackgroundLoopManager()
    ctx = mgr.spawn("coding")
    llm_server.default = lambda body: Reply(tool_calls=[call("halt", id="h")])

    def halt(args):
        mgr.stop(ctx.id)
        return "stopping"
    agent = make_agent(tmp_path, llm_server.client(), context=ctx, manager=mgr,
                       extra_tools=[RegisteredTool(name="halt", description="halt", handler=halt)])
    turn = agent.run("work in the background")
    assert turn.stop_reason == "stopped" and turn.iterations == 1
    assert ctx.status == "stopped" and mgr.running_count("coding") == 0
    assert ctx.iteration == 1


def test_unknown_tool_and_bad_arguments(tmp_path, llm_server):
    usage = UsageTracker()
    agent = make_agent(tmp_path, llm_server.client(), usage=usage)
    llm_server.script(Reply(tool_calls=[call("no_such_tool", id="u1"),
                                        {"name": "memory", "arguments": "{not json", "id": "u2"},
                                        call("memory", id="u3", action="explode"),
                                        call("db_query", id="u4", sql="select 1")]), "sorry")
    turn = agent.run("do things")
    res = {c.id: (c.ok, json.loads(c.result)["error"]) for c in turn.tool_calls}
    assert res["u1"] == (False, "unknown tool 'no_such_tool'")
    assert not res["u2"][0] and "not a JSON object" in res["u2"][1]
    assert not res["u3"][0] and "action must be one of" in res["u3"][1]
    assert not res["u4"][0] and "no handler" in res["u4"][1]
    assert [(r["tool_name"], r["success"]) for r in usage.records()] == [
        ("memory", False), ("memory", False), ("db_query", False)]


def test_discover_tool_activates_for_session(tmp_path, llm_server):
    # the non-builtin catalog tools runnable (a handler each), except kubectl_get: withheld
    runnable = [msgspec.structs.replace(t, handler=lambda a: "done")
                for t in load_catalog(CATALOG)
                if t.category != "builtin" and t.name != "kubectl_get"]
    pods = RegisteredTool(name="k8s_pods", description="List the kubernetes pods of a cluster",
                          category="mcp", tags=["kubernetes"], handler=lambda a: "3 pods")
    agent = make_agent(tmp_path, llm_server.client(), extra_tools=runnable + [pods])
    llm_server.script(Reply(tool_calls=[call("discover_tool", id="d1",
                                             query="kubernetes pods")]), "found it")
    turn = agent.run("hello there")
    assert turn.tool_calls[0].ok
    activated = [t["name"] for t in json.loads(turn.tool_calls[0].result)["activated"]]
    assert "k8s_pods" in activated and turn.activated == activated
    assert "kubectl_get" not in activated
    # the discovered tools were offered on the model's next call of the same message
    second = {t["function"]["name"] for t in llm_server.last.json["tools"]}
    assert set(activated) <= second
    assert set(activated) <= set(agent.router.session_tools(agent.session))
    agent.end_conversation()
    assert agent.router.session_tools(agent.session) == []


# ---------------------------------------------------------------------- sandbox and bash
def test_sandbox_refuses_escapes(tmp_path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "link_out").symlink_to(outside)                  # directory symlink leaving the root
    (root / "secret_link.txt").symlink_to(outside / "secret.txt")
    (root / "sub" / "inner.txt").write_text("inner")
    (root / "inner_link.txt").symlink_to(root / "sub" / "inner.txt")  # stays inside: allowed
    sb = Sandbox(root)
    for bad in ("../outside/secret.txt", str(outside / "secret.txt"), "link_out/secret.txt",
                "secret_link.txt", "sub/../../outside/secret.txt", "~/x", "/etc/passwd"):
        with pytest.raises(ValidationError, match="outside the workspace"):
            sb.read_file({"path": bad})
    for bad in ("link_out/new.txt", "secret_link.txt", "../escape.txt"):
        with pytest.raises(ValidationError, match="outside the workspace"):
            sb.write_file({"path": bad, "content": "x"})
    with pytest.raises(ValidationError, match="outside the workspace"):
        sb.list_directory({"path": "link_out"})
    with pytest.raises(ValidationError):
        sb.read_file({"path": "a\x00b"})
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (outside / "new.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert sb.read_file({"path": "inner_link.txt"})["content"] == "inner"
    assert sb.write_file({"path": "deep/new.txt", "content": "héllo"})["bytes"] == 6
    assert sb.write_file({"path": "deep/new.txt", "content": "!", "append": True})["appended"]
    assert (root / "deep" / "new.txt").read_text() == "héllo!"
    names = {e["name"]: e["type"] for e in sb.list_directory({})["entries"]}
    assert names["sub/"] == "dir" and names["link_out"] == "link"
    big = sb.read_file({"path": "deep/new.txt", "max_bytes": 2})
    assert big["truncated"] and big["content"] == "h\ufffd"


def test_file_tools_through_the_agent(tmp_path, llm_server):
    agent = make_agent(tmp_path, llm_server.client())
    (tmp_path / "secret.txt").write_text("top secret")
    llm_server.script(Reply(tool_calls=[
        call("write_file", id="w", path="notes/todo.md", content="- ship it"),
        call("read_file", id="r", path="notes/todo.md"),
        call("read_file", id="x", path="../secret.txt"),
        call("list_directory", id="l", path="notes")]), "done")
    turn = agent.run("write my todo file then read the file back")
    ok = {c.id: c.ok for c in turn.tool_calls}
    assert ok == {"w": True, "r": True, "x": False, "l": True}
    assert json.loads(turn.tool_calls[1].result)["content"] == "- ship it"
    assert "outside the workspace" in turn.tool_calls[2].result
    assert "top secret" not in "".join(m["content"] for m in tool_messages(agent))


def test_bash_only_when_enabled(tmp_path, llm_server):
    agent = make_agent(tmp_path, llm_server.client())
    assert agent.registry.get("bash").status == "unavailable"
    llm_server.script(Reply(tool_calls=[call("bash", id="b", command="echo hi")]), "no")
    turn = agent.run("run a shell command with bash")
    assert "bash" not in turn.routed and not turn.tool_calls[0].ok
    llm_server.reset()

    cfg = AgentConfig(sandbox_dir=str(tmp_path), enable_bash=True, bash_timeout_s=0.5)
    agent = make_agent(tmp_path, llm_server.client(), config=cfg)
    llm_server.script(Reply(tool_calls=[call("bash", id="b1", command="pwd; echo hi"),
                                        call("bash", id="b2", command="sleep 5; echo late")]),
                      "ran")
    turn = agent.run("run a shell command with bash")
    first, second = (json.loads(c.result) for c in turn.tool_calls)
    assert first["ok"] and first["stdout"] == f"{os.path.realpath(tmp_path)}\nhi\n"
    assert second["timed_out"] and not second["ok"] and "late" not in second["stdout"]
    assert turn.tool_calls[1].elapsed_ms < 3000


def test_callers_handler_is_kept(tmp_path, llm_server):
    mine = RegisteredTool(name="read_file", description="my reader", handler=lambda a: "mine")
    agent = make_agent(tmp_path, llm_server.client(), extra_tools=[mine])
    assert agent.registry.get("read_file").handler("x") == "mine"
    assert agent.registry.get("memory").input_schema["required"] == ["action"]


# ---------------------------------------------------------------------- chat command
def test_chat_command(tmp_path, llm_server):
    llm_server.script(
        Reply(tool_calls=[call("memory", id="m", action="save", content="User likes green tea",
                               category="preference")]),
        Reply(text="I will remember that you like green tea.", chunk_size=5))
    env = dict(os.environ, MACLAW_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "maclaw_fast.cli", "chat", "--llm-url", llm_server.url + "/v1",
         "--model", "test-model", "--embedder", "hash", "--store", str(tmp_path / "store"),
         "--off", "rerank", "--off", "extractor"],
        input="I like green tea, remember it\n/exit\n", capture_output=True, text=True,
        timeout=60, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # the sample catalog's entries have no handlers here: only the runnable built-ins route
    assert "recalled no memories" in out and "routed 4 tools:" in out
    assert "db_query" not in out
    assert "-> memory (save): ok" in out
    assert "assistant> I will remember that you like green tea." in out
    calls = [r.json for r in llm_server.requests if "tools" in r.json]
    assert len(calls) == 2 and all(c["stream"] is True for c in calls)
    with MemoryStore.open(tmp_path / "store", embedder="hash") as store:
        assert [e.content for e in store.list()] == ["User likes green tea"]
    bad = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", "chat"], capture_output=True,
                         text=True, timeout=60, env=dict(env, MACLAW_LLM_BASE_URL=""))
    assert bad.returncode == 2 and "--llm-url" in bad.stderr
