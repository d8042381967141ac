"""The catalog side of :class:`~maclaw_fast.tools.router.ToolRouter`: every registered tool's
row, its NumPy columns, BM25 document and vector, kept in step with the registry (and the
enrichment store) incrementally; tool vectors embedded lazily in one batch; session activations;
and the state that depends only on the catalog and the session (masks, budgets, core list, tie
ranks), cached until either changes so that a route pays for none of it.

A mixin over the router's own attributes (its lock, rows, columns, indexes), kept apart so the
router module holds the routing path only.
"""

from __future__ import annotations

import threading

import numpy as np

from maclaw_fast.embedding import embed_checked
from maclaw_fast.index.arrays import grow
from maclaw_fast.text import tokenize
from maclaw_fast.tools.enrichment import parameter_text
from maclaw_fast.tools.registry import RegisteredTool, is_available, name_words
from maclaw_fast.tools.tool_vectors import combine_views, view_texts
from maclaw_fast.tools.types import RouteState, ToolScore


def new_columns(capacity: int = 64) -> dict[str, np.ndarray]:
    """The per-row columns of an empty catalog: priority, non-builtin, routable, deferred, core,
    group bits, usage id (-1: the tracker has not seen the tool)."""
    return {"prio": np.zeros(capacity), "nonbuiltin": np.zeros(capacity, np.bool_),
            "routable": np.zeros(capacity, np.bool_), "deferred": np.zeros(capacity, np.bool_),
            "core": np.zeros(capacity, np.bool_), "gbits": np.zeros(capacity, np.int64),
            "uid": np.full(capacity, -1, np.int32)}


class CatalogMixin:
    """Row maintenance, lazy embedding, sessions and cached route state for :class:`ToolRouter`."""

    def _on_change(self, event: str, name: str, tool: RegisteredTool | None) -> None:
        if event == "unregister":
            self._drop(name)
        elif event == "status" and name in self._rows:
            with self._lock:
                self._cols["routable"][self._rows[name]] = is_available(tool, self.platform)
                self._version += 1
        else:
            self._index_tools([tool])

    def _on_enrichment(self, name: str) -> None:
        with self._lock:
            if name in self._rows:
                self._index_tools([self._tools[self._rows[name]]])

    def _bm25_text(self, t: RegisteredTool) -> str:
        words = name_words(t.name) if self.config.split_names else ""
        base = f"{t.name} {words} {t.description}" if words else f"{t.name} {t.description}"
        if self.config.index_parameters and t.input_schema:
            base += " " + parameter_text(t.input_schema, self.config.parameter_chars)
        if self.enrichment is not None:
            return self.enrichment.search_text(t.name, base, t.tags)
        return base + (" " + " ".join(t.tags) if t.tags else "")

    def _index_tools(self, tools) -> None:
        with self._lock:
            self._version += 1
            for t in tools:
                row = self._rows.get(t.name)
                if row is None:
                    row = self._free.pop() if self._free else self.n_rows
                    self.n_rows = max(self.n_rows, row + 1)
                    for k, v in self._cols.items():
                        self._cols[k] = grow(v, self.n_rows, -1 if k == "uid" else 0)
                    while len(self._names) < self.n_rows:
                        self._names.append(None)
                        self._tools.append(None)
                    self._rows[t.name] = row
                self._names[row], self._tools[row] = t.name, t
                c = self._cols
                c["prio"][row] = min(max(t.priority * 0.1, 0.0), 1.0)
                c["nonbuiltin"][row] = t.category != "builtin"
                c["routable"][row] = is_available(t, self.platform)
                c["deferred"][row] = t.deferred
                c["core"][row] = t.name in self._core_names
                bits = 0
                for tag in t.tags:
                    bits |= self._group_bit.get(tag.lower(), 0)
                c["gbits"][row] = bits
                self.bm25.add(row, tokenize(self._bm25_text(t)))
                if self.vectors is not None:
                    self._pending_vec.add(row)

    def _drop(self, name: str) -> None:
        with self._lock:
            row = self._rows.pop(name, None)
            if row is None:
                return
            self._version += 1
            self._names[row] = self._tools[row] = None
            self._cols["routable"][row] = self._cols["core"][row] = False
            self.bm25.remove(row)
            if self.vectors is not None:
                self.vectors.set(row, None)
            self._pending_vec.discard(row)
            self._free.append(row)

    def _sync(self) -> None:
        """Embed tools registered since the last call (one batch) and map rows to usage ids."""
        if self._pending_vec:
            rows = sorted(self._pending_vec)
            texts, owner = view_texts([self._tools[r] for r in rows],
                                      self.config.description_view)
            vecs = combine_views(self.disk_cache.embed(texts) if self.disk_cache is not None
                                 else embed_checked(self.embedder, texts), owner, len(rows))
            self.vectors.reserve(self.n_rows)
            for r, v in zip(rows, vecs):
                self.vectors.set(r, v)
            self._pending_vec.clear()
            if self.disk_cache is not None and self.disk_cache.dirty:
                self._schedule_save()
        if self.usage is not None and self._uid_key != (len(self.usage.tools), self._version):
            get, uid = self.usage.tools.get, self._cols["uid"]
            uid[:] = -1
            for name, row in self._rows.items():
                uid[row] = get(name)
            self._uid_key = (len(self.usage.tools), self._version)

    def _schedule_save(self) -> None:
        # debounce: a burst of registrations writes the cache file once
        if self._save_timer is None or not self._save_timer.is_alive():
            self._save_timer = threading.Timer(self.config.embedding_cache_debounce_s,
                                               self.flush)
            self._save_timer.daemon = True
            self._save_timer.start()

    def flush(self) -> None:
        """Write the tool-embedding disk cache now (if it changed)."""
        if self.disk_cache is not None and self.disk_cache.dirty:
            self.disk_cache.save()

    def close(self) -> None:
        """Cancel the pending cache save and write it now."""
        if self._save_timer is not None:
            self._save_timer.cancel()
        self.flush()

    # ------------------------------------------------------------------ sessions
    def activate(self, session: str, names) -> None:
        """Treat ``names`` as core tools for ``session`` until :meth:`reset_session`."""
        with self._lock:
            self._sessions.setdefault(session, set()).update(n for n in names if n in self._rows)
            self._version += 1

    def reset_session(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(session, None)
            self._version += 1

    def session_tools(self, session: str) -> list[str]:
        return sorted(self._sessions.get(session, ()))
    # ------------------------------------------------------------------ per-catalog state
    def _ties(self) -> np.ndarray:
        """Each row's rank by tool name (free rows last): the kernels' tie-break, so equal
        scores come back in the same order however the rows were assigned (prompt caching)."""
        if self._tie[0] != self._version:
            n = self.n_rows
            tie = np.full(n, n, np.int64)
            live = sorted((name, row) for name, row in self._rows.items())
            tie[[r for _, r in live]] = np.arange(len(live))
            self._tie = (self._version, tie)
        return self._tie[1]

    def _state(self, session) -> RouteState:
        hit = self._states.get(session)
        if hit is not None and hit[0] == self._version:
            return hit[1]
        n, c, cfg = self.n_rows, self._cols, self.config
        core = c["core"][:n].copy()
        active = self._sessions.get(session, ()) if session is not None else ()
        for name in active:
            if name in self._rows:
                core[self._rows[name]] = True
        st = RouteState()
        st.routable = c["routable"][:n] & (~c["deferred"][:n] | core)
        st.core = core & st.routable
        st.cand = st.routable & ~st.core
        st.total = int(st.routable.sum())
        st.slots = max(cfg.max_tools - int(st.core.sum()), 0)
        st.nb_slots = max(cfg.max_dynamic - int((st.core & c["nonbuiltin"][:n]).sum()), 0)
        st.n_cand = int(st.cand.sum())
        st.core_list = [ToolScore(name=x, reason="core") for x in cfg.core_tools
                        if x in self._rows and st.core[self._rows[x]]]
        st.core_list += [ToolScore(name=x, reason="session") for x in sorted(active)
                         if x not in self._core_names and x in self._rows
                         and st.core[self._rows[x]]]
        st.tie = self._ties()
        # views of the columns the kernels read: written in place (usage ids) they stay current,
        # and a column that grows bumps the version, which makes a new state
        st.uid, st.prio, st.nonbuiltin = c["uid"][:n], c["prio"][:n], c["nonbuiltin"][:n]
        # a catalog within budget: core tools first (fixed order), then the rest by name
        st.all = list(st.core_list) + [
            ToolScore(name=x, reason="all") for x in sorted(self._rows)
            if st.routable[self._rows[x]] and not st.core[self._rows[x]]]
        if len(self._states) > 1024:
            self._states.clear()
        self._states[session] = (self._version, st)
        return st
