"""Progress display for the command line: counted bars and timed activities on stderr.

Shown when stderr is a terminal, or always with ``--progress`` (or ``MACLAW_PROGRESS=1``);
never with ``--quiet`` (or ``MACLAW_PROGRESS=0``). Results go to stdout, progress to stderr, so
piping a command's output never captures a bar.

A step without a count (loading a model, a maintenance run, an LLM call) gets an
:func:`activity`: a line with the elapsed time, refreshed while the step runs, that appears only
once the step has taken longer than ``delay`` seconds (a fast command prints nothing extra).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

ENV = "MACLAW_PROGRESS"
SHOW_AFTER_S = 0.5  # a step quicker than this shows no activity line on a terminal
_RUNNING: list = []  # activity lines on screen now (a bar that starts ends them)
_BARS: list = []  # bars open now (silenced when the run is interrupted)
_HUSH = threading.Event()  # set by silence(): nothing more is drawn


def add_progress_args(parser) -> None:
    """``--progress`` / ``--quiet`` on a subcommand with steps that can take seconds."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", action="store_true", default=None,
                       help="show progress bars even when stderr is not a terminal "
                            f"(also ${ENV}=1)")
    group.add_argument("--quiet", action="store_true",
                       help=f"no progress bars or status lines on stderr (also ${ENV}=0)")


def apply_flags(args) -> None:
    """Make ``--progress`` / ``--quiet`` of this run hold for bars the library shows on its own
    (it reads ``$MACLAW_PROGRESS``)."""
    if getattr(args, "quiet", False):
        os.environ[ENV] = "0"
    elif getattr(args, "progress", None):
        os.environ[ENV] = "1"


def enabled(args=None) -> bool:
    """Whether progress goes to stderr for this run (see the module docstring)."""
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", None):
        return True
    env = os.environ.get(ENV, "").strip().lower()
    if env in ("1", "true", "yes", "on"):
        return True
    if env in ("0", "false", "no", "off"):
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def forced(args=None) -> bool:
    """Progress was asked for explicitly (then activities show at once, not after a delay)."""
    if getattr(args, "quiet", False):
        return False
    return bool(getattr(args, "progress", None)) or \
        os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def bar(args, total: int | None, desc: str, unit: str = "it"):
    """A tqdm bar on stderr (disabled, and silent, when progress is off).

    Examples
    --------
    >>> with bar(None, 3, "demo") as b:   # off: stderr is not a terminal in doctests
    ...     b.update(3)
    """
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: bars here are updated often enough
    on = enabled(args)
    if on and _RUNNING:  # a bar inside a timed step: the bar says more, the line goes
        stop_all()
    on = on and not _HUSH.is_set()
    b = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not on,
             dynamic_ncols=True, mininterval=0.1 if forced(args) else 0.25)
    if on:
        _keep_ticking(b)
    return b


def stop_all() -> None:
    """Erase every activity line on screen (before help or an error message is printed)."""
    for act in list(_RUNNING):
        act.stop(quiet=True)


def silence(on: bool = True) -> None:
    """Stop every bar and activity line from drawing again (Ctrl-C: the message is the last
    line), from any thread; the bars' owners still close them. ``on=False`` lifts it."""
    if not on:
        _HUSH.clear()
        return
    _HUSH.set()
    for b in _BARS[:]:  # a copy: a bar may close (and leave the list) meanwhile
        b.disable = True  # tqdm's refresh and update do nothing on a disabled bar
    for act in _RUNNING[:]:
        act._stop.set()


def _keep_ticking(b) -> None:
    """Redraw ``b`` (its elapsed time) while no update comes: a batch of a slow model can take
    seconds, and a frozen bar looks like a hang."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.5 if _tty() else 1.0):
            b.refresh()

    thread = threading.Thread(target=tick, daemon=True, name="maclaw-progress-bar")
    thread.start()
    close = b.close
    _BARS.append(b)

    def closing() -> None:
        stop.set()
        thread.join()
        if b in _BARS:
            _BARS.remove(b)
        close()

    b.close = closing


def counter(args, desc: str, unit: str = "it", units: dict[str, str] | None = None):
    """A progress callback ``(stage, done, total)`` driving one bar per stage, and its closer.

    The library's long steps (import, workspace sync) report through such a callback; the CLI
    turns each stage into a bar named ``desc: stage`` (counting ``units[stage]``, else
    ``unit``).

    Examples
    --------
    >>> report, close = counter(None, "import")
    >>> report("embedding", 5, 10); close()
    """
    bars: dict[str, object] = {}

    def report(stage: str, done: int, total: int) -> None:
        b = bars.get(stage)
        if b is None:
            for other in bars.values():  # a new stage: the previous ones are finished
                other.close()
            b = bars[stage] = bar(args, total, f"{desc}: {stage}",
                                  (units or {}).get(stage, unit))
        b.update(done - b.n)

    def close() -> None:
        for b in bars.values():
            b.close()
        bars.clear()

    return report, close


class Activity:
    """A timed status line on stderr for a step without a count (see :func:`activity`).

    ``transient``: the line is erased when the step ends (a terminal) instead of ending with
    "done"; :meth:`stop` may be called early (e.g. when the step's first output arrives).

    Examples
    --------
    >>> a = Activity(None, "thinking", transient=True).start()
    >>> a.stop()
    """

    def __init__(self, args, desc: str, *, delay: float | None = None,
                 transient: bool = False) -> None:
        self.desc = desc
        self.on = enabled(args)
        self.wait = (0.0 if forced(args) else SHOW_AFTER_S) if delay is None else delay
        self.transient = transient
        self._stop = threading.Event()
        self._shown = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = time.perf_counter()

    def _line(self, final: str = "") -> None:
        if _HUSH.is_set():
            return
        text = f"{self.desc} … {time.perf_counter() - self._t0:.1f} s{final}"
        with self._lock:
            sys.stderr.write(f"\r\033[K{text}" if _tty() else f"{text}\n")
            sys.stderr.flush()

    def _tick(self) -> None:
        if not self._shown.is_set():
            if self._stop.wait(self.wait):
                return
            self._shown.set()
            self._line()
        while not self._stop.wait(0.25 if _tty() else 1.0):
            self._line()

    def start(self) -> Activity:
        if not self.on:
            return self
        self._t0 = time.perf_counter()
        if self.wait <= 0:  # asked for: the line is there before the step starts
            self._shown.set()
            self._line()
        self._thread = threading.Thread(target=self._tick, daemon=True, name="maclaw-progress")
        self._thread.start()
        _RUNNING.append(self)
        return self

    def stop(self, ok: bool = True, *, quiet: bool = False) -> None:
        """End the line (idempotent); ``quiet``: erase it, whatever ``transient`` says."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self in _RUNNING:
            _RUNNING.remove(self)
        if not self._shown.is_set() or _HUSH.is_set():
            return
        if self.transient or quiet:
            if _tty():
                with self._lock:
                    sys.stderr.write("\r\033[K")
                    sys.stderr.flush()
            return
        self._line(" done" if ok else " failed")
        if _tty():
            sys.stderr.write("\n")
            sys.stderr.flush()


@contextlib.contextmanager
def activity(args, desc: str, *, delay: float | None = None):
    """Show ``desc`` with the elapsed seconds while the block runs (see the module docstring).

    Examples
    --------
    >>> with activity(None, "loading the model"):
    ...     pass
    """
    act = Activity(args, desc, delay=delay).start()
    ok = False
    try:
        yield act
        ok = True
    finally:
        act.stop(ok)


def _tty() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())
