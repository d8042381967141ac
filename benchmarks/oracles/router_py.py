"""Plain-Python reference of the routing algorithm (design §12), the baseline of
``benchmarks/bench_router.py``: dicts, lists and sets, no NumPy in the hot path.

It mirrors ``ToolRouter.route``: BM25 over ``name description tags`` (k1 1.2, b 0.75, tantivy's
length encoding), cosine over tool vectors, candidates = BM25 hits ∪ top vector hits, min-max
of the weighted sum of both signals as z-scores over the candidates (``norm="zscore"``, the
default) or min-max (``"minmax"``, design R3), ties by tool name, experience (one pass over the
usage window, Python sets), priority, keyword groups, and the budgeted fill with core tools
first.
"""

from __future__ import annotations

import math
from collections import Counter


class PyRouter:
    def __init__(self, tools, vectors, core_names, *, k1=1.2, b=0.75, max_tools=28,
                 max_dynamic=18, n_vec=56, w_bm25=0.4, w_cos=0.6, weights=(0.6, 0.3, 0.1),
                 fieldnorm=None, norm="zscore"):
        """``tools``: dicts with name, tokens (BM25 tokens), category, priority, tags;
        ``vectors``: list of float lists (unit norm) per tool."""
        self.tools = tools
        rank = {name: r for r, name in enumerate(sorted(t["name"] for t in tools))}
        self.tie = [rank[t["name"]] for t in tools]
        self.vectors = [list(map(float, v)) for v in vectors]
        self.core = set(core_names)
        self.k1, self.b = k1, b
        self.max_tools, self.max_dynamic, self.n_vec = max_tools, max_dynamic, n_vec
        self.w_bm25, self.w_cos, self.weights = w_bm25, w_cos, weights
        self.norm = norm
        self.tf = [Counter(t["tokens"]) for t in tools]
        norm = fieldnorm or (lambda n: n)
        self.dl = [float(norm(len(t["tokens"]))) for t in tools]
        self.avgdl = sum(len(t["tokens"]) for t in tools) / max(len(tools), 1)
        self.df = Counter(tok for tf in self.tf for tok in tf)

    def bm25(self, q_tokens, i):
        n = len(self.tools)
        s = 0.0
        tf_i = self.tf[i]
        for tok in dict.fromkeys(q_tokens):
            tf = tf_i.get(tok, 0)
            if tf:
                df = self.df[tok]
                idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
                s += idf * tf * (self.k1 + 1) / (
                    tf + self.k1 * (1 - self.b + self.b * self.dl[i] / self.avgdl))
        return s

    @staticmethod
    def minmax(vals):
        if not vals:
            return {}
        lo, hi = min(vals.values()), max(vals.values())
        if hi > lo:
            return {k: (v - lo) / (hi - lo) for k, v in vals.items()}
        return {k: (1.0 if v > 0 else 0.0) for k, v in vals.items()}

    @staticmethod
    def zscore(vals):
        if not vals:
            return {}
        mu = sum(vals.values()) / len(vals)
        sd = math.sqrt(sum((v - mu) ** 2 for v in vals.values()) / len(vals))
        return {k: ((v - mu) / sd if sd > 0 else 0.0) for k, v in vals.items()}

    @staticmethod
    def experience_all(records, q_tokens, now, per_tool=200, decay=0.01, fail_w=-0.3):
        """records: newest last, each (tool, token set, ts, ok)."""
        q = set(q_tokens)
        if not q:
            return {}
        sums, counts = {}, {}
        for tool, toks, ts, ok in reversed(records):
            c = counts.get(tool, 0)
            if c >= per_tool:
                continue
            counts[tool] = c + 1
            inter = len(q & toks)
            if inter:
                j = inter / len(q | toks)
                hours = max((now - ts) / 3600.0, 0.0)
                sums[tool] = sums.get(tool, 0.0) + j * math.exp(-decay * hours) * (
                    1.0 if ok else fail_w)
        return {t: min(max(sums.get(t, 0.0) / c, 0.0), 1.0) for t, c in counts.items()}

    def route(self, q_tokens, q_vec, group_tags, records, now):
        tools = self.tools
        core = [i for i, t in enumerate(tools) if t["name"] in self.core]
        cand = [i for i, t in enumerate(tools) if t["name"] not in self.core]
        bm = {i: self.bm25(q_tokens, i) for i in cand}
        cos = {}
        for i in cand:
            v = self.vectors[i]
            cos[i] = sum(a * b for a, b in zip(v, q_vec))
        tie = self.tie
        vec_hits = sorted((i for i in cand if cos[i] > 0), key=lambda i: (-cos[i], tie[i]))
        hits = {i for i in cand if bm[i] > 0} | set(vec_hits[: self.n_vec])
        scale = self.zscore if self.norm == "zscore" else self.minmax
        nb = scale({i: bm[i] for i in hits})
        nc = scale({i: cos[i] for i in hits})
        fused = self.minmax({i: self.w_bm25 * nb[i] + self.w_cos * nc[i] for i in hits})
        if self.norm == "zscore" and fused and len(set(fused.values())) == 1:
            fused = dict.fromkeys(fused, 1.0)  # equal hits all lead
        exp = self.experience_all(records, q_tokens, now) if records else {}
        w_ret, w_exp, w_prio = self.weights if records else (0.9, 0.0, 0.1)
        key = {}
        for i in cand:
            t = tools[i]
            prio = min(max(t["priority"] * 0.1, 0.0), 1.0)
            s = w_ret * fused.get(i, 0.0) + w_exp * exp.get(t["name"], 0.0) + w_prio * prio
            grp = any(tag in group_tags for tag in t["tags"])
            key[i] = s + (4.0 if grp else 2.0 if i in hits else 0.0)
        order = sorted(cand, key=lambda i: (-key[i], tie[i]))
        slots = self.max_tools - len(core)
        nb_left = self.max_dynamic - sum(tools[i]["category"] != "builtin" for i in core)
        chosen = []
        for i in order:
            if len(chosen) >= slots:
                break
            if tools[i]["category"] != "builtin":
                if nb_left <= 0:
                    continue
                nb_left -= 1
            chosen.append(i)
        return [tools[i]["name"] for i in core] + [tools[i]["name"] for i in chosen]
