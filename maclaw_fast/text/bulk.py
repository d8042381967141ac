"""Tokenise many texts at once, on two cores when there is enough text to pay for it.

Python's ``re`` holds the GIL, so threads cannot share the work; a forked child can. The child
only runs the tokenizer (``re``, ``rjieba``) and msgspec on texts it inherited, writes one
msgpack message to a pipe and leaves with ``os._exit``: it touches no numba, ONNX or file state
of the parent. Anything unexpected (no ``fork`` here, a failed child, a short message) falls back
to tokenising in the caller, so the result never depends on whether the fork happened.
"""

from __future__ import annotations

import os

import msgspec

from maclaw_fast.text.tokenizer import tokenize

# below this many characters one core is as fast: a fork plus the pipe cost ~20–40 ms
FORK_MIN_CHARS = 4_000_000


def tokenize_joined(texts: list[str], sep: str, *, fork: bool = True) -> list[str]:
    """``sep.join(tokenize(t))`` for every text, in order; a large batch is split with a forked
    child (POSIX, two or more cores).

    Examples
    --------
    >>> tokenize_joined(["Deploy script", "部署脚本"], "|")
    ['deploy|script', '部署|脚本']
    """
    half = len(texts) // 2
    if (not fork or half == 0 or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2
            or sum(map(len, texts)) < FORK_MIN_CHARS):
        return [sep.join(tokenize(t)) for t in texts]
    child = _start_child(texts[half:], sep)
    mine = [sep.join(tokenize(t)) for t in texts[:half]]
    theirs = _collect(child, len(texts) - half) if child is not None else None
    if theirs is None:
        theirs = [sep.join(tokenize(t)) for t in texts[half:]]
    return mine + theirs


def _start_child(texts: list[str], sep: str) -> tuple[int, int] | None:
    try:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the child: tokenise, send, leave without running any of the parent's code
        code = 1
        try:
            os.close(read_fd)
            view = memoryview(msgspec.msgpack.encode([sep.join(tokenize(t)) for t in texts]))
            while view:
                view = view[os.write(write_fd, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def _collect(child: tuple[int, int], expected: int) -> list[str] | None:
    pid, read_fd = child
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
    finally:
        _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        out = msgspec.msgpack.decode(data, type=list[str])
    except msgspec.DecodeError:
        return None
    return out if len(out) == expected else None
