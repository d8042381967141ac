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


def tokenize_all(items: list[str]) -> list[list[str]]:
    """Every item's tokens through :func:`bulk.forked_parts`, parts joined in order."""
    parts = bulk.forked_parts(lambda part: [tokenize(t) for t in part], items, list[list[str]],
                              valid=lambda part, out: len(out) == len(part))
    return [toks for part in parts for toks in part]


def test_forked_half_equals_the_serial_result(monkeypatch):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(bulk.os, "fork", lambda: forks.append(1) or real_fork())
    items = texts(301)
    got = tokenize_all(items)
    assert forks == [1]
    assert got == [tokenize(t) for t in items]


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
    assert tokenize_all(items) == [tokenize(t) for t in items]


def test_small_batches_stay_in_process(monkeypatch):
    def no_fork():
        raise AssertionError("forked for a small batch")
    monkeypatch.setattr(bulk.os, "fork", no_fork)
    items = texts(10)
    assert tokenize_all(items) == [tokenize(t) for t in items]


def test_a_caller_that_stops_early_leaves_no_child(monkeypatch):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    pids = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(bulk.os, "fork", fork)
    items = texts(40, seed=2)
    parts = bulk.forked_parts(lambda part: [tokenize(t) for t in part], items, list[list[str]])
    first = next(parts)
    parts.close()
    assert len(pids) == 1 and 0 < len(first) < len(items)
    with pytest.raises(ChildProcessError):  # already reaped by the generator
        os.waitpid(pids[0], os.WNOHANG)


def test_parts_that_fail_validation_are_computed_again(monkeypatch):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    items = texts(30, seed=3)
    calls = []
    got = list(bulk.forked_parts(lambda part: [len(t) for t in part], items, list[int],
                                 valid=lambda part, out: calls.append(len(part)) or False))
    assert [x for p in got for x in p] == [len(t) for t in items] and len(calls) == 1


@pytest.mark.parametrize("shared_bytes", [None, 16])
def test_the_child_result_arrives_through_shared_memory_or_the_pipe(monkeypatch, shared_bytes):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    if shared_bytes is not None:  # too small for the message: it comes through the pipe
        real_mmap = bulk.mmap.mmap
        monkeypatch.setattr(bulk.mmap, "mmap", lambda fd, size: real_mmap(fd, shared_bytes))
    items = texts(60, seed=4)
    calls = []

    def func(part):
        calls.append(len(part))  # only the parent's calls are seen here
        return [tokenize(t) for t in part]

    got = list(bulk.forked_parts(func, items, list[list[str]]))
    assert len(got) == 2 and len(calls) == 1, "the child's half was recomputed in the parent"
    assert got[0] + got[1] == [tokenize(t) for t in items]


def test_an_error_while_collecting_surfaces_and_leaves_no_child(monkeypatch):
    monkeypatch.setattr(bulk, "FORK_MIN_CHARS", 0)
    pids = []
    real_fork, real_collect = os.fork, bulk._collect

    def fork():
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    def collect_then_fail(child, result_type):
        real_collect(child, result_type)  # reads, reaps and unmaps: the clean-up finds it done
        raise OSError("the disk is on fire")

    monkeypatch.setattr(bulk.os, "fork", fork)
    monkeypatch.setattr(bulk, "_collect", collect_then_fail)
    with pytest.raises(OSError, match="on fire"):
        list(bulk.forked_parts(lambda part: [tokenize(t) for t in part], texts(30, seed=5),
                               list[list[str]]))
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)
