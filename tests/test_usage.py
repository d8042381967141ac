"""UsageTracker: design §12 experience formula, §15 examples, rolling window, persistence."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from maclaw_fast.config import RouterConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.text import TOKENIZER_VERSION
from maclaw_fast.tools import UsageTracker

NOW = 1_700_000_000.0


def tracker(**kw):
    return UsageTracker(clock=lambda: NOW, **kw)


def test_spec_jaccard_example():
    u = tracker()
    u.record("t", ["a", "c"], success=True)
    assert u.experience("t", ["a", "b"]) == pytest.approx(1 / 3)


def test_no_query_tokens_and_unknown_tool_score_zero():
    u = tracker()
    u.record("t", ["a"], success=True)
    assert u.experience("t", []) == 0.0
    assert u.experience("t", "") == 0.0
    assert u.experience("other", ["a"]) == 0.0


def test_only_failures_score_zero_and_mixed_follows_formula():
    u = tracker()
    u.record("t", ["a", "b"], success=False)
    u.record("t", ["a", "b"], success=False)
    assert u.experience("t", ["a", "b"]) == 0.0
    u.record("t", ["a", "b"], success=True, timestamp=NOW - 10 * 3600)
    want = (1.0 * math.exp(-0.01 * 10) - 0.3 - 0.3) / 3
    assert u.experience("t", ["a", "b"]) == pytest.approx(max(want, 0.0))
    u.record("t", ["a", "b"], success=True)
    u.record("t", ["a", "b"], success=True)
    want = (2 + math.exp(-0.1) - 0.6) / 5
    assert u.experience("t", ["a", "b"]) == pytest.approx(want)


def test_records_past_200_per_tool_are_ignored_and_future_is_not_boosted():
    u = tracker()
    for _ in range(250):  # oldest: 250 failures
        u.record("t", ["x"], success=False, timestamp=NOW - 3600)
    for _ in range(200):  # newest 200: successes in the future (clock skew)
        u.record("t", ["x"], success=True, timestamp=NOW + 7200)
    assert u.experience("t", ["x"]) == pytest.approx(1.0)


def test_query_keeps_first_five_tokens_and_window_rolls():
    cfg = RouterConfig(usage_window=3)
    u = UsageTracker(config=cfg, clock=lambda: NOW)
    u.record("a", "one two three four five six seven")
    assert u.records()[0]["query_tokens"] == ["one", "two", "three", "four", "five"]
    for name in ("b", "c", "d"):
        u.record(name, "x")
    assert len(u) == 3 and [r["tool_name"] for r in u.records()] == ["b", "c", "d"]
    assert u.experience("a", "one") == 0.0


def test_experience_all_agrees_with_per_tool():
    rng = np.random.default_rng(0)
    u = tracker()
    words = [f"w{i}" for i in range(30)]
    for _ in range(500):
        u.record(f"t{rng.integers(0, 12)}", list(rng.choice(words, 4, replace=False)),
                 success=bool(rng.random() < 0.7), timestamp=NOW - rng.uniform(0, 500) * 3600)
    q = ["w1", "w2", "w3", "zz"]
    allv = u.experience_all(q)
    for name in u.tools.tokens:
        assert allv[u.tools.get(name)] == u.experience(name, q)
    assert np.array_equal(u.experience_batch([q, ["w5"]])[0], allv)


def test_persistence_round_trip_and_reference_format(tmp_path):
    path = tmp_path / "tool_usage.json"
    u = UsageTracker(path, clock=lambda: NOW)
    u.record("db_query", "查询 订单 数据库", success=True)
    u.record("git_log", ["git", "log"], success=False)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert [set(r) for r in raw] == [{"tool_name", "query_tokens", "success", "timestamp",
                                      "tokenizer"}] * 2
    assert raw[1] == {"tool_name": "git_log", "query_tokens": ["git", "log"], "success": False,
                      "timestamp": "2023-11-14T22:13:20Z", "tokenizer": TOKENIZER_VERSION}
    assert not list(tmp_path.glob("*.tmp"))
    again = UsageTracker(path, clock=lambda: NOW)
    assert again.records() == u.records()
    assert again.experience("db_query", "查询 数据库") == u.experience("db_query", "查询 数据库") > 0


def test_loads_go_written_file_with_nanoseconds_and_offsets(tmp_path):
    path = tmp_path / "tool_usage.json"
    path.write_text(json.dumps([
        {"tool_name": "bash", "query_tokens": ["run", "tests"], "success": True,
         "timestamp": "2023-11-15T06:13:20.123456789+08:00"},
    ]), encoding="utf-8")
    u = UsageTracker(path, clock=lambda: NOW, autosave=False)
    assert u.rec_ts[0] == pytest.approx(NOW + 0.123456, abs=1e-6)
    # the reference format names no analysis: its words are analysed again (stemmed)
    assert u.records()[0]["query_tokens"] == ["run", "test"]
    assert u.experience("bash", "run tests") == pytest.approx(1.0, abs=1e-6)


def test_bad_input_is_rejected(tmp_path):
    u = tracker()
    with pytest.raises(ValidationError):
        u.record("", ["a"])
    bad = tmp_path / "u.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValidationError):
        UsageTracker(bad)
    with pytest.raises(ValidationError):
        UsageTracker(config=RouterConfig(usage_window=0))
