"""ToolRouter behaviours (design §12, §15 and issue 4)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_fast.config import RouterConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.tools import (EnrichmentStore, LLMReranker, Platform, RegisteredTool,
                               ToolRegistry, ToolRouter, UsageTracker, load_catalog)
from maclaw_fast.tools.enrichment import parameter_text

DATA = Path(__file__).resolve().parents[1] / "data"
CORE = RouterConfig().core_tools
DESKTOP = Platform()
MESSAGES = ["我要查询数据库", "帮我登录网站", "what is the latest news", "", "git commit my changes",
            "resize this image to 800px", "translate the pdf to english", "schedule a reminder",
            "查看 docker 容器日志", "send an email to Bob", "click the button on the desktop app"]


class CountingEmbedder(HashEmbedder):
    def __init__(self, dim=64):
        super().__init__(dim)
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(DATA / "tools.json")


def make(tools, **kw):
    kw.setdefault("embedder", HashEmbedder(128))
    kw.setdefault("platform", DESKTOP)
    return ToolRouter(ToolRegistry(tools), **kw)


def check_budget(res, tools, cfg=RouterConfig()):
    by = {t.name: t for t in tools}
    names = [n for n in res.names if n != cfg.hint_tool_name]
    assert len(names) <= cfg.max_tools and len(set(names)) == len(names)
    assert len(res.names) <= cfg.max_tools + 1
    assert sum(by[n].category != "builtin" for n in names) <= cfg.max_dynamic
    for core in cfg.core_tools:
        if core in by and by[core].status != "unavailable" and not by[core].needs:
            assert core in names


# ---------------------------------------------------------------- budget

def test_small_catalog_returned_whole_core_first_then_by_name(catalog):
    tools = catalog[:28][::-1]
    res = make(tools).route("我要查询数据库")
    core = [n for n in CORE if n in {t.name for t in tools}]
    rest = sorted(t.name for t in tools if t.name not in CORE)
    assert core and rest
    assert res.names == core + rest
    assert [t.reason for t in res.tools] == ["core"] * len(core) + ["all"] * len(rest)


def test_large_catalog_is_cut_to_budget_with_all_core(catalog):
    assert len(catalog) >= 29
    router = make(catalog)
    for msg in MESSAGES:
        res = router.route(msg)
        check_budget(res, catalog)
        assert res.names[: len(CORE)] == list(CORE) and len(res.names) == 28
        assert res.total == len(catalog) and res.n_core == len(CORE)


def test_nonbuiltin_cap_holds_when_many_nonbuiltin_match():
    core = [RegisteredTool(name=n, description=f"core tool {n}") for n in CORE]
    mcp = [RegisteredTool(name=f"db_tool_{i}", description=f"database query tool number {i}",
                          category="mcp", tags=["database"]) for i in range(40)]
    builtin = [RegisteredTool(name=f"local_{i}", description="something else entirely")
               for i in range(10)]
    small = RouterConfig(max_tools=30, max_dynamic=4)
    router = make(core + mcp + builtin, config=small)
    res = router.route("database query")
    names = res.names
    assert sum(n.startswith("db_tool_") for n in names) == 4 and len(names) == 30
    assert names[:23] == list(CORE)


@given(st.text(max_size=40))
@settings(max_examples=40, deadline=None)
def test_any_message_respects_budget(catalog_router, msg):
    router, tools = catalog_router
    check_budget(router.route(msg), tools)


@pytest.fixture(scope="module")
def catalog_router(catalog):
    return make(catalog), catalog


def test_empty_message_still_returns_tools(catalog):
    res = make(catalog).route("")
    assert len(res.names) == 28 and set(CORE) <= set(res.names)
    non_core = [t.name for t in catalog if t.name not in CORE][:10]
    res = make(non_core and [t for t in catalog if t.name not in CORE]).route("")
    assert len(res.names) == 28 and all(t.reason == "fill" for t in res.tools)


def test_unavailable_and_headless_tools_are_left_out(catalog):
    router = make(catalog, platform=Platform(display=False, clipboard=False))
    needs_screen = {t.name for t in catalog if {"display", "clipboard"} & set(t.needs)}
    assert needs_screen
    for msg in ("take a screenshot", "copy to clipboard", "我要查询数据库"):
        assert not needs_screen & set(router.route(msg).names)
    router.registry.set_status("db_query", "unavailable")
    assert "db_query" not in router.route("我要查询数据库").names
    router.registry.set_status("db_query", "available")
    assert "db_query" in router.route("我要查询数据库").names


# ---------------------------------------------------------------- examples

def zh_router(embedder):
    core = [t for t in load_catalog(DATA / "tools.json") if t.name in CORE]
    zh = load_catalog(DATA / "tools_zh20.json")
    assert len(core) == 23 and len(zh) == 20
    return make(core + zh, embedder=embedder), core + zh


@pytest.mark.parametrize("embedder", [None, "hash"])
def test_database_query_selected_from_chinese_catalog(embedder):
    router, tools = zh_router(embedder)
    res = router.route("我要查询数据库")
    check_budget(res, tools)
    assert "query_database" in res.names
    assert res.get("query_database").reason == "group" and "database" in res.groups
    dyn = [t for t in res.tools if t.reason not in ("core",)]
    assert dyn[0].name == "query_database"


def test_database_query_selected_with_onnx_embedder():
    pytest.importorskip("onnxruntime")
    from maclaw_fast.embedding import OnnxEmbedder

    try:
        emb = OnnxEmbedder()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"ONNX model unavailable: {exc}")
    router, tools = zh_router(emb)
    res = router.route("我要查询数据库")
    assert "query_database" in res.names
    ranked = router.retrieve("我要查询数据库", 1, include_core=False)
    assert ranked[0].name == "query_database" and ranked[0].cosine > 0
    weather = router.retrieve("明天北京天气怎么样", 3, include_core=False, mode="vector")
    assert "weather_now" in [t.name for t in weather]


def test_login_activates_browser_group(catalog):
    router = make(catalog)
    res = router.route("帮我登录网站")
    assert set(res.groups) == {"browser", "web", "automation"}
    tagged = {t.name for t in catalog if {"browser", "web", "automation"} & set(t.tags)
              and t.name not in CORE}
    grouped = [t.name for t in res.tools if t.reason == "group"]
    assert grouped and set(grouped) <= tagged
    assert all(t.group for t in res.tools if t.reason == "group")


def test_latest_news_does_not_activate_test_group(catalog):
    res = make(catalog).route("what is the latest news")
    assert "test" not in res.groups
    assert not [t for t in res.tools if t.reason == "group"]


def test_score_breakdown_follows_formula(catalog):
    router = make(catalog)
    res = router.route("resize this image to 800px")
    ranked = [t for t in res.tools if t.reason == "ranked"]
    assert ranked and ranked[0].name.startswith("image")
    for t in ranked:
        assert t.score == pytest.approx(0.9 * t.retrieval + 0.1 * t.priority)
    assert [t.score for t in ranked] == sorted((t.score for t in ranked), reverse=True)


def test_lone_bm25_hit_keeps_its_lead():
    core = [RegisteredTool(name=n) for n in CORE]
    others = [RegisteredTool(name=f"t{i}", description=f"plain tool {i}") for i in range(10)]
    others.append(RegisteredTool(name="zebra_feeder", description="feeds the zebra"))
    res = make(core + others, embedder=None).route("zebra")
    top = res.tools[len(CORE)]
    assert top.name == "zebra_feeder" and top.retrieval == 1.0 and top.bm25 > 0


class TableEmbedder:
    """Maps known texts to fixed directions: a vector-only match without shared words."""

    dim = 4
    fingerprint = "table-v1"

    def embed(self, texts):
        out = np.zeros((len(texts), 4), np.float32)
        for i, t in enumerate(texts):
            out[i] = [1, 0, 0, 0] if ("automobile" in t or "car" in t) else [0, 0.1, 1, 0]
        return out


def test_vector_only_match_is_a_candidate():
    core = [RegisteredTool(name=n, description="core") for n in CORE]
    others = [RegisteredTool(name=f"t{i}", description=f"unrelated widget {i}") for i in range(30)]
    others.append(RegisteredTool(name="rent_vehicle", description="rent an automobile"))
    router = make(core + others, embedder=TableEmbedder())
    res = router.route("I need a car")
    t = res.get("rent_vehicle")
    assert t is not None and t.bm25 == 0 and t.cosine > 0.9 and t.reason == "ranked"
    assert res.tools[len(CORE)].name == "rent_vehicle"


# ---------------------------------------------------------------- experience, batch

def test_usage_history_lifts_a_tool(catalog):
    usage = UsageTracker(clock=lambda: 1e9)
    router = make(catalog, usage=usage)
    msg = "convert the value"
    before = [t for t in router.route(msg).tools if t.reason == "ranked"]
    # the runner-up: experience (weight 0.3) can lift a tool whose retrieval is within reach
    # of the leader's (0.6 · gap < 0.3), not one ranked on a stray shared term
    low = before[1]
    assert low.name != before[0].name and low.experience == 0.0
    assert 0.6 * (before[0].retrieval - low.retrieval) < 0.3
    for _ in range(5):
        usage.record(low.name, msg, success=True, timestamp=1e9)
    after = router.route(msg)
    lifted = [t for t in after.tools if t.reason == "ranked"][0]
    assert lifted.name == low.name and lifted.experience == pytest.approx(1.0)
    assert lifted.score == pytest.approx(0.6 * lifted.retrieval + 0.3 + 0.1 * lifted.priority)
    for _ in range(20):
        usage.record(low.name, msg, success=False, timestamp=1e9)
    assert router.route(msg).get(low.name).experience == 0.0


def test_route_batch_equals_route(catalog):
    usage = UsageTracker(clock=lambda: 1e9)
    for i, msg in enumerate(MESSAGES):
        usage.record(catalog[30 + i].name, msg, success=i % 3 != 0, timestamp=1e9 - i * 3600)
    router = make(catalog, usage=usage)
    batch = router.route_batch(MESSAGES)
    single = [router.route(m) for m in MESSAGES]
    assert [b.names for b in batch] == [s.names for s in single]
    for b, s in zip(batch, single):
        for x, y in zip(b.tools, s.tools):
            assert x.name == y.name and x.reason == y.reason
            assert x.score == pytest.approx(y.score, abs=1e-5)
    table = router.route_batch_arrow(MESSAGES)
    rows = table.to_pylist()
    assert [[r["name"] for r in rows if r["message"] == q] for q in range(len(MESSAGES))] == \
        [s.names for s in single]
    assert router.route_batch([]) == []
    with pytest.raises(ValidationError):
        router.route_batch("not a list")


def test_precomputed_query_vector_equals_embedded(catalog):
    emb = HashEmbedder(128)
    router = make(catalog, embedder=emb)
    msg = "resize this image to 800px"
    assert router.route(msg, query_vector=emb.embed([msg])[0]).names == router.route(msg).names
    with pytest.raises(ValidationError):
        router.route(msg, query_vector=np.zeros(5))


# ---------------------------------------------------------------- reranker

class SpyReranker:
    def __init__(self, answer=None, error=None):
        self.calls, self.answer, self.error = [], answer, error

    def rerank(self, message, candidates, top_k):
        self.calls.append((message, [c["name"] for c in candidates], top_k))
        if self.error:
            raise self.error
        return self.answer(candidates) if callable(self.answer) else self.answer


def test_reranker_only_called_when_candidates_exceed_budget(catalog):
    spy = SpyReranker(answer=[])
    small = [t for t in catalog if t.name in CORE] + [
        t for t in catalog if t.name not in CORE][:6]  # 29 tools, 6 slots
    router = make(small, reranker=spy, embedder=None)
    router.route("zzzz qqqq")  # no candidate at all
    assert spy.calls == []
    big = make(catalog, reranker=spy)
    big.route("我要查询数据库")
    assert len(spy.calls) == 1
    msg, names, k = spy.calls[0]
    assert msg == "我要查询数据库" and k == 5 and 5 < len(names) <= 20
    assert not set(names) & set(CORE)


def test_reranker_moves_names_to_front_and_errors_change_nothing(catalog):
    plain = make(catalog).route("我要查询数据库")
    broken = make(catalog, reranker=SpyReranker(error=RuntimeError("boom"))).route("我要查询数据库")
    unknown = make(catalog, reranker=SpyReranker(answer=["nope", 3])).route("我要查询数据库")
    assert broken.names == plain.names == unknown.names and broken.reranked == ()

    def pick_last_two(cands):
        return [cands[-1]["name"], "not_a_tool", cands[-2]["name"]]
    spy = SpyReranker(answer=pick_last_two)
    res = make(catalog, reranker=spy).route("我要查询数据库")
    cands = spy.calls[0][1]
    dyn = [t for t in res.tools if t.reason != "core"]
    assert [t.name for t in dyn[:2]] == [cands[-1], cands[-2]]
    assert dyn[0].reason == "rerank" and res.reranked == (cands[-1], cands[-2])
    check_budget(res, catalog)


def test_llm_reranker_through_llm_client(catalog, llm_server):
    from tests.llm_server import Reply

    llm_server.script(Reply(text='["db_migrate", "unknown_tool"]'))
    router = make(catalog, reranker=LLMReranker(llm_server.client()))
    res = router.route("我要查询数据库")
    assert res.tools[len(CORE) - 1 if "screenshot" not in CORE else len(CORE)].name == "db_migrate"
    prompt = llm_server.requests[0].json["messages"][0]["content"]
    assert "我要查询数据库" in prompt and "db_query" in prompt
    llm_server.script(Reply(text="I cannot decide"))
    assert router.route("我要查询数据库").names == make(catalog).route("我要查询数据库").names


# ---------------------------------------------------------------- sessions, discovery

def test_discover_activates_for_session_until_reset(catalog):
    router = make(catalog)
    found = router.discover("docker container logs", "s1")
    assert found and all(n.startswith("docker") or "log" in n for n in found[:2])
    assert len(found) <= 5 and not set(found) & set(CORE)
    res = router.route("hello", session="s1")
    assert set(found) <= set(res.names)
    assert all(res.get(n).reason == "session" for n in found)
    check_budget(res, catalog)
    assert not set(found) <= set(router.route("hello", session="s2").names)
    router.reset_session("s1")
    assert router.session_tools("s1") == []
    assert router.discover("zzzz qqqq", "s3") == []
    with pytest.raises(ValidationError):
        router.discover("x", "")


def test_deferred_tools_found_on_demand(catalog):
    hidden = RegisteredTool(name="lottery_checker", description="check lottery ticket numbers",
                            deferred=True)
    router = make(catalog + [hidden])
    assert "lottery_checker" not in router.route("check my lottery ticket").names
    found = router.search_deferred("lottery ticket", 3)
    assert [t.name for t in found] == ["lottery_checker"]
    router.activate("s", ["lottery_checker"])
    assert "lottery_checker" in router.route("anything", session="s").names


def test_registry_changes_are_followed(catalog):
    router = make(catalog)
    router.registry.register(RegisteredTool(name="zebra_feeder", description="feeds zebras"))
    assert router.route("zebra").tools[len(CORE)].name == "zebra_feeder"
    router.registry.unregister("zebra_feeder")
    assert "zebra_feeder" not in router.route("zebra").names
    router.registry.register(RegisteredTool(name="zebra_cleaner", description="cleans zebras"))
    assert router.route("zebra").tools[len(CORE)].name == "zebra_cleaner"


# ---------------------------------------------------------------- hint, enrichment, log, caches

def test_skill_hint_appended_when_a_skill_matches(catalog):
    class Rec:
        def get_recommendations(self):
            return [{"name": "excel_wizard", "description": "analyse spreadsheets and charts"}]
    router = make(catalog, recommender=Rec())
    res = router.route("analyse this spreadsheet")
    assert res.names[-1] == "skill_hint" and len(res.names) == 29 and res.hint == "excel_wizard"
    assert "skill_hint" not in router.route("send an email").names


def test_enrichment_queries_feed_bm25(catalog):
    store = EnrichmentStore(builtins=False)
    router = make(catalog, enrichment=store, embedder=None)
    assert "pdf_merge" != router.route("stitch booklets").tools[len(CORE)].name
    store.set("pdf_merge", ["stitch booklets together"], save=False)
    assert router.route("stitch booklets").tools[len(CORE)].name == "pdf_merge"


def test_route_log_written(catalog, tmp_path):
    router = make(catalog, route_log=tmp_path / "tool_route.log")
    router.route("我要查询数据库")
    text = (tmp_path / "tool_route.log").read_text(encoding="utf-8")
    assert "Message: 我要查询数据库" in text and "Selected tools (28):" in text
    assert f"Total tools: {len(catalog)} | Core: 23" in text


def test_route_log_written_when_the_whole_catalog_fits(catalog, tmp_path):
    from maclaw_fast.tools.routelog import route_log_stats

    tools = catalog[:20]
    path = tmp_path / "tool_route.log"
    router = make(tools, route_log=path)
    res = router.route("我要查询数据库")
    router.route_batch(["git commit", "send an email"])
    assert len(res.names) == len(tools)  # step 1 still returns the catalog whole
    text = path.read_text(encoding="utf-8")
    assert route_log_stats(path).decisions == 3
    assert "Message: 我要查询数据库" in text and "Message: send an email" in text
    assert f"Selected tools ({len(tools)}):" in text and "Within budget" in text
    assert f"Total tools: {len(tools)} | Core: {res.n_core}" in text
    assert all(f"  - {n}" in text for n in res.names)


def test_tool_embedding_disk_cache_and_query_lru(catalog, tmp_path):
    emb = CountingEmbedder()
    router = make(catalog, embedder=emb, cache_dir=tmp_path)
    router.route("x")
    # each tool's whole text and its description (two views), then the query
    views = len(catalog) + sum(bool(t.description.strip()) for t in catalog)
    assert emb.texts == views + 1
    router.route("x")
    assert emb.texts == views + 1  # query LRU hit
    router.close()
    assert (tmp_path / "tool_embeddings.arrow").is_file()
    emb2 = CountingEmbedder()
    make(catalog, embedder=emb2, cache_dir=tmp_path).route("y")
    assert emb2.texts == 1  # every tool vector came from disk
    emb3 = CountingEmbedder(dim=32)  # another fingerprint: the file is ignored
    make(catalog, embedder=emb3, cache_dir=tmp_path).route("y")
    assert emb3.texts == views + 1


def test_bad_arguments():
    with pytest.raises(ValidationError):
        ToolRouter([], embedder=None)
    router = make([RegisteredTool(name="a")], embedder=None)
    with pytest.raises(ValidationError):
        router.route(None)
    with pytest.raises(ValidationError):
        router.retrieve("x", 0)
    with pytest.raises(ValidationError):
        router.retrieve("x", mode="magic")
    with pytest.raises(ValidationError):
        ToolRouter(ToolRegistry(), config=RouterConfig(max_tools=0), embedder=None)


def test_cli_route_json(capsys):
    from maclaw_fast.cli import main

    assert main(["route", "我要查询数据库", "--json", "--embedder", "hash"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [t["name"] for t in out["tools"]]
    assert "db_query" in names and len(names) <= 28
    assert main(["tools", "discover", "docker logs", "--embedder", "none"]) == 0
    assert "docker_logs" in capsys.readouterr().out


def test_foreign_language_gate_reweights_only_chinese_queries():
    """[D] With an English-only embedder a mostly-Chinese query fuses as 0.7/0.3: its cosines
    are scaled by (0.4/0.7)·(0.3/0.6); English queries keep the design weights."""
    from maclaw_fast.embedding import HashEmbedder

    class EnglishOnly(HashEmbedder):
        languages = ("en",)

    from maclaw_fast.tools.fusion import foreign_query_scale

    cfg = RouterConfig(bm25_weight=0.4, cos_weight=0.6, foreign_query_bm25_weight=0.7)
    scale = foreign_query_scale(["查询数据库的工具", "query the database", "db 查询"],
                                EnglishOnly(dim=32), cfg)
    assert scale[0] == pytest.approx((0.4 / 0.7) * 0.3 / 0.6)
    assert scale[1] == 1.0
    assert scale[2] == pytest.approx((0.4 / 0.7) * 0.3 / 0.6)  # 4 of 6 characters are CJK
    # no language limits declared → no gate
    assert foreign_query_scale(["查询数据库"], HashEmbedder(dim=32), cfg).tolist() == [1.0]


# ---------------------------------------------------------------- R6 groups, stability, bad input

@pytest.mark.parametrize("message, tag", [("run the tests", "test"), ("list my files", "file"),
                                          ("query the databases", "database"),
                                          ("Committing via GIT now", "git")])
def test_group_keywords_fire_on_inflected_words(catalog, message, tag):
    res = make(catalog).route(message)
    assert tag in res.groups
    grouped = [t for t in res.tools if t.reason == "group"]
    by = {t.name: t for t in catalog}
    assert grouped and all(set(res.groups) & set(by[t.name].tags) for t in grouped)


@pytest.mark.parametrize("message", ["what is the latest news", "legitimate digits",
                                     "profile the filesystem? no: profiles"])
def test_group_keywords_do_not_fire_inside_words(message):
    from maclaw_fast.tools import GroupActivator

    g = GroupActivator(RouterConfig().group_keywords)
    tags = g.activate(message)
    assert "test" not in tags and "git" not in tags and "file" not in tags


def test_group_keyword_of_stop_words_only_is_rejected():
    from maclaw_fast.tools import GroupActivator

    with pytest.raises(ValidationError, match="no tokens"):
        GroupActivator([(("!!",), ("x",))])


def _churned_registry(tools):
    """The same final catalog reached another way: reverse order, extra tools registered and
    removed, some tools unregistered and registered again."""
    reg = ToolRegistry()
    router = ToolRouter(reg, embedder=HashEmbedder(128), platform=DESKTOP)
    reg.register_many([RegisteredTool(name=f"tmp_{i}", description="temporary") for i in range(9)])
    reg.register_many(list(reversed(tools)))
    for i in range(9):
        reg.unregister(f"tmp_{i}")
    for t in tools[5:15]:
        reg.unregister(t.name)
    reg.register_many(tools[5:15])
    return router


def test_routed_order_is_stable_for_prompt_caching(catalog):
    a = make(catalog)
    b = _churned_registry(catalog)
    assert a.n_rows != b.n_rows or [a._rows[t.name] for t in catalog] != [  # noqa: SLF001
        b._rows[t.name] for t in catalog]  # the rows really differ  # noqa: SLF001
    for msg in MESSAGES + ["any tool at all", "🙂"]:
        first = a.route(msg)
        assert a.route(msg).names == first.names  # same message, same state → same list
        assert b.route(msg).names == first.names  # same catalog, other history → same list
        assert first.names[: len(CORE)] == list(CORE)  # core tools fixed at the head
    small = catalog[:20]
    assert make(small).route("x").names == _churned_registry(small).route("x").names


def test_bad_messages_give_sensible_results(catalog):
    router = make(catalog)
    for msg in ("", "   ", "🙂🎉🔥", "the of and"):
        res = router.route(msg)
        check_budget(res, catalog)
        assert res.names[: len(CORE)] == list(CORE)
    huge = ("query the database for last month's orders " * 2500)[:100_000]
    res = router.route(huge)
    check_budget(res, catalog)
    assert "db_query" in res.names
    assert router.retrieve("🙂🎉", 3) is not None
    assert router.discover("🙂🎉", "s") == []


def test_duplicate_tool_names_are_reported(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([{"name": "a", "description": "one"},
                                {"name": "b", "description": "two"},
                                {"name": "a", "description": "three"}]))
    with pytest.raises(ValidationError, match="more than once: a"):
        load_catalog(path)
    with pytest.raises(ValidationError, match="duplicate tool names: a"):
        ToolRegistry([RegisteredTool(name="a"), RegisteredTool(name="a", description="x")])
    reg = ToolRegistry([RegisteredTool(name="a")])
    with pytest.raises(ValidationError):
        reg.register_many([RegisteredTool(name="b"), RegisteredTool(name="b")])
    assert [t.name for t in reg.list()] == ["a"]  # nothing was added


def test_tool_without_description_routes_by_name(tmp_path):
    path = tmp_path / "nodesc.json"
    items = [{"name": f"filler_{i}", "description": f"unrelated helper number {i}"}
             for i in range(40)] + [{"name": "convert_currency"}]
    path.write_text(json.dumps(items))
    tools = load_catalog(path)
    assert tools[-1].description == ""
    router = make(tools, embedder=None)
    assert router.route("convert currency please").names[0] == "convert_currency"


def test_cli_import_reports_replaced_tools(tmp_path, capsys):
    from maclaw_fast.cli import main

    src, into = tmp_path / "src.json", tmp_path / "into.json"
    into.write_text(json.dumps([{"name": "a", "description": "old"}]))
    src.write_text(json.dumps([{"name": "a", "description": "new"}, {"name": "b"}]))
    assert main(["tools", "import", str(src), "--into", str(into)]) == 0
    assert "replaced 1 tools of the same name: a" in capsys.readouterr().out


def test_camel_case_names_are_split_for_bm25():
    tools = [RegisteredTool(name=f"filler{i}", description=f"unrelated helper {i}")
             for i in range(40)] + [RegisteredTool(name="analyzeEvidence", description="")]
    split = make(tools, embedder=None)
    assert split.retrieve("analyze the evidence", 1)[0].name == "analyzeEvidence"
    plain = make(tools, embedder=None, config=RouterConfig(split_names=False))
    assert not [t for t in plain.retrieve("analyze the evidence", 3) if t.name == "analyzeEvidence"]


def test_parameter_names_and_descriptions_are_indexed_for_bm25():
    schema = {"type": "object", "properties": {
        "plate_number": {"type": "string", "description": "车牌号"},
        "stops": {"type": "array", "items": {"type": "object", "properties": {
            "city": {"type": "string", "description": "violation city"}}}}}}
    tools = [RegisteredTool(name=f"filler{i}", description=f"unrelated helper {i}",
                            category="mcp") for i in range(40)]
    tools.append(RegisteredTool(name="queryViolation", description="交通违章记录",
                                category="mcp", input_schema=schema))
    on = make(tools, embedder=None)
    for message in ("粤B6789X 这个车牌号", "which plate number", "the violation city"):
        assert on.retrieve(message, 1, mode="bm25")[0].name == "queryViolation", message
    off = make(tools, embedder=None, config=RouterConfig(index_parameters=False))
    assert not off.retrieve("which plate number", 3, mode="bm25")
    # capped: a huge schema adds at most parameter_chars characters
    big = {"properties": {f"p{i}": {"description": "word " * 50} for i in range(1000)}}
    assert len(parameter_text(big, 500)) <= 500 and parameter_text(big, 500).startswith("p0 word")


def test_default_router_picks_the_model_that_reads_the_catalog():
    """R7: ToolRouter's default ("auto") reads the catalog's language and says what it chose."""
    zh = load_catalog(DATA / "tools_zh20.json")
    en = [RegisteredTool(name=f"t{i}", description=f"convert files of kind {i} to pdf")
          for i in range(30)]
    r_zh = ToolRouter(ToolRegistry(zh), platform=DESKTOP)
    r_en = ToolRouter(ToolRegistry(en), platform=DESKTOP)
    assert r_zh.embedder.fingerprint.startswith("e5:") and r_zh.embedder_choice.startswith(
        "auto: e5")
    assert r_en.embedder.fingerprint.startswith("onnx:all-MiniLM") and r_en.embedder_choice \
        .startswith("auto: minilm")
    assert r_zh.stats()["embedder"] == r_zh.embedder.fingerprint
    assert ToolRouter(ToolRegistry(en), embedder=None).stats()["embedder_choice"] == \
        "none: BM25 only"


def test_cli_tools_stats_and_list_name_the_model(capsys):
    from maclaw_fast.cli import main

    zh = str(DATA / "tools_zh20.json")
    assert main(["tools", "stats", "--catalog", zh]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["tools"] == 20 and stats["embedder"].startswith("e5:")
    assert stats["embedder_choice"].startswith("auto: e5")
    assert main(["tools", "list", "--catalog", zh]) == 0
    assert "embedder auto: e5" in capsys.readouterr().err
