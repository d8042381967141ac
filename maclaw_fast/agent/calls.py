"""Running the model's tool calls of one agent turn: one at a time, each answered in the
conversation (also when refused or cancelled, so the history stays well-formed), its success
recorded for routing experience, its output bounded.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import msgspec

from maclaw_fast.agent.handlers import ToolContext
from maclaw_fast.errors import MaclawError, NotFoundError

log = logging.getLogger(__name__)


class ToolCallRecord(msgspec.Struct, kw_only=True):
    """One executed (or refused, or cancelled) tool call of a turn."""

    id: str
    name: str
    arguments: dict
    ok: bool
    result: str
    elapsed_ms: float = 0.0


def is_cancelled(cancel) -> bool:
    """Whether ``cancel`` (None, an Event, or a callable) says stop."""
    if cancel is None:
        return False
    is_set = getattr(cancel, "is_set", None)
    return bool(is_set() if callable(is_set) else cancel())


def as_text(value: Any, limit: int) -> str:
    """A tool result as the text the model reads, cut at ``limit`` characters.

    Examples
    --------
    >>> as_text({"ok": True}, 100), as_text("abcdef", 3)
    ('{"ok": true}', 'abc... (3 more chars)')
    """
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


def run_calls(agent, calls, ctx: ToolContext, turn, cancel, on_event) -> bool:
    """Run ``calls`` of ``agent``'s turn in order; True when cancelled part-way (the rest are
    answered "cancelled")."""
    for i, call in enumerate(calls):
        if i > 0 and is_cancelled(cancel):
            for rest in calls[i:]:
                _answer(agent, turn, rest, False, json.dumps(
                    {"ok": False, "error": "cancelled by the user before it ran"}), 0.0)
            return True
        t = time.perf_counter()
        ok, text = execute(agent, call, ctx)
        if agent.features is not None:
            text = agent.features.after_tool(call.name, call.arguments, ok, text, turn.features)
        _answer(agent, turn, call, ok, text, (time.perf_counter() - t) * 1e3)
        if on_event is not None:
            on_event("tool", turn.tool_calls[-1])
    return False


def _answer(agent, turn, call, ok: bool, text: str, ms: float) -> None:
    agent.context.add_message({"role": "tool", "tool_call_id": call.id, "name": call.name,
                               "content": text})
    turn.tool_calls.append(ToolCallRecord(id=call.id, name=call.name,
                                          arguments=dict(call.arguments), ok=ok, result=text,
                                          elapsed_ms=ms))


def execute(agent, call, ctx: ToolContext) -> tuple[bool, str]:
    """``(ok, result text)`` of one call through ``agent``'s registry; a tool's exception
    becomes an error result (it must not end the conversation)."""
    limit = agent.config.max_tool_output_chars
    try:
        tool = agent.registry.get(call.name)
    except NotFoundError:
        return False, json.dumps({"ok": False, "error": f"unknown tool {call.name!r}"})
    ok, result = False, None
    if not call.arguments_valid:
        result = {"ok": False, "error": "arguments are not a JSON object: "
                                        f"{call.raw_arguments[:200]!r}"}
    elif tool.handler is None:
        result = {"ok": False, "error": f"tool {call.name!r} cannot run in this process "
                                        "(no handler)"}
    elif tool.status == "unavailable":
        result = {"ok": False, "error": f"tool {call.name!r} is unavailable"}
    else:
        try:
            if getattr(tool.handler, "wants_context", False):
                result = tool.handler(dict(call.arguments), context=ctx)
            else:
                result = tool.handler(dict(call.arguments))
            ok = not (isinstance(result, dict) and result.get("ok") is False)
        except MaclawError as exc:
            result = {"ok": False, "error": str(exc)}
        except Exception as exc:  # a tool's bug must not end the conversation
            log.warning("tool %r raised", call.name, exc_info=True)
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if agent.usage is not None:
        try:
            agent.usage.record(call.name, ctx.message, ok)
        except Exception:  # noqa: BLE001 - bookkeeping must not fail the call
            log.warning("usage record for %r failed", call.name, exc_info=True)
    return ok, as_text(result, limit)
