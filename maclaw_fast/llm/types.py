"""Records of one LLM reply."""

from __future__ import annotations

import json

import msgspec


class ToolCall(msgspec.Struct, frozen=True):
    """One function call the model asked for.

    Parameters
    ----------
    id : str
        Call id; a tool result answers it through ``tool_call_id``.
    name : str
        Tool name.
    arguments : dict
        Parsed arguments; ``{}`` when the model sent none or sent something that is not a JSON
        object (then ``raw_arguments`` holds what it sent, so the caller can report it).
    raw_arguments : str
        The argument string as received.

    Examples
    --------
    >>> ToolCall("call_1", "search", {"q": "x"}).to_openai()["function"]["arguments"]
    '{"q": "x"}'
    """

    id: str
    name: str
    arguments: dict = msgspec.field(default_factory=dict)
    raw_arguments: str = ""

    @property
    def arguments_valid(self) -> bool:
        """False when the model sent argument text that is not a JSON object."""
        return not self.raw_arguments.strip() or bool(self.arguments) or _is_empty_object(
            self.raw_arguments
        )

    def to_openai(self) -> dict:
        """This call as an OpenAI ``tool_calls`` item (for the assistant message of a history)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": json.dumps(self.arguments, ensure_ascii=False),
            },
        }


def _is_empty_object(text: str) -> bool:
    try:
        return json.loads(text) == {}
    except ValueError:
        return False


class LLMReply(msgspec.Struct, frozen=True, kw_only=True):
    """What one ``complete`` call returned, the same for both protocols.

    Parameters
    ----------
    text : str
        Reply text with think blocks and stray function-call markup removed, trimmed.
    tool_calls : list of ToolCall
        Calls in the order the model made them.
    finish_reason : str or None
        In OpenAI terms: ``stop``, ``tool_calls``, ``length`` (Anthropic's ``end_turn``,
        ``tool_use``, ``max_tokens`` are mapped); other values pass through.
    usage : dict
        Provider usage, plus ``input_tokens`` / ``output_tokens`` for both protocols.
    raw_text : str
        The text exactly as received, think blocks included.

    Examples
    --------
    >>> LLMReply(text="hi").to_message()
    {'role': 'assistant', 'content': 'hi'}
    """

    text: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    finish_reason: str | None = None
    usage: dict = msgspec.field(default_factory=dict)
    raw_text: str = ""

    def to_message(self) -> dict:
        """The reply as an OpenAI-style assistant message, to append to the history."""
        msg: dict = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        return msg
