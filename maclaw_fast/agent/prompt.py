"""The agent's system prompt: identity and user-fact summaries, recalled memories, workspace
notes (design §6 "Prompt summaries", §13)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from maclaw_fast.records import Entry, RecallHit

ELLIPSIS = "…"

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. Use the `memory` tool to save durable "
    "facts, preferences and instructions the user gives you, and to recall or search what you "
    "saved before. Use the other tools when they help; answer directly when they do not.")


def summarize(entries: Iterable[Entry], limit: int) -> str:
    """Join ``compact_form or content`` of ``entries`` with ``" | "``, cut at ``limit``
    characters adding ``"…"`` (design §6).

    Examples
    --------
    >>> e = [Entry(id="1", content="I am Claw", category="self_identity"),
    ...      Entry(id="2", content="long text", compact_form="short", category="self_identity")]
    >>> summarize(e, 600)
    'I am Claw | short'
    >>> summarize(e, 5)
    'I am …'
    """
    text = " | ".join((e.compact_form or e.content) for e in entries)
    if len(text) > limit:
        return text[:limit] + ELLIPSIS
    return text


def _active(store, category: str) -> list[Entry]:
    return [e for e in store.list(category=category) if e.status == "active"]


def self_identity_summary(store, limit: int = 600) -> str:
    """Summary of the active self-identity memories of ``store`` (design §6); uses the store's own
    ``self_identity_summary`` when it has one.

    Examples
    --------
    >>> from maclaw_fast import MemoryStore
    >>> with MemoryStore.in_memory(embedder=None) as s:
    ...     _ = s.save("My name is Claw", category="self_identity")
    ...     self_identity_summary(s)
    'My name is Claw'
    """
    own = getattr(store, "self_identity_summary", None)
    if callable(own):
        return own(limit)
    return summarize(_active(store, "self_identity"), limit)


def user_fact_summary(store, limit: int = 400) -> str:
    """Summary of the active user-fact memories of ``store`` (design §6); uses the store's own
    ``user_fact_summary`` when it has one.

    Examples
    --------
    >>> from maclaw_fast import MemoryStore
    >>> with MemoryStore.in_memory(embedder=None) as s:
    ...     _ = s.save("The user lives in Lyon", category="user_fact")
    ...     user_fact_summary(s)
    'The user lives in Lyon'
    """
    own = getattr(store, "user_fact_summary", None)
    if callable(own):
        return own(limit)
    return summarize(_active(store, "user_fact"), limit)


LEADING = ("self_identity", "user_fact")  # the reasons of recall's always-on leading block


def split_hits(hits: Sequence[RecallHit]) -> tuple[list[Entry], list[Entry], list[RecallHit]]:
    """``(self_identity entries, user_fact entries, the other hits)`` of one recall, in order.

    ``recall`` leads with at most three self-identity entries and the user facts relevant to the
    message (design R4), so the agent builds its summaries from them instead of scanning the store
    twice per turn; other user facts come back ranked among the hits when they match.
    """
    si, uf, rest = [], [], []
    for h in hits:
        if h.reason == "self_identity":
            si.append(h.entry)
        elif h.reason == "user_fact":
            uf.append(h.entry)
        else:
            rest.append(h)
    return si, uf, rest


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def build_system_prompt(base: str, *, identity: str = "", user_facts: str = "",
                        memories: Sequence[RecallHit] = (), workspace: Sequence[dict] = (),
                        memory_chars: int = 400) -> str:
    """Assemble the system prompt of one turn.

    Parameters
    ----------
    base : str
        The configured instructions.
    identity, user_facts : str
        Summaries (see :func:`summarize`); a section is left out when empty.
    memories : sequence of RecallHit
        Recalled memories (the scored and graph hits), shown with their id and category so the
        model can pin or forget them.
    workspace : sequence of dict
        Workspace search results (``citation`` and ``snippet`` keys).
    memory_chars : int
        Each memory and snippet is cut to this many characters (one line).

    Examples
    --------
    >>> print(build_system_prompt("Be brief.", identity="I am Claw"))
    Be brief.
    <BLANKLINE>
    ## Who you are
    I am Claw
    """
    parts = [base.strip()]
    if identity:
        parts.append("## Who you are\n" + identity)
    if user_facts:
        parts.append("## What you know about the user\n" + user_facts)
    if memories:
        lines = [f"- [{h.entry.category}] "
                 f"{_one_line(h.entry.compact_form or h.entry.content, memory_chars)}"
                 f" (id {h.entry.id})" for h in memories]
        parts.append("## Relevant memories\n" + "\n".join(lines))
    if workspace:
        lines = [f"- {w.get('citation', '?')}: {_one_line(str(w.get('snippet', '')), memory_chars)}"
                 for w in workspace]
        parts.append("## Workspace notes\n" + "\n".join(lines))
    return "\n\n".join(p for p in parts if p)
