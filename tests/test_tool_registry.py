"""Registry, body summaries, MCP bodies, catalogs, groups, selector, route log, enrichment."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from maclaw_fast.config import RouterConfig
from maclaw_fast.errors import LLMError, NotFoundError, ValidationError
from maclaw_fast.tools import (EnrichmentStore, GroupActivator, Platform, RegisteredTool,
                               RouteLog, Selector, ToolRegistry, body_from_schema, load_catalog,
                               truncate_body)
from maclaw_fast.tools.groups import match_skills

DATA = Path(__file__).resolve().parents[1] / "data"


# ---------------------------------------------------------------- truncate_body / MCP bodies

def test_truncate_body_rules():
    assert truncate_body("short", 10) == "short"
    assert truncate_body("ab\ncd\nef", 5) == "ab\ncd\n..."      # 2 + 1 + 2 = 5 fits
    assert truncate_body("ab\ncd\nef", 4) == "ab\n..."
    assert truncate_body("abcdefgh\nij", 3) == "abc..."         # first line alone too long
    body = "\n".join(f"line {i:04d}" for i in range(400))
    out = truncate_body(body, 1500)
    assert out.endswith("\n...") and len(out) <= 1504
    assert body.startswith(out[:-4]) and body[len(out) - 4] == "\n"
    with pytest.raises(ValidationError):
        truncate_body("x", -1)


def test_body_from_schema():
    schema = {"type": "object", "properties": {
        "sql": {"type": "string", "description": "the query"},
        "limit": {"type": "integer"},
        "any_thing": {"description": "free form"}}}
    assert body_from_schema(schema) == ("Parameters:\n- any_thing (any): free form\n"
                                        "- limit (integer)\n- sql (string): the query")
    assert body_from_schema({"type": "object"}) == ""
    assert body_from_schema(None) == ""


def test_mcp_tool_gets_body_and_summary_on_register():
    reg = ToolRegistry()
    long_desc = "x" * 2000
    reg.register(RegisteredTool(name="q", category="mcp", input_schema={
        "properties": {"a": {"type": "string", "description": long_desc}}}))
    t = reg.get("q")
    assert t.body.startswith("Parameters:\n- a (string): x")
    assert t.body_summary == truncate_body(t.body, 1500) and len(t.body_summary) <= 1503


# ---------------------------------------------------------------- registry

def test_register_replace_unregister_and_callbacks():
    reg = ToolRegistry()
    events = []
    unsubscribe = reg.on_change(lambda ev, name, tool: events.append((ev, name)))
    reg.register(RegisteredTool(name="a", description="one"))
    reg.register(RegisteredTool(name="b"))
    reg.register(RegisteredTool(name="a", description="two"))
    assert [t.name for t in reg.list()] == ["b", "a"] and reg.get("a").description == "two"
    reg.set_status("b", "degraded")
    assert reg.unregister("b").name == "b"
    assert events == [("register", "a"), ("register", "b"), ("register", "a"), ("status", "b"),
                      ("unregister", "b")]
    unsubscribe()
    reg.register(RegisteredTool(name="c"))
    assert len(events) == 5
    with pytest.raises(NotFoundError):
        reg.get("b")
    with pytest.raises(NotFoundError):
        reg.unregister("b")


@pytest.mark.parametrize("bad", [
    dict(name=""), dict(name="  "), dict(name="x", category="plugin"),
    dict(name="x", status="broken"), dict(name="x", needs=["gpu"]), dict(name="x", priority=1.5)])
def test_invalid_tools_are_rejected_and_nothing_registered(bad):
    reg = ToolRegistry()
    with pytest.raises(ValidationError):
        reg.register_many([RegisteredTool(name="ok"), RegisteredTool(**bad)])
    assert len(reg) == 0


def test_available_filters_status_and_capabilities():
    reg = ToolRegistry([
        RegisteredTool(name="plain"),
        RegisteredTool(name="gone", status="unavailable"),
        RegisteredTool(name="slow", status="degraded"),
        RegisteredTool(name="shot", needs=["display"]),
        RegisteredTool(name="clip", needs=["clipboard"]),
        RegisteredTool(name="net", needs=["network"])])
    headless = Platform(display=False, clipboard=False, network=True)
    assert [t.name for t in reg.available(headless)] == ["plain", "slow", "net"]
    desktop = Platform()
    assert [t.name for t in reg.available(desktop)] == ["plain", "slow", "shot", "clip", "net"]


def test_registry_is_thread_safe():
    reg = ToolRegistry()
    seen = []
    reg.on_change(lambda ev, name, tool: seen.append(name))

    def work(k):
        for i in range(200):
            reg.register(RegisteredTool(name=f"t{k}_{i}"))
            if i % 3 == 0:
                reg.unregister(f"t{k}_{i}")
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reg) == 4 * (200 - 67) and len(seen) == 4 * (200 + 67)


def test_load_sample_catalogs():
    tools = load_catalog(DATA / "tools.json")
    names = [t.name for t in tools]
    assert len(tools) >= 70 and len(set(names)) == len(names)
    assert set(RouterConfig().core_tools) <= set(names)
    assert all(t.body_summary == truncate_body(t.body, 1500) for t in tools)
    zh = load_catalog(DATA / "tools_zh20.json")
    assert len(zh) == 20 and "query_database" in {t.name for t in zh}


def test_catalog_errors(tmp_path):
    with pytest.raises(ValidationError, match="not found"):
        load_catalog(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"tools": 3}')
    with pytest.raises(ValidationError):
        load_catalog(bad)
    bad.write_text('[{"name": "x", "priority": "high"}]')
    with pytest.raises(ValidationError):
        load_catalog(bad)


# ---------------------------------------------------------------- groups

def test_spec_group_examples():
    g = GroupActivator(RouterConfig().group_keywords)
    assert set(g.activate("帮我登录网站")) == {"browser", "web", "automation"}
    assert "test" not in g.activate("what is the latest news")
    assert "test" in g.activate("run the test suite")
    assert set(g.activate("我要查询数据库")) == {"database", "sql", "query", "db"}
    assert set(g.activate("Open the DATABASE")) == {"database", "sql", "query", "db"}
    assert g.activate("") == () and g.activate("hello there") == ()
    assert "git" not in g.activate("legitimate digits")


def test_config_group_table_matches_shipped_data():
    shipped = json.loads((DATA / "group_keywords.json").read_text(encoding="utf-8"))
    cfg = [(list(k), list(t)) for k, t in RouterConfig().group_keywords]
    assert [(e["keywords"], e["tags"]) for e in shipped] == cfg


def test_match_skills_rule():
    recs = [{"name": "pdf_tools", "description": "merge pdf files"}]
    assert match_skills(["merge", "pdf"], recs) == ["pdf_tools"]
    assert match_skills(["x"], [{"name": "x y", "description": ""}]) == []   # 1 char, 1 token
    assert match_skills(["x", "y"], [{"name": "x y", "description": ""}]) == ["x y"]


# ---------------------------------------------------------------- selector

def test_selector_profiles_and_rules():
    sel = Selector()
    assert [p.name for p in sel.profiles] == ["claude", "codex", "gemini", "cursor", "opencode",
                                              "iflow", "kilo"]
    assert [p.base_score for p in sel.profiles] == [0.9, 0.85, 0.85, 0.8, 0.75, 0.75, 0.75]
    empty = sel.recommend("")
    assert empty.name == "claude" and empty.scores["codex"] == 0.85
    res = sel.recommend("", installed=["kilo"])
    assert res.name == "kilo" and res.scores["kilo"] == pytest.approx(2.75)
    task = "write unit tests for a fastapi service"
    res = sel.recommend(task)
    best = max(res.scores.values())
    assert res.scores[res.name] == best and any(v > p.base_score for p, v in
                                                zip(sel.profiles, res.scores.values()))
    assert Selector([]).recommend("anything").name == "claude"


# ---------------------------------------------------------------- route log

def test_route_log_format_and_truncation(tmp_path):
    log = RouteLog(tmp_path / "tool_route.log", max_bytes=600, clock=lambda: 0.0)
    fields = dict(total=45, core=22, candidates=23, hybrid=True, body_aware=True,
                  top=[("sql_query", 0.89234), ("db_connect", 0.7654)],
                  selected=["bash", "sql_query"], reranked=["sql_query"])
    log.write("帮我写一个数据库查询" + "x" * 200, **fields)
    text = log.path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("=== Tool Route [") and lines[1] == "Message: " + (
        "帮我写一个数据库查询" + "x" * 200)[:100]
    assert "Total tools: 45 | Core: 22 | Candidates: 23 | Hybrid: true" in lines
    assert "  #1 sql_query = 0.8923" in lines and "Selected tools (2):" in lines
    assert "  - sql_query" in lines and lines[-1] == "---"
    assert "Reranker output (1): #1 sql_query" in lines
    for _ in range(3):
        log.write("again", **fields)
    text = log.path.read_text(encoding="utf-8")
    assert text.startswith("=== log truncated") and text.count("=== Tool Route") <= 2


# ---------------------------------------------------------------- enrichment

def test_builtin_enrichments_cover_core_tools(tmp_path):
    store = EnrichmentStore(tmp_path / "e.json")
    for name in RouterConfig().core_tools:
        assert len(store.get(name)) >= 3, name
    text = store.search_text("bash", "bash Run a shell command", ["shell"])
    assert text.startswith("bash Run a shell command shell | ") and text.count(" | ") >= 3


def test_enrichment_persistence_and_callbacks(tmp_path):
    path = tmp_path / "tool_enrichment.json"
    store = EnrichmentStore(path, builtins=False, clock=lambda: 0.0)
    changed = []
    store.on_change(changed.append)
    store.set("db_query", ["run sql", "  ", "查询数据库"])
    assert changed == ["db_query"]
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw == [{"tool_name": "db_query", "synthetic_queries": ["run sql", "查询数据库"],
                    "updated_at": "1970-01-01T00:00:00Z"}]
    assert EnrichmentStore(path, builtins=False).get("db_query") == ["run sql", "查询数据库"]


def test_enrichment_generated_by_llm(llm_server, tmp_path):
    from tests.llm_server import Reply

    queries = ["show my orders table", "run a select query", "count rows in users",
               "list slow queries", "查一下订单表"]
    llm_server.script(Reply(text="Sure:\n```json\n" + json.dumps(queries, ensure_ascii=False)
                            + "\n```"), Reply(text="no idea"))
    store = EnrichmentStore(tmp_path / "e.json", builtins=False, llm=llm_server.client())
    tool = RegisteredTool(name="db_query", description="Run SQL against the database")
    assert store.generate(tool) == queries and store.get("db_query") == queries
    prompt = llm_server.requests[0].json["messages"][0]["content"]
    assert "db_query" in prompt and "Chinese" in prompt
    errors = store.ensure([tool, RegisteredTool(name="other", description="x")])
    assert list(errors) == ["other"] and store.get("other") == []
    with pytest.raises(LLMError):
        EnrichmentStore(builtins=False).generate(tool)
