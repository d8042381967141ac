"""Slot limits, queueing, iteration control and concurrency of background loops (design §13)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
import time

import pytest

from maclaw_fast.agent.slots import BackgroundLoopManager, LoopContext, LoopEvent, SlotConfig, Ticket
from maclaw_fast.errors import NotFoundError, ValidationError


def _recorder(mgr: BackgroundLoopManager) -> list[LoopEvent]:
    events: list[LoopEvent] = []
    mgr.on_change(events.append)
    return events


def _run_loop(mgr: BackgroundLoopManager, loop_id: str, out: dict) -> threading.Thread:
    """A fake agent loop: counts granted iterations until step() says stop."""
    def body() -> None:
        n = 0
        while mgr.step(loop_id) == "continue":
            n += 1
        out["iterations"] = n
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t


def _wait_for(pred, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


# ---- slots ------------------------------------------------------------------------------------
def test_default_limits_and_third_coding_spawn_refused():
    mgr = BackgroundLoopManager()
    assert [mgr.limit(k) for k in ("coding", "scheduled", "auto", "ssh", "browser", "gui")] == \
        [2, 1, 1, 10, 2, 1]
    a, b = mgr.spawn("coding"), mgr.spawn("coding")
    assert (a.id, b.id) == ("bg-coding-1", "bg-coding-2")
    assert mgr.spawn("coding") is None
    assert mgr.running_count("coding") == 2
    # other kinds have their own slots and counters
    assert mgr.spawn("gui").id == "bg-gui-1"
    assert mgr.spawn("gui") is None


def test_unknown_kind_and_nonpositive_limit_mean_one():
    mgr = BackgroundLoopManager({"ssh": 0, "coding": -3, "custom": 3})
    assert mgr.limit("weird") == 1 and mgr.limit("ssh") == 1 and mgr.limit("coding") == 1
    assert mgr.limit("custom") == 3 and mgr.limit("browser") == 2
    assert mgr.spawn("weird").id == "bg-weird-1"
    assert mgr.spawn("weird") is None
    assert mgr.spawn("ssh") is not None and mgr.spawn("ssh") is None


def test_context_fields_and_min_iterations():
    clock = [100.0]
    mgr = BackgroundLoopManager(clock=lambda: clock[0])
    ctx = mgr.spawn("auto", task={"goal": "x"}, max_iterations=5)
    assert ctx.kind == "background" and ctx.slot_kind == "auto" and ctx.status == "running"
    assert ctx.max_iterations == 30 and ctx.iteration == 0
    assert ctx.task == {"goal": "x"} and ctx.created_at == 100.0
    assert mgr.spawn("ssh").max_iterations == 300
    assert mgr.spawn("ssh", max_iterations=31).max_iterations == 31
    assert LoopContext("c", max_iterations=1000).max_iterations == 1000
    ctx.conversation = "conv-1"
    ctx.add_message({"role": "user", "content": "hi"})
    assert ctx.conversation == "conv-1" and ctx.history == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("call", [
    lambda m: m.spawn(""), lambda m: m.spawn(3), lambda m: m.spawn("coding", max_iterations="9"),
    lambda m: m.spawn_or_queue(None), lambda m: m.list(status="sleeping"),
    lambda m: m.on_change("not callable"), lambda m: LoopContext("x", kind="daemon"),
    lambda m: LoopContext("x", "background"), lambda m: LoopContext("x").add_message("hi"),
    lambda m: BackgroundLoopManager(pause_timeout_s=-1),
    lambda m: BackgroundLoopManager({"coding": 1.5}),
])
def test_bad_input_raises_validation_error(call):
    with pytest.raises(ValidationError):
        call(BackgroundLoopManager())


def test_unknown_id_raises_not_found():
    mgr = BackgroundLoopManager()
    for call in (mgr.get, mgr.complete, mgr.stop, mgr.fail, mgr.step):
        with pytest.raises(NotFoundError):
            call("bg-coding-99")
    with pytest.raises(NotFoundError):
        mgr.send_continue("bg-coding-99", 5)


def test_complete_fail_stop_mark_status_and_free_slot():
    mgr = BackgroundLoopManager()
    a, b = mgr.spawn("coding"), mgr.spawn("coding")
    assert mgr.complete(a.id) is True
    assert a.status == "completed" and mgr.get(a.id) is a
    assert mgr.running_count("coding") == 1
    assert mgr.complete(a.id) is False  # already finished: no double free
    assert mgr.running_count("coding") == 1
    assert mgr.fail(b.id, "boom") is True and b.status == "failed"
    c = mgr.spawn("coding")
    assert mgr.stop(c.id) is True and c.status == "stopped"
    assert mgr.step(c.id) == "stop"
    assert mgr.running_count("coding") == 0
    assert [x.id for x in mgr.list(kind="coding", status="completed")] == [a.id]
    assert [x.id for x in mgr.list()] == [a.id, b.id, c.id]


def test_queued_task_starts_when_slot_frees():
    mgr = BackgroundLoopManager()
    a = mgr.spawn_or_queue("coding", "t1")
    b = mgr.spawn_or_queue("coding", "t2")
    assert isinstance(a, LoopContext) and isinstance(b, LoopContext)
    t3 = mgr.spawn_or_queue("coding", "t3", max_iterations=50)
    t4 = mgr.spawn_or_queue("coding", "t4")
    assert isinstance(t3, Ticket) and not t3.done() and t3.context is None
    assert mgr.queued_count("coding") == 2
    with pytest.raises(TimeoutError):
        t3.wait(timeout=0.01)
    mgr.complete(a.id)
    ctx = t3.wait(timeout=1)
    assert ctx.id == "bg-coding-3" and ctx.status == "running" and ctx.task == "t3"
    assert ctx.max_iterations == 50 and t3.context is ctx
    assert not t4.done() and mgr.queued_count("coding") == 1  # FIFO: t4 still waits
    assert mgr.running_count("coding") == 2
    mgr.stop(b.id)
    assert t4.wait(timeout=1).id == "bg-coding-4"


def test_cancelled_ticket_is_skipped():
    mgr = BackgroundLoopManager({"gui": 1})
    events = _recorder(mgr)
    a = mgr.spawn("gui")
    t2, t3 = mgr.spawn_or_queue("gui", "x"), mgr.spawn_or_queue("gui", "y")
    assert t2.cancel() is True and t2.cancelled()
    assert mgr.queued_count("gui") == 1
    with pytest.raises(concurrent.futures.CancelledError):
        t2.wait(0)
    mgr.complete(a.id)
    assert t3.wait(1).task == "y"
    assert t3.cancel() is False  # already started
    assert [e.type for e in events] == ["spawned", "queued", "queued", "cancelled", "completed",
                                        "started"]


def test_finished_contexts_are_bounded():
    mgr = BackgroundLoopManager(config=SlotConfig(keep_finished=3))
    ids = []
    for _ in range(5):
        ctx = mgr.spawn("auto")
        ids.append(ctx.id)
        mgr.complete(ctx.id)
    assert [c.id for c in mgr.list()] == ids[2:]
    with pytest.raises(NotFoundError):
        mgr.get(ids[0])


# ---- iteration control ------------------------------------------------------------------------
def test_step_counts_iterations_and_stops_after_stop():
    mgr = BackgroundLoopManager()
    ctx = mgr.spawn("ssh", max_iterations=100)
    assert [mgr.step(ctx.id) for _ in range(3)] == ["continue"] * 3
    assert ctx.iteration == 3
    mgr.stop(ctx.id)
    assert mgr.step(ctx.id) == "stop" and ctx.iteration == 3


def test_send_continue_fails_unless_paused_and_resumes_when_paused():
    mgr = BackgroundLoopManager(pause_timeout_s=10)
    events = _recorder(mgr)
    ctx = mgr.spawn("coding", max_iterations=30)
    with pytest.raises(ValidationError, match="not paused"):
        mgr.send_continue(ctx.id, 10)
    assert ctx.max_iterations == 30
    out: dict = {}
    t = _run_loop(mgr, ctx.id, out)
    _wait_for(lambda: ctx.status == "paused")
    assert ctx.iteration == 28  # paused two iterations before the limit of 30
    paused = [e for e in events if e.type == "paused"]
    assert len(paused) == 1 and paused[0].detail == "approaching limit"
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValidationError):
            mgr.send_continue(ctx.id, bad)
    assert mgr.send_continue(ctx.id, 10) is True
    _wait_for(lambda: ctx.iteration == 38 and ctx.status == "paused")  # pauses again at 40-2
    assert ctx.max_iterations == 40
    assert mgr.stop(ctx.id) is True
    t.join(2)
    assert not t.is_alive() and out["iterations"] == 38 and ctx.status == "stopped"
    with pytest.raises(ValidationError):
        mgr.send_continue(ctx.id, 5)
    assert [e.type for e in events] == ["spawned", "paused", "resumed", "paused", "stopped"]


def test_pause_timeout_stops_loop_and_frees_slot():
    mgr = BackgroundLoopManager({"gui": 1}, pause_timeout_s=0.05)
    ctx = mgr.spawn("gui", max_iterations=30)
    ticket = mgr.spawn_or_queue("gui", "next")
    out: dict = {}
    t0 = time.monotonic()
    _run_loop(mgr, ctx.id, out).join(5)
    assert out["iterations"] == 28 and ctx.status == "stopped"
    assert time.monotonic() - t0 >= 0.05
    assert ticket.wait(1).id == "bg-gui-2"  # the freed slot went to the queue head


def test_no_pause_margin_stops_at_the_limit():
    mgr = BackgroundLoopManager(config=SlotConfig(pause_before_limit=0, limits={"gui": 1}))
    events = _recorder(mgr)
    ctx = mgr.spawn("gui")
    ticket = mgr.spawn_or_queue("gui", "next", max_iterations=3)
    out: dict = {}
    _run_loop(mgr, ctx.id, out).join(5)
    assert out["iterations"] == 300 and ctx.status == "stopped"
    assert "paused" not in [e.type for e in events]
    nxt = ticket.wait(1)
    assert nxt.id == "bg-gui-2" and nxt.max_iterations == 30  # queued request also clamped


def test_pause_timeout_uses_injected_clock():
    clock = [0.0]
    mgr = BackgroundLoopManager(clock=lambda: clock[0])  # default 5-minute pause
    assert mgr.config.pause_timeout_s == 300
    ctx = mgr.spawn("scheduled")
    out: dict = {}
    t = _run_loop(mgr, ctx.id, out)
    _wait_for(lambda: ctx.status == "paused")
    clock[0] = 299.0
    time.sleep(0.15)
    assert ctx.status == "paused"
    clock[0] = 300.5
    t.join(2)
    assert not t.is_alive() and ctx.status == "stopped" and out["iterations"] == 298


# ---- events -----------------------------------------------------------------------------------
def test_on_change_events_fire_in_order():
    mgr = BackgroundLoopManager({"browser": 1}, pause_timeout_s=5)
    events = _recorder(mgr)
    a = mgr.spawn("browser")
    ticket = mgr.spawn_or_queue("browser", "q")
    mgr.complete(a.id)
    b = ticket.wait(1)
    mgr.fail(b.id, "crash")
    c = mgr.spawn("browser", max_iterations=30)
    for _ in range(28):
        mgr.step(c.id)
    waiter = threading.Thread(target=mgr.step, args=(c.id,))
    waiter.start()
    _wait_for(lambda: c.status == "paused")
    mgr.send_continue(c.id, 3)
    waiter.join(2)
    mgr.stop(c.id)
    got = [(e.type, e.loop_id, e.running, e.queued) for e in events]
    assert got == [
        ("spawned", "bg-browser-1", 1, 0), ("queued", None, 1, 1),
        ("completed", "bg-browser-1", 0, 1), ("started", "bg-browser-2", 1, 0),
        ("failed", "bg-browser-2", 0, 0), ("spawned", "bg-browser-3", 1, 0),
        ("paused", "bg-browser-3", 1, 0), ("resumed", "bg-browser-3", 1, 0),
        ("stopped", "bg-browser-3", 0, 0)]
    assert [e.seq for e in events] == list(range(1, 10))
    assert events[1].ticket == events[3].ticket == ticket.number
    assert events[4].detail == "crash" and events[6].status == "paused"


def test_raising_callback_does_not_break_manager():
    mgr = BackgroundLoopManager({"auto": 1})
    calls = []

    def bad(event):
        calls.append(event.type)
        raise RuntimeError("ui crashed")
    mgr.on_change(bad)
    good = _recorder(mgr)
    a = mgr.spawn("auto")
    ticket = mgr.spawn_or_queue("auto")
    assert mgr.complete(a.id) is True
    assert ticket.wait(1).id == "bg-auto-2"
    assert calls == [e.type for e in good] == ["spawned", "queued", "completed", "started"]
    assert mgr.running_count("auto") == 1 and mgr.queued_count("auto") == 0


def test_callback_may_call_back_into_manager_and_order_holds():
    mgr = BackgroundLoopManager()
    # registered first: its re-entrant change must not overtake "spawned" for later callbacks
    mgr.on_change(lambda e: mgr.complete(e.loop_id) if e.type == "spawned" else None)
    events = _recorder(mgr)
    ctx = mgr.spawn("coding")
    assert ctx.status == "completed" and [e.type for e in events] == ["spawned", "completed"]
    assert mgr.running_count("coding") == 0


def test_cancel_racing_with_slot_release_is_reported_once():
    mgr = BackgroundLoopManager({"gui": 1})
    events = _recorder(mgr)
    a = mgr.spawn("gui")
    t2, t3 = mgr.spawn_or_queue("gui", "x"), mgr.spawn_or_queue("gui", "y")
    with mgr._lock:  # hold the manager so the cancel's bookkeeping must wait behind complete()
        canceller = threading.Thread(target=t2.cancel)
        canceller.start()
        _wait_for(t2.cancelled)
        mgr.complete(a.id)
    canceller.join(2)
    assert t3.wait(1).id == "bg-gui-2" and t3.task == "y"
    assert [e.type for e in events].count("cancelled") == 1
    assert mgr.queued_count("gui") == 0 and mgr.running_count("gui") == 1


def test_unsubscribe():
    mgr = BackgroundLoopManager()
    events: list = []
    remove = mgr.on_change(events.append)
    mgr.spawn("ssh")
    remove()
    mgr.spawn("ssh")
    assert len(events) == 1


# ---- asyncio ----------------------------------------------------------------------------------
@pytest.mark.timeout(10)
def test_asyncio_usage():
    async def main():
        mgr = BackgroundLoopManager(pause_timeout_s=1)
        a = await mgr.aspawn_or_queue("coding", "a")
        await mgr.aspawn_or_queue("coding", "b")
        waiting = asyncio.create_task(mgr.aspawn_or_queue("coding", "c"))
        await asyncio.sleep(0.01)
        assert not waiting.done() and mgr.queued_count("coding") == 1
        ticket = mgr.spawn_or_queue("coding", "d")
        mgr.complete(a.id)
        c = await asyncio.wait_for(waiting, 1)
        assert c.id == "bg-coding-3" and c.task == "c"
        mgr.complete(c.id)
        d = await asyncio.wait_for(ticket, 1)
        assert d.id == "bg-coding-4"
        # a pause must not block the event loop
        e = mgr.spawn("gui", max_iterations=30)
        for _ in range(28):
            assert await mgr.astep(e.id) == "continue"
        paused_step = asyncio.create_task(mgr.astep(e.id))
        while e.status == "running":
            await asyncio.sleep(0.005)
        assert e.status == "paused"  # a blocking step() would have stalled the loop until timeout
        mgr.send_continue(e.id, 1)
        assert await asyncio.wait_for(paused_step, 2) == "continue"
        return e.iteration
    assert asyncio.run(main()) == 29


def test_asyncio_cancel_withdraws_queued_request():
    async def main():
        mgr = BackgroundLoopManager({"gui": 1})
        a = mgr.spawn("gui")
        ticket = mgr.spawn_or_queue("gui")
        task = asyncio.create_task(asyncio.wait_for(ticket, 0.05))
        with pytest.raises(asyncio.TimeoutError):
            await task
        assert ticket.cancelled() and mgr.queued_count("gui") == 0
        mgr.complete(a.id)
        return mgr.running_count("gui")
    assert asyncio.run(main()) == 0


# ---- stress -----------------------------------------------------------------------------------
@pytest.mark.timeout(10)
def test_stress_limits_hold_and_no_queued_task_is_lost():
    limits = {"coding": 2, "scheduled": 1, "auto": 1, "ssh": 3, "browser": 2, "gui": 1}
    mgr = BackgroundLoopManager(limits)
    kinds = list(limits)
    model = dict.fromkeys(kinds, 0)  # running count rebuilt from the events alone
    violations: list[str] = []
    seen: list[int] = []
    queued_ids, resolved_ids = set(), set()

    def watch(e: LoopEvent) -> None:
        seen.append(e.seq)
        if e.seq % 7 == 0:
            time.sleep(0.0002)  # widen the window in which other threads emit events
        if e.type in ("spawned", "started"):
            model[e.slot_kind] += 1
        elif e.type in ("completed", "failed", "stopped"):
            model[e.slot_kind] -= 1
        if e.type == "queued":
            queued_ids.add(e.ticket)
        elif e.type in ("started", "cancelled"):
            resolved_ids.add(e.ticket)
        if model[e.slot_kind] > limits[e.slot_kind] or model[e.slot_kind] != e.running:
            violations.append(f"{e}: model={model[e.slot_kind]}")
    mgr.on_change(watch)

    ids: list[str] = []
    tickets: list[Ticket] = []
    shared = threading.Lock()
    stop_poll = threading.Event()

    def poll() -> None:
        while not stop_poll.is_set():
            with mgr._lock:  # one consistent snapshot of every kind
                for k in kinds:
                    if len(mgr._running[k]) > limits[k]:
                        violations.append(f"poll saw {k} over limit")
            time.sleep(0.0005)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(125):
            op = rng.random()
            kind = rng.choice(kinds)
            if op < 0.2:
                ctx = mgr.spawn(kind)
                if ctx is not None:
                    with shared:
                        ids.append(ctx.id)
            elif op < 0.5:
                got = mgr.spawn_or_queue(kind, task=seed)
                with shared:
                    if isinstance(got, Ticket):
                        tickets.append(got)
                        got.add_done_callback(
                            lambda t: t.cancelled() or ids.append(t.context.id))
                    else:
                        ids.append(got.id)
            elif op < 0.55:
                with shared:
                    pending = [t for t in tickets if not t.done()]
                if pending:
                    rng.choice(pending).cancel()
            else:
                with shared:
                    target = rng.choice(ids) if ids else None
                if target is not None:
                    (mgr.complete if op < 0.8 else mgr.stop)(target)

    t0 = time.monotonic()
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    workers = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(8)
    assert not any(w.is_alive() for w in workers)
    # drain: finishing every running loop must eventually start every remaining queued ticket
    while any(mgr.running_count(k) or mgr.queued_count(k) for k in kinds):
        for ctx in mgr.list(status="running"):
            mgr.complete(ctx.id)
        assert time.monotonic() - t0 < 9
    stop_poll.set()
    poller.join(1)

    assert not violations, violations[:5]
    assert tickets, "the stress run never queued anything"
    assert all(t.done() for t in tickets)
    started = [t for t in tickets if not t.cancelled()]
    assert all(t.context.status in ("completed", "stopped") for t in started)
    assert queued_ids == resolved_ids == {t.number for t in tickets}
    assert any(t.cancelled() for t in tickets) and started
    assert seen == list(range(1, len(seen) + 1))
    assert len(set(ids)) == len(ids)
    assert all(model[k] == 0 for k in kinds)
    assert time.monotonic() - t0 < 10
