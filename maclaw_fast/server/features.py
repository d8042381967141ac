"""The optional features of ``maclaw-fast serve`` (switched by
:class:`~maclaw_fast.config.FeaturesConfig`; the LLM ones need ``--llm-url``/``--model``):

- ``route_tools``: LLM rerank and the route log (``<store>/tool_route.log``);
- ``memory_save``: conflict detection — a contradicted older memory becomes ``superseded`` and
  the result lists it;
- ``memory_recall``: the LLM recall filter when more than ``recall_filter_max`` ranked memories
  came back (the leading self-identity and user-fact entries always stay);
- ``memory_extract``: the knowledge extractor over a finished conversation (1 h cooldown kept
  in the store);
- ``select_coding_agent``: the coding-agent selector;
- the maintenance pipeline every 6 h in the background (for per-user stores: each open store
  when it is due, looked at when it opens and every 5 minutes).
"""

# No ``from __future__ import annotations``: the SDK reads the tool signatures at run time, and
# they name ``Context`` (imported where the tools are defined).
import logging
import shutil
from pathlib import Path
from typing import Annotated, Any

import msgspec
from pydantic import Field

from maclaw_fast.config import FeaturesConfig, MaintenanceConfig
from maclaw_fast.errors import MaclawError, StoreClosedError, ValidationError

log = logging.getLogger(__name__)
__all__ = ["ServeFeatures", "add_feature_tools"]
LEADING = ("self_identity", "user_fact")  # recall's always-on block: never filtered away


class ServeFeatures:
    """The switched-on features of one served backend.

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.server.mcp_server import Backend, ServerConfig
    >>> with Backend.open(ServerConfig(store=tempfile.mkdtemp(), embedder="none")) as b:
    ...     f = ServeFeatures(b, None)
    ...     f.select("fix the failing react tests")["agent"]
    'codex'
    """

    def __init__(self, backend, llm, config: FeaturesConfig = FeaturesConfig(),
                 maintenance: MaintenanceConfig = MaintenanceConfig(), *, installed=None,
                 route_log=None) -> None:
        if not isinstance(config, FeaturesConfig):
            raise ValidationError("config must be a FeaturesConfig")
        self.backend, self.llm, self.config = backend, llm, config
        self.maintenance_config = maintenance
        self.selector = self.schedule = None
        router = backend.router
        if router is not None:
            self._install_on_router(router, route_log)
        if config.selector:
            from maclaw_fast.tools.selector import Selector

            self.selector = Selector()
            names = [p.name for p in self.selector.profiles]
            self.installed = (list(installed) if installed is not None
                              else [n for n in names if shutil.which(n)])
        if config.maintenance and backend.store is not None:
            from maclaw_fast.maintenance.pipeline import Maintenance
            from maclaw_fast.maintenance.schedule import MaintenanceSchedule

            self.schedule = MaintenanceSchedule(
                Maintenance(backend.store, llm, maintenance, reflect=config.reflect))
        elif config.maintenance and getattr(backend, "pool", None) is not None:
            from maclaw_fast.maintenance.pipeline import Maintenance
            from maclaw_fast.maintenance.pool_schedule import PoolMaintenanceSchedule

            self.schedule = PoolMaintenanceSchedule(
                backend.pool, lambda store: Maintenance(store, llm, maintenance,
                                                        reflect=config.reflect))

    def _install_on_router(self, router, route_log) -> None:
        if self.config.rerank and self.llm is not None and router.reranker is None:
            from maclaw_fast.tools.rerank import LLMReranker

            router.reranker = LLMReranker(self.llm)
        if self.config.route_log and router.route_log is None:
            from maclaw_fast.tools.routelog import ROUTE_LOG_NAME, RouteLog

            if route_log is None:
                b = self.backend
                home = getattr(b.store, "path", None) if b.store is not None else getattr(
                    b.pool, "root", None)
                route_log = Path(home) / ROUTE_LOG_NAME if home is not None else None
            if route_log is not None:
                router.route_log = RouteLog(route_log, router.config.route_log_max_bytes)

    def start(self) -> "ServeFeatures":
        if self.schedule is not None:
            self.schedule.start()
        return self

    def close(self) -> None:
        if self.schedule is not None:
            self.schedule.stop()

    # ------------------------------------------------------------------ tool hooks
    def after_save(self, store, result: dict) -> dict:
        """Check a new memory for conflicts; the result lists what it superseded."""
        if not (self.config.conflicts and self.llm is not None and result.get("created")):
            return result
        from maclaw_fast.maintenance.conflicts import ConflictDetector

        try:
            report = ConflictDetector(store, self.llm, self.maintenance_config).check(
                result["saved"]["id"])
        except StoreClosedError:
            raise
        except MaclawError as exc:
            log.warning("conflict check failed: %s", exc)
            return result
        result["superseded"] = [{"id": i, "content": store.get(i).content,
                                 "reason": report.reasons.get(i, "")}
                                for i in report.superseded_ids]
        return result

    def recall(self, store, query: str, *, project=None, category=None, max_results=None,
               reinforce: bool = True) -> dict | None:
        """``memory_recall`` through the LLM filter; None when the filter is off (the caller
        recalls as usual)."""
        cfg = self.config
        if not (cfg.recall_filter and self.llm is not None):
            return None
        from maclaw_fast.agent.handlers import hit_dict
        from maclaw_fast.maintenance.filter import llm_pick

        if max_results is not None and (isinstance(max_results, bool) or not isinstance(
                max_results, int) or max_results < 1):
            raise ValidationError(f"max_results must be an integer >= 1, got {max_results!r}")
        # recalled without reinforcing: only what the filter keeps is strengthened
        if category is not None:
            hits = store.recall_dynamic(query, category=category, project=project,
                                        reinforce=False)
        else:
            hits = store.recall(query, project=project, reinforce=False)
        lead = [h for h in hits if category is None and h.reason in LEADING]
        rest = [h for h in hits if not (category is None and h.reason in LEADING)]
        out: dict = {"ok": True, "query": query}
        if len(rest) > cfg.recall_filter_max:
            picked = llm_pick(rest, query, self.llm, cfg.recall_filter_max,
                              self.maintenance_config)
            if picked is None:
                out["filtered"] = {"error": "the LLM filter failed; the recall order stands"}
            else:
                out["filtered"] = {"dropped": len(rest) - len(picked), "kept": len(picked)}
                rest = picked
        kept = lead + rest
        if max_results is not None:
            kept = kept[:max_results]
        if reinforce:
            store.reinforce(kept)
        out["results"] = [hit_dict(h) for h in kept]
        return out

    def extract(self, store, messages: list[dict], project: str | None = None) -> dict:
        from maclaw_fast.maintenance.extractor import KnowledgeExtractor

        report = KnowledgeExtractor(store, self.llm, self.maintenance_config).extract(
            messages, project=project)
        return {"ok": not report.error, **msgspec.to_builtins(report)}

    def select(self, task: str) -> dict:
        sel = self.selector.recommend(task, self.installed)
        return {"ok": True, "agent": sel.name, "installed": list(self.installed),
                "scores": {k: round(v, 4) for k, v in sel.scores.items()}}


def add_feature_tools(mcp, backend, features: ServeFeatures) -> None:
    """Add ``memory_extract`` (with an LLM and the extractor on) and ``select_coding_agent``
    (with the selector on) to the ``MCPServer`` ``mcp``."""
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    if features.config.extractor and features.llm is not None:
        @mcp.tool(description="After a conversation: extract the knowledge worth keeping "
                              "from it into memory (at most once an hour; skipped when the "
                              "conversation already saved to memory).")
        def memory_extract(
            messages: Annotated[list[dict[str, Any]], Field(
                min_length=1, description="the conversation: {role, content} messages")],
            project: Annotated[str | None, Field(description="tag what is extracted with "
                                                             "this project")] = None,
            ctx: Context = None,
        ) -> dict[str, Any]:
            try:
                with backend.store_for(ctx) as store:
                    return features.extract(store, messages, project)
            except MaclawError as exc:
                raise ToolError(str(exc)) from exc

    if features.selector is not None:
        @mcp.tool(description="Recommend the coding agent (claude, codex, gemini, cursor, "
                              "opencode, iflow, kilo) for a coding task; installed ones are "
                              "preferred.",
                  annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
        def select_coding_agent(
            task: Annotated[str, Field(min_length=1, description="the coding task")],
        ) -> dict[str, Any]:
            return features.select(task)
