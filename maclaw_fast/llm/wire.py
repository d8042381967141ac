"""Request bodies and non-streamed reply parsing for the two wire protocols.

Callers always speak OpenAI-style messages and tools; this module translates them for the
Anthropic messages API and translates both kinds of reply back into an ``LLMReply``.
"""

from __future__ import annotations

import json
from typing import Any

from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm.config import LLMConfig
from maclaw_fast.llm.text import clean_text
from maclaw_fast.llm.types import LLMReply, ToolCall

ROLES = frozenset({"system", "user", "assistant", "tool"})
ANTHROPIC_VERSION = "2023-06-01"
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
           "max_tokens": "length"}


# --- messages and tools ---------------------------------------------------------------------

def _text_of(content: Any, where: str) -> str:
    """Flatten OpenAI content (str, None or a list of text parts) to a string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            else:
                raise ValidationError(f"{where}: only text content parts are supported")
        return "".join(parts)
    raise ValidationError(f"{where}: content must be a string, a list of parts or None")


def _tool_call_dict(call: Any, where: str) -> dict:
    """Normalise an assistant tool call (ToolCall or OpenAI dict) to the OpenAI wire form."""
    if isinstance(call, ToolCall):
        return call.to_openai()
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise ValidationError(f"{where}: a tool call needs a 'function' object")
    fn = call["function"]
    if not fn.get("name"):
        raise ValidationError(f"{where}: a tool call needs a function name")
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return {"id": str(call.get("id") or ""), "type": "function",
            "function": {"name": fn["name"], "arguments": args}}


def check_messages(messages: Any) -> list[dict]:
    """Validate OpenAI-style messages; return them with tool calls in wire form."""
    if not isinstance(messages, list) or not messages:
        raise ValidationError("messages must be a non-empty list of dicts")
    out = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise ValidationError(f"{where} must be a dict, got {type(msg).__name__}")
        role = msg.get("role")
        if role not in ROLES:
            raise ValidationError(f"{where}: role must be one of {sorted(ROLES)}, got {role!r}")
        clean: dict = {"role": role, "content": _text_of(msg.get("content"), where)}
        if role == "tool":
            if not msg.get("tool_call_id"):
                raise ValidationError(f"{where}: a tool message needs tool_call_id")
            clean["tool_call_id"] = str(msg["tool_call_id"])
        if role == "assistant" and msg.get("tool_calls"):
            clean["tool_calls"] = [_tool_call_dict(c, where) for c in msg["tool_calls"]]
        if msg.get("name") and role in ("user", "assistant"):
            clean["name"] = str(msg["name"])
        out.append(clean)
    return out


def merge_system(messages: list[dict]) -> list[dict]:
    """Put every system message's text into one leading system message."""
    system = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    rest = [m for m in messages if m["role"] != "system"]
    if not system:
        return rest
    return [{"role": "system", "content": "\n\n".join(system)}] + rest


def check_tools(tools: Any) -> list[dict]:
    """Validate tools; return them in OpenAI function format.

    Accepts the OpenAI form ``{"type": "function", "function": {...}}`` and the flat
    ``{"name", "description", "parameters" | "input_schema"}`` form.
    """
    if not isinstance(tools, list):
        raise ValidationError("tools must be a list of dicts")
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ValidationError(f"tools[{i}] must be a dict")
        fn = tool.get("function") if tool.get("type") == "function" else tool
        if not isinstance(fn, dict) or not fn.get("name"):
            raise ValidationError(f"tools[{i}] needs a function name")
        params = fn.get("parameters", fn.get("input_schema")) or {
            "type": "object", "properties": {}}
        if not isinstance(params, dict):
            raise ValidationError(f"tools[{i}]: parameters must be a JSON-schema object")
        out.append({"type": "function", "function": {
            "name": str(fn["name"]), "description": str(fn.get("description") or ""),
            "parameters": params}})
    return out


def _anthropic_tool_choice(choice: Any) -> dict:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "tool", "name": choice["function"]["name"]}
    raise ValidationError(f"unsupported tool_choice {choice!r}")


def to_anthropic(messages: list[dict]) -> tuple[str, list[dict]]:
    """Split checked OpenAI messages into an Anthropic ``system`` string and message list.

    Tool results become ``tool_result`` blocks in a user turn, assistant tool calls become
    ``tool_use`` blocks, and consecutive turns of the same role are merged because the API
    wants user and assistant to alternate.
    """
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system" and m["content"])
    turns: list[dict] = []
    for m in messages:
        role = m["role"]
        if role == "system":
            continue
        if role == "tool":
            blocks = [{"type": "tool_result", "tool_use_id": m["tool_call_id"],
                       "content": m["content"]}]
            role = "user"
        else:
            blocks = [{"type": "text", "text": m["content"]}] if m["content"] else []
            for call in m.get("tool_calls", ()):
                args = call["function"]["arguments"]
                try:
                    parsed = json.loads(args) if args.strip() else {}
                except ValueError:
                    parsed = {}
                blocks.append({"type": "tool_use", "id": call["id"],
                               "name": call["function"]["name"],
                               "input": parsed if isinstance(parsed, dict) else {}})
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        # The API rejects empty content; an empty assistant turn can come from a blank reply.
        if not turn["content"]:
            turn["content"] = [{"type": "text", "text": "(empty)"}]
    return system, turns


def build_request(config: LLMConfig, messages: list[dict], tools: list[dict] | None,
                  stream: bool, *, tool_choice: Any = None, temperature: float | None = None,
                  max_tokens: int | None = None) -> tuple[dict, dict]:
    """Return ``(headers, json_body)`` for one call."""
    temperature = config.temperature if temperature is None else temperature
    body: dict = {"model": config.model, "max_tokens": max_tokens or config.max_tokens}
    if temperature is not None:
        body["temperature"] = temperature
    if stream:
        body["stream"] = True
    headers = {"content-type": "application/json"}
    if config.protocol == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if config.api_key:
            headers["x-api-key"] = config.api_key
        system, turns = to_anthropic(messages)
        if system:
            body["system"] = system
        body["messages"] = turns
        if tools:
            body["tools"] = [{"name": t["function"]["name"],
                              "description": t["function"]["description"],
                              "input_schema": t["function"]["parameters"]} for t in tools]
            if tool_choice is not None:
                body["tool_choice"] = _anthropic_tool_choice(tool_choice)
        return headers, body
    if config.api_key:
        headers["authorization"] = f"Bearer {config.api_key}"
    body["messages"] = merge_system(messages) if config.merge_system else messages
    if tools:
        body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
    return headers, body


# --- replies ----------------------------------------------------------------------------------

def parse_arguments(raw: Any) -> tuple[dict, str]:
    """Tool-call arguments as ``(dict, raw string)``; not-an-object gives ``{}``."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw, ensure_ascii=False)
    text = "" if raw is None else str(raw)
    if not text.strip():
        return {}, text
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (value if isinstance(value, dict) else {}), text


def normalise_usage(usage: Any) -> dict:
    """Provider usage plus ``input_tokens`` / ``output_tokens`` under both protocols."""
    if not isinstance(usage, dict):
        return {}
    out = dict(usage)
    out.setdefault("input_tokens", usage.get("prompt_tokens", 0))
    out.setdefault("output_tokens", usage.get("completion_tokens", 0))
    return out


def finish_reason(reason: Any) -> str | None:
    """Map Anthropic stop reasons to OpenAI finish reasons."""
    if reason is None:
        return None
    return _FINISH.get(str(reason), str(reason))


def error_message(body: Any) -> str | None:
    """The provider's error text when ``body`` is an error object of either protocol."""
    if isinstance(body, dict) and body.get("error"):
        err = body["error"]
        if isinstance(err, dict):
            return str(err.get("message") or err.get("type") or err)
        return str(err)
    return None


def make_reply(raw_text: str, calls: list[ToolCall], reason: Any, usage: Any) -> LLMReply:
    """Build the reply; raise LLMError when it holds neither text nor tool calls."""
    text = clean_text(raw_text)
    if not text and not calls:
        hint = " (only a think block)" if raw_text.strip() else ""
        raise LLMError(f"LLM returned an empty reply{hint}; finish_reason={reason!r}")
    return LLMReply(text=text, tool_calls=calls, finish_reason=finish_reason(reason),
                    usage=normalise_usage(usage), raw_text=raw_text)


def parse_openai(body: Any) -> LLMReply:
    """Turn a chat-completions JSON body into an ``LLMReply``."""
    msg = error_message(body)
    if msg:
        raise LLMError(f"LLM error: {msg}")
    try:
        choice = body["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise LLMError("LLM reply has no choices[0].message") from None
    if not isinstance(message, dict):
        raise LLMError("LLM reply's choices[0].message is not an object")
    try:
        raw_text = _text_of(message.get("content"), "reply")
    except ValidationError as exc:
        raise LLMError(f"LLM reply content is unusable: {exc}") from None
    calls = []
    for n, call in enumerate(message.get("tool_calls") or ()):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not fn.get("name"):
            raise LLMError("LLM reply has a tool call without a function name")
        args, raw = parse_arguments(fn.get("arguments"))
        calls.append(ToolCall(str(call.get("id") or f"call_{n}"), str(fn["name"]), args, raw))
    return make_reply(raw_text, calls, choice.get("finish_reason"), body.get("usage"))


def parse_anthropic(body: Any) -> LLMReply:
    """Turn an Anthropic messages JSON body into an ``LLMReply``."""
    msg = error_message(body)
    if msg:
        raise LLMError(f"LLM error: {msg}")
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list):
        raise LLMError("LLM reply has no content list")
    texts, calls = [], []
    for n, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            if not block.get("name"):
                raise LLMError("LLM reply has a tool_use block without a name")
            args, raw = parse_arguments(block.get("input"))
            calls.append(ToolCall(str(block.get("id") or f"toolu_{n}"), str(block["name"]),
                                  args, raw))
    return make_reply("".join(texts), calls, body.get("stop_reason"), body.get("usage"))
