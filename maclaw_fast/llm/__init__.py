"""LLM client: OpenAI and Anthropic protocols, streaming, retries, reply parsing (design §11).

Examples
--------
>>> from maclaw_fast.llm import LLMConfig, LLMClient, chat_json
>>> cfg = LLMConfig.from_env()          # None when no LLM is configured
"""

from maclaw_fast.llm.client import LLMClient, chat_json
from maclaw_fast.llm.config import PROTOCOLS, LLMConfig
from maclaw_fast.llm.stream import SSEEvent, iter_sse
from maclaw_fast.llm.text import (
    StreamTextFilter,
    clean_text,
    extract_json,
    strip_think,
    strip_tool_markup,
)
from maclaw_fast.llm.types import LLMReply, ToolCall

__all__ = [
    "PROTOCOLS",
    "LLMClient",
    "LLMConfig",
    "LLMReply",
    "SSEEvent",
    "StreamTextFilter",
    "ToolCall",
    "chat_json",
    "clean_text",
    "extract_json",
    "iter_sse",
    "strip_think",
    "strip_tool_markup",
]
