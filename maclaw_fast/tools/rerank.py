"""LLM listwise reranker (design §12 step 6): top candidates in, up to 5 tool names out."""

from __future__ import annotations

import json
from typing import Protocol

from maclaw_fast.errors import LLMError

PROMPT = (
    "You pick tools for an AI assistant. Given the user's message and candidate tools, return "
    "the names of the (at most {k}) tools most useful for answering it, best first, as a JSON "
    "array of strings and nothing else.\n\nUser message:\n{message}\n\nCandidate tools:\n{tools}")


class Reranker(Protocol):
    """Anything with ``rerank(message, candidates, top_k) -> list[str]``; ``candidates`` are dicts
    with ``name``, ``description`` and ``body_summary``."""

    def rerank(self, message: str, candidates: list[dict], top_k: int) -> list[str]: ...


class LLMReranker:
    """Listwise reranking through an :class:`maclaw_fast.llm.LLMClient`.

    Raises :class:`LLMError` when the call fails or the answer holds no JSON list; the router
    then keeps its fused order.

    Examples
    --------
    >>> rr = LLMReranker(llm)                                        # doctest: +SKIP
    >>> rr.rerank("查询数据库", [{"name": "db_query", "description": "SQL"}], 5)  # doctest: +SKIP
    ['db_query']
    """

    def __init__(self, client, *, body_chars: int = 300, max_tokens: int = 200) -> None:
        if client is None:
            raise LLMError("LLMReranker needs an LLM client")
        self.client = client
        self.body_chars = int(body_chars)
        self.max_tokens = int(max_tokens)

    def rerank(self, message: str, candidates: list[dict], top_k: int) -> list[str]:
        from maclaw_fast.llm import extract_json

        lines = []
        for c in candidates:
            item = {"name": c["name"], "description": c.get("description", "")}
            summary = (c.get("body_summary") or "")[: self.body_chars]
            if summary:
                item["body_summary"] = summary
            lines.append(json.dumps(item, ensure_ascii=False))
        prompt = PROMPT.format(k=top_k, message=message, tools="\n".join(lines))
        reply = self.client.complete([{"role": "user", "content": prompt}],
                                     max_tokens=self.max_tokens)
        names = extract_json(reply.text, expect=list)
        return [n for n in names if isinstance(n, str)][:top_k]


def rerank_fill(reranker, message: str, payload: list[dict], top: list[int], order: list[int],
                rows: list[int], nonbuiltin, slots: int, nb_slots: int, rerank_max: int):
    """design §12 step 6 + 7 with a reranker: the (≤ ``rerank_max``) known names it returns move to
    the front, the rest follow in ``order``; then the budgeted fill. On any reranker error or an
    empty/unknown answer the fused selection ``rows`` stands. Returns ``(rows, picked_names)``."""
    try:
        fn = getattr(reranker, "rerank", reranker)
        answer = fn(message, payload, rerank_max)
    except Exception:  # noqa: BLE001 - a failing reranker must not break routing (design)
        return rows, []
    by_name = {p["name"]: r for p, r in zip(payload, top)}
    picked = list(dict.fromkeys(n for n in (answer or []) if isinstance(n, str)
                                and n in by_name))[:rerank_max]
    if not picked:
        return rows, []
    first = [by_name[n] for n in picked]
    firsts = set(first)
    chosen, nb = [], 0
    for r in first + [r for r in order if r not in firsts]:
        if len(chosen) >= slots:
            break
        if nonbuiltin[r]:
            if nb >= nb_slots:
                continue
            nb += 1
        chosen.append(r)
    return chosen, picked
