"""A tool's vector from two views: its whole text and its description (RouterConfig.description_view)."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast.config import RouterConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.tools import Platform, RegisteredTool, ToolRegistry, ToolRouter
from maclaw_fast.tools.tool_vectors import combine_views, view_texts

SCHEMA = {"properties": {"plate_number": {"type": "string", "description": "车牌号"},
                         "city": {"type": "string", "description": "违章所在城市"}}}


class RecordingEmbedder(HashEmbedder):
    def __init__(self, dim=64):
        super().__init__(dim)
        self.seen = []

    def embed(self, texts):
        self.seen += list(texts)
        return super().embed(texts)


def tools():
    return [RegisteredTool(name="queryViolation", description="查询交通违章记录", category="mcp",
                           input_schema=SCHEMA),
            RegisteredTool(name="payFine", description="在线缴纳违章罚款"),
            RegisteredTool(name="bare")]


def unit(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


def test_view_texts_lists_whole_texts_then_descriptions():
    ts = tools()
    ToolRegistry(ts)  # fills the MCP tool's body summary from its schema
    texts, owner = view_texts(ts)
    assert texts[:3] == [f"{t.name} {t.description}\n{t.body_summary}" for t in ts]
    assert "车牌号" in texts[0]  # the parameter lines are part of the whole text
    assert texts[3:] == ["查询交通违章记录", "在线缴纳违章罚款"]  # "bare" has no description
    assert owner.tolist() == [0, 1, 2, 0, 1]
    texts1, owner1 = view_texts(ts, description_view=False)
    assert texts1 == texts[:3] and owner1.tolist() == [0, 1, 2]


def test_combine_views_matches_a_plain_loop():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n_tools = int(rng.integers(1, 8))
        owner = np.concatenate([np.arange(n_tools), rng.integers(0, n_tools, rng.integers(0, 8))])
        vecs = rng.normal(size=(len(owner), 5)).astype(np.float32)
        got = combine_views(vecs, owner, n_tools)
        for t in range(n_tools):
            want = unit(sum(vecs[j].astype(np.float64) for j in range(len(owner)) if owner[j] == t))
            np.testing.assert_allclose(got[t], want, atol=1e-5)


@pytest.mark.parametrize("views", [True, False])
def test_router_stores_the_normalised_mean_of_the_views(views):
    emb = RecordingEmbedder()
    ts = tools()
    router = ToolRouter(ToolRegistry(ts), embedder=emb, platform=Platform(),
                        config=RouterConfig(description_view=views, core_tools=()))
    router.prepare()
    whole = {t.name: f"{t.name} {t.description}\n{t.body_summary}" for t in ts}
    for t in ts:
        row = router._rows[t.name]
        got = router.vectors.matrix[row]
        ref = HashEmbedder(64).embed([whole[t.name]])[0]
        if views and t.description:
            ref = unit(unit(ref) + unit(HashEmbedder(64).embed([t.description])[0]))
        np.testing.assert_allclose(got, unit(ref), atol=1e-5)
    assert ("查询交通违章记录" in emb.seen) is views
    assert len(emb.seen) == 3 + (2 if views else 0)  # one batch: every view once


def test_a_description_matching_the_request_lifts_a_tool_with_a_long_schema():
    """The whole text of a tool with many parameters is mostly parameter lines; its description
    view keeps the vector near what the tool does."""
    params = {f"field_{i}": {"type": "string", "description": f"the value of field {i}"}
              for i in range(12)}
    ts = [RegisteredTool(name="submit_form", description="book a flight ticket", category="mcp",
                         input_schema={"properties": params}),
          RegisteredTool(name="field_reader", description="read the value of a field")]
    cos = {}
    for views in (True, False):
        router = ToolRouter(ToolRegistry(ts), embedder=HashEmbedder(256), platform=Platform(),
                            config=RouterConfig(description_view=views, core_tools=()))
        ranked = router.retrieve("book a flight ticket", 2, mode="vector")
        cos[views] = {t.name: t.cosine for t in ranked}
        if views:
            assert ranked[0].name == "submit_form"
    assert cos[True]["submit_form"] > cos[False]["submit_form"] + 0.1


def test_description_view_must_be_a_bool():
    with pytest.raises(ValidationError):
        RouterConfig(description_view="yes")
