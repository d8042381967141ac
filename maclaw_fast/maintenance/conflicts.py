"""ConflictDetector (design §10): a new memory that contradicts older ones supersedes them."""

from __future__ import annotations

import msgspec
import numpy as np

from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm import chat_json
from maclaw_fast.maintenance import prompts
from maclaw_fast.memory.columns import SELF_IDENTITY
from maclaw_fast.text.tokenizer import analysed_text, tokenize


class ConflictReport(msgspec.Struct, kw_only=True):
    """Candidates checked, entries superseded (with the LLM's reasons), and why it stopped."""

    skipped: str = ""
    checked: int = 0
    superseded_ids: list[str] = []
    reasons: dict[str, str] = {}
    error: str = ""


def _yes(value) -> bool:
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() in ("true", "yes")


class ConflictDetector:
    """Find and retire memories that a new one contradicts.

    Candidates are up to ``conflict_candidates`` (5) other active, unprotected, unpinned
    entries with cosine > ``conflict_min_cos`` (0.8) to the new one, or BM25 >
    ``conflict_min_bm25`` (3.0) when there are no vectors; the LLM judges each pair.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> e = s.save("prefers tabs", category="preference")
    >>> ConflictDetector(s).check(e.id).skipped
    'no LLM configured'
    """

    def __init__(self, store, llm=None, config: MaintenanceConfig = MaintenanceConfig()) -> None:
        if not isinstance(config, MaintenanceConfig):
            raise ValidationError("config must be a MaintenanceConfig")
        self.store = store
        self.llm = llm
        self.config = config

    def candidates(self, entry_id: str) -> list[str]:
        """Ids of the entries the new one might contradict, most similar first."""
        store, cfg = self.store, self.config
        with store.lock:
            store.check_writable()
            row = store.row_of_id(entry_id)
            t = store.table
            n = t.n_rows
            if store.dim and store.vectors.has_vec[row]:
                sim = store.vectors.scores(store.vectors.matrix[row], n).astype(np.float64)
                floor = cfg.conflict_min_cos
            else:
                toks = tokenize(analysed_text(t.content[row], t.tags[row]))
                sim = store.bm25.scores(toks, n)
                floor = cfg.conflict_min_bm25
            ok = (t.alive[:n] & (t.status[:n] == 0) & (t.category[:n] != SELF_IDENTITY)
                  & ~t.pinned[:n] & (sim > floor))
            ok[row] = False
            rows = np.flatnonzero(ok)
            order = np.lexsort((t.seq[rows], -sim[rows]))[: cfg.conflict_candidates]
            return [t.ids[int(rows[i])] for i in order]

    def check(self, entry_id: str) -> ConflictReport:
        """Ask the LLM about each candidate; an older conflicting one becomes superseded.

        An LLM failure stops the check with nothing further changed (``error`` says why).
        """
        report = ConflictReport()
        new = self.store.get(entry_id)
        if self.llm is None:
            report.skipped = "no LLM configured"
            return report
        for cid in self.candidates(entry_id):
            old = self.store.get(cid)
            report.checked += 1
            try:
                reply = chat_json(self.llm, prompts.conflict_messages(new.content, old.content),
                                  expect=dict)
            except LLMError as exc:
                report.error = str(exc)
                break
            if not _yes(reply.get("conflict")) or old.updated_at > new.updated_at:
                continue
            with self.store.lock:
                current = self.store.get(cid)
                if current.status != "active":
                    continue
                self.store.set_fields(cid, status="superseded")
            report.superseded_ids.append(cid)
            reason = reply.get("reason")
            report.reasons[cid] = reason if isinstance(reason, str) else ""
        return report
