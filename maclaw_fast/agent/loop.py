"""The agent loop of one user message (design §13, design doc §3): route, recall, prompt, call the
model with the routed tools, run its tool calls one at a time, repeat until it answers.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from maclaw_fast.agent import handlers as h
from maclaw_fast.agent.calls import ToolCallRecord, is_cancelled, run_calls
from maclaw_fast.agent.features import FeatureNotes
from maclaw_fast.agent.prompt import (DEFAULT_SYSTEM_PROMPT, LEADING, build_system_prompt,
                                      self_identity_summary, split_hits, summarize,
                                      user_fact_summary)
from maclaw_fast.agent.sandbox import Sandbox, run_bash
from maclaw_fast.agent.slots import LoopContext
from maclaw_fast.agent.toolbox import Toolbox, withhold_unrunnable
from maclaw_fast.errors import NotFoundError, ValidationError
from maclaw_fast.records import RecallHit

log = logging.getLogger(__name__)
STOP_REASONS = ("done", "iteration_limit", "cancelled", "stopped")
_chat_ids = itertools.count(1)


class AgentConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Tunables of :class:`Agent`.

    ``max_iterations`` caps the model calls of one user message; ``sandbox_dir`` is where the
    file tools (and ``bash``) work, defaulting to the workspace root; without either the file
    tools are not installed. ``bash`` is installed only with ``enable_bash``.
    """

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_iterations: int = 30
    project: str | None = None
    session: str | None = None
    recall: bool = True
    workspace_results: int = 5
    identity_chars: int = 600
    user_fact_chars: int = 400
    memory_chars: int = 400
    stream: bool = True
    default_category: str = "user_fact"
    sandbox_dir: str | None = None
    enable_bash: bool = False
    bash_timeout_s: float = 30.0
    max_tool_output_chars: int = 16_000
    max_history_messages: int = 200
    install_builtins: bool = True

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValidationError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if self.bash_timeout_s <= 0 or self.max_tool_output_chars < 1:
            raise ValidationError("bash_timeout_s and max_tool_output_chars must be > 0")
        if self.max_history_messages < 2:
            raise ValidationError("max_history_messages must be >= 2")


class AgentTurn(msgspec.Struct, kw_only=True):
    """What one :meth:`Agent.run` did.

    ``stop_reason``: ``done`` (the model answered without tools), ``iteration_limit``,
    ``cancelled`` or ``stopped`` (a managed background loop was stopped or timed out).
    ``timings`` (ms): route, recall, workspace, prompt, llm, tools, total;
    ``overhead_ms = total − llm − tools`` is the loop's own cost.
    """

    message: str
    text: str = ""
    stop_reason: str = "done"
    iterations: int = 0
    routed: list[str] = msgspec.field(default_factory=list)
    recalled: list[RecallHit] = msgspec.field(default_factory=list)
    workspace_hits: list[dict] = msgspec.field(default_factory=list)
    tool_calls: list[ToolCallRecord] = msgspec.field(default_factory=list)
    activated: list[str] = msgspec.field(default_factory=list)
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    features: FeatureNotes = msgspec.field(default_factory=FeatureNotes)

    @property
    def overhead_ms(self) -> float:
        t = self.timings
        return t.get("total", 0.0) - t.get("llm", 0.0) - t.get("tools", 0.0)


def _tail(history: list[dict], n: int) -> list[dict]:
    """The last ``n`` messages, starting at a user message: never with tool results whose call
    was cut off, nor with an assistant turn (the Anthropic API wants the user first)."""
    out = history[-n:]
    start = 0
    while start < len(out) and out[start].get("role") != "user":
        start += 1
    return out[start:] if start < len(out) else out[-1:]


class Agent:
    """An agent with long-term memory and tool routing around one LLM client.

    Parameters
    ----------
    store : MemoryStore
        Long-term memory: recalled into every prompt, written by the ``memory`` tool.
    registry : ToolRegistry
        The tools; the built-ins are registered into it (a tool of the same name that already
        has a handler is kept).
    router : ToolRouter
        Routes each user message once (over ``registry``).
    llm : LLMClient
        Anything with ``complete(messages, tools=, stream=, on_delta=) -> LLMReply``.
    workspace : WorkspaceIndex, optional
        Workspace memory search (snippets go into the prompt; ``memory`` search covers it) and
        the default sandbox of the file tools.
    usage : UsageTracker, optional
        Where each call's success or failure is recorded; defaults to ``router.usage``.
    extractor : optional
        ``extract(messages)`` run by :meth:`end_conversation`; ``"auto"`` builds
        ``maclaw_fast.maintenance.extractor.KnowledgeExtractor(store, llm)`` when that module
        exists, None disables it.
    config : AgentConfig
    context : LoopContext, optional
        Holds the conversation; a chat context is created when omitted.
    manager : BackgroundLoopManager, optional
        With a managed background ``context``: ``manager.step`` runs before every model call,
        so slot limits, the approaching-limit pause and ``stop`` apply to this loop.
    features : AgentFeatures, optional
        The switched-on optional features (rerank, recall filter, selector, conflicts,
        maintenance); its extractor is used unless ``extractor`` is given.

    Examples
    --------
    >>> agent = Agent(store, registry, router, llm)          # doctest: +SKIP
    >>> turn = agent.run("Remember that I prefer tabs", on_delta=print)   # doctest: +SKIP
    >>> turn.routed[:3], [c.name for c in turn.tool_calls]                # doctest: +SKIP
    (['bash', 'read_file', 'write_file'], ['memory'])
    >>> agent.end_conversation()                             # doctest: +SKIP
    """

    def __init__(self, store, registry, router, llm, *, workspace=None, usage=None,
                 extractor: Any = "auto", config: AgentConfig = AgentConfig(),
                 context: LoopContext | None = None, manager=None, features=None) -> None:
        if not isinstance(config, AgentConfig):
            raise ValidationError("config must be an AgentConfig")
        if getattr(router, "registry", registry) is not registry:
            raise ValidationError("router must route over the same registry")
        if not callable(getattr(llm, "complete", None)):
            raise ValidationError("llm must have a complete(messages, tools=...) method")
        if manager is not None and context is None:
            raise ValidationError("a manager needs the background context it manages")
        self.store, self.registry, self.router, self.llm = store, registry, router, llm
        self.workspace, self.config, self.manager = workspace, config, manager
        self.usage = usage if usage is not None else getattr(router, "usage", None)
        self.features = features
        self._extractor = (features.extractor if features is not None and extractor == "auto"
                           else extractor)
        self.context = context or LoopContext(f"chat-{next(_chat_ids)}", "chat")
        self._lock = threading.Lock()  # one turn at a time: the conversation is shared state
        root = config.sandbox_dir or (str(workspace.root) if workspace is not None else None)
        self.sandbox = Sandbox(root) if root is not None else None
        self.toolbox = Toolbox(self)  # web_fetch, set_nickname, call_mcp_tool, shell sessions
        if config.install_builtins:
            self._install_builtins()

    # ------------------------------------------------------------------ set-up
    @property
    def session(self) -> str:
        """Session id for routing and ``discover_tool`` activations."""
        return self.config.session or self.context.id

    def _builtins(self) -> dict[str, tuple[str, dict, list[str], Callable]]:
        cfg, out = self.config, {}
        out["memory"] = ("Long-term memory: save facts, preferences and instructions; recall or "
                         "search them; pin or forget by id.", h.MEMORY_SCHEMA, ["memory"],
                         h.memory_handler(self.store, workspace=self.workspace,
                                          default_category=cfg.default_category))
        out["discover_tool"] = ("Find and activate more tools for a task when none of the "
                                "offered tools fits.", h.DISCOVER_SCHEMA, ["tool", "search"],
                                h.discover_handler(self.router))
        if self.sandbox is not None:
            sb = self.sandbox
            for name, fn, tags in (("read_file", sb.read_file, ["file", "read"]),
                                   ("write_file", sb.write_file, ["file", "write"]),
                                   ("list_directory", sb.list_directory, ["file", "directory"])):
                desc, schema = h.FILE_SCHEMAS[name]
                out[name] = (desc, schema, tags,
                             h.BuiltinHandler(lambda a, _c, fn=fn: fn(a), name))
            if cfg.enable_bash:
                root = sb.root

                def bash(args: dict, _ctx) -> dict:
                    return run_bash(args.get("command"), cwd=root, timeout_s=cfg.bash_timeout_s,
                                    max_output=cfg.max_tool_output_chars)
                out["bash"] = (f"Run a bash command in the workspace (timeout "
                               f"{cfg.bash_timeout_s:g} s).", h.BASH_SCHEMA, ["shell", "command"],
                               h.BuiltinHandler(bash, "bash"))
        out.update(self.toolbox.builtins())
        return out

    def _install_builtins(self) -> None:
        from maclaw_fast.tools.registry import RegisteredTool

        provided = self._builtins()
        tools = []
        for name, (desc, schema, tags, handler) in provided.items():
            old = self.registry.get(name) if name in self.registry else None
            if old is not None and old.handler is not None and not isinstance(
                    old.handler, h.BuiltinHandler):
                continue  # the caller's own implementation wins
            merged = list(dict.fromkeys(tags + (list(old.tags) if old is not None else [])))
            tools.append(RegisteredTool(name=name, description=desc, category="builtin",
                                        tags=merged, input_schema=schema, handler=handler,
                                        priority=old.priority if old is not None else 0,
                                        status=self.toolbox.statuses.get(name, "available")))
        self.registry.register_many(tools)
        # A tool without a handler (a built-in we cannot run here, a catalog entry nothing
        # implements) would only waste a routing slot and fail when called.
        withhold_unrunnable(self.registry)

    # ------------------------------------------------------------------ one turn
    def run(self, message: str, *, session: str | None = None,
            on_delta: Callable[[str], None] | None = None, cancel=None,
            on_event: Callable[[str, Any], None] | None = None) -> AgentTurn:
        """Answer one user message.

        Parameters
        ----------
        message : str
            The user's message.
        session : str, optional
            Routing session (defaults to :attr:`session`).
        on_delta : callable, optional
            Receives reply text as it streams.
        cancel : threading.Event or callable, optional
            Checked before each model call and between tool calls; once set, the remaining
            calls of the reply are answered "cancelled" (the history stays well-formed) and
            the turn ends with ``stop_reason="cancelled"``.
        on_event : callable, optional
            ``on_event("context", turn)`` once routing and recall are done (before the first
            model call), ``on_event("tool", ToolCallRecord)`` after each tool call — for UIs.

        Returns
        -------
        AgentTurn

        Raises
        ------
        ValidationError
            Empty message.
        LLMError
            The model call failed (the user message stays in the history).
        """
        if not isinstance(message, str) or not message.strip():
            raise ValidationError("message must be a non-empty string")
        with self._lock:
            return self._run(message, session or self.session, on_delta, cancel, on_event)

    def _run(self, message: str, session: str, on_delta, cancel, on_event) -> AgentTurn:
        cfg, clock = self.config, time.perf_counter
        t0 = clock()
        turn = AgentTurn(message=message)
        tm = turn.timings
        qv = self._query_vector(message)
        route = self.router.route(message, session=session, query_vector=qv)
        turn.routed = route.names
        fx = self.features
        if fx is not None:
            fx.after_route(route, turn.features)
        t1 = clock()
        tm["route"] = (t1 - t0) * 1e3
        identity = facts = ""
        if cfg.recall:
            # with the LLM filter on, only what reaches the prompt is strengthened
            deferred = (fx is not None and fx.filters_recall
                        and callable(getattr(self.store, "reinforce", None)))
            hits = self.store.recall(message, project=cfg.project, query_vector=qv,
                                     reinforce=not deferred)
            si, uf, turn.recalled = split_hits(hits)
            if fx is not None:
                turn.recalled = fx.filter_recall(message, turn.recalled, turn.features)
            if deferred:
                self.store.reinforce([x for x in hits if x.reason in LEADING] + turn.recalled)
            identity, facts = summarize(si, cfg.identity_chars), summarize(uf, cfg.user_fact_chars)
        else:
            identity = self_identity_summary(self.store, cfg.identity_chars)
            facts = user_fact_summary(self.store, cfg.user_fact_chars)
        t2 = clock()
        tm["recall"] = (t2 - t1) * 1e3
        if self.workspace is not None and cfg.workspace_results > 0:
            from maclaw_fast.workspace.agent_api import memory_search

            ws = memory_search(message, index=self.workspace, max_results=cfg.workspace_results)
            turn.workspace_hits = list(ws.get("results") or [])
        t3 = clock()
        tm["workspace"] = (t3 - t2) * 1e3
        system = build_system_prompt(cfg.system_prompt, identity=identity, user_facts=facts,
                                     memories=turn.recalled, workspace=turn.workspace_hits,
                                     memory_chars=cfg.memory_chars)
        if fx is not None:
            system += fx.prompt_extra(message, turn.routed, turn.features)
        defs = self._definitions(turn.routed)
        self.context.add_message({"role": "user", "content": message})
        tm["prompt"] = (clock() - t3) * 1e3
        tm["llm"] = tm["tools"] = 0.0
        if on_event is not None:
            on_event("context", turn)
        ctx = h.ToolContext(session=session, message=message, project=cfg.project)
        turn.stop_reason = "iteration_limit"
        for _ in range(cfg.max_iterations):
            if is_cancelled(cancel):
                turn.stop_reason = "cancelled"
                break
            if self.manager is not None and self.manager.step(self.context.id) != "continue":
                turn.stop_reason = "stopped"
                break
            messages = [{"role": "system", "content": system}]
            messages += _tail(self.context.history, cfg.max_history_messages)
            ta = clock()
            reply = self.llm.complete(messages, tools=defs or None,
                                      stream=bool(cfg.stream and on_delta is not None),
                                      on_delta=on_delta)
            tm["llm"] += (clock() - ta) * 1e3
            turn.iterations += 1
            self.context.add_message(reply.to_message())
            turn.text = reply.text
            if not reply.tool_calls:
                turn.stop_reason = "done"
                break
            tb = clock()
            cancelled = run_calls(self, reply.tool_calls, ctx, turn, cancel, on_event)
            tm["tools"] += (clock() - tb) * 1e3
            if ctx.activated:  # discovered tools join this message's list (no re-routing)
                new = [n for n in ctx.activated if n not in turn.routed]
                turn.routed += new
                defs += self._definitions(new)
                turn.activated += [n for n in new if n not in turn.activated]
                ctx.activated.clear()
            if cancelled:
                turn.stop_reason = "cancelled"
                break
        if fx is not None:
            fx.end_turn(turn.features)
        tm["total"] = (clock() - t0) * 1e3
        return turn

    def _query_vector(self, message: str):
        """The message's embedding, computed once for both routing and recall when the router
        and the store use the same model (the model call is most of a turn's own cost)."""
        r_emb = getattr(self.router, "embedder", None)
        s_emb = getattr(self.store, "embedder", None)
        cache = getattr(self.router, "query_cache", None)
        if r_emb is None or s_emb is None or cache is None or (
                r_emb.fingerprint != s_emb.fingerprint):
            return None
        return cache.get(message)

    def _definitions(self, names: list[str]) -> list[dict]:
        out = []
        for n in names:
            try:
                tool = self.registry.get(n)
            except NotFoundError:
                continue  # unregistered between routing and now
            if tool.handler is not None and tool.status != "unavailable":
                out.append(tool.to_definition())  # never offer what cannot run
        return out

    # ------------------------------------------------------------------ conversation end
    @property
    def extractor(self):
        """The knowledge extractor in use (None when disabled or not available)."""
        if self._extractor == "auto":
            try:
                from maclaw_fast.maintenance.extractor import KnowledgeExtractor
            except ImportError:
                self._extractor = None
            else:
                self._extractor = KnowledgeExtractor(self.store, self.llm)
        return self._extractor

    def end_conversation(self) -> Any:
        """Run the knowledge extractor over the conversation, then start a new one.

        The routing session's activated tools are reset too. Returns what the extractor
        returned (None without one). The history is cleared even when extraction fails; the
        error is logged, not raised, since the conversation itself went fine.
        """
        with self._lock:
            history = [m for m in self.context.history if m.get("role") in
                       ("user", "assistant", "tool")]
            result = None
            extractor = self.extractor
            if extractor is not None and history:
                try:
                    if self.config.project:
                        result = extractor.extract(history, project=self.config.project)
                    else:
                        result = extractor.extract(history)
                except Exception:  # noqa: BLE001
                    log.warning("knowledge extraction failed", exc_info=True)
            if self.manager is None:  # a managed background context belongs to its manager
                self.context = LoopContext(self.context.id, "chat",
                                           self.context.slot_kind)
            reset = getattr(self.router, "reset_session", None)
            if callable(reset):
                reset(self.session)
            return result

    @property
    def history(self) -> list[dict]:
        """The current conversation (a copy)."""
        return self.context.history
