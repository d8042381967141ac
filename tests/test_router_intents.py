"""The multi-intent budget: a message with several requests gets a tool for each."""

from __future__ import annotations

import numpy as np

from maclaw_fast.config import RouterConfig
from maclaw_fast.tools import Platform, RegisteredTool, ToolRegistry, ToolRouter
from maclaw_fast.tools.intents import admit, spread

TWO_ASKS = "Convert the invoice pdf file to text. Then send a short note to the team."
ONE_ASK = "convert the invoice pdf file to text"


def catalog():
    # five tools about the invoice pdf outscore the one that sends a note on the whole message
    tools = [RegisteredTool(name=f"pdf_{i}", description=f"convert invoice pdf file text {i}")
             for i in range(5)]
    tools += [RegisteredTool(name="send_note", description="send a note to a team member: "
                             + " ".join(f"channel{i}" for i in range(40))),
              RegisteredTool(name="weather", description="forecast the weather")]
    tools += [RegisteredTool(name=f"w{i}", description=f"unrelated widget {i}") for i in range(20)]
    return tools


def make(**kw):
    cfg = RouterConfig(core_tools=(), max_tools=3, max_dynamic=3, **kw)
    return ToolRouter(ToolRegistry(catalog()), embedder=None, config=cfg, platform=Platform())


def test_two_requests_get_a_tool_each():
    off = [t.name for t in make(clause_budget=False).retrieve(TWO_ASKS, 3)]
    assert "send_note" not in off and off[0].startswith("pdf_")
    on = [t.name for t in make().retrieve(TWO_ASKS, 3)]
    assert on[0] == off[0] and "send_note" in on
    router = make()
    assert "send_note" not in make(clause_budget=False).route(TWO_ASKS).names
    routed = router.route(TWO_ASKS).names
    assert "send_note" in routed and routed[0] == off[0] and len(routed) == 3
    assert [r.names for r in router.route_batch([TWO_ASKS, ONE_ASK])] == [
        routed, router.route(ONE_ASK).names]


def test_single_request_ranks_as_before():
    on, off = make(), make(clause_budget=False)
    for msg in (ONE_ASK, "send a note", "Convert it."):
        assert ([t.name for t in on.retrieve(msg, 5)] == [t.name for t in off.retrieve(msg, 5)])
        assert on.route(msg).names == off.route(msg).names


def test_guard_skips_a_clause_best_far_down_the_message_ranking():
    # within=1: only the message's best may be kept, so the budget changes nothing
    assert ([t.name for t in make(clause_within=1).retrieve(TWO_ASKS, 3)]
            == [t.name for t in make(clause_budget=False).retrieve(TWO_ASKS, 3)])
    assert spread([4, 1, 2, 3], bests=[3], k=2, within=4) == [4, 3]
    assert spread([4, 1, 2, 3], bests=[3], k=2, within=3) == [4, 1]


def test_admit_keeps_the_non_builtin_budget():
    key = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    tie = np.arange(5)
    nonbuiltin = np.array([False, True, False, True, True])
    # row 4 (non-builtin) comes in; 1 non-builtin slot is full (row 1): it replaces row 1 …
    assert admit([0, 1, 2], [4], key, tie, nonbuiltin, nb_slots=1) == [0, 2, 4]
    # … and with room for two it replaces the last row, builtin or not
    assert admit([0, 1, 2], [4], key, tie, nonbuiltin, nb_slots=2) == [0, 1, 4]
    assert admit([0, 1, 2], [1], key, tie, nonbuiltin, nb_slots=1) == [0, 1, 2]
