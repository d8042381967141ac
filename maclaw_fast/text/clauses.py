"""Sentence clauses of a message, embedded beside the whole message by the tool router.

A request that asks for several things ("Find the shipment … Then book a meeting …") has one
vector between its intents; each clause's own vector stays near the tool it names, so the router
scores a tool by its best cosine over the message and its clauses (``RouterConfig.query_clauses``;
measured in ``benchmarks/results/quality_tools.md``).
"""

from __future__ import annotations

import re

# a sentence ends at . ! ? ; followed by white space, or at the full-width 。！？； (Chinese
# needs no space after them)
_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")
_ENDS = ".!?;。！？；"


def clauses(text: str, min_chars: int = 12, max_clauses: int = 16) -> list[str]:
    """The sentences of ``text`` that have at least ``min_chars`` characters, at most
    ``max_clauses`` of them, in order; ``[]`` when fewer than two remain (the whole message
    already is its one clause).

    Examples
    --------
    >>> clauses("Check the shipment status. Then book a meeting room for Friday.")
    ['Check the shipment status.', 'Then book a meeting room for Friday.']
    >>> clauses("Just one request here.")
    []
    >>> clauses("查一下天气吗？再订一张火车票。", min_chars=5)
    ['查一下天气吗？', '再订一张火车票。']
    """
    if not any(mark in text for mark in _ENDS):  # one clause (most messages): no regex pass
        return []
    parts = [p.strip() for p in _SPLIT.split(text)]
    parts = [p for p in parts if len(p) >= min_chars]
    return parts[:max_clauses] if len(parts) > 1 else []
