"""Bulk tokenising: the forked half returns exactly what the serial tokenizer gives, in order,
and every failure of the child falls back to the serial result."""

from __future__ import annotations

import os
import random

import pytest

import maclaw_fast.text.bulk as bulk
from maclaw_fast.text.tokenizer import tokenize

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")


def texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["Deploy", "script", "部署脚本出了问题", "数据库", "naïve", "IL-6", "v2.0", "", "—", "日志"]
    return [" ".join(rng.choices(words, k=rng.randint(0, 40))) for _ in range(n)]


def test_forked_half_equals_the_serial_result(monkeypatch):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(bulk.os, "fork", lambda: forks.append(1) or real_fork())
    items = texts(301)
    got = bulk.tokenize_joined(items, "\n")
    assert forks == [1]
    assert got == ["\n".join(tokenize(t)) for t in items]


@pytest.mark.parametrize("failure", ["fork", "child-exit", "garbage", "short"])
def test_every_child_failure_falls_back_to_serial(monkeypatch, failure):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    if failure == "fork":
        def broken_fork():
            raise OSError("no more processes")
        monkeypatch.setattr(bulk.os, "fork", broken_fork)
    else:
        real_encode = bulk.msgspec.msgpack.encode

        def bad_encode(obj):
            if failure == "child-exit":
                raise RuntimeError("the child dies")
            if failure == "garbage":
                return b"\xc1not msgpack"
            return real_encode(obj[:-1])  # one text short

        monkeypatch.setattr(bulk.msgspec.msgpack, "encode", bad_encode)
    items = texts(50, seed=1)
    assert bulk.tokenize_joined(items, "|") == ["|".join(tokenize(t)) for t in items]


def test_small_batches_stay_in_process(monkeypatch):
    def no_fork():
        raise AssertionError("forked for a small batch")
    monkeypatch.setattr(bulk.os, "fork", no_fork)
    items = texts(10)
    assert bulk.tokenize_joined(items, " ") == [" ".join(tokenize(t)) for t in items]
