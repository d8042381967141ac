"""Agent loop contexts and the slot-limited background loop manager (design §13)."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import itertools
import logging
import threading
import time
from typing import Any, Callable

import msgspec

from maclaw_fast.errors import NotFoundError, ValidationError

log = logging.getLogger(__name__)

LOOP_KINDS = ("chat", "background")
STATUSES = ("running", "paused", "completed", "failed", "stopped")
_FINISHED = frozenset({"completed", "failed", "stopped"})
_POLL_S = 0.05  # pause deadlines use the injectable clock, so waiters re-read it this often


class SlotConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Tunables of :class:`BackgroundLoopManager` (design §13)."""

    limits: dict[str, int] = msgspec.field(default_factory=lambda: {
        "coding": 2, "scheduled": 1, "auto": 1, "ssh": 10, "browser": 2, "gui": 1})
    default_max_iterations: int = 300
    min_iterations: int = 30
    pause_before_limit: int = 2
    pause_timeout_s: float = 300.0
    keep_finished: int = 1024  # finished contexts kept for get()/list(); oldest are dropped


class LoopEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One change: ``type`` is spawned, queued, started (from the queue), paused, resumed,
    completed, failed, stopped or cancelled (a ticket); ``running``/``queued`` count ``slot_kind``
    right after the change (taken under the lock); ``seq`` numbers events without gaps."""

    seq: int
    type: str
    slot_kind: str
    loop_id: str | None = None
    ticket: int | None = None
    status: str | None = None
    detail: str = ""
    running: int = 0
    queued: int = 0


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an int, got {value!r}")
    return value


def _check_kind(kind: Any) -> str:
    if not isinstance(kind, str) or not kind.strip():
        raise ValidationError(f"slot kind must be a non-empty string, got {kind!r}")
    return kind


class LoopState:
    """A loop's progress: its iteration limit, the iterations granted, its status and, while
    paused, when the pause times out."""

    __slots__ = ("deadline", "iteration", "max", "status")

    def __init__(self, max_iterations: int) -> None:
        self.max, self.iteration, self.status, self.deadline = max_iterations, 0, "running", 0.0


class LoopContext:
    """State of one agent loop (chat or background); accessors are thread-safe.

    ``max_iterations`` below ``min_iterations`` (30) is raised to it; status, iteration and
    limit of a background loop are changed only by its :class:`BackgroundLoopManager`.

    Examples
    --------
    >>> ctx = LoopContext("chat-1", max_iterations=5)
    >>> ctx.max_iterations, ctx.status
    (30, 'running')
    """

    def __init__(self, id: str, kind: str = "chat", slot_kind: str | None = None, *,
                 conversation: str = "", history: list[dict] | None = None,
                 max_iterations: int = 300, task: Any = None, created_at: float = 0.0,
                 min_iterations: int = 30, lock: threading.RLock | None = None) -> None:
        if not isinstance(id, str) or not id or kind not in LOOP_KINDS:
            raise ValidationError(f"need a non-empty id and a kind in {LOOP_KINDS}, "
                                  f"got {id!r}, {kind!r}")
        if slot_kind is not None or kind == "background":
            _check_kind(slot_kind)  # chat loops may have no slot kind, background ones must
        if not isinstance(conversation, str) or not all(isinstance(m, dict) for m in history or ()):
            raise ValidationError("conversation must be a str and history a list of dicts")
        self.id, self.kind, self.slot_kind = id, kind, slot_kind
        self.task, self.created_at = task, created_at
        # A managed context shares the manager's lock so status reads never see a half-made change.
        self._lock = lock if lock is not None else threading.RLock()
        self.conversation, self._history = conversation, list(history or ())
        # the loop's progress: written by its BackgroundLoopManager under the shared lock
        self.state = LoopState(max(_check_int("max_iterations", max_iterations),
                                   min_iterations))

    def _get(self, name: str) -> Any:
        with self._lock:
            return getattr(self.state, name)

    max_iterations = property(lambda self: self._get("max"), doc="Current iteration limit.")
    iteration = property(lambda self: self._get("iteration"), doc="Iterations granted so far.")
    status = property(lambda self: self._get("status"), doc="running|paused|completed|...")

    @property
    def history(self) -> list[dict]:
        """A copy of the message history."""
        with self._lock:
            return list(self._history)

    def add_message(self, message: dict) -> None:
        """Append one message dict to the history."""
        if not isinstance(message, dict):
            raise ValidationError(f"message must be a dict, got {type(message).__name__}")
        with self._lock:
            self._history.append(message)


class Ticket(concurrent.futures.Future):
    """A queued request: a Future resolved with the context once a slot frees. ``wait(timeout)``
    from threads, ``await ticket`` from asyncio; ``ticket.cancel()`` withdraws it while still
    queued.

    Examples
    --------
    >>> m = BackgroundLoopManager({"gui": 1})
    >>> first = m.spawn("gui"); t = m.spawn_or_queue("gui", "job")
    >>> _ = m.complete(first.id); t.wait(1).id
    'bg-gui-2'
    """

    def __init__(self, number: int, kind: str, task: Any, max_iterations: int) -> None:
        super().__init__()
        self.number, self.kind, self.task, self.max_iterations = number, kind, task, max_iterations

    wait = concurrent.futures.Future.result  # wait(timeout) -> LoopContext, thread-friendly name

    @property
    def context(self) -> LoopContext | None:
        """The started context, or None while queued / when cancelled."""
        return self.result() if self.done() and not self.cancelled() else None

    def __await__(self):
        return asyncio.wrap_future(self).__await__()


class BackgroundLoopManager:
    """Per-kind slot limits, FIFO queues and iteration control for background loops.

    ``limits`` overrides the defaults (coding 2, scheduled 1, auto 1, ssh 10, browser 2, gui 1);
    an unknown kind or a limit ≤ 0 means 1; a paused loop keeps its slot. ``on_change`` callbacks
    run outside the lock, one at a time in event order, on whichever thread is draining the
    event queue, so they should be quick (a blocked callback holds up later events).

    Examples
    --------
    >>> m = BackgroundLoopManager()
    >>> a, b = m.spawn("coding"), m.spawn("coding")
    >>> a.id, m.spawn("coding"), m.step(a.id), m.complete(a.id), m.running_count("coding")
    ('bg-coding-1', None, 'continue', True, 1)
    """

    def __init__(self, limits: dict[str, int] | None = None, clock: Callable[[], float]
                 = time.monotonic, *, pause_timeout_s: float | None = None,
                 config: SlotConfig | None = None) -> None:
        cfg = config or SlotConfig()
        merged = dict(cfg.limits)
        merged.update({_check_kind(k): _check_int(f"limit of {k!r}", v)
                       for k, v in (limits or {}).items()})
        timeout = cfg.pause_timeout_s if pause_timeout_s is None else pause_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValidationError(f"pause_timeout_s must be a number >= 0, got {timeout!r}")
        self.config = msgspec.structs.replace(cfg, limits=merged, pause_timeout_s=float(timeout))
        self._clock, self._lock = clock, threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._loops: dict[str, LoopContext] = {}
        self._running: dict[str, set[str]] = collections.defaultdict(set)  # ids holding a slot
        self._queues: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._counters: collections.Counter[str] = collections.Counter()
        self._callbacks: list[Callable[[LoopEvent], Any]] = []
        self._finished, self._events = collections.deque(), collections.deque()
        self._ticket_numbers, self._seq = itertools.count(1), 0
        self._dispatching = False

    def limit(self, kind: str) -> int:
        """Slot limit of ``kind`` (1 for unknown kinds or limits ≤ 0)."""
        return max(self.config.limits.get(_check_kind(kind), 1), 1)

    def get(self, loop_id: str) -> LoopContext:
        """The context with this id; :class:`NotFoundError` when unknown."""
        return self._require(loop_id)

    def list(self, kind: str | None = None, status: str | None = None) -> list[LoopContext]:
        """Known contexts in creation order, optionally filtered by slot kind and status."""
        if status is not None and status not in STATUSES:
            raise ValidationError(f"status must be one of {STATUSES}, got {status!r}")
        with self._lock:
            return [c for c in self._loops.values() if (kind is None or c.slot_kind == kind)
                    and (status is None or c.state.status == status)]

    def running_count(self, kind: str) -> int:
        """Loops of ``kind`` holding a slot (running or paused)."""
        return len(self._running.get(kind, ()))

    def queued_count(self, kind: str) -> int:
        """Requests of ``kind`` waiting for a slot."""
        return len(self._queues.get(kind, ()))

    def on_change(self, callback: Callable[[LoopEvent], Any]) -> Callable[[], None]:
        """Register ``callback(event)``; returns a function that unregisters it."""
        if not callable(callback):
            raise ValidationError("on_change callback must be callable")
        with self._lock:
            self._callbacks.append(callback)
        def remove() -> None:
            with self._lock:
                self._callbacks[:] = [c for c in self._callbacks if c is not callback]
        return remove

    def spawn(self, kind: str, task: Any = None, max_iterations: int | None = None
              ) -> LoopContext | None:
        """Start a background loop now, or return None when every ``kind`` slot is taken."""
        return self._request(kind, task, max_iterations, False)

    def spawn_or_queue(self, kind: str, task: Any = None, max_iterations: int | None = None
                       ) -> LoopContext | Ticket:
        """Start now (returns the context) or enqueue FIFO per kind (returns a :class:`Ticket`)."""
        return self._request(kind, task, max_iterations, True)

    async def aspawn_or_queue(self, kind: str, task: Any = None,
                              max_iterations: int | None = None) -> LoopContext:
        """Async form of :meth:`spawn_or_queue` that always returns the started context."""
        got = self.spawn_or_queue(kind, task, max_iterations)
        return await got if isinstance(got, Ticket) else got

    def complete(self, loop_id: str) -> bool:
        """Mark completed and free the slot; False when the loop had already finished."""
        return self._finish(loop_id, "completed", "")

    def fail(self, loop_id: str, reason: str = "") -> bool:
        """Mark failed and free the slot; False when the loop had already finished."""
        return self._finish(loop_id, "failed", str(reason))

    def stop(self, loop_id: str) -> bool:
        """Stop (also wakes a paused loop) and free the slot; False when already finished."""
        return self._finish(loop_id, "stopped", "stop requested")

    def step(self, loop_id: str) -> str:
        """Call before each iteration: "continue" or "stop". Two iterations before the limit it
        pauses (event ``paused``, "approaching limit") and blocks until :meth:`send_continue`,
        :meth:`stop` or ``pause_timeout_s`` (→ stopped)."""
        starts: list = []
        with self._lock:
            ctx = self._require(loop_id)
            if ctx.state.status == "running" and ctx.state.iteration >= ctx.state.max:
                starts = self._finish_locked(ctx, "stopped", "iteration limit reached")
            elif (ctx.state.status == "running"
                  and ctx.state.iteration >= ctx.state.max - self.config.pause_before_limit):
                ctx.state.status = "paused"
                ctx.state.deadline = self._clock() + self.config.pause_timeout_s
                self._emit("paused", ctx.slot_kind, ctx, "approaching limit")
        self._dispatch(starts)  # deliver "paused" before blocking, so a UI can offer to continue
        with self._cond:
            while ctx.state.status == "paused":
                remaining = ctx.state.deadline - self._clock()
                if remaining <= 0:
                    starts = self._finish_locked(ctx, "stopped", "pause timeout")
                    break
                self._cond.wait(min(remaining, _POLL_S))
            else:
                if ctx.state.status != "running":
                    return "stop"
                ctx.state.iteration += 1
                return "continue"
        self._dispatch(starts)
        return "stop"

    async def astep(self, loop_id: str) -> str:
        """Async :meth:`step`; a pause waits in a worker thread, not on the event loop."""
        return await asyncio.to_thread(self.step, loop_id)

    def send_continue(self, loop_id: str, extra_iterations: int) -> bool:
        """Grant a paused loop ``extra_iterations`` (int ≥ 1) more and resume it; returns True.
        :class:`ValidationError` when the loop is not paused (never a silent False)."""
        if _check_int("extra_iterations", extra_iterations) < 1:
            raise ValidationError(f"extra_iterations must be >= 1, got {extra_iterations}")
        with self._lock:
            ctx = self._require(loop_id)
            if ctx.state.status != "paused":
                raise ValidationError(f"loop {loop_id!r} is {ctx.state.status}, not paused")
            ctx.state.max, ctx.state.status = ctx.state.max + extra_iterations, "running"
            self._emit("resumed", ctx.slot_kind, ctx, f"+{extra_iterations} iterations")
            self._cond.notify_all()
        self._dispatch()
        return True

    # Internals: names ending in _locked need self._lock held.
    def _require(self, loop_id: str) -> LoopContext:
        if (ctx := self._loops.get(loop_id) if isinstance(loop_id, str) else None) is None:
            raise NotFoundError(f"no background loop {loop_id!r}")
        return ctx

    def _request(self, kind: Any, task: Any, max_it: Any, queue: bool) -> Any:
        max_it = self.config.default_max_iterations if max_it is None else max_it
        _check_int("max_iterations", max_it)  # now, not later when a queued ticket starts
        ticket = None
        with self._lock:
            ctx = self._try_start_locked(_check_kind(kind), task, max_it)
            if ctx is None and queue:
                ticket = Ticket(next(self._ticket_numbers), kind, task, max_it)
                self._queues[kind].append(ticket)
                self._emit("queued", kind, ticket=ticket.number)
        if ticket is not None:
            ticket.add_done_callback(self._ticket_done)
        self._dispatch()
        return ctx or ticket

    def _try_start_locked(self, kind: str, task: Any, max_it: int, how: str = "spawned",
                          ticket: int | None = None) -> LoopContext | None:
        if len(self._running[kind]) >= self.limit(kind):
            return None
        self._counters[kind] += 1
        ctx = LoopContext(f"bg-{kind}-{self._counters[kind]}", "background", kind,
                          max_iterations=max_it, task=task, created_at=self._clock(),
                          min_iterations=self.config.min_iterations, lock=self._lock)
        self._loops[ctx.id] = ctx
        self._running[kind].add(ctx.id)
        self._emit(how, kind, ctx, ticket=ticket)
        return ctx

    def _finish(self, loop_id: str, status: str, detail: str) -> bool:
        with self._lock:
            ctx = self._require(loop_id)
            if ctx.state.status in _FINISHED:
                return False
            starts = self._finish_locked(ctx, status, detail)
        self._dispatch(starts)
        return True

    def _finish_locked(self, ctx: LoopContext, status: str, detail: str) -> list:
        ctx.state.status = status
        self._running[ctx.slot_kind].discard(ctx.id)
        self._emit(status, ctx.slot_kind, ctx, detail)
        self._cond.notify_all()  # wake a step() blocked in a pause
        self._finished.append(ctx.id)
        while len(self._finished) > self.config.keep_finished:
            self._loops.pop(self._finished.popleft(), None)
        return self._pump_locked(ctx.slot_kind)

    def _pump_locked(self, kind: str) -> list[tuple[Ticket, LoopContext]]:
        starts, queue = [], self._queues[kind]
        while queue and len(self._running[kind]) < self.limit(kind):
            ticket = queue.popleft()
            # After this call a cancel() can no longer win, so the result is never lost.
            if not ticket.set_running_or_notify_cancel():
                self._emit("cancelled", kind, ticket=ticket.number)
                continue
            ctx = self._try_start_locked(kind, ticket.task, ticket.max_iterations, "started",
                                         ticket.number)
            starts.append((ticket, ctx))
        return starts

    def _ticket_done(self, ticket: Ticket) -> None:
        with self._lock:
            queue = self._queues[ticket.kind]
            # Not queued any more: started, or _pump_locked already saw the cancel and reported it.
            if ticket.cancelled() and ticket in queue:
                queue.remove(ticket)
                self._emit("cancelled", ticket.kind, ticket=ticket.number)
        self._dispatch()

    def _emit(self, type_: str, kind: str, ctx: Any = None, detail: str = "", ticket: Any = None):
        self._seq += 1
        self._events.append(LoopEvent(
            seq=self._seq, type=type_, slot_kind=kind, loop_id=ctx and ctx.id, ticket=ticket,
            status=ctx and ctx.state.status, detail=detail, running=len(self._running[kind]),
            queued=len(self._queues[kind])))

    def _dispatch(self, starts: list[tuple[Ticket, LoopContext]] = ()) -> None:
        for ticket, ctx in starts:  # outside the lock: done-callbacks are user code
            ticket.set_result(ctx)
        # One event is delivered at a time, in seq order, even when several threads change state
        # at once; a re-entrant call from a callback only enqueues and this loop picks it up.
        while True:
            with self._lock:
                if self._dispatching or not self._events:
                    return
                self._dispatching = True
                event, callbacks = self._events.popleft(), tuple(self._callbacks)
            try:
                for cb in callbacks:
                    try:
                        cb(event)
                    except Exception:
                        log.exception("on_change callback %r failed on %s", cb, event.type)
            finally:
                with self._lock:
                    self._dispatching = False
