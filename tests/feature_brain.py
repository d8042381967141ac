"""A default responder for the local LLM server that plays every role an agent's LLM has: the
tool reranker, the recall filter, the conflict judge, the extractor, the maintenance steps, and
the chat model itself (scripted replies, in order)."""

from __future__ import annotations

import json
import re
from collections import deque

from tests.llm_server import Reply
from tests.maint_helpers import prompt_text

ROLES = {  # a phrase of each prompt -> role
    "You pick tools for an AI assistant": "rerank",
    "You select the memories": "filter",
    "check an AI assistant's memories for contradictions": "conflict",
    "You extract durable knowledge": "extract",
    "You condense conversations": "precompress",
    "find entries that state the same": "merge",
    "You compress memories": "compress",
    "compact forms": "compact",
    "episodic memories (conversation summaries": "promote",
    "You reflect on": "reflect",
}


def role_of(body) -> str:
    text = prompt_text(body)
    for phrase, role in ROLES.items():
        if phrase in text:
            return role
    return "chat"


def rerank_candidates(body) -> list[str]:
    """The tool names a rerank prompt offered, in its order."""
    return re.findall(r'\{"name": "([^"]+)"', prompt_text(body))


def filter_candidates(body) -> list[str]:
    return re.findall(r'"id": "([^"]+)"', prompt_text(body))


class Brain:
    """``answers[role]``: a JSON value, a Reply, or a callable(body) giving one; chat replies
    come from :meth:`chat` (queued), then ``Reply(text="ok")``. ``seen`` lists every role."""

    def __init__(self, **answers) -> None:
        self.answers = answers
        self.seen: list[str] = []
        self.replies: deque = deque()
        self.bodies: dict[str, list] = {}

    def chat(self, *replies: Reply) -> "Brain":
        self.replies.extend(replies)
        return self

    def __call__(self, body):
        role = role_of(body)
        self.seen.append(role)
        self.bodies.setdefault(role, []).append(body)
        if role == "chat":
            return self.replies.popleft() if self.replies else Reply(text="ok")
        ans = self.answers.get(role, [])
        if callable(ans):
            ans = ans(body)
        if isinstance(ans, Reply):
            return ans
        return Reply(text=json.dumps(ans, ensure_ascii=False))


def filter_pool(body) -> list[dict]:
    """The candidate memories (``{id, category, description, tags}``) of a filter prompt."""
    text = prompt_text(body)
    start = text.index("Candidate memories (JSON):\n") + len("Candidate memories (JSON):\n")
    return json.loads(text[start:text.index("\n\n", start)])


def pick_containing(*words: str, fallback: int = 2):
    """A filter answer: the candidates that mention one of ``words``, else the first few."""
    def pick(body):
        pool = filter_pool(body)
        hits = [c["id"] for c in pool if any(w in c["description"] for w in words)]
        return hits or [c["id"] for c in pool[:fallback]]
    return pick
