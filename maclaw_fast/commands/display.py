"""Stored text made safe for a terminal: one line, control characters shown, not obeyed.

A memory, a note or a tool description may hold terminal escape sequences (a pasted log, or
text written on purpose to recolour, retitle or clear the screen); printed raw, the terminal
would act on them. Every command that prints stored text passes it through :func:`one_line`.
"""

from __future__ import annotations

import re

# C0 controls, DEL and the C1 controls (0x9b is a one-byte CSI); tab and newline are handled
# first so ordinary multi-line text still reads as words
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return "^[" if code == 0x1B else f"\\x{code:02x}"


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` on one line (runs of white space become one space), every other control
    character written out (``ESC`` as ``^[``), cut to ``limit`` characters with ``…``.

    Examples
    --------
    >>> one_line("red \\x1b[31mALERT\\x1b[0m\\n  done")
    'red ^[[31mALERT^[[0m done'
    >>> one_line("a long line of text", 10)
    'a long li…'
    """
    flat = " ".join(text.split())
    safe = _CONTROL.sub(_visible, flat)
    if limit is not None and len(safe) > limit:
        return safe[: max(limit - 1, 0)] + "…"
    return safe
