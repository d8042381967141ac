"""Tool routing's configuration (design §12), a module of its own for its length; import it from
:mod:`maclaw_fast.config` with the others."""

from __future__ import annotations

from typing import Literal

from maclaw_fast.config_base import Config, Positive
from maclaw_fast.errors import ValidationError


class RouterConfig(Config, frozen=True, kw_only=True):
    """Tool routing (design §12)."""

    max_tools: int = 28
    max_dynamic: int = 18
    # fused = bm25_weight·norm(bm25) + cos_weight·norm(cos) over the candidates, then min-max.
    # score_norm "zscore": (x − mean)/std over the candidates, so a signal that singles out a
    # few tools outweighs a flat one; "minmax" (design R3) then uses cos_norm for the cosine:
    # "minmax" or "raw" (the reference's: max(cos, 0)). z-scores and 0.3/0.7 won the sweep on the tune
    # halves of MetaTool, Seal-Tools and HammerBench-zh (benchmarks/results/quality_tools.md)
    bm25_weight: float = 0.3
    cos_weight: float = 0.7
    score_norm: Literal["zscore", "minmax"] = "zscore"
    cos_norm: str = "minmax"
    # a tool's cosine is its best over the message and the message's sentences (at least
    # clause_min_chars characters, the first max_clauses): a request naming several tools has
    # one vector between them (text/clauses.py; measured in quality_tools.md, ablation)
    query_clauses: bool = True
    clause_min_chars: Positive = 12
    max_clauses: Positive = 16
    # a message with clauses gets a tool for each: each clause's best tool (by the clause's own
    # BM25 and vector) takes a place among the chosen ones when the message's ranking has it in
    # its first clause_within (tools/intents.py); tuned on the tune halves (quality_tools.md)
    clause_budget: bool = True
    clause_within: Positive = 20
    # add the words of a camelCase tool name to its BM25 text ("analyzeEvidence" → analyze,
    # evidence); measured in benchmarks/results/quality_tools.md (ablation)
    split_names: bool = True
    # add the input schema's parameter names and descriptions to a tool's BM25 text (at most
    # parameter_chars characters); measured in benchmarks/results/quality_tools.md (ablation)
    index_parameters: bool = True
    parameter_chars: Positive = 2000
    # a tool's vector is the normalised mean of its whole text's vector and its description's
    # (tools/tool_vectors.py): the parameter lines dilute what the tool does; measured in
    # quality_tools.md (ablation "one vector per tool"). False: the whole text's vector alone
    description_view: bool = True
    retrieval_weight: float = 0.6
    experience_weight: float = 0.3
    priority_weight: float = 0.1
    retrieval_weight_no_usage: float = 0.9
    vector_candidates_factor: int = 2
    rerank_top: int = 20
    rerank_max: int = 5
    discover_top: int = 5
    body_summary_chars: int = 1500
    core_tools: tuple[str, ...] = (
        "bash", "read_file", "write_file", "list_directory", "send_and_observe",
        "create_session", "list_sessions", "get_session_output", "get_session_events",
        "control_session", "call_mcp_tool", "list_skills", "run_skill", "screenshot", "send_file",
        "memory", "web_search", "web_fetch", "set_nickname", "browser_connect",
        "browser_navigate", "browser_click", "discover_tool",
    )
    usage_window: int = 2000
    usage_per_tool: int = 200
    usage_query_tokens: int = 5
    usage_decay_per_hour: float = 0.01
    usage_failure_weight: float = -0.3
    # tool vectors kept in the disk cache: two views a tool (description_view), so 2,000 tools
    embedding_cache_size: int = 4000
    embedding_cache_debounce_s: float = 2.0
    query_cache_size: int = 64
    query_cache_ttl_s: float = 30.0
    route_log_max_bytes: int = 5 * 1024 * 1024
    # keyword group activation (design §12 step 5): (keywords, tags); English keywords match whole
    # words, others substrings; extend with ``extra_group_keywords``
    group_keywords: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
        (("数据库", "database"), ("database", "sql", "query", "db")),
        (("git", "版本控制"), ("git", "vcs", "version")),
        (("文件", "file"), ("file", "read", "write", "directory")),
        (("mcp",), ("mcp",)),
        (("skill", "技能"), ("skill",)),
        (("会话", "session"), ("session",)),
        (("配置", "config"), ("config", "settings")),
        (("记忆", "memory"), ("memory",)),
        (("定时", "schedule"), ("schedule", "task", "cron", "timer")),
        (("网络", "network"), ("network", "web", "search", "fetch")),
        (("搜索", "search"), ("web", "search", "internet", "fetch")),
        (("网页", "web"), ("web", "fetch", "browse", "url")),
        (("浏览器", "browser"), ("browser", "web", "automation", "test")),
        (("自动化", "automation"), ("browser", "automation", "test")),
        (("测试", "test"), ("browser", "automation", "test", "web")),
        (("登录", "下单"), ("browser", "web", "automation")),
        (("gui", "桌面", "desktop"), ("gui", "test", "automation", "desktop")),
        (("录制",), ("gui", "test", "automation", "desktop")),
    )
    extra_group_keywords: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    hint_tool_name: str = "skill_hint"
    deferred_search_k: int = 5
    embedding_disk_cache: bool = True
    # a query mostly in a language the embedder was not trained on (Chinese with the
    # English MiniLM) fuses as this / (1 − this): its cosines are near-noise. 0.8 won the sweep
    # on the tune halves of HammerBench-zh with MiniLM (quality_tools.md); 0 disables the gate.
    foreign_query_bm25_weight: float = 0.8
    foreign_query_min_ratio: float = 0.3
    # a query mostly in Chinese with an embedder that reads it (e5) fuses as this /
    # (1 − this): word-level BM25 over jieba's cuts is the weaker signal there (HammerBench-zh
    # BM25 only Hit@5 0.79–0.82 against 0.89–0.94 for e5 vectors, while English BM25 is the
    # stronger one on Seal-Tools). 0.2 won the sweep on the tune halves of HammerBench-zh with
    # e5 (quality_tools.md); 0 disables it (the query fuses with bm25_weight / cos_weight).
    cjk_query_bm25_weight: float = 0.2
    # numba threads for route_batch (0 = all cores); see maclaw_fast/threads.py for why 1
    batch_threads: int = 1

    def check(self) -> None:
        for name in ("foreign_query_bm25_weight", "cjk_query_bm25_weight"):
            w = getattr(self, name)
            if not 0.0 <= w <= 1.0:
                raise ValidationError(f"RouterConfig.{name}: must be in [0, 1] (0: off), got {w}")
