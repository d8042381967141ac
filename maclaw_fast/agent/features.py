"""The optional features around an :class:`~maclaw_fast.agent.Agent` turn, each switched by
:class:`~maclaw_fast.config.FeaturesConfig`: LLM rerank of the routed tools, the route log, the
coding-agent selector, the LLM recall filter, conflict detection on memory saves, the knowledge
extractor and the scheduled maintenance (with reflection).

:class:`AgentFeatures` installs the rerank and the route log on the router, and the agent calls
its hooks during a turn; what ran is noted in the turn's :class:`FeatureNotes`, which
:func:`notes_line` turns into the one line ``chat`` prints after each turn.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import msgspec

from maclaw_fast.config import FeaturesConfig, MaintenanceConfig
from maclaw_fast.errors import MaclawError, StoreClosedError, ValidationError

log = logging.getLogger(__name__)
SESSION_TOOL = "create_session"  # the tool that starts a coding-agent session


class FeatureNotes(msgspec.Struct, kw_only=True):
    """What the optional features did during one turn (or at a conversation's end).

    ``filter_dropped`` is -1 when the recall filter did not run; ``superseded`` holds the ids
    conflict detection retired; ``maintenance`` one summary per run finished since the last
    turn.
    """

    reranked: list[str] = []
    filter_dropped: int = -1
    filter_kept: int = 0
    filter_error: bool = False
    selector: str = ""
    conflicts_checked: int = 0
    superseded: list[str] = []
    maintenance: list[str] = []


def notes_line(notes: FeatureNotes) -> str:
    """One compact line of what ran ("" when nothing did).

    Examples
    --------
    >>> notes_line(FeatureNotes(reranked=["db_query"], filter_dropped=3, filter_kept=5))
    'rerank: db_query | filter dropped 3 (kept 5)'
    """
    parts = []
    if notes.reranked:
        parts.append("rerank: " + ", ".join(notes.reranked))
    if notes.filter_error:
        parts.append("filter failed (kept the recall order)")
    elif notes.filter_dropped >= 0:
        parts.append(f"filter dropped {notes.filter_dropped} (kept {notes.filter_kept})")
    if notes.selector:
        parts.append(f"selector: {notes.selector}")
    if notes.superseded:
        parts.append(f"conflict found: superseded {len(notes.superseded)}")
    elif notes.conflicts_checked:
        parts.append(f"no conflict ({notes.conflicts_checked} checked)")
    parts += [f"maintenance ran ({m})" for m in notes.maintenance]
    return " | ".join(parts)


class AgentFeatures:
    """Builds and runs the switched-on features for one store, router and LLM.

    Parameters
    ----------
    store : MemoryStore
    llm : LLMClient or None
        The LLM features (rerank, recall filter, conflicts, extractor, reflect and the LLM
        steps of maintenance) need it; without one they stay off.
    router : ToolRouter, optional
        Gets the LLM reranker and the route log.
    config : FeaturesConfig
    maintenance : MaintenanceConfig
    route_log : path, optional
        Defaults to ``<store>/tool_route.log`` (none for an in-memory store).
    installed : iterable of str, optional
        Coding agents installed here (default: those found on ``PATH``).

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> f = AgentFeatures(MemoryStore.in_memory(embedder=None), None)
    >>> f.extractor is None and f.conflicts is None   # no LLM
    True
    """

    def __init__(self, store, llm, router=None, *, config: FeaturesConfig = FeaturesConfig(),
                 maintenance: MaintenanceConfig = MaintenanceConfig(), route_log=None,
                 installed=None) -> None:
        if not isinstance(config, FeaturesConfig):
            raise ValidationError("config must be a FeaturesConfig")
        if not isinstance(maintenance, MaintenanceConfig):
            raise ValidationError("maintenance must be a MaintenanceConfig")
        self.store, self.llm, self.router, self.config = store, llm, router, config
        self.maintenance_config = maintenance
        if router is not None:
            self._install_on_router(route_log)
        self.selector = self.conflicts = self.extractor = self.schedule = None
        if config.selector:
            from maclaw_fast.tools.selector import Selector

            self.selector = Selector()
            names = [p.name for p in self.selector.profiles]
            self.installed = (list(installed) if installed is not None
                              else [n for n in names if shutil.which(n)])
        if llm is not None and config.conflicts:
            from maclaw_fast.maintenance.conflicts import ConflictDetector

            self.conflicts = ConflictDetector(store, llm, maintenance)
        if llm is not None and config.extractor:
            from maclaw_fast.maintenance.extractor import KnowledgeExtractor

            self.extractor = KnowledgeExtractor(store, llm, maintenance)
        if config.maintenance:
            from maclaw_fast.maintenance.pipeline import Maintenance
            from maclaw_fast.maintenance.schedule import MaintenanceSchedule

            self.schedule = MaintenanceSchedule(
                Maintenance(store, llm, maintenance, reflect=config.reflect))

    def _install_on_router(self, route_log) -> None:
        router, cfg = self.router, self.config
        if cfg.rerank and self.llm is not None and router.reranker is None:
            from maclaw_fast.tools.rerank import LLMReranker

            router.reranker = LLMReranker(self.llm)
        if cfg.route_log and router.route_log is None:
            from maclaw_fast.tools.routelog import ROUTE_LOG_NAME, RouteLog

            if route_log is None and getattr(self.store, "path", None) is not None:
                route_log = Path(self.store.path) / ROUTE_LOG_NAME
            if route_log is not None:
                router.route_log = (route_log if isinstance(route_log, RouteLog) else
                                    RouteLog(route_log, router.config.route_log_max_bytes))

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        """Start the maintenance schedule (when on)."""
        if self.schedule is not None:
            self.schedule.start()

    def close(self) -> None:
        """Stop the maintenance schedule (a run in progress finishes first)."""
        if self.schedule is not None:
            self.schedule.stop()

    # ------------------------------------------------------------------ turn hooks
    def after_route(self, route, notes: FeatureNotes) -> None:
        notes.reranked = list(getattr(route, "reranked", ()) or ())

    @property
    def filters_recall(self) -> bool:
        """Whether :meth:`filter_recall` may drop hits (the filter is on and an LLM is set)."""
        return bool(self.config.recall_filter and self.llm is not None)

    def filter_recall(self, message: str, hits: list, notes: FeatureNotes) -> list:
        """The ranked memories worth the prompt: the LLM picks at most ``recall_filter_max``
        when more came back; on an LLM failure every hit stays."""
        cfg = self.config
        if not self.filters_recall or len(hits) <= cfg.recall_filter_max:
            return hits
        from maclaw_fast.maintenance.filter import llm_pick

        picked = llm_pick(hits, message, self.llm, cfg.recall_filter_max,
                          self.maintenance_config)
        if picked is None:
            notes.filter_error = True
            return hits
        notes.filter_dropped, notes.filter_kept = len(hits) - len(picked), len(picked)
        return picked

    def prompt_extra(self, message: str, routed: list[str], notes: FeatureNotes) -> str:
        """The selector's recommendation for a coding task that can start a session."""
        if self.selector is None or SESSION_TOOL not in routed:
            return ""
        sel = self.selector.recommend(message, self.installed)
        inst = set(self.installed)
        matched = max((sel.scores[p.name] - p.base_score - (2.0 if p.name in inst else 0.0)
                       for p in self.selector.profiles), default=0.0)
        if matched <= 0:  # no language, framework or task type of any profile: not coding
            return ""
        notes.selector = sel.name
        have = f" (installed here: {', '.join(self.installed)})" if self.installed else ""
        return (f"\n\n## Coding agent\nFor a coding session ({SESSION_TOOL}), the coding agent "
                f"best suited to this task is `{sel.name}`{have}.")

    def after_tool(self, name: str, arguments: dict, ok: bool, text: str,
                   notes: FeatureNotes) -> str:
        """After a memory save: check the new memory for conflicts; the tool result then
        names what it superseded, so the model knows."""
        if (self.conflicts is None or name != "memory" or not ok
                or arguments.get("action") != "save"):
            return text
        try:
            result = json.loads(text)
            entry_id = result["saved"]["id"]
        except (ValueError, KeyError, TypeError):
            return text
        if not result.get("created", True):
            return text  # identical content refreshed: nothing new to contradict anything
        try:
            report = self.conflicts.check(entry_id)
        except StoreClosedError:
            raise
        except MaclawError as exc:
            log.warning("conflict check of %s failed: %s", entry_id, exc)
            return text
        notes.conflicts_checked += report.checked
        if not report.superseded_ids:
            return text
        notes.superseded += report.superseded_ids
        result["superseded"] = [{"id": i, "content": self.store.get(i).content,
                                 "reason": report.reasons.get(i, "")}
                                for i in report.superseded_ids]
        return json.dumps(result, ensure_ascii=False)

    def end_turn(self, notes: FeatureNotes) -> None:
        """Note the maintenance runs finished since the last turn."""
        if self.schedule is not None:
            from maclaw_fast.maintenance.records import record_of

            notes.maintenance += [record_of(r).summary for r in self.schedule.take_finished()]
