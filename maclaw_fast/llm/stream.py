"""Server-sent events and the assembly of streamed replies for both protocols."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from maclaw_fast.errors import LLMError
from maclaw_fast.llm.types import LLMReply, ToolCall
from maclaw_fast.llm.wire import error_message, make_reply, parse_arguments


class SSEEvent(NamedTuple):
    """One dispatched server-sent event."""

    event: str
    data: str


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Group SSE lines into events (a blank line ends one; ``:`` lines are comments).

    Examples
    --------
    >>> list(iter_sse(["event: ping", "data: {}", "", ": keep-alive", "data: [DONE]", ""]))
    [SSEEvent(event='ping', data='{}'), SSEEvent(event='message', data='[DONE]')]
    """
    event, data = "", []
    for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
    if data:
        yield SSEEvent(event or "message", "\n".join(data))


def _load(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise LLMError(f"malformed JSON in LLM stream event: {data[:200]!r}") from None


class OpenAIStream:
    """Assembles chat-completions chunks: text deltas, tool calls fragmented by index."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self._on_text = on_text
        self._text: list[str] = []
        self._calls: dict[int, dict] = {}
        self._last_index = -1
        self._finish: str | None = None
        self._usage: dict | None = None
        self._done = False

    @property
    def done(self) -> bool:
        """True once ``[DONE]`` arrived."""
        return self._done

    @property
    def finished(self) -> bool:
        """True once the reply is complete (``[DONE]`` or a finish_reason)."""
        return self._done or self._finish is not None

    def handle(self, event: SSEEvent) -> None:
        """Consume one event."""
        if event.data.strip() == "[DONE]":
            self._done = True
            return
        chunk = _load(event.data)
        msg = error_message(chunk)
        if msg:
            raise LLMError(f"LLM error in stream: {msg}")
        if not isinstance(chunk, dict):
            raise LLMError(f"LLM stream chunk is not an object: {event.data[:200]!r}")
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._text.append(content)
                self._on_text(content)
            for frag in delta.get("tool_calls") or ():
                self._add_fragment(frag)
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]

    def _add_fragment(self, frag: Any) -> None:
        if not isinstance(frag, dict):
            raise LLMError("LLM stream has a tool-call fragment that is not an object")
        index = frag.get("index")
        if not isinstance(index, int):
            # Providers that omit the index send one whole call per new id.
            new = frag.get("id") and all(c["id"] != frag["id"] for c in self._calls.values())
            index = self._last_index + 1 if new or self._last_index < 0 else self._last_index
        self._last_index = index
        call = self._calls.setdefault(index, {"id": "", "name": "", "args": []})
        if frag.get("id"):
            call["id"] = str(frag["id"])
        fn = frag.get("function") or {}
        name = fn.get("name")
        # Some providers repeat the full name in every fragment; others split it.
        if name and name != call["name"]:
            call["name"] += name
        if fn.get("arguments"):
            call["args"].append(str(fn["arguments"]))

    def reply(self) -> LLMReply:
        """The assembled reply; raises LLMError for a stream that stopped short."""
        if not self.finished:
            raise LLMError("LLM stream ended before a finish_reason or [DONE]")
        calls = []
        for index in sorted(self._calls):
            c = self._calls[index]
            if not c["name"]:
                raise LLMError(f"LLM stream has tool call #{index} without a name")
            args, raw = parse_arguments("".join(c["args"]))
            calls.append(ToolCall(c["id"] or f"call_{index}", c["name"], args, raw))
        return make_reply("".join(self._text), calls, self._finish, self._usage)


class AnthropicStream:
    """Assembles Anthropic message events into one reply."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self._on_text = on_text
        self._blocks: dict[int, dict] = {}
        self._stop: str | None = None
        self._usage: dict = {}
        self._done = False

    @property
    def done(self) -> bool:
        """True once ``message_stop`` arrived."""
        return self._done

    @property
    def finished(self) -> bool:
        """True once the reply is complete (``message_stop`` or a stop reason)."""
        return self._done or self._stop is not None

    def handle(self, event: SSEEvent) -> None:
        """Consume one event."""
        data = _load(event.data)
        if not isinstance(data, dict):
            raise LLMError(f"LLM stream event is not an object: {event.data[:200]!r}")
        kind = data.get("type") or event.event
        if kind == "error" or event.event == "error":
            raise LLMError(f"LLM error in stream: {error_message(data) or data}")
        if kind == "message_start":
            usage = (data.get("message") or {}).get("usage")
            if isinstance(usage, dict):
                self._usage.update(usage)
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            entry = {"type": block.get("type"), "text": [], "json": [],
                     "id": block.get("id"), "name": block.get("name"),
                     "input": block.get("input")}
            if block.get("type") == "text" and block.get("text"):
                entry["text"].append(block["text"])
                self._on_text(block["text"])
            self._blocks[int(data.get("index", len(self._blocks)))] = entry
        elif kind == "content_block_delta":
            self._delta(data)
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop = delta["stop_reason"]
            if isinstance(data.get("usage"), dict):
                self._usage.update(data["usage"])
        elif kind == "message_stop":
            self._done = True

    def _delta(self, data: dict) -> None:
        index = int(data.get("index", 0))
        block = self._blocks.get(index)
        if block is None:
            raise LLMError(f"LLM stream sent a delta for unknown content block {index}")
        delta = data.get("delta") or {}
        if delta.get("type") == "text_delta":
            text = str(delta.get("text") or "")
            if text:
                block["text"].append(text)
                self._on_text(text)
        elif delta.get("type") == "input_json_delta":
            block["json"].append(str(delta.get("partial_json") or ""))

    def reply(self) -> LLMReply:
        """The assembled reply; raises LLMError for a stream that stopped short."""
        if not self.finished:
            raise LLMError("LLM stream ended before message_stop")
        texts, calls = [], []
        for index in sorted(self._blocks):
            b = self._blocks[index]
            if b["type"] == "text":
                texts.append("".join(b["text"]))
            elif b["type"] == "tool_use":
                if not b["name"]:
                    raise LLMError(f"LLM stream has tool_use block {index} without a name")
                streamed = "".join(b["json"])
                args, raw = parse_arguments(streamed if streamed else b["input"])
                calls.append(ToolCall(str(b["id"] or f"toolu_{index}"), str(b["name"]),
                                      args, raw))
        return make_reply("".join(texts), calls, self._stop, self._usage)
