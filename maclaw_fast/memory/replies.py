"""Reply documents (``GraphConfig.reply_weight``): a memory's BM25 document also holds the
question it answers, its conversation predecessor when that asks something, so a short reply
("Yes, I did!") is found by the words of the question it answers.

The question's terms (its speaker label left out) count ``reply_weight`` each beside the
reply's own. A document follows the conversation links as they are now: the store makes it
again whenever a row's predecessor changes (a save, a delete, a restore, a replayed link) or
the predecessor's text changes.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.text.speakers import line_asks, spoken_text
from maclaw_fast.text.tokenizer import tokenize


def question_before(store, row: int) -> int:
    """The row of the question ``row`` answers (its live conversation predecessor, when that
    asks something), or -1."""
    prev = store.graph.prev
    if not store.config.graph.reply_weight or row >= prev.shape[0]:
        return -1
    before = int(prev[row])
    if before < 0 or not store.table.alive[before] or not line_asks(store.table.content[before]):
        return -1
    return before


def question_tokens(store, row: int) -> list[str]:
    """The tokens of the question ``row`` answers (none: empty)."""
    before = question_before(store, row)
    return tokenize(spoken_text(store.table.content[before])) if before >= 0 else []


def answer_after(store, row: int) -> int:
    """The row whose document holds ``row``'s text as its question (its live conversation
    successor, when reply documents are on), or -1."""
    nxt = store.graph.next
    if not store.config.graph.reply_weight or row >= nxt.shape[0]:
        return -1
    after = int(nxt[row])
    return after if after >= 0 and store.table.alive[after] else -1


def reply_after_removal(store, row: int) -> int:
    """The reply whose document changes when ``row`` leaves (its successor, when ``row`` or the
    line before it asks something: the successor's question goes or comes), or -1."""
    after = answer_after(store, row)
    if after < 0:
        return -1
    t = store.table
    before = int(store.graph.prev[row])
    if line_asks(t.content[row]) or (before >= 0 and t.alive[before]
                                     and line_asks(t.content[before])):
        return after
    return -1


def replies_of_questions(store) -> np.ndarray:
    """The live rows whose predecessor asks something (after a reopen that tokenised the
    snapshot: their documents are made again once the conversation links are back)."""
    t, g = store.table, store.graph
    if not store.config.graph.reply_weight:
        return np.zeros(0, np.int64)
    rows = t.live_rows()
    rows = rows[rows < g.prev.shape[0]]
    before = g.prev[rows]
    rows, before = rows[before >= 0], before[before >= 0]
    content = t.content
    return np.array([r for r, b in zip(rows.tolist(), before.tolist())
                     if t.alive[b] and line_asks(content[b])], np.int64)
