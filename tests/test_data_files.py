"""Sanity checks for the sample data bundled in data/ (stdlib + pytest only)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"

CANONICAL_CATEGORIES = {
    "self_identity",
    "instruction",
    "preference",
    "project_knowledge",
    "session_checkpoint",
    "conversation_summary",
    "user_fact",
}
CATEGORY_ALIASES = {
    "feedback": "instruction",
    "project": "project_knowledge",
    "reference": "project_knowledge",
    "user": "user_fact",
}
# expected count range per canonical category (design §1 categories, brief's proportions)
CATEGORY_RANGES = {
    "self_identity": (3, 8),
    "instruction": (25, 35),
    "preference": (25, 35),
    "project_knowledge": (50, 70),
    "session_checkpoint": (20, 30),
    "conversation_summary": (20, 30),
    "user_fact": (20, 30),
}
CORE_TOOLS = [
    "bash", "read_file", "write_file", "list_directory", "send_and_observe",
    "create_session", "list_sessions", "get_session_output", "get_session_events",
    "control_session", "call_mcp_tool", "list_skills", "run_skill", "screenshot",
    "send_file", "memory", "web_search", "web_fetch", "set_nickname",
    "browser_connect", "browser_navigate", "browser_click", "discover_tool",
]
TOOL_CATEGORIES = {"builtin", "mcp", "skill", "non_code"}
NEEDS = {"display", "clipboard", "network"}
SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
HAN = re.compile(r"[\u4e00-\u9fff]")
PROFILE_ORDER = ["claude", "codex", "gemini", "cursor", "opencode", "iflow", "kilo"]
PROFILE_BASE = [0.9, 0.85, 0.85, 0.8, 0.75, 0.75, 0.75]
GROUP_TABLE = [
    (["数据库", "database"], ["database", "sql", "query", "db"]),
    (["git", "版本控制"], ["git", "vcs", "version"]),
    (["文件", "file"], ["file", "read", "write", "directory"]),
    (["mcp"], ["mcp"]),
    (["skill", "技能"], ["skill"]),
    (["会话", "session"], ["session"]),
    (["配置", "config"], ["config", "settings"]),
    (["记忆", "memory"], ["memory"]),
    (["定时", "schedule"], ["schedule", "task", "cron", "timer"]),
    (["网络", "network"], ["network", "web", "search", "fetch"]),
    (["搜索", "search"], ["web", "search", "internet", "fetch"]),
    (["网页", "web"], ["web", "fetch", "browse", "url"]),
    (["浏览器", "browser"], ["browser", "web", "automation", "test"]),
    (["自动化", "automation"], ["browser", "automation", "test"]),
    (["测试", "test"], ["browser", "automation", "test", "web"]),
    (["登录", "下单"], ["browser", "web", "automation"]),
    (["gui", "桌面", "desktop"], ["gui", "test", "automation", "desktop"]),
    (["录制"], ["gui", "test", "automation", "desktop"]),
]


def load(name: str):
    path = DATA / name
    text = path.read_text(encoding="utf-8")
    return json.loads(text)


def is_chinese(text: str) -> bool:
    return len(HAN.findall(text)) >= 0.2 * len(text)


@pytest.fixture(scope="module")
def memories():
    return load("memories.json")


@pytest.fixture(scope="module")
def tools():
    return load("tools.json")


@pytest.fixture(scope="module")
def zh20():
    return load("tools_zh20.json")


# ------------------------------------------------------------------ formatting
@pytest.mark.parametrize(
    "name",
    [
        "memories.json", "demo_queries.json", "tools.json", "tools_zh20.json",
        "core_enrichments.json", "selector_profiles.json", "group_keywords.json",
    ],
)
def test_json_files_parse_and_are_pretty(name):
    raw = (DATA / name).read_text(encoding="utf-8")
    obj = json.loads(raw)
    assert isinstance(obj, list) and obj
    assert raw == json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


# ------------------------------------------------------------------ memories
def test_memory_fields(memories):
    allowed = {"content", "category", "tags", "pinned", "age_hours", "access_count"}
    for m in memories:
        assert set(m) <= allowed, m
        assert isinstance(m["content"], str) and 30 <= len(m["content"]) <= 300, m["content"]
        assert m["category"] in CANONICAL_CATEGORIES | set(CATEGORY_ALIASES), m
        assert isinstance(m["tags"], list) and all(isinstance(t, str) and t for t in m["tags"])
        assert len(set(m["tags"])) == len(m["tags"])
        assert isinstance(m["age_hours"], (int, float)) and not isinstance(m["age_hours"], bool)
        assert m["age_hours"] >= 0
        if "pinned" in m:
            assert isinstance(m["pinned"], bool)
        if "access_count" in m:
            ac = m["access_count"]
            assert isinstance(ac, int) and not isinstance(ac, bool) and 1 <= ac <= 10


def test_memory_counts_and_mix(memories):
    assert 180 <= len(memories) <= 220
    counts = Counter(CATEGORY_ALIASES.get(m["category"], m["category"]) for m in memories)
    assert set(counts) == CANONICAL_CATEGORIES
    for cat, (lo, hi) in CATEGORY_RANGES.items():
        assert lo <= counts[cat] <= hi, (cat, counts[cat])
    zh = sum(is_chinese(m["content"]) for m in memories)
    assert 0.3 <= zh / len(memories) <= 0.5
    assert sum(len(m["content"]) >= 200 for m in memories) >= 2


def test_memory_contents_unique(memories):
    contents = [m["content"] for m in memories]
    dupes = [c for c, n in Counter(contents).items() if n > 1]
    assert not dupes


def test_episodic_and_project_memories_are_tagged(memories):
    for m in memories:
        if m["category"] in ("session_checkpoint", "conversation_summary", "project_knowledge"):
            assert m["tags"], m["content"]


def test_required_memories_present(memories):
    pk = [m for m in memories if m["category"] == "project_knowledge"]
    zh_deploy = [m for m in pk if "deploy.sh" in m["content"] and is_chinese(m["content"])
                 and {"atlas", "deploy"} <= set(m["tags"])]
    en_deploy = [m for m in pk if "deploy" in m["content"] and not is_chinese(m["content"])]
    assert zh_deploy and en_deploy
    projects = {t for m in pk for t in m["tags"]}
    assert {"atlas", "billing-api", "dataviz", "家庭相册"} <= projects
    text = "\n".join(m["content"] for m in memories)
    for needle in ("PostgreSQL", "migration", "git", "tea", "coffee", "Lin Yao", "Asia/Shanghai"):
        assert needle in text, needle


# ------------------------------------------------------------------ demo queries
def test_demo_queries(memories):
    queries = load("demo_queries.json")
    assert 10 <= len(queries) <= 16
    assert any(is_chinese(q["query"]) for q in queries)
    assert any(not is_chinese(q["query"]) for q in queries)
    project_tags = {t for m in memories for t in m["tags"]}
    for q in queries:
        assert set(q) == {"query", "project", "expect_ids"}
        assert isinstance(q["query"], str) and q["query"]
        assert q["project"] is None or q["project"] in project_tags
        ids = q["expect_ids"]
        assert isinstance(ids, list) and ids
        # ids of the bundled sample store: "sample-NNNN", NNNN = the index in memories.json
        assert all(i.startswith("sample-") and int(i[7:]) < len(memories) for i in ids), ids


# ------------------------------------------------------------------ tools
def check_tool(t):
    allowed = {"name", "description", "category", "tags", "priority", "needs", "input_schema", "body"}
    assert set(t) <= allowed and allowed - {"body"} <= set(t), t.get("name")
    assert isinstance(t["name"], str) and SNAKE.match(t["name"]), t["name"]
    assert isinstance(t["description"], str) and t["description"].strip()
    assert t["category"] in TOOL_CATEGORIES
    assert isinstance(t["tags"], list) and t["tags"] and all(isinstance(x, str) and x for x in t["tags"])
    assert isinstance(t["priority"], int) and not isinstance(t["priority"], bool)
    assert 0 <= t["priority"] <= 10
    assert isinstance(t["needs"], list) and set(t["needs"]) <= NEEDS
    schema = t["input_schema"]
    assert schema.get("type") == "object" and isinstance(schema.get("properties"), dict)
    for pname, prop in schema["properties"].items():
        assert isinstance(prop, dict) and isinstance(prop.get("type"), str), (t["name"], pname)
        assert isinstance(prop.get("description"), str) and prop["description"], (t["name"], pname)
    for req in schema.get("required", []):
        assert req in schema["properties"], (t["name"], req)
    if "body" in t:
        assert isinstance(t["body"], str) and t["body"]


def test_tools_schema(tools):
    for t in tools:
        check_tool(t)


def test_tools_counts_and_core(tools):
    assert 70 <= len(tools) <= 90
    names = [t["name"] for t in tools]
    assert len(names) == len(set(names))
    by_name = {t["name"]: t for t in tools}
    for core in CORE_TOOLS:
        assert core in by_name, core
        assert by_name[core]["category"] == "builtin"
    others = [t for t in tools if t["name"] not in CORE_TOOLS]
    zh = sum(is_chinese(t["description"]) for t in others)
    assert 0.35 <= zh / len(others) <= 0.65
    assert {t["category"] for t in others} == TOOL_CATEGORIES
    assert sum(len(t.get("body", "")) > 1500 for t in tools) >= 2
    db = by_name["db_query"]
    assert {"database", "sql", "query"} <= set(db["tags"])
    assert "查询数据库" in db["description"]


def test_tools_zh20(zh20):
    assert len(zh20) == 20
    for t in zh20:
        check_tool(t)
        assert t["category"] == "mcp"
        assert is_chinese(t["description"])
        assert t["name"] not in CORE_TOOLS
    names = [t["name"] for t in zh20]
    assert len(set(names)) == 20
    assert names.count("query_database") == 1
    db_tags = {"database", "sql", "query", "db"}
    db_like = [t["name"] for t in zh20 if db_tags & set(t["tags"]) or "数据库" in t["description"]]
    assert db_like == ["query_database"]


def test_core_enrichments():
    enr = load("core_enrichments.json")
    assert [e["tool_name"] for e in enr] == CORE_TOOLS
    for e in enr:
        assert set(e) == {"tool_name", "synthetic_queries", "updated_at"}
        qs = e["synthetic_queries"]
        assert len(qs) == 5 and all(isinstance(q, str) and q for q in qs)
        assert len(set(qs)) == 5
        assert sum(bool(HAN.search(q)) for q in qs) == 1, e["tool_name"]
        assert e["updated_at"] == "2026-11-01T00:00:00Z"


def test_selector_profiles():
    profiles = load("selector_profiles.json")
    assert [p["name"] for p in profiles] == PROFILE_ORDER
    assert [p["base_score"] for p in profiles] == PROFILE_BASE
    for p in profiles:
        assert set(p) == {"name", "languages", "frameworks", "task_types", "base_score", "description"}
        for key in ("languages", "frameworks", "task_types"):
            assert p[key] and all(isinstance(x, str) and x for x in p[key])
        assert isinstance(p["description"], str) and p["description"]


def test_group_keywords():
    groups = load("group_keywords.json")
    assert [(g["keywords"], g["tags"]) for g in groups] == GROUP_TABLE
    for g in groups:
        assert set(g) == {"keywords", "tags"}


def test_tool_tags_hit_groups(tools):
    group_tags = {t for _, tags in GROUP_TABLE for t in tags}
    hits = [t for t in tools if group_tags & set(t["tags"])]
    assert len(hits) >= len(tools) // 2


# ------------------------------------------------------------------ workspace
WS = DATA / "workspace"
DAILY = ["2026-11-20.md", "2026-11-25.md", "2026-11-28.md"]


def test_workspace_layout():
    assert (WS / "MEMORY.md").is_file()
    assert 30 <= len((WS / "MEMORY.md").read_text(encoding="utf-8").splitlines()) <= 60
    for name in DAILY:
        text = (WS / "memory" / name).read_text(encoding="utf-8")
        lines = text.splitlines()
        assert 20 <= len(lines) <= 60, name
        assert any(line.startswith("#") for line in lines)
        assert any(line.lstrip().startswith("- ") for line in lines)
        assert HAN.search(text) and re.search(r"[A-Za-z]{4,}", text)
    assert (WS / "memory" / "projects" / "atlas.md").is_file()
    md = sorted(p.relative_to(WS).as_posix() for p in WS.rglob("*.md"))
    assert md == sorted(["MEMORY.md", "memory/projects/atlas.md"] + [f"memory/{d}" for d in DAILY])


def test_workspace_zebra_once():
    total = sum(p.read_text(encoding="utf-8").lower().count("zebra") for p in WS.rglob("*.md"))
    assert total == 1
