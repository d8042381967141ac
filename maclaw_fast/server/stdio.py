"""The MCP server over stdio, answering every line it cannot read with a JSON-RPC error.

The SDK's stdio transport hands a line it cannot parse (not JSON, not a JSON-RPC message, or
JSON holding a lone surrogate escape such as ``"\\ud800"``, which is not Unicode text) to the
server as an exception, and the server drops it: the client would wait forever for a reply.
Here such a line gets an error reply at once (``-32700`` parse error or ``-32600`` invalid
request, with the request's id when it can be read, else ``null``), and serving goes on.
"""

from __future__ import annotations

import json
from typing import Any

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _request_id(obj: Any) -> int | str | None:
    rid = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    if isinstance(rid, str) and _has_surrogate(rid):
        return None  # an id the reply could not carry either
    return rid


def malformed_reply(exc: Exception) -> tuple[int | str | None, int, str] | None:
    """``(id, code, message)`` of the error reply to a line the transport could not read, or
    None when no reply is due (a malformed notification or response: nothing waits for one).

    Examples
    --------
    >>> from pydantic import TypeAdapter, ValidationError
    >>> try:
    ...     TypeAdapter(dict).validate_json('{"id": 7, "method": "x", "params": "\\\\ud800"}')
    ... except ValidationError as exc:
    ...     rid, code, _ = malformed_reply(exc)
    >>> rid, code
    (7, -32700)
    """
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else []
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    raw = first.get("input")
    obj: Any = None
    parsed = False
    if isinstance(raw, (str, bytes, bytearray)):
        try:
            obj, parsed = json.loads(raw), True
        except (ValueError, RecursionError):
            pass
    elif raw is not None:
        obj, parsed = raw, True
    if isinstance(obj, dict) and "id" not in obj and ("method" in obj or "result" in obj
                                                      or "error" in obj):
        return None  # a notification or a response: JSON-RPC replies to neither
    rid = _request_id(obj)
    if parsed and _has_surrogate(obj):
        return rid, PARSE_ERROR, ("Parse error: the request holds a lone surrogate escape "
                                  "(such as \\ud800), which is not Unicode text; send strings "
                                  "as valid UTF-8 or surrogate pairs")
    where = ".".join(str(x) for x in first.get("loc", ())[-1:])
    reason = str(first.get("msg") or exc).encode("ascii", "backslashreplace").decode()[:300]
    reason = f"{where}: {reason}" if where else reason
    if not parsed or first.get("type") == "json_invalid":
        return rid, PARSE_ERROR, f"Parse error: {reason}"
    return rid, INVALID_REQUEST, f"Invalid request: not a JSON-RPC 2.0 message ({reason})"


class _AnswersMalformed:
    """The transport's read stream with its unreadable lines answered and left out."""

    def __init__(self, inner, write_stream) -> None:
        self._inner, self._write = inner, write_stream
        self.last_context = None  # the SDK reads each message's sender context from here

    async def receive(self):
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                self.last_context = getattr(self._inner, "last_context", None)
                return item
            reply = malformed_reply(item)
            if reply is not None:
                rid, code, message = reply
                await self._write.send(SessionMessage(JSONRPCError(
                    jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))))

    def __aiter__(self):
        return self

    async def __anext__(self):
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


async def serve_stdio_async(mcp) -> None:
    """Serve ``mcp`` (an SDK ``MCPServer``) over this process's stdin and stdout."""
    from mcp.server.stdio import stdio_server

    # The SDK has no public call to run an MCPServer on given streams: its low-level server
    # is the one MCPServer.run_stdio_async drives (tests/fault/test_mcp_stdio.py pins this).
    server = mcp._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        await server.run(_AnswersMalformed(read_stream, write_stream), write_stream,
                         server.create_initialization_options())


def serve_stdio(mcp) -> None:
    import anyio

    anyio.run(serve_stdio_async, mcp)
