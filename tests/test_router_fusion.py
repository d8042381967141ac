"""How the router fuses BM25 and cosine: z-score normalisation and sentence-clause vectors."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast.config import RouterConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.text.clauses import clauses
from maclaw_fast.tools import Platform, RegisteredTool, ToolRegistry, ToolRouter

CORE = RouterConfig().core_tools
TWO_ASKS = "I need a car this weekend. Also find me a place for dinner on Friday."


class IntentEmbedder:
    """Texts about a car point one way, about dinner another; a text with both lies between
    them and near the widgets' direction (one vector for two requests)."""

    dim = 4
    fingerprint = "intent-v1"

    def __init__(self):
        self.texts = []

    def embed(self, texts):
        self.texts += list(texts)
        out = np.zeros((len(texts), 4), np.float32)
        for i, t in enumerate(texts):
            car = "car" in t or "automobile" in t
            eat = "dinner" in t or "dining" in t
            out[i] = ([0.3, 0.3, 1, 0] if car and eat else [1, 0, 0, 0] if car
                      else [0, 1, 0, 0] if eat else [0, 0.1, 1, 0])
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def catalog():
    tools = [RegisteredTool(name=n, description="core") for n in CORE]
    tools += [RegisteredTool(name=f"w{i}", description=f"unrelated widget {i}") for i in range(30)]
    tools += [RegisteredTool(name="rent_vehicle", description="rent an automobile"),
              RegisteredTool(name="book_table", description="reserve a dining table")]
    return tools


def make(config=RouterConfig(), embedder=None):
    return ToolRouter(ToolRegistry(catalog()), embedder=embedder or IntentEmbedder(),
                      config=config, platform=Platform())


def test_clauses_are_the_sentences_long_enough():
    assert clauses(TWO_ASKS) == ["I need a car this weekend.",
                                 "Also find me a place for dinner on Friday."]
    # "Fix it." is too short to be a request of its own: one sentence is left, so no clauses
    assert clauses("Fix it. Now please run the whole test suite again!") == []
    zh = "查一下明天的天气。再帮我订一张火车票！"
    assert clauses(zh, min_chars=5) == ["查一下明天的天气。", "再帮我订一张火车票！"]
    assert clauses("A first request here. " * 20, max_clauses=3) == ["A first request here."] * 3
    assert clauses("") == [] and clauses("one sentence only, however long it is") == []


def test_each_request_of_a_message_finds_its_tool():
    """The message's one vector sits between its two requests; each clause's vector finds the
    tool of its own request."""
    whole = make(RouterConfig(query_clauses=False)).retrieve(TWO_ASKS, 2)
    assert not {"rent_vehicle", "book_table"} & {t.name for t in whole}
    split = make().retrieve(TWO_ASKS, 2)
    assert {t.name for t in split} == {"rent_vehicle", "book_table"}
    res = make().route(TWO_ASKS)
    assert set(res.names[len(CORE):len(CORE) + 2]) == {"rent_vehicle", "book_table"}


def test_clause_cosine_is_the_best_over_message_and_clauses():
    emb = HashEmbedder(64)
    msg = "Please convert the invoice to pdf. Then send the report to the team by email."
    rows = emb.embed([msg] + clauses(msg))
    assert len(rows) == 3
    one = ToolRouter(ToolRegistry(catalog()), embedder=emb, platform=Platform(),
                     config=RouterConfig(query_clauses=False))
    n = len(catalog())
    per_row = [{t.name: t.cosine for t in one.retrieve(msg, n, mode="vector", query_vector=r)}
               for r in rows]
    stacked = ToolRouter(ToolRegistry(catalog()), embedder=emb, platform=Platform())
    got = {t.name: t.cosine for t in stacked.retrieve(msg, n, mode="vector", query_vector=rows)}
    for name, cos in got.items():
        assert cos == pytest.approx(max(p.get(name, -1.0) for p in per_row), abs=1e-6)
    # given the message's vector alone, the router embeds the clauses itself: same ranking
    assert [t.name for t in stacked.retrieve(msg, 8, query_vector=rows[0])] == [
        t.name for t in stacked.retrieve(msg, 8, query_vector=rows)]


def test_clauses_embedded_only_when_on_and_route_batch_agrees():
    emb = IntentEmbedder()
    router = make(embedder=emb)
    router.route("just one request")
    assert emb.texts[-1] == "just one request"
    router.route(TWO_ASKS)
    assert emb.texts[-2:] == clauses(TWO_ASKS)
    off_emb = IntentEmbedder()
    make(RouterConfig(query_clauses=False), off_emb).route(TWO_ASKS)
    assert not set(clauses(TWO_ASKS)) & set(off_emb.texts)
    msgs = [TWO_ASKS, "rent a car",
            "Where can we have dinner tonight? And is there a car to rent nearby?"]
    batch = router.route_batch(msgs)
    assert [r.names for r in batch] == [router.route(m).names for m in msgs]


def test_bad_fusion_config_and_query_vectors_are_rejected():
    with pytest.raises(ValidationError):
        RouterConfig(score_norm="softmax")
    with pytest.raises(ValidationError):
        RouterConfig(clause_min_chars=0)
    router = make()
    with pytest.raises(ValidationError):
        router.route(TWO_ASKS, query_vector=np.ones((3, 5)))
    with pytest.raises(ValidationError):
        router.retrieve(TWO_ASKS, query_vector=np.full((2, 4), np.nan))


class ReadsChinese(HashEmbedder):
    languages = ("multi", "en", "zh")


def _zh_catalog():
    tools = [RegisteredTool(name=n, description="core") for n in CORE]
    for i, (name, desc) in enumerate([
            ("query_violation", "查询车辆的交通违章记录"), ("pay_fine", "在线缴纳违章罚款"),
            ("book_flight", "预订机票 book a flight"), ("call_taxi", "叫一辆出租车"),
            ("search_song", "搜索歌曲 search songs"), ("weather", "查询城市天气 weather")]
            + [(f"widget_{i}", f"小工具 {i} widget") for i in range(40)]):
        tools.append(RegisteredTool(name=name, description=desc))
    return tools


@pytest.mark.parametrize("message", ["帮我查一下车的违章记录然后缴纳罚款", "查询北京天气",
                                     "book a flight and search songs"])
def test_mostly_chinese_query_fuses_at_the_chinese_weight(message):
    """With a model that reads Chinese, a mostly-Chinese message fuses as
    cjk_query_bm25_weight : 1 − it (here the same ranking and scores as explicit 0.2/0.8 weights
    with the setting off); an English message keeps bm25_weight : cos_weight."""
    kw = dict(embedder=ReadsChinese(64), platform=Platform())
    on = ToolRouter(ToolRegistry(_zh_catalog()), config=RouterConfig(cjk_query_bm25_weight=0.2), **kw)
    off = ToolRouter(ToolRegistry(_zh_catalog()), config=RouterConfig(cjk_query_bm25_weight=0.0), **kw)
    zh = message[0] != "b"
    want = off.retrieve(message, 10, weights=(0.2, 0.8) if zh else None)
    got = on.retrieve(message, 10)
    assert [t.name for t in got] == [t.name for t in want]
    assert [t.score for t in got] == pytest.approx([t.score for t in want], abs=1e-9)
    # route() (the kernels' path) applies the same weights
    off2 = ToolRouter(ToolRegistry(_zh_catalog()), config=RouterConfig(
        cjk_query_bm25_weight=0.0, **({"bm25_weight": 0.2, "cos_weight": 0.8} if zh else {})), **kw)
    r_on, r_off = on.route(message), off2.route(message)
    assert r_on.names == r_off.names
    assert [t.retrieval for t in r_on.tools] == pytest.approx([t.retrieval for t in r_off.tools])
    if zh:  # and it is not a no-op: the default weights rank differently or score differently
        plain = off.retrieve(message, 10)
        assert [t.score for t in plain] != pytest.approx([t.score for t in got], abs=1e-6)


@pytest.mark.parametrize("field", ["cjk_query_bm25_weight", "foreign_query_bm25_weight"])
@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_language_weights_outside_0_1_are_rejected(field, value):
    with pytest.raises(ValidationError):
        RouterConfig(**{field: value})
