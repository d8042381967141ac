"""Shared helpers of the maintenance tests: a routing responder for the local LLM server and
store builders."""

from __future__ import annotations

import json

from maclaw_fast.memory import MemoryStore
from tests.llm_server import Reply

H = 3600.0
T0 = 1_700_000_000.0


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def prompt_text(body) -> str:
    """System + message text of a request body of either protocol."""
    parts = []
    system = body.get("system") if isinstance(body, dict) else None
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts += [b.get("text", "") for b in system if isinstance(b, dict)]
    for m in (body or {}).get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts += [b.get("text", "") for b in c if isinstance(b, dict)]
    return "\n".join(parts)


KINDS = {  # a phrase of each prompt -> kind
    "find entries that state the same": "merge",
    "You compress memories": "compress",
    "compact forms": "compact",
    "episodic memories (conversation summaries": "promote",
    "You reflect on": "reflect",
    "You condense conversations": "precompress",
    "You extract durable knowledge": "extract",
    "check an AI assistant's memories for contradictions": "conflict",
    "You select the memories": "filter",
}


def kind_of(body) -> str:
    text = prompt_text(body)
    for phrase, kind in KINDS.items():
        if phrase in text:
            return kind
    raise AssertionError(f"unknown prompt: {text[:200]}")


class Seq(list):
    """Responses consumed in order; the last one repeats."""


class Router:
    """Server default that answers by prompt kind: ``answers[kind]`` is a response, a JSON
    value (list/dict, sent as reply text), a :class:`Seq` or a callable(body)."""

    def __init__(self, **answers) -> None:
        self.answers = answers
        self.seen: list[str] = []

    def __call__(self, body):
        kind = kind_of(body)
        self.seen.append(kind)
        ans = self.answers.get(kind, Reply(text="[]"))
        if isinstance(ans, Seq):
            ans = ans.pop(0) if len(ans) > 1 else ans[0]
        if callable(ans) and not isinstance(ans, type):
            ans = ans(body)
        if isinstance(ans, (list, dict)):
            return Reply(text=json.dumps(ans, ensure_ascii=False))
        return ans


def small_store(clock, embedder=None, path=None) -> MemoryStore:
    if path is None:
        return MemoryStore.in_memory(embedder=embedder, clock=clock)
    return MemoryStore.open(path, embedder=embedder, clock=clock)
