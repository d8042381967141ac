"""``maclaw-fast chat``: a terminal chat on :class:`~maclaw_fast.agent.Agent`.

Streams the reply, and shows before it which memories were recalled and which tools were
routed, and after each tool call what it returned. ``/new`` ends the conversation (the
knowledge extractor runs) and starts another; ``/exit`` or end of input ends it and quits.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

CHAT_EXAMPLES = """\
examples:
  maclaw-fast chat --llm-url http://127.0.0.1:8080/v1 --model qwen2.5
  MACLAW_LLM_BASE_URL=https://api.openai.com/v1 MACLAW_LLM_MODEL=gpt-4o-mini \\
      MACLAW_LLM_API_KEY=sk-... maclaw-fast chat
  maclaw-fast chat --protocol anthropic --llm-url https://api.anthropic.com \\
      --model claude-sonnet-4-5
  maclaw-fast chat --workspace ~/agent --enable-bash --project atlas

in the chat: /new ends the conversation (the knowledge extractor saves what it learnt, and
shows it) and starts another; /exit (or Ctrl-D) quits.
"""


def register(subparsers) -> None:
    """Add ``chat`` to the ``maclaw-fast`` parser."""
    p = subparsers.add_parser(
        "chat", help="chat in the terminal with an agent that has long-term memory and tool "
                     "routing",
        description="A terminal chat: each turn shows the memories recalled and the tools "
                    "routed, streams the reply, and shows every tool call's result.",
        epilog=CHAT_EXAMPLES)
    from maclaw_fast.commands.options import add_agent_args

    add_agent_args(
        p, workspace="workspace: memory search over its notes, and the file tools' sandbox",
        mcp_config="their tools are routed and called like the built-in ones",
        off="Each line after a turn says which of them ran", llm_needed=True)
    p.add_argument("--enable-bash", action="store_true",
                   help="let the model run bash commands in the workspace")
    p.add_argument("--no-stream", action="store_true", help="wait for whole replies")
    p.set_defaults(func=cmd_chat, own_interrupt=True)


def _llm_config(args):
    from maclaw_fast.errors import ValidationError
    from maclaw_fast.llm import LLMConfig

    env = LLMConfig.from_env()
    url = args.llm_url or (env.base_url if env else None)
    model = args.model or (env.model if env else None)
    if not url or not model:
        raise ValidationError("chat needs --llm-url and --model (or MACLAW_LLM_BASE_URL and "
                              "MACLAW_LLM_MODEL)")
    timeout = {"timeout_s": args.llm_timeout} if args.llm_timeout else {}
    return LLMConfig(base_url=url, model=model,
                     protocol=args.protocol or (env.protocol if env else "openai"),
                     api_key=args.api_key or os.environ.get("MACLAW_LLM_API_KEY", ""),
                     merge_system=env.merge_system if env else False, **timeout)


def _show_context(turn, out) -> None:
    from maclaw_fast.commands.display import one_line

    scored = [h.entry for h in turn.recalled]
    if scored:
        out(f"  recalled {len(scored)} memor{'y' if len(scored) == 1 else 'ies'}:")
        for e in scored[:8]:
            out(f"    - [{e.category}] {one_line(e.content, 90)}")
    else:
        out("  recalled no memories")
    for w in turn.workspace_hits[:3]:
        out(f"    - {one_line(str(w.get('citation')))}: {one_line(str(w.get('snippet', '')), 80)}")
    out(f"  routed {len(turn.routed)} tools: {', '.join(turn.routed)}")


def show_extraction(result, store, out) -> None:
    """What the knowledge extractor did at the end of a conversation, and each memory it
    saved (``/new`` and the end of the chat)."""
    if result is None:
        return
    skipped = getattr(result, "skipped", "")
    error = getattr(result, "error", "")
    if skipped:
        out(f"  knowledge extraction skipped: {skipped}")
        return
    if error:
        out(f"  knowledge extraction failed: {error}")
        return
    from maclaw_fast.commands.display import one_line

    ids = list(getattr(result, "saved_ids", ()) or ())
    if not hasattr(result, "saved"):
        out(f"  knowledge extraction: {result}")
        return
    extra = [f"{n} {what}" for n, what in ((getattr(result, "duplicates", 0), "duplicate(s)"),
                                            (getattr(result, "rejected", 0), "rejected"))
             if n]
    out(f"  knowledge extraction saved {result.saved} memor{'y' if result.saved == 1 else 'ies'}"
        + (f" ({', '.join(extra)})" if extra else "") + (":" if ids else ""))
    for entry_id in ids:
        try:
            e = store.get(entry_id)
        except Exception:  # noqa: BLE001 - merged or archived since: say which id
            out(f"    + {entry_id}")
            continue
        out(f"    + [{e.category}] {one_line(e.content, 90)}")


def _end_conversation(agent, args):
    """``agent.end_conversation()`` with a status line while the extractor asks the LLM."""
    from maclaw_fast import progress

    if not agent.history:
        return agent.end_conversation()
    with progress.activity(args, "extracting knowledge from the conversation"):
        return agent.end_conversation()


def cmd_chat(args: argparse.Namespace) -> int:
    from maclaw_fast import MemoryStore, progress
    from maclaw_fast.agent import Agent, AgentConfig
    from maclaw_fast.commands.tools import DEFAULT_CATALOG
    from maclaw_fast.llm import LLMClient
    from maclaw_fast.server.mcp_server import default_store_path
    from maclaw_fast.tools import ToolRegistry, ToolRouter, UsageTracker, load_catalog

    llm_cfg = _llm_config(args)
    mcp_servers = None
    if args.mcp_config:  # checked before anything opens: a bad entry changes nothing
        from maclaw_fast.tools.mcp_config import load_mcp_config

        mcp_servers = load_mcp_config(args.mcp_config)
    from maclaw_fast.embedding.auto import catalog_embedder
    from maclaw_fast.embedding.options import embedder_from_args

    emb = embedder_from_args(args)
    store_dir = args.store or str(default_store_path())
    os.makedirs(store_dir, exist_ok=True)
    dim = "\033[2m" if sys.stdout.isatty() else ""
    reset = "\033[0m" if dim else ""

    def out(line: str) -> None:
        print(f"{dim}{line}{reset}", flush=True)

    from maclaw_fast.agent.features import AgentFeatures, notes_line
    from maclaw_fast.config import FeaturesConfig

    feature_cfg = FeaturesConfig().without(args.off or ())
    with contextlib.ExitStack() as stack:
        early = None
        if mcp_servers:  # the servers start while the store opens and the model loads
            from maclaw_fast.tools.mcp_attach import connect_mcp_servers

            with progress.activity(args, "starting the MCP servers"):
                early = connect_mcp_servers(mcp_servers)
            stack.callback(early.close)
        store = stack.enter_context(MemoryStore.open(store_dir, embedder=emb))
        llm = stack.enter_context(LLMClient(llm_cfg))
        tools = load_catalog(args.catalog or DEFAULT_CATALOG)
        registry = ToolRegistry(tools)
        usage = UsageTracker(os.path.join(store_dir, "tool_usage.json"))
        router = ToolRouter(registry, embedder=catalog_embedder(emb, tools), usage=usage)
        workspace = None
        if args.workspace:
            from maclaw_fast.workspace import WorkspaceIndex
            from maclaw_fast.workspace.location import default_index_dir

            workspace = WorkspaceIndex.open(args.workspace, embedder=emb, sync=False,
                                            index_dir=default_index_dir(args.workspace))
            report, close = progress.counter(args, "workspace")
            try:
                workspace.sync(progress=report)
            finally:
                close()
        cfg = AgentConfig(project=args.project, enable_bash=args.enable_bash,
                          stream=not args.no_stream)
        features = AgentFeatures(store, llm, router, config=feature_cfg,
                                 route_log=os.path.join(store_dir, "tool_route.log"))
        features.start()
        agent = Agent(store, registry, router, llm, workspace=workspace, usage=usage,
                      config=cfg, features=features)
        # the catalog's vectors (and the model) load now, not during the first turn
        prepare = getattr(router, "prepare", None)
        if callable(prepare):
            with progress.activity(args, "loading the embedding model and the tool index"):
                prepare()
        mcp = None
        # registered after the agent: its built-ins keep their names, clashes get renamed
        if early is not None:
            from maclaw_fast.tools.mcp_attach import attach_mcp_servers, report_lines

            with progress.activity(args, "connecting to the MCP servers"):
                mcp = attach_mcp_servers(registry, None, manager=early)
                if callable(prepare):
                    prepare()  # their tools' vectors
            for line in report_lines(mcp):
                out(line)
        runnable = sum(t.status != "unavailable" for t in registry.list())
        print(f"maclaw-fast chat: {llm_cfg.model} via {llm_cfg.protocol}, {len(store)} memories,"
              f" {runnable} runnable tools ({len(registry) - runnable} withheld: no handler "
              "here or unavailable). /new starts over, /exit quits.", flush=True)

        state = {"mid_line": False, "streamed": False,
                 "waiting": progress.Activity(None, "")}  # the turn's status line

        def newline() -> None:
            if state["mid_line"]:
                print(flush=True)
                state["mid_line"] = False

        def on_event(kind: str, payload) -> None:
            state["waiting"].stop()
            newline()
            if kind == "context":
                _show_context(payload, out)
            else:
                what = payload.arguments.get("action", "")
                out(f"  -> {payload.name}{f' ({what})' if what else ''}: "
                    f"{'ok' if payload.ok else 'failed'} {' '.join(payload.result.split())[:100]}")

        def on_delta(piece: str) -> None:
            state["waiting"].stop()
            if not state["mid_line"]:
                print("assistant> ", end="")
                state["mid_line"] = True
            state["streamed"] = True
            print(piece, end="", flush=True)

        try:
            while True:
                try:
                    line = input("you> ")
                except EOFError:
                    break
                line = line.strip()
                if not line:
                    continue
                if line in ("/exit", "/quit"):
                    break
                if line == "/new":
                    result = _end_conversation(agent, args)
                    show_extraction(result, store, out)
                    out("  (new conversation)")
                    continue
                state["streamed"] = False
                # recall, routing and the model's first words; the model loads on first use
                state["waiting"] = progress.Activity(args, "thinking", transient=True).start()
                try:
                    turn = agent.run(line, on_delta=on_delta, on_event=on_event)
                except Exception as exc:  # a failed call must not end the session
                    state["waiting"].stop()
                    newline()
                    print(f"[error] {exc}", flush=True)
                    continue
                finally:
                    state["waiting"].stop()
                newline()
                if not state["streamed"] and turn.text:
                    print(f"assistant> {turn.text}")
                if turn.stop_reason != "done":
                    out(f"  [{turn.stop_reason}]")
                out(f"  ({turn.iterations} model call(s), overhead {turn.overhead_ms:.1f} ms)")
                if notes_line(turn.features):
                    out(f"  [{notes_line(turn.features)}]")
        finally:
            result = _end_conversation(agent, args)
            show_extraction(result, store, out)
            if features.schedule is not None and features.schedule.busy:
                out("  (waiting for the maintenance run in progress to finish)")
            features.close()
            for obj in (mcp, agent.toolbox, workspace, router):
                if obj is not None:
                    obj.close()
    return 0
