"""``recall_with_llm_filter`` (design §6): a wide recall narrowed down by the LLM."""

from __future__ import annotations

import logging

from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm import chat_json
from maclaw_fast.maintenance import prompts
from maclaw_fast.records import RecallHit

log = logging.getLogger("maclaw_fast.maintenance")


def parse_ids(reply) -> list[str]:
    """Ids from a filter reply: a list of ids (or of ``{"id": ...}``), or ``{"ids": [...]}``.

    Examples
    --------
    >>> parse_ids({"ids": ["a", {"id": "b"}, 3]})
    ['a', 'b']
    """
    if isinstance(reply, dict):
        reply = reply.get("ids", reply.get("selected", []))
    if not isinstance(reply, list):
        return []
    out = []
    for item in reply:
        if isinstance(item, dict):
            item = item.get("id")
        if isinstance(item, str):
            out.append(item)
    return out


def recall_with_llm_filter(store, query: str, llm=None, *, max: int = 5,
                           project: str | None = None,
                           config: MaintenanceConfig = MaintenanceConfig()) -> list[RecallHit]:
    """Recall widely, then keep what the LLM says matters, in its order.

    Stage 1 is :meth:`MemoryStore.recall` (read-only). Without an LLM, or with at most
    ``max`` candidates, the top ``max`` are returned; otherwise the LLM sees ``{id, category,
    description (compact form or first 150 characters), tags}`` per candidate and its ids
    (unknown ones ignored) give the result. An LLM error or an empty answer falls back to the
    top ``max``. The returned entries are touched (``access_count += 1``).

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> _ = s.save("deploys go through make release", category="instruction")
    >>> [h.entry.access_count for h in recall_with_llm_filter(s, "deploy release")]
    [2]
    """
    if isinstance(max, bool) or not isinstance(max, int) or max < 1:
        raise ValidationError("max must be a positive integer")
    hits = store.recall(query, project=project, reinforce=False)
    chosen = hits[:max]
    if llm is not None and len(hits) > max:
        chosen = llm_pick(hits, query, llm, max, config) or chosen
    if chosen:
        store.touch([h.entry.id for h in chosen])
        fresh = {e.id: e for e in (store.get(h.entry.id) for h in chosen)}
        chosen = [RecallHit(entry=fresh[h.entry.id], score=h.score, breakdown=h.breakdown,
                            reason=h.reason) for h in chosen]
    return chosen


def llm_pick(hits: list[RecallHit], query: str, llm, max: int,
             config: MaintenanceConfig = MaintenanceConfig()) -> list[RecallHit] | None:
    """The hits the LLM says matter for ``query`` (at most ``max``, in its order); None when
    the LLM failed or named none of them (the caller keeps its own choice then).

    The LLM sees ``{id, category, description (compact form or first 150 characters), tags}``
    per hit; unknown ids are ignored.
    """
    by_id = {h.entry.id: h for h in hits}
    cands = [{"id": h.entry.id, "category": h.entry.category,
              "description": h.entry.compact_form or h.entry.content[: config.filter_desc_chars],
              "tags": list(h.entry.tags)} for h in hits]
    try:
        ids = parse_ids(chat_json(llm, prompts.filter_messages(query, cands, max)))
    except LLMError as exc:
        log.warning("LLM recall filter failed (%s); keeping the recall order", exc)
        return None
    picked = [by_id[i] for i in dict.fromkeys(ids) if i in by_id][:max]
    return picked or None
