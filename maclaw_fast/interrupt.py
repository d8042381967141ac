"""Ctrl-C for the command line: one line on stderr at once, exit 130 within :data:`GRACE_S`.

Python runs its SIGINT handler only between bytecodes of the main thread, so a command inside
a long native call (a model embedding a batch, a numba kernel) would hear Ctrl-C only when the
call returns: tens of seconds on a busy machine. The signal's arrival is seen at once through
:func:`signal.set_wakeup_fd` by a watcher thread (native calls release the GIL); it prints the
message and gives the main thread :data:`GRACE_S` to unwind (closing stores, the exit handlers)
before it ends the process itself.

Ending the process that way keeps every acknowledged write: the journal is appended with
``os.write`` before a call returns (the data is the kernel's from then on), snapshots are
written to a temporary file and renamed, and the store's ``flock`` goes with the process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

EXIT_CODE = 130  # 128 + SIGINT, what shells report for a command Ctrl-C stopped
GRACE_S = 1.5  # the main thread's time to unwind before the process ends regardless
MESSAGE = "interrupted (Ctrl-C): stopped"
# a command that ends its own way (chat, serve) may still take a moment (a last LLM call)
MESSAGE_OWN = "interrupted (Ctrl-C): finishing up"

_state = {"depth": 0, "fired": False, "force": True}
_lock = threading.Lock()


def fired() -> bool:
    """Whether Ctrl-C arrived while a :func:`guard` was active (the message is printed)."""
    return _state["fired"]


def _announce() -> None:
    with _lock:
        if _state["fired"]:
            return
        _state["fired"] = True
    from maclaw_fast.progress import silence

    with contextlib.suppress(Exception):
        silence()  # no bar drawn over or after the message
    # os.write, not sys.stderr: the main thread may hold the stream's lock mid-write
    with contextlib.suppress(OSError):
        os.write(2, f"\n{MESSAGE if _state['force'] else MESSAGE_OWN}\n".encode())


def _watch(read_fd: int, done: threading.Event) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data or done.is_set():
            return
        if signal.SIGINT not in data:  # another handled signal (SIGTERM of a server): not ours
            continue
        _announce()
        if _state["force"] and not done.wait(GRACE_S):
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os._exit(EXIT_CODE)
        return


@contextlib.contextmanager
def guard(*, force: bool = True):
    """Within the block, Ctrl-C prints :data:`MESSAGE` at once and (``force``) ends the
    process with :data:`EXIT_CODE` unless the block is left within :data:`GRACE_S`.

    Nested guards share one watcher; the innermost's ``force`` holds while it is active. Off the main thread, or where
    SIGINT is not Python's (ignored, as in a background job of a script), it does nothing.

    Examples
    --------
    >>> with guard():
    ...     fired()
    False
    """
    if _state["depth"]:
        outer = _state["force"]
        _state["depth"] += 1
        _state["force"] = force
        try:
            yield
        finally:
            _state["depth"] -= 1
            _state["force"] = outer
        return
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd's requirement: a full pipe never blocks
    previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(read_fd, done), daemon=True,
                               name="maclaw-interrupt")
    _state.update(depth=1, fired=False, force=force)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        with contextlib.suppress(OSError):
            os.write(write_fd, b"\0")  # wakes the watcher, which sees ``done`` and leaves
        watcher.join(GRACE_S)
        for fd in (read_fd, write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        _state["depth"] = 0
        if _state["fired"]:
            from maclaw_fast.progress import silence

            silence(False)  # the next run in this process (tests call main() in turn) draws again
