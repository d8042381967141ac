"""Every tunable of the design as msgspec Structs, with the design defaults.

No constant of the behaviour lives anywhere else: modules read these objects, kernels receive the
values as arguments.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from maclaw_fast.config_base import Config, Positive, Seconds
from maclaw_fast.errors import ValidationError


# category -> (importance weight, default scope, tier, protected)
CATEGORY_TABLE: dict[str, tuple[float, str, str, bool]] = {
    "self_identity": (4.0, "global", "semantic", True),
    "instruction": (3.0, "global", "semantic", False),
    "preference": (2.0, "global", "semantic", False),
    "project_knowledge": (2.0, "project", "semantic", False),
    "session_checkpoint": (1.5, "project", "episodic", False),
    "conversation_summary": (1.0, "project", "episodic", False),
    "user_fact": (1.0, "global", "semantic", False),
}
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_TABLE)
CATEGORY_ALIASES: dict[str, str] = {
    "feedback": "instruction",
    "project": "project_knowledge",
    "reference": "project_knowledge",
    "user": "user_fact",
}
EPISODIC: frozenset[str] = frozenset(c for c, v in CATEGORY_TABLE.items() if v[2] == "episodic")


class Bm25Config(Config, frozen=True, kw_only=True):
    """BM25 parameters (design §2, R2): these defaults suit long documents (workspace chunks, tool
    catalogs); a memory store's own default is :data:`MEMORY_BM25`."""

    k1: float = 1.2
    b: float = 0.75


# design R2: short memories saturate term frequency sooner and normalise length less. Measured on
# LoCoMo's tuning half (benchmarks/results/quality_memory.md, BM25-only turn R@10 by k1/b).
MEMORY_BM25 = Bm25Config(k1=0.9, b=0.4)


class RecallConfig(Config, frozen=True, kw_only=True):
    """Scoring and assembly of recall (design §6 with R3–R5).

    ``relevance = bm25_weight·norm(bm25) + cos_weight·norm(cos) + affinity``;
    ``score = weight_recency·recency + weight_importance·importance + weight_relevance·relevance``
    (+ ``weight_relevance·thread prior`` in a store of conversations: ``thread_*`` below).
    The defaults were chosen on LoCoMo's tuning half (conversations 0–4; the sweep is in
    ``benchmarks/results/quality_memory.md``): normalised relevance (≤ 1 + affinity) weighted so
    that it decides, recency and importance ordering memories of similar relevance.
    ``bm25_norm="raw", cos_norm="raw", weight_relevance=1.0`` is the reference's scoring. A
    store without an embedder fuses BM25 alone with ``bm25_weight + cos_weight``.
    """

    recency_decay_per_hour: float = 0.005
    weight_recency: float = 1.0
    weight_importance: float = 1.0
    weight_relevance: float = 10.0
    # chosen with time_scale_days and speaker_keep by a joint re-tune on LoCoMo's tuning half
    # (docs/evaluation.md); they sum to 1, so a cue's strength stays in [0, 1]
    bm25_weight: float = 0.49
    cos_weight: float = 0.51
    project_affinity: float = 3.0
    # a query that names a time ("two weeks ago", "last Saturday", "May 2023"): a memory saved
    # then gains up to time_weight of relevance, exp(−|saved − asked| / time_scale_days)
    time_weight: float = 0.4
    time_scale_days: float = 10.0
    # a query that names the speaker of transcript lines ("Melanie: ..."): that speaker's
    # lines among the selected hits gain speaker_weight of relevance after the graph walk and
    # are ordered again; archived hits gain it before their merge (memory.speakers). 0: off.
    # Chosen on LoCoMo's tuning half (docs/evaluation.md)
    speaker_weight: float = 0.2
    # the line after a question of that speaker gains it too ("What got Melanie into pottery?"
    # is answered by the reply to her "what got you into pottery?")
    speaker_replies: bool = True
    # the best other hits that gain it too and keep their place: a question that names the
    # wrong speaker (LoCoMo's adversarial category) still finds the line it asks about
    speaker_keep: int = 1
    bm25_norm: Literal["raw", "max", "minmax"] = "max"  # max: by the query's best score
    # the cosine's scale (f: the model's floor for the query's language, embedding.cosine_floor).
    # floor_best: (cos − f)/(hi − f), ≥ 0, hi the best candidate's cosine but at least
    # f + cos_spread·(1 − f): a small gap stays small (a rare exact match, a fresh episode on a
    # weak cue keep their weight) while a strong match still counts 1 against category importance
    # (benchmarks/results/quality_memory.md, "Cosine scale"). minmax: over the query's candidates
    # (turns a 0.05 gap into a full unit); floor: (cos − f)/(1 − f); spread: min-max over a range
    # of at least cos_spread·(1 − f); raw: max(cos, 0)
    cos_norm: Literal["raw", "minmax", "floor", "spread", "floor_best"] = "floor_best"
    # the least range of floor_best / spread, in units of 1 − f, on MiniLM's scale: a query in a
    # language whose best matches reach less high (embedding.cosine_reach) gets this × the reach
    cos_spread: float = 0.6
    graph_seeds: int = 5
    graph_hops: int = 1
    graph_hop_factor: float = 0.5
    # the conversation links (design R5): relevance passed along prev/next per hop
    adjacency_factor: float = 0.8
    adjacency_hops: int = 2
    # how a reached row combines its own relevance with the walk's: 0 keeps the larger, m > 0
    # adds m × the walk's value to its own (a reply keeps its match and gains its question's)
    adjacency_mix: float = 0.4
    # the thread prior: each conversation thread scored as one document (BM25 of its rows'
    # text with these k1/b, the cosine of its rows' centroid); a row's score gains
    # weight_relevance × (bm25 weight × its thread's BM25 / the best + cos weight × min-max
    # centroid cosine), after the graph walk, once the store holds two conversations (threads
    # of two or more entries). 0 and 0: off
    thread_bm25_weight: float = 0.3
    thread_cos_weight: float = 0.1  # the thread prior's centroid-cosine weight
    thread_k1: float = 1.2  # BM25 k1 of a thread as one document (threads are long)
    thread_b: float = 0.75  # BM25 b of a thread as one document
    # the always-on block (design R4): self-identity entries that lead every recall; user facts
    # that lead when among the query's results (recall_dynamic ranks them instead)
    max_identity: int = 3
    max_user_facts: int = 3
    user_fact_window: int = 5  # a leading fact is among this many best matches of the query
    max_entries: int = 20
    token_budget: int = 2000
    dynamic_max_entries: int = 15
    dynamic_token_budget: int = 1500
    self_identity_summary_chars: int = 600
    user_fact_summary_chars: int = 400
    # a Chinese or mixed query (embedding.base.CJK_SHARE) with an embedder fuses BM25 at this
    # weight and the cosine at bm25_weight + cos_weight − it: jieba's word-level BM25 is the
    # weaker signal there (the Chinese sample ranks lower with the English tuning's 0.49);
    # 0: such a query fuses as any other
    cjk_bm25_weight: float = 0.4

    def check(self) -> None:
        if not self.time_scale_days > 0:
            raise ValidationError(f"RecallConfig.time_scale_days must be > 0, got "
                                  f"{self.time_scale_days!r}")
        if self.speaker_keep < 0:
            raise ValidationError(f"RecallConfig.speaker_keep must be >= 0, got "
                                  f"{self.speaker_keep!r}")
        if not 0.0 <= self.cjk_bm25_weight <= self.bm25_weight + self.cos_weight:
            raise ValidationError("RecallConfig.cjk_bm25_weight must be in [0, bm25_weight + "
                                  f"cos_weight], got {self.cjk_bm25_weight!r}")


class GraphConfig(Config, frozen=True, kw_only=True):
    """Memory graph (design §4)."""

    max_edges: Positive = 5
    link_min_cos: float = 0.7
    link_top: int = 3
    link_bm25_weight: float = 0.4
    link_cos_weight: float = 0.6
    # conversation links (design R5): a save without a thread continues the previous unthreaded
    # save when within this many seconds of it; False makes no links at all
    adjacency: bool = True
    adjacency_gap_s: float = 1800.0
    # a reply's BM25 document also holds the question it answers (its conversation predecessor,
    # when that asks: holds a "?"), its speaker label left out, each of its words counting this
    # much of one of the reply's own (0: off; chosen on LoCoMo's tuning half,
    # benchmarks/results/locomo_context.md)
    reply_weight: float = 0.33

    def check(self) -> None:
        if not 0.0 <= self.reply_weight <= 1.0:
            raise ValidationError(f"GraphConfig.reply_weight must be in [0, 1], got "
                                  f"{self.reply_weight!r}")


class ForgettingConfig(Config, frozen=True, kw_only=True):
    """Forgetting curve, dormancy and what brings a memory back (design §7, §0 R9).

    Decay turns only ``dormant_categories`` (the episodic ones) dormant; every other category
    keeps a decaying strength ``S(t)`` but stays active. A dormant entry is still indexed and
    scored by recall; it is returned (``reason="revived"``) when it ranks among the results and
    its cue strength reaches ``revive_min_cue`` (``revive_needs_term``: and it holds a query
    term that sets it apart, BM25 ≥ 0.1, not only words nearly every memory holds). Archived
    entries are searched when the store's best hit has a cue strength below ``archive_below``,
    and returned when theirs reaches ``archive_min_cue`` (at most ``archive_max_hits``), with
    the archived entries within ``RecallConfig.adjacency_hops`` conversation links of them when
    ``archive_links``.

    Cue strength (absolute, in [0, 1]): ``bm25_weight · min(1, bm25 / Σ idf(query terms)) +
    cos_weight · max((cos − floor)/(1 − floor), 0)`` with the recall weights and the model's
    cosine floor, whatever else the store holds.

    Examples
    --------
    >>> ForgettingConfig(dormant_categories=("conversation_summary",)).revive
    True
    >>> ForgettingConfig(dormant_categories=("self_identity",))
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: dormant_categories: self_identity never decays
    """

    decay_per_hour: float = 0.003
    dormant_below: float = 0.1
    reinforce_step: float = 1.0
    dormant_categories: tuple[str, ...] = ("session_checkpoint", "conversation_summary")
    revive: bool = True
    # the highest bar of LoCoMo 0–4's best range (0.2–0.25, quality_lifecycle.md) at which a
    # shared name alone revives nothing (e5: tests/test_embedding_auto.py)
    revive_min_cue: float = 0.25
    revive_needs_term: bool = True  # a vector alone is no cue: some models rate anything close
    archive_search: bool = True
    archive_below: float = 0.7  # the three archive knobs: tuned as revive_min_cue was
    archive_min_cue: float = 0.3
    archive_max_hits: int = 3
    archive_links: bool = True  # the archived reply to an archived question comes with it

    def check(self) -> None:
        for name in ("decay_per_hour", "dormant_below", "reinforce_step", "revive_min_cue",
                     "archive_below", "archive_min_cue"):
            if getattr(self, name) < 0:
                raise ValidationError(f"ForgettingConfig.{name} must be ≥ 0, got "
                                      f"{getattr(self, name)!r}")
        for cat in self.dormant_categories:
            canon = CATEGORY_ALIASES.get(cat, cat)
            if canon not in CATEGORY_TABLE:
                raise ValidationError(f"dormant_categories: unknown category {cat!r}")
            if CATEGORY_TABLE[canon][3]:
                raise ValidationError(f"dormant_categories: {canon} never decays")


class CapacityConfig(Config, frozen=True, kw_only=True):
    """Capacity, archive and GC (design §9)."""

    store_capacity: Positive = 500
    archive_capacity: Positive = 1000
    gc_threshold: Positive = 450
    revive_top: int = 20
    revive_max: int = 10


class PersistConfig(Config, frozen=True, kw_only=True):
    """Journal and snapshot policy (design §8)."""

    fsync: Literal["always", "interval", "never"] = "interval"
    fsync_interval_s: Seconds = 1.0
    snapshot_debounce_s: Seconds = 5.0


class MemoryConfig(Config, frozen=True, kw_only=True):
    """Configuration of a :class:`maclaw_fast.MemoryStore`.

    Examples
    --------
    >>> cfg = MemoryConfig(recall=RecallConfig(bm25_norm="max"))
    >>> cfg.recall.max_entries
    20
    """

    bm25: Bm25Config = MEMORY_BM25
    recall: RecallConfig = RecallConfig()
    graph: GraphConfig = GraphConfig()
    forgetting: ForgettingConfig = ForgettingConfig()
    capacity: CapacityConfig = CapacityConfig()
    persist: PersistConfig = PersistConfig()
    query_cache_size: int = 256
    auto_link: bool = True
    backfill_vectors: bool = True
    # threads a batch recall uses: "auto" = every core while no other thread is runnable (a
    # busy core slows the whole batch), else 1; or a number (0 = every core)
    batch_threads: int | Literal["auto"] = "auto"


# its own module for its length, re-exported here (the configs in source order)
from maclaw_fast.router_config import RouterConfig  # noqa: E402


class SearchConfig(Config, frozen=True, kw_only=True):
    """Workspace memory search (design §14)."""

    chunk_tokens: int = 400
    chunk_overlap: int = 80
    chars_per_token: int = 4
    # None: the fusion's own weights (workspace.search.FUSION_WEIGHTS; "openclaw" 0.7/0.3)
    vector_weight: float | None = None
    text_weight: float | None = None
    # how the two sides make the score that ranks and that min_score judges: "normalised"
    # wv·(min-max cosine over the vector candidates) + wt·(BM25 / the query's best), chosen on
    # the tuning halves (benchmarks/results/quality_workspace.md); "openclaw" wv·cosine +
    # wt·s/(1+s); "calibrated" wv·(cosine over the model's floor) + wt·min(1, BM25 / Σ idf)
    fusion: str = "normalised"
    bm25_k1: float = 1.2  # design R2: chunks of long documents
    bm25_b: float = 0.75
    max_results: int = 6
    # on the fusion's scale; under "normalised" a bar relative to the query's best candidates
    min_score: float = 0.35
    candidate_multiplier: int = 4
    max_candidates: int = 200
    temporal_decay: bool = False
    half_life_days: float = 30.0
    mmr: bool = False
    mmr_lambda: float = 0.7
    snippet_chars: int = 700
    max_total_chars: int = 4000
    extra_paths: tuple[str, ...] = ()
    watch_debounce_s: float = 1.5
    sync_interval_s: float = 0.0
    text_search: bool = True  # False = vector-only mode (no keyword index)
    sync_on_search: bool = True  # sync before a search when files changed
    keep_tantivy: bool = False  # also keep a RAM tantivy index (only tantivy_scores() reads it)
    # a big sync (≥ 4M characters) chunks and tokenises half its files in a forked child
    # (POSIX); False keeps all of it in this process (~1.3× slower on 2 cores)
    fork_workers: bool = True


class MaintenanceConfig(Config, frozen=True, kw_only=True):
    """Maintenance pipeline (design §10)."""

    interval_h: float = 6.0
    backups_kept: int = 20
    dedup_min_substring: int = 20
    merge_batch: int = 25
    merge_cut_bytes: int = 500
    merge_min_cos: float = 0.9
    compress_min_chars: int = 200
    compress_max_ratio: float = 0.5
    compact_backfill_max: int = 30
    compact_min_chars: int = 20
    breaker_failures: int = 3
    promote_min_episodic: int = 6
    promote_window: int = 50
    promote_cut_bytes: int = 200
    promote_min_evidence: int = 3
    promote_max: int = 5
    reflect_min_entries: int = 50
    reflect_min_hours: float = 24.0
    reflect_min_episodic: int = 5
    reflect_window: int = 30
    reflect_cut_bytes: int = 300
    extract_cooldown_s: float = 3600.0
    extract_compress_over: int = 20
    conflict_candidates: int = 5
    conflict_min_cos: float = 0.8
    conflict_min_bm25: float = 3.0
    # issue 3 additions
    compress_max_per_run: int = 50  # LLM compressions per cycle (one call each)
    reflect_max: int = 5  # insights stored per reflection (enforced like promote_max)
    backup_vectors: bool = False  # vectors in backups: import re-embeds, so off by default
    filter_desc_chars: int = 150  # recall_with_llm_filter: description length per candidate
    extract_signal_window: int = 10  # messages scanned for "already saved" signals
    extract_max_items: int = 20  # knowledge items saved per extraction


class FeaturesConfig(Config, frozen=True, kw_only=True):
    """What ``chat`` and ``serve`` switch on around the core loop (each can be turned off).

    The LLM steps (``rerank``, ``recall_filter``, ``conflicts``, ``extractor``, ``reflect`` and
    the LLM parts of maintenance) run only where an LLM is configured; ``route_log``,
    ``selector`` and the rest of ``maintenance`` (backup, GC, decay, exact dedup) run without
    one.

    Examples
    --------
    >>> FeaturesConfig(rerank=False).recall_filter
    True
    """

    # LLM listwise rerank of the routed tools when more candidates than the budget (design §12)
    rerank: bool = True
    # one block per routing decision in <store>/tool_route.log (a catalog within budget too)
    route_log: bool = True
    # recommend a coding agent (claude, codex, ...) for coding tasks that can start a session
    selector: bool = True
    # check each new memory against similar ones; a contradicted older one is superseded
    conflicts: bool = True
    # the LLM keeps the recalled memories that matter when more than recall_filter_max came back
    recall_filter: bool = True
    recall_filter_max: Positive = 5
    # the maintenance pipeline every MaintenanceConfig.interval_h hours (persisted schedule)
    maintenance: bool = True
    # the reflect step of maintenance
    reflect: bool = True
    # knowledge extraction when a conversation ends (1 h cooldown kept in the store)
    extractor: bool = True

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The on/off switches (the boolean fields)."""
        return tuple(f for f in cls.__struct_fields__ if f != "recall_filter_max")

    def without(self, names) -> "FeaturesConfig":
        """A copy with the named switches off (unknown names → ValidationError).

        Examples
        --------
        >>> FeaturesConfig().without(["rerank", "extractor"]).rerank
        False
        """
        names = [str(n).replace("-", "_") for n in names]
        unknown = sorted(set(names) - set(self.names()))
        if unknown:
            raise ValidationError(f"unknown feature(s) {', '.join(unknown)}; choose from "
                                  f"{', '.join(self.names())}")
        return msgspec.structs.replace(self, **{n: False for n in names})
