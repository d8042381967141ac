"""Cleaning reply text and finding the JSON value in it."""

from __future__ import annotations

import json
import re
from typing import Any

from maclaw_fast.errors import LLMError

_THINK_PAIR = re.compile(r"<(think|thinking)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<(?:think|thinking)\b[^>]*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)\s*>", re.IGNORECASE)

# Function-call syntax some models print as text next to (or instead of) real tool calls; it is
# never meant for the user.
_MARKUP_BLOCKS = re.compile(
    r"<(tool_call|tool_calls|function_calls|minimax:tool_call|invoke)\b[^>]*>.*?</\1\s*>"
    r"|<function=[^>]*>.*?</function\s*>"
    r"|<\|tool_calls?_section_begin\|>.*?<\|tool_calls?_section_end\|>"
    r"|<｜tool▁calls▁begin｜>.*?<｜tool▁calls▁end｜>",
    re.IGNORECASE | re.DOTALL,
)
_MARKUP_TAIL = re.compile(
    r"(?:<(?:tool_call|function_calls|minimax:tool_call)\b[^>]*>|\[TOOL_CALLS\]).*\Z",
    re.IGNORECASE | re.DOTALL,
)
_SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_]+\|>|<｜[^｜>]{1,40}｜>")
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def strip_think(text: str) -> str:
    """Remove ``<think>…</think>`` blocks (the model's reasoning) from a reply.

    Also handles the truncated forms: an opening tag that is never closed drops the rest of the
    text, and a closing tag with no opening one (templates that pre-fill ``<think>``) drops
    everything before it. The result is trimmed.

    Examples
    --------
    >>> strip_think("<think>plan</think> Answer")
    'Answer'
    >>> strip_think("reasoning only</think>Answer")
    'Answer'
    >>> strip_think("<think>never finished")
    ''
    """
    if not text:
        return ""
    out = _THINK_PAIR.sub("", text)
    close = _THINK_CLOSE.search(out)
    if close is not None and _THINK_OPEN.search(out, 0, close.start()) is None:
        out = out[close.end():]
        out = _THINK_CLOSE.sub("", out)
    opened = _THINK_OPEN.search(out)
    if opened is not None:
        out = out[: opened.start()]
    return out.strip()


def strip_tool_markup(text: str) -> str:
    """Remove function-call markup a model printed as text (``<tool_call>…``, ``<invoke>…``,
    special tokens such as ``<|tool_call_begin|>``). An unclosed block drops the rest.

    Examples
    --------
    >>> strip_tool_markup('Sure.<tool_call>{"name": "x"}</tool_call>')
    'Sure.'
    """
    if not text:
        return ""
    out = _MARKUP_BLOCKS.sub("", text)
    out = _MARKUP_TAIL.sub("", out)
    out = _SPECIAL_TOKEN.sub("", out)
    return out.strip()


def clean_text(text: str) -> str:
    """``strip_think`` then ``strip_tool_markup``: the text a user should see.

    Examples
    --------
    >>> clean_text("<think>x</think>Hi<|tool_call_end|>")
    'Hi'
    """
    return strip_tool_markup(strip_think(text))


def _scan_candidates(body: str) -> list[tuple[int, Any]]:
    """Every outermost JSON object/array embedded in ``body``, as (length, value)."""
    found: list[tuple[int, Any]] = []
    pos, n = 0, len(body)
    while pos < n:
        brace = body.find("{", pos)
        bracket = body.find("[", pos)
        starts = [i for i in (brace, bracket) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(body, start)
        except ValueError:
            pos = start + 1
            continue
        found.append((end - start, value))
        pos = end
    # The biggest value is the answer; small ones are usually prose such as "[1]".
    found.sort(key=lambda item: -item[0])
    return found


def _candidates(body: str):
    for match in _FENCE.finditer(body):
        try:
            yield json.loads(match.group(1).strip())
        except ValueError:
            pass
    try:
        yield json.loads(body)
    except ValueError:
        pass
    for _, value in _scan_candidates(body):
        yield value


def extract_json(text: str, expect: type | tuple[type, ...] | None = None) -> Any:
    """Find and parse the JSON value in an LLM reply.

    Looks, in order, at fenced code blocks (```json … ```), the whole text, and the largest
    JSON object or array embedded in prose. Think blocks are removed first.

    Parameters
    ----------
    text : str
        The reply text.
    expect : type or tuple of types, optional
        Accept only a value of this type (``list`` or ``dict``); other JSON values found are
        skipped.

    Returns
    -------
    Any
        The parsed value.

    Raises
    ------
    LLMError
        No JSON value (of the expected type) is in the text.

    Examples
    --------
    >>> extract_json('Here you go:\\n```json\\n{"a": [1, 2]}\\n```\\nDone.')
    {'a': [1, 2]}
    >>> extract_json('I kept [1] item: [{"keep": 0}]', expect=list)
    [{'keep': 0}]
    """
    if not isinstance(text, str):
        raise LLMError(f"expected reply text, got {type(text).__name__}")
    body = strip_think(text)
    if not body:
        raise LLMError("LLM reply is empty; no JSON to parse")
    wrong: set[str] = set()
    for value in _candidates(body):
        if expect is None or isinstance(value, expect):
            return value
        wrong.add(type(value).__name__)
    preview = body[:200].replace("\n", " ")
    if wrong:
        names = expect.__name__ if isinstance(expect, type) else str(expect)
        raise LLMError(
            f"LLM reply holds JSON of type {sorted(wrong)}, expected {names}: {preview!r}"
        )
    raise LLMError(f"no JSON value found in LLM reply: {preview!r}")


class StreamTextFilter:
    """Drops think blocks and tool-call markup from text that arrives in pieces.

    Holds back a short tail that could be the start of a tag, so a tag split across two
    deltas is still recognised. Leading whitespace of the visible text is dropped.

    Examples
    --------
    >>> f = StreamTextFilter()
    >>> f.feed("<thi") + f.feed("nk>hidden</think>Hel") + f.feed("lo") + f.flush()
    'Hello'
    """

    _PAIRS = (
        ("<think>", "</think>"),
        ("<thinking>", "</thinking>"),
        ("<tool_call>", "</tool_call>"),
        ("<function_calls>", "</function_calls>"),
        ("<minimax:tool_call>", "</minimax:tool_call>"),
    )
    # Closing tags met outside a block (reasoning whose opening tag the template supplied).
    _ORPHANS = ("</think>", "</thinking>")

    def __init__(self) -> None:
        self._buf = ""
        self._close: str | None = None
        self._started = False
        self._opens = [o for o, _ in self._PAIRS] + list(self._ORPHANS)
        self._longest = max(len(t) for t in self._opens + [c for _, c in self._PAIRS])

    def _hold(self, buf: str, tags: list[str]) -> int:
        """Length of the tail of ``buf`` that is a proper prefix of one of ``tags``."""
        for k in range(min(len(buf), self._longest - 1), 0, -1):
            tail = buf[-k:]
            if any(t.startswith(tail) for t in tags):
                return k
        return 0

    def _emit(self, piece: str) -> str:
        if not self._started:
            piece = piece.lstrip()
            self._started = bool(piece)
        return piece

    def feed(self, chunk: str) -> str:
        """Add a delta; return the part of the text that is now known to be visible."""
        buf = self._buf + chunk
        out: list[str] = []
        while buf:
            if self._close is not None:
                end = buf.find(self._close)
                if end < 0:
                    keep = self._hold(buf, [self._close])
                    buf = buf[len(buf) - keep:] if keep else ""
                    break
                buf = buf[end + len(self._close):]
                self._close = None
                continue
            hits = [(buf.find(t), t) for t in self._opens]
            hits = [(i, t) for i, t in hits if i >= 0]
            if not hits:
                keep = self._hold(buf, self._opens)
                out.append(self._emit(buf[: len(buf) - keep]))
                buf = buf[len(buf) - keep:]
                break
            at, tag = min(hits)
            out.append(self._emit(buf[:at]))
            buf = buf[at + len(tag):]
            if tag not in self._ORPHANS:
                self._close = dict(self._PAIRS)[tag]
        self._buf = buf
        return "".join(out)

    def flush(self) -> str:
        """End of stream: release held-back text (nothing if a block is still open)."""
        buf, self._buf = self._buf, ""
        if self._close is not None:
            return ""
        return self._emit(buf)
