"""Plain-Python reference of memory recall (design §2 BM25, §4 expansion, §6 recall).

It is two things at once:

* the **oracle** ``tests/test_recall_oracle.py`` compares ``MemoryStore.recall`` /
  ``recall_dynamic`` / ``recall_batch`` with, written from the design text, not from the engine;
* the **baseline** of the recall benchmarks: the straightforward per-entry loop over dicts that a
  user would write (``dict``/``list``/``Counter``, ``math``; no NumPy anywhere in the scoring).

Input: entries as dicts, in store order::

    {"id": str, "content": str, "category": str (canonical), "tags": [str], "updated_at": float
     (unix s), "access_count": int, "status": "active"|"superseded"|"dormant",
     "scope": "global"|"project", "vector": list[float] | None, "related": {id: strength},
     "seq": int (store order), optional "compact_form": str, optional "tokens": [str],
     optional "prev" / "next": id of the entry before / after it in its conversation}

``tokens`` (the analysed text ``content + " " + " ".join(tags)`` tokenised with
``maclaw_fast.text.tokenize``) is computed when absent; pass it to keep tokenising out of a
benchmark. When an entry's ``prev`` entry asks a question, its BM25 document also holds that
line's tokens without its speaker label, each counting ``GraphConfig.reply_weight`` (design §2,
reply documents).
The BM25 statistics (N, df, avgdl) are those of *every* entry given — the index holds
all entries whatever their status or scope — and document lengths use tantivy's one-byte field
norm (re-derived below from tantivy's ``fieldnorm/code.rs`` rule, independently of the engine).

Output of :meth:`PyRecall.recall`: ``[(id, score, breakdown), ...]`` best first, where breakdown
is ``{"recency", "importance", "bm25" (normalised), "cos", "affinity", "graph", "total"}``.

Decisions where the design leaves room (the engine is expected to agree):

* BM25 normalisation (``max`` / ``minmax``) is over the query's hits (BM25 > 0) among the
  recall's candidates (active, in scope, in the category filter); non-hits stay 0; ``minmax`` of
  a lone or all-equal hit set is 1.
* Cosine normalisation ``minmax`` (design R3) is over every candidate's cosine (0 for an entry
  without a vector or a query without one): ``(c − lo)/(hi − lo)``; when all are equal, 1 for a
  positive cosine, 0 otherwise. ``raw`` is ``max(c, 0)``; the others are ``max((c − a)/(b − a),
  0)`` (0 when b ≤ a) with the model's cosine floor ``f`` (``cos_floor``; ``cos_floor_cjk`` for
  a query whose non-space characters are at least 10 % Han) and ``s = cos_spread·(1 − f)``:
  ``floor`` a = f, b = 1; ``floor_best`` a = f, b = max(hi, f + s); ``spread`` a = lo,
  b = max(hi, lo + s). The breakdown's ``cos`` is ``max(c, 0)`` in every mode.
* Such a query (at least 10 % Han) with an embedder fuses BM25 at ``cjk_bm25_weight`` and the
  cosine at ``bm25_weight + cos_weight`` − it (``cjk_bm25_weight`` 0: at the English weights).
* A query that names a time (``maclaw_fast.text.dates.query_time`` against the recall's
  ``now``): a candidate saved at ``t`` gains ``time_weight · exp(−|t − when| / time_scale)`` of
  relevance, reported with the project affinity.
* Every candidate is ranked on its score (design R4). The graph walk (design §4 expansion along the
  similarity edges, and R5: along the conversation links, ``adjacency_factor`` per step, for up
  to ``adjacency_hops`` steps each way, stopping at a seed or a non-candidate) starts from the
  best ``graph_seeds``; a row's relevance becomes the best value that reached it when higher,
  except along the conversation links with ``adjacency_mix`` > 0, which add ``mix × value`` to
  the row's own relevance.
* The thread prior (``thread_bm25_weight``, ``thread_cos_weight``): threads are the chains of
  ``prev``/``next`` links among every entry given; each thread's *members* are its active and
  dormant entries in the category filter (any project). A thread scores as one document of its members'
  tokens: BM25 with ``thread_k1``/``thread_b``, N = the threads with a member of some length,
  df = the threads holding the term, length = the sum of its members' field-norm lengths over
  their mean; and, with a query vector, the cosine of its members' vector sum (min-max over
  the threads with a vector). A candidate's base score gains ``weight_relevance × (w_bm25 ×
  BM25 / best + w_cos × min-max cosine)``; applied only when at least two threads have two or
  more members.
* The leading block (design R4): the ``max_identity`` self-identity candidates of highest
  importance, then most recent, then first saved, always (they count towards the entry limit);
  then the user facts whose relevance (after the walk) is above 0 and at least the
  ``user_fact_window``-th best own relevance (before the walk) of the ranked entries, at most ``max_user_facts`` (0 in
  ``recall_dynamic``), by that relevance (ties: saved first); then the rest in rank order.
* The speaker order: when the query names the speaker of some entry's transcript line
  (``maclaw_fast.text.speakers``: the names of every entry given), each selected entry after the
  leading block whose line that speaker spoke, or (``speaker_replies``) whose ``prev`` entry is
  that speaker's line asking a question, gains ``speaker_weight`` of relevance (reported with the
  affinity), and so do the first ``speaker_keep`` of the other entries after the block; those
  entries are ordered by total again (ties keep their order).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter

# design §1: category -> importance weight (kept here, not imported, so the oracle checks the table)
CATEGORY_WEIGHT = {
    "self_identity": 4.0,
    "instruction": 3.0,
    "preference": 2.0,
    "project_knowledge": 2.0,
    "session_checkpoint": 1.5,
    "conversation_summary": 1.0,
    "user_fact": 1.0,
}


def _fieldnorm_values() -> list[int]:
    """tantivy's 256 document-length codes (Lucene ``SmallFloat.intToByte4``): codes 0–23 are the
    lengths themselves; above, a float with a 3-bit mantissa (plus the implicit bit) over a 5-bit
    exponent, offset by 24."""
    values = list(range(24))
    for code in range(24, 256):
        x = code - 24
        exponent, mantissa = divmod(x, 8)
        if exponent == 0:
            values.append(24 + mantissa)
        else:
            values.append(24 + ((8 + mantissa) << (exponent - 1)))
    return values


FIELDNORM_VALUES = _fieldnorm_values()


def fieldnorm(n_tokens: int) -> int:
    """The length tantivy scores a document of ``n_tokens`` tokens with."""
    return FIELDNORM_VALUES[bisect_right(FIELDNORM_VALUES, n_tokens) - 1]


def budget_tokens(entry: dict) -> int:
    text = entry.get("compact_form") or entry["content"]
    return len(text.encode("utf-8")) // 4


def han_share(text: str) -> float:
    """Share of Han (CJK unified ideograph) characters among the non-space characters."""
    chars = [ch for ch in text if not ch.isspace()]
    han = [ch for ch in chars if "\u3400" <= ch <= "\u4dbf" or "\u4e00" <= ch <= "\u9fff"
           or "\uf900" <= ch <= "\ufaff"]
    return len(han) / len(chars) if chars else 0.0


class PyRecall:
    """The per-entry loop over dicts. Build once per store state; recall many times."""

    def __init__(self, entries: list[dict], config, tokenize=None, *,
                 bm25_only: bool = False, cos_floor: float = 0.0,
                 cos_floor_cjk: float | None = None) -> None:
        # a store without an embedder fuses BM25 alone, with both weights (RecallConfig)
        self.bm25_only = bm25_only
        self.cos_floor = cos_floor  # the model's cosine floor (cos_norm "floor" and the like)
        self.cos_floor_cjk = cos_floor if cos_floor_cjk is None else cos_floor_cjk
        self.entries = sorted(entries, key=lambda e: e["seq"])
        self.config = config
        self.k1 = config.bm25.k1
        self.b = config.bm25.b
        self.tokenize = tokenize
        self.tf: dict[str, Counter] = {}
        self.dl: dict[str, int] = {}
        self.df: Counter = Counter()
        total = 0
        if tokenize is None:
            from maclaw_fast.text import tokenize as tokenize_fn

            tokenize = self.tokenize = tokenize_fn
        content = {e["id"]: e["content"] for e in self.entries}
        for e in self.entries:
            toks = e.get("tokens")
            if toks is None:
                toks = tokenize(e["content"] + " " + " ".join(e["tags"]))
            tf, length = self.document(toks, content.get(e.get("prev")))
            self.tf[e["id"]] = tf
            self.dl[e["id"]] = fieldnorm(length)
            total += length
            for tok in tf:
                self.df[tok] += 1
        self.n_docs = len(self.entries)
        self.avgdl = total / self.n_docs if self.n_docs else 1.0
        self.by_id = {e["id"]: e for e in self.entries}
        # vectors are normalised once, as a store does at insertion (not per query)
        self.unit = {e["id"]: self._unit(e.get("vector")) for e in self.entries}
        self.last_scores: dict[str, tuple[float, dict]] = {}  # every candidate of the last call
        self.last_skipped = 0  # entries the last budget loop skipped
        self.last_kinds: dict[str, str] = {}  # id -> "self_identity" / "user_fact" of the leaders
        self.last_prior: dict[str, float] = {}  # id -> thread prior of the last call
        self.last_when = float("nan")  # the time the last query asked about

    # ------------------------------------------------------------------ pieces
    def document(self, own: list[str], before: str | None) -> tuple[Counter, int]:
        """design §2 reply documents: (term frequencies, length) of an entry with tokens
        ``own`` after the line ``before``: when that line asks (a "?"), its tokens without its
        speaker label count ``reply_weight`` each, and its length that much (rounded half up)."""
        from maclaw_fast.text.speakers import line_asks, spoken_text

        tf: Counter = Counter(own)
        w = self.config.graph.reply_weight
        if not (w and before and line_asks(before)):
            return tf, len(own)
        question = self.tokenize(spoken_text(before))
        for tok in question:
            tf[tok] += w
        return tf, len(own) + int(w * len(question) + 0.5)

    def bm25(self, q_tokens: list[str], entry_id: str) -> float:
        """design §2 over the unique query tokens, in query order."""
        k1, b = self.k1, self.b
        n = self.n_docs
        tf_e = self.tf[entry_id]
        dl = self.dl[entry_id]
        score = 0.0
        seen = set()
        for tok in q_tokens:
            if tok in seen:
                continue
            seen.add(tok)
            tf = tf_e.get(tok, 0)
            if tf == 0:
                continue
            df = self.df[tok]
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
            score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / self.avgdl))
        return score

    @staticmethod
    def _unit(vec):
        if vec is None:
            return None
        norm = math.sqrt(sum(float(x) * float(x) for x in vec))
        if norm == 0.0:
            return None
        return [float(x) / norm for x in vec]

    def expand(self, seeds: list[tuple[str, float]], hops: int, factor: float,
               allowed: set[str]) -> dict[str, float]:
        """design §4 ``expand``: breadth-first from the seeds; a node reached gets
        ``value · edge · factor`` per hop, compounding, the maximum when reached twice; seeds are
        never re-added and only ``allowed`` nodes are entered."""
        seed_ids = {sid for sid, _ in seeds}
        best: dict[str, float] = {}
        frontier = dict(seeds)
        for _ in range(hops):
            nxt: dict[str, float] = {}
            for node, value in frontier.items():
                for nb, edge in self.by_id[node]["related"].items():
                    if nb in seed_ids or nb not in allowed:
                        continue
                    v = value * edge * factor
                    if v > nxt.get(nb, 0.0):
                        nxt[nb] = v
            for nb, v in nxt.items():
                if v > best.get(nb, 0.0):
                    best[nb] = v
            frontier = nxt
            if not frontier:
                break
        return best

    def walk_links(self, seeds: list[tuple[str, float]], hops: int, factor: float,
                   allowed: set[str]) -> dict[str, float]:
        """design R5: from each seed, ``hops`` steps along ``prev`` and along ``next``, the
        ``h``-th step giving ``value · factor^h``; a walk stops at a missing link, a seed or an
        entry not ``allowed``; the maximum is kept."""
        seed_ids = {sid for sid, _ in seeds}
        best: dict[str, float] = {}
        for sid, value in seeds:
            for direction in ("prev", "next"):
                node, v = sid, value
                for _ in range(hops):
                    node = self.by_id[node].get(direction)
                    if node is None or node in seed_ids or node not in allowed:
                        break
                    v *= factor
                    if v > best.get(node, 0.0):
                        best[node] = v
        return best

    def threads(self) -> dict[str, int]:
        """id -> thread number: entries joined by ``prev``/``next`` links share one."""
        parent = {e["id"]: e["id"] for e in self.entries}

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x

        for e in self.entries:
            for side in ("prev", "next"):
                other = e.get(side)
                if other is not None and other in parent:
                    parent[find(e["id"])] = find(other)
        numbers: dict[str, int] = {}
        return {e["id"]: numbers.setdefault(find(e["id"]), len(numbers)) for e in self.entries}

    def thread_prior(self, q_tokens: list[str], q_vec, category: str | None) -> dict[str, float]:
        """id -> thread prior of every member (see the module notes); empty when off."""
        rc = self.config.recall
        if rc.thread_bm25_weight <= 0.0 and rc.thread_cos_weight <= 0.0:
            return {}
        label = self.threads()
        members = [e for e in self.entries if e["status"] in ("active", "dormant")
                   and (category is None or e["category"] == category)]
        groups: dict[int, list[dict]] = {}
        for e in members:
            groups.setdefault(label[e["id"]], []).append(e)
        if sum(len(g) >= 2 for g in groups.values()) < 2:  # fewer than two conversations
            return {}
        length = {t: sum(self.dl[e["id"]] for e in g) for t, g in groups.items()}
        with_doc = [t for t, g in groups.items() if any(self.dl[e["id"]] > 0 for e in g)]
        if not with_doc:
            return {}
        n = len(with_doc)
        avg = max(sum(length[t] for t in with_doc) / n, 1e-9)
        k1, b = rc.thread_k1, rc.thread_b
        tbm = {t: 0.0 for t in groups}
        for tok in dict.fromkeys(q_tokens):
            tf = {t: sum(self.tf[e["id"]].get(tok, 0) for e in g) for t, g in groups.items()}
            df = sum(1 for x in tf.values() if x > 0)
            if df == 0:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
            for t, x in tf.items():
                if x > 0:
                    tbm[t] += idf * x * (k1 + 1.0) / (x + k1 * (1.0 - b + b * length[t] / avg))
        cent: dict[int, float] = {}
        if q_vec is not None and not self.bm25_only and rc.thread_cos_weight > 0.0:
            for t, g in groups.items():
                vecs = [self.unit[e["id"]] for e in g if self.unit[e["id"]] is not None]
                if not vecs:
                    continue
                total = [sum(col) for col in zip(*vecs)]
                size = math.sqrt(sum(x * x for x in total))
                if size > 0.0:
                    cent[t] = sum(sum(a * c for a, c in zip(q_vec, v)) for v in vecs) / size
        b_hi = max(tbm.values())
        c_lo = min(cent.values()) if cent else 0.0
        c_hi = max(cent.values()) if cent else 0.0
        out = {}
        for t, g in groups.items():
            v = rc.thread_bm25_weight * tbm[t] / b_hi if b_hi > 0.0 else 0.0
            if t in cent and c_hi > c_lo:
                v += rc.thread_cos_weight * (cent[t] - c_lo) / (c_hi - c_lo)
            for e in g:
                out[e["id"]] = v
        return out

    def named_speakers(self, query: str) -> set[str]:
        """The speakers of the entries' transcript lines that ``query`` names."""
        from maclaw_fast.text.speakers import SpeakerIndex

        index = SpeakerIndex()
        for i, e in enumerate(self.entries):
            index.add(i, e["content"])
        return set(index.named(query))

    # ------------------------------------------------------------------ recall
    def recall(self, query: str, q_tokens: list[str] | None, q_vec, project: str | None,
               now: float, *, dynamic: bool = False, category: str | None = None
               ) -> list[tuple[str, float, dict]]:
        rc = self.config.recall
        if q_tokens is None:
            if self.tokenize is None:
                from maclaw_fast.text import tokenize as tokenize_fn

                self.tokenize = tokenize_fn
            q_tokens = self.tokenize(query)
        q_vec = self._unit(q_vec)
        max_entries = rc.dynamic_max_entries if dynamic else rc.max_entries
        budget = rc.dynamic_token_budget if dynamic else rc.token_budget
        has_project = project is not None and project != ""
        plow = project.lower() if has_project else ""

        # 1. candidates: active, in scope, in the category filter
        cands = []
        tagged = {}
        for e in self.entries:
            if e["status"] != "active":
                continue
            if category is not None and e["category"] != category:
                continue
            is_tagged = has_project and any(t.lower() == plow for t in e["tags"])
            if has_project and e["scope"] == "project" and not is_tagged:
                continue
            tagged[e["id"]] = is_tagged
            cands.append(e)

        # BM25 and its normalisation over the candidates' hits
        raw = {}
        for e in cands:
            raw[e["id"]] = self.bm25(q_tokens, e["id"])
        hits = [s for s in raw.values() if s > 0.0]
        hi = max(hits) if hits else 0.0
        lo = min(hits) if hits else 0.0
        mode = rc.bm25_norm
        if mode not in ("raw", "max", "minmax"):
            raise ValueError(f"unknown bm25_norm {mode!r}")

        def norm(x: float) -> float:
            if x <= 0.0:
                return 0.0
            if mode == "max":
                return x / hi
            if mode == "minmax":
                return 1.0 if hi == lo else (x - lo) / (hi - lo)
            return x

        # the cosine of every candidate, and its normalisation over them
        raw_cos = {}
        for e in cands:
            vec = self.unit[e["id"]] if q_vec is not None else None
            raw_cos[e["id"]] = sum(a * b for a, b in zip(q_vec, vec)) if vec is not None else 0.0
        c_lo = min(raw_cos.values()) if raw_cos else 0.0
        c_hi = max(raw_cos.values()) if raw_cos else 0.0
        if rc.cos_norm not in ("raw", "minmax", "floor", "floor_best", "spread"):
            raise ValueError(f"unknown cos_norm {rc.cos_norm!r}")
        f = self.cos_floor_cjk if han_share(query) >= 0.1 else self.cos_floor
        least = rc.cos_spread * (1.0 - f)
        a, b = {"floor": (f, 1.0), "floor_best": (f, max(c_hi, f + least)),
                "spread": (c_lo, max(c_hi, c_lo + least))}.get(rc.cos_norm, (0.0, 0.0))

        def norm_cos(c: float) -> float:
            if rc.cos_norm == "raw":
                return max(c, 0.0)
            if rc.cos_norm != "minmax":
                return max((c - a) / (b - a), 0.0) if b > a else 0.0
            if c_hi > c_lo:
                return (c - c_lo) / (c_hi - c_lo)
            return 1.0 if c > 0.0 else 0.0

        # the time the query asks about: a memory saved then gains up to time_weight
        when = float("nan")
        if rc.time_weight > 0.0:
            from maclaw_fast.text.dates import query_time

            when = query_time(query, now)
        self.last_when = when

        # the score of every candidate
        info = {}
        for e in cands:
            hours = max(now - e["updated_at"], 0.0) / 3600.0
            recency = math.exp(-rc.recency_decay_per_hour * hours)
            importance = CATEGORY_WEIGHT[e["category"]] + math.log(1.0 + e["access_count"])
            cos = max(raw_cos[e["id"]], 0.0)
            bm = norm(raw[e["id"]])
            affinity = rc.project_affinity if tagged[e["id"]] else 0.0
            if not math.isnan(when):
                affinity += rc.time_weight * math.exp(
                    -abs(e["created_at"] - when) / (rc.time_scale_days * 86400.0))
            bw, cw = rc.bm25_weight, rc.cos_weight
            if self.bm25_only:
                bw, cw = bw + cw, 0.0
            elif rc.cjk_bm25_weight > 0.0 and han_share(query) >= 0.1:  # its own weights
                bw, cw = rc.cjk_bm25_weight, bw + cw - rc.cjk_bm25_weight
            rel = bw * bm + cw * norm_cos(raw_cos[e["id"]]) + affinity
            base = rc.weight_recency * recency + rc.weight_importance * importance
            info[e["id"]] = {"recency": recency, "importance": importance, "bm25": bm,
                             "cos": cos, "affinity": affinity, "graph": 0.0, "rel": rel,
                             "base": base, "total": base + rc.weight_relevance * rel}

        # the thread prior (raises the base score; the graph walk does not pass it on)
        prior = self.last_prior = self.thread_prior(q_tokens, q_vec, category)
        for e in cands:
            d = info[e["id"]]
            p = rc.weight_relevance * prior.get(e["id"], 0.0)
            d["base"] += p
            d["total"] += p

        # 2. every candidate ranked on its score
        scored = list(cands)

        def key(e):
            return (-info[e["id"]]["total"], -e["access_count"])

        scored.sort(key=key)  # stable: store order breaks full ties

        # 3. the graph walk from the top seeds, then re-score and re-sort
        if (rc.graph_hops > 0 or rc.adjacency_hops > 0) and scored:
            seeds = [(e["id"], info[e["id"]]["rel"]) for e in scored[: rc.graph_seeds]]
            allowed = {e["id"] for e in scored}
            gained = self.expand(seeds, rc.graph_hops, rc.graph_hop_factor, allowed)
            linked = self.walk_links(seeds, rc.adjacency_hops, rc.adjacency_factor, allowed)
            for eid in set(gained) | set(linked):
                d = info[eid]
                # similarity neighbours: the larger value; conversation links: the larger
                # value (mix 0) or their own relevance plus mix × the walk's value
                value = max(d["rel"], gained.get(eid, 0.0))
                if eid in linked:
                    walk = linked[eid]
                    value = max(value, walk if rc.adjacency_mix <= 0 else
                                d["rel"] + rc.adjacency_mix * walk)
                if value > d["rel"]:
                    d["graph"] = value - d["rel"]
                    d["total"] = d["base"] + rc.weight_relevance * value
            scored = sorted(scored, key=lambda e: e["seq"])
            scored.sort(key=key)

        self.last_scores = {eid: (d["total"], d) for eid, d in info.items()}

        # 4. the leading block, then the ranked entries, within the budget
        si = [e for e in cands if e["category"] == "self_identity"]
        si.sort(key=lambda e: (-info[e["id"]]["importance"], -e["updated_at"], e["seq"]))
        fixed = si[: max(rc.max_identity, 0)]
        n_uf = 0 if dynamic else max(rc.max_user_facts, 0)

        def relevance(e):
            return info[e["id"]]["rel"] + info[e["id"]]["graph"]

        # a user fact leads when it is among the query's user_fact_window best matches
        best = sorted((info[e["id"]]["rel"] for e in scored), reverse=True)
        best = best[: max(rc.user_fact_window, 0)]
        bar = best[-1] if best else float("inf")
        lead = [e for e in scored
                if e["category"] == "user_fact" and relevance(e) > 0.0 and relevance(e) >= bar]
        lead = sorted(lead, key=lambda e: (-relevance(e), e["seq"]))[:n_uf]
        chosen = {e["id"] for e in fixed + lead}
        rest = [e for e in scored if e["id"] not in chosen]
        out = []
        used = 0
        self.last_skipped = 0
        for e in fixed:
            out.append(e)
            used += budget_tokens(e)
        for e in lead + rest:
            if len(out) >= max_entries:
                break
            cost = budget_tokens(e)
            if used + cost > budget:
                self.last_skipped += 1
                continue
            out.append(e)
            used += cost
        self.last_kinds = {e["id"]: k for k, group in (("self_identity", fixed),
                                                        ("user_fact", lead)) for e in group}

        # 5. the speaker order, after the walk and the selection
        named = self.named_speakers(query) if rc.speaker_weight > 0.0 else set()
        self.last_named = named
        if named:
            from maclaw_fast.text.speakers import speaks_or_answers

            k = 0
            while k < len(out) and out[k]["id"] in self.last_kinds:
                k += 1
            content = {e["id"]: e["content"] for e in self.entries}
            keep = rc.speaker_keep
            for e in out[k:]:
                before = content.get(e.get("prev")) if rc.speaker_replies else None
                if speaks_or_answers(e["content"], before, named):
                    pass
                elif keep > 0:  # one of the best other hits: it keeps its place
                    keep -= 1
                else:
                    continue
                d = info[e["id"]]
                d["affinity"] += rc.speaker_weight
                d["total"] += rc.weight_relevance * rc.speaker_weight
            out[k:] = sorted(out[k:], key=lambda e: -info[e["id"]]["total"])

        result = []
        for e in out:
            d = info[e["id"]]
            bd = {k: d[k] for k in ("recency", "importance", "bm25", "cos", "affinity", "graph",
                                    "total")}
            result.append((e["id"], d["total"], bd))
        return result


def recall_py(entries: list[dict], query: str, q_tokens: list[str] | None, q_vec,
              project: str | None, now: float, config, *, dynamic: bool = False,
              category: str | None = None) -> list[tuple[str, float, dict]]:
    """One-shot form: build the per-entry statistics and recall once."""
    return PyRecall(entries, config).recall(query, q_tokens, q_vec, project, now,
                                            dynamic=dynamic, category=category)
