"""Run a text function over two halves of a batch, on two cores when there is enough text.

Python's ``re`` holds the GIL, so threads cannot share tokenising; a forked child can. The child
only runs the given function (chunking, ``re``, ``rjieba``) and msgspec on items it inherited,
leaves one msgpack message in shared memory (its length goes through a pipe) and exits with
``os._exit``: it touches no numba, ONNX or file state of the parent. Anything unexpected (no
``fork`` here, a failed child, a message that does not decode or fails the caller's check)
falls back to running the function in the caller, so the result never depends on whether the
fork happened.
"""

from __future__ import annotations

import gc
import mmap
import os
import signal
import struct
import warnings
from contextlib import contextmanager
from typing import Any, Callable, NamedTuple

import msgspec

# below this many characters one core is as fast: a fork plus the pipe cost ~20–40 ms
FORK_MIN_CHARS = 4_000_000
_LENGTH = struct.Struct("<q")


def forked_parts(func: Callable[[list], Any], texts: list, result_type: Any, *,
                 fork: bool = True, valid: Callable[[list, Any], bool] | None = None,
                 size: Callable[[Any], int] = len):
    """Yield ``func(texts)``, or, with ≥ ``FORK_MIN_CHARS`` characters on a POSIX machine with
    two or more cores, ``func(first_half)`` then ``func(second_half)`` (halves by characters, in
    order), the second half computed in a forked child and sent back as msgpack of
    ``result_type``.

    A generator, so the caller can use the first half while the child finishes. ``func``
    should return something compact (columns, not millions of small objects). A child result
    that fails ``valid(its_texts, result)`` is computed again in the caller, like any other
    child failure; a caller that stops early has the child stopped and reaped. ``texts`` may
    hold any items when ``size`` gives each one's character count.

    Examples
    --------
    >>> list(forked_parts(lambda part: "".join(part), ["a", "b", "c"], str))
    ['abc']
    """
    sizes = [size(t) for t in texts]
    total = sum(sizes)
    if (not fork or len(texts) < 2 or total < FORK_MIN_CHARS or not hasattr(os, "fork")
            or (os.cpu_count() or 1) < 2):
        yield func(texts)
        return
    half, acc = 0, 0
    while half < len(texts) - 1 and acc + sizes[half] <= total // 2:
        acc += sizes[half]
        half += 1
    child = _start_child(func, texts[half:], total - acc)
    try:
        yield func(texts[:half])
        theirs, child = (_collect(child, result_type) if child is not None else None), None
    finally:
        if child is not None:  # the caller stopped early (or func raised): end the child
            _stop(child)
    if theirs is None or (valid is not None and not valid(texts[half:], theirs)):
        theirs = func(texts[half:])
    yield theirs


def _stop(child: _Child) -> None:
    """End a child whose result nobody will read; each step may already be done."""
    for step in (lambda: os.close(child.read_fd), lambda: os.kill(child.pid, signal.SIGKILL),
                 lambda: os.waitpid(child.pid, 0)):
        try:
            step()
        except OSError:  # closed, gone or reaped already (ChildProcessError is an OSError)
            pass
    try:
        child.shared.close()
    except BufferError:  # a view of it is still alive: the mapping goes with the last one
        pass


@contextmanager
def paused_gc(pause: bool = True):
    """Hold the cyclic garbage collector while a bulk job builds millions of acyclic objects
    (measured: ~0.2 s of a 2 s workspace build); restores its previous state.

    Examples
    --------
    >>> with paused_gc():
    ...     gc.isenabled()
    False
    """
    was = gc.isenabled()
    if pause and was:
        gc.disable()
    try:
        yield
    finally:
        if pause and was:
            gc.enable()


class _Child(NamedTuple):
    pid: int
    read_fd: int  # the child's status: the message length, or -1 and then the message itself
    shared: mmap.mmap  # where the message goes when it fits (no pipe copies, read in place)


def _start_child(func, texts: list, chars: int) -> _Child | None:
    try:
        # shared anonymous memory is allocated only where the child writes: reserving ~8 bytes
        # per character covers texts, tokens and ids several times over
        shared = mmap.mmap(-1, max(1 << 20, 8 * chars))
    except (OSError, ValueError):
        return None
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        shared.close()
        return None
    try:
        with warnings.catch_warnings():
            # 3.12+ warns (an error under -W error) when threads exist; the child runs none of
            # their code, and the warning must not leave a child whose pid we lost
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        shared.close()
        return None
    if pid == 0:  # the child: compute, send, leave without running any of the parent's code
        code = 1
        try:
            os.close(read_fd)
            data = msgspec.msgpack.encode(func(texts))
            fits = len(data) <= len(shared)
            if fits:
                shared[: len(data)] = data
            view = memoryview(_LENGTH.pack(len(data) if fits else -1) + (b"" if fits else data))
            while view:
                view = view[os.write(write_fd, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    return _Child(pid, read_fd, shared)


def _collect(child: _Child, result_type) -> Any:
    try:
        with os.fdopen(child.read_fd, "rb") as pipe:
            status_bytes = pipe.read()
    finally:
        _, status = os.waitpid(child.pid, 0)
    try:
        if status != 0 or len(status_bytes) < _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(status_bytes)
        if length >= 0:
            with memoryview(child.shared)[:length] as message:
                return msgspec.msgpack.decode(message, type=result_type)
        return msgspec.msgpack.decode(status_bytes[_LENGTH.size:], type=result_type)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return None
    finally:
        child.shared.close()
