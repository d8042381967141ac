"""MCP server over the memory store, workspace search and the tool router (MCP Python SDK).

Tools: ``memory_save``, ``memory_recall``, ``memory_search``, ``memory_get``, ``memory_forget``,
``memory_pin``, ``route_tools``, ``discover_tool``. Arguments are JSON-schema'd from the typed
signatures below; the SDK validates them, and a call with bad arguments (or one the store
refuses) comes back as an ``isError`` tool result with the reason — the MCP way for the model
to correct itself — while the server keeps serving.

The tool functions are synchronous: the SDK runs them in worker threads, so a recall never
blocks the event loop, and the store's, router's and index's locks make them safe to run
concurrently.
"""

# No ``from __future__ import annotations``: the SDK reads the tool signatures at run time, and
# they name ``Field`` and ``CategoryName`` (this module is imported only to serve).
import contextlib
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from maclaw_fast.agent import handlers as h
from maclaw_fast.config import Config
from maclaw_fast.errors import MaclawError, NotFoundError, ValidationError

SERVER_NAME = "maclaw-fast"
CategoryName = Literal["self_identity", "instruction", "preference", "project_knowledge",
                       "session_checkpoint", "conversation_summary", "user_fact",
                       "feedback", "project", "reference", "user"]


def default_home() -> Path:
    """``$MACLAW_HOME`` or ``~/.maclaw_fast`` (read at call time, so tests can set it)."""
    from maclaw_fast.workspace.location import maclaw_home

    return maclaw_home()


def default_store_path() -> Path:
    """Where the server keeps memory without ``--store``: ``<home>/memory``."""
    return default_home() / "memory"


class ServerConfig(Config, frozen=True, kw_only=True):
    """What ``maclaw-fast serve`` opens.

    ``store`` None → :func:`default_store_path`; ``catalog`` None → no tools to route
    (``route_tools`` says so); ``embedder``: ``auto`` (MiniLM for English, multilingual-e5-small
    for Chinese or mixed text), ``minilm``, ``e5``, ``hash`` or ``none``.
    ``stores`` (instead of ``store``): a root directory of per-user stores served through a
    :class:`~maclaw_fast.memory.pool.StorePool` of ``pool_size`` open stores, each request's
    store chosen by its bearer token (``server.users``).
    """

    store: str | None = None
    stores: str | None = None
    pool_size: int = 1000
    workspace: str | None = None
    catalog: str | None = None
    embedder: str = "auto"
    project: str | None = None


class Backend:
    """The objects the MCP tools work on; opened from a :class:`ServerConfig`.

    Examples
    --------
    >>> import tempfile
    >>> with Backend.open(ServerConfig(store=tempfile.mkdtemp(), embedder="hash")) as b:
    ...     _ = b.store.save("likes tea", category="preference")
    ...     len(b.store)
    1
    """

    def __init__(self, store, *, router=None, workspace=None, project: str | None = None,
                 owns: bool = False, pool=None) -> None:
        self.store, self.router, self.workspace = store, router, workspace
        self.project, self._owns, self.pool = project, owns, pool
        self.features = None  # a ServeFeatures (server/features.py) when serve switches any on

    @contextlib.contextmanager
    def store_for(self, ctx):
        """The store a tool call works on: the one store, or (with a pool) the store of the
        call's authenticated user, held open for the block."""
        if self.pool is None:
            yield self.store
            return
        from maclaw_fast.server.users import request_store

        with self.pool.store(request_store(ctx)) as store:
            yield store

    @classmethod
    def open(cls, config: ServerConfig) -> "Backend":
        from maclaw_fast import MemoryStore

        emb = None if config.embedder == "none" else config.embedder
        pool = None
        if config.stores:
            from maclaw_fast.memory.pool import StorePool

            if config.store:
                raise ValidationError("give a store or a root of per-user stores, not both")
            store = pool = StorePool(config.stores, max_open=config.pool_size, embedder=emb)
        else:
            path = Path(config.store) if config.store else default_store_path()
            path.mkdir(parents=True, exist_ok=True)
            store = MemoryStore.open(path, embedder=emb)
        try:
            router = workspace = None
            if config.catalog:
                from maclaw_fast.tools import ToolRegistry, ToolRouter, load_catalog

                from maclaw_fast.embedding.auto import catalog_embedder

                tools = load_catalog(config.catalog)
                router = ToolRouter(ToolRegistry(tools), embedder=catalog_embedder(emb, tools))
            if config.workspace:
                from maclaw_fast.workspace import WorkspaceIndex

                if not os.path.isdir(config.workspace):
                    raise ValidationError(f"workspace {config.workspace} is not a directory")
                from maclaw_fast.workspace.location import default_index_dir

                # the index lives outside the user's folder, where the command line keeps it
                workspace = WorkspaceIndex.open(config.workspace, embedder=emb,
                                                index_dir=default_index_dir(config.workspace))
        except BaseException:
            store.close()
            raise
        if pool is not None:
            return cls(None, router=router, workspace=workspace, project=config.project,
                       owns=True, pool=pool)
        return cls(store, router=router, workspace=workspace, project=config.project, owns=True)

    def close(self) -> None:
        if not self._owns:
            return
        for obj in (self.workspace, self.router, self.store, self.pool):
            close = getattr(obj, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tool_error(exc: Exception):
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(str(exc))


def build_server(backend: Backend):
    """An ``MCPServer`` exposing the memory and routing tools of ``backend``.

    Examples
    --------
    >>> server = build_server(backend)                      # doctest: +SKIP
    >>> server.run("stdio")                                 # doctest: +SKIP
    """
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.types import ToolAnnotations

    mcp = MCPServer(SERVER_NAME, instructions=(
        "Long-term memory and tool routing. Save durable facts with memory_save, get what is "
        "relevant with memory_recall (ranked, with score breakdowns), search notes with "
        "memory_search, and ask route_tools which of your tools fit a request."),
        log_level="WARNING")
    ro = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    def guard(fn, *args, **kwargs) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except MaclawError as exc:  # bad input or unknown id: tell the caller, keep serving
            raise _tool_error(exc) from exc

    def on_store(ctx, fn, *args, **kwargs) -> dict[str, Any]:
        """``fn(store, ...)`` on the call's store (the user's, when serving many)."""
        try:
            with backend.store_for(ctx) as store:
                return fn(store, *args, **kwargs)
        except MaclawError as exc:
            raise _tool_error(exc) from exc

    @mcp.tool(description="Save a memory (a fact, preference, instruction, ...). Identical "
                          "content refreshes the existing memory instead of duplicating it.")
    def memory_save(
        content: Annotated[str, Field(min_length=1, description="self-contained text")],
        category: Annotated[CategoryName, Field(description="kind of memory")] = "user_fact",
        tags: Annotated[list[str], Field(description="tags; a project name scopes "
                                                     "project memories")] = [],  # noqa: B006
        pinned: Annotated[bool, Field(description="protect from eviction")] = False,
        thread: Annotated[str | None, Field(description="conversation this memory belongs to "
                                                        "(e.g. a session id): consecutive "
                                                        "saves of one thread are linked and "
                                                        "recalled together")] = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        def save(store) -> dict[str, Any]:
            out = h.save_memory(store, content, category, tags, pinned, thread=thread)
            fx = backend.features
            return fx.after_save(store, out) if fx is not None else out
        return on_store(ctx, save)

    @mcp.tool(description="Recall the memories most relevant to a query, best first, with "
                          "score breakdowns. Up to 3 self-identity entries and the user facts "
                          "relevant to the query come first unless a category is given.")
    def memory_recall(
        query: Annotated[str, Field(description="what the memories should be about")],
        project: Annotated[str | None, Field(description="only this project's project "
                                                         "memories (global ones always)")] = None,
        category: Annotated[CategoryName | None, Field(description="only this category")] = None,
        max_results: Annotated[int | None, Field(ge=1, le=100)] = None,
        reinforce: Annotated[bool, Field(description="strengthen what is returned")] = True,
        ctx: Context = None,
    ) -> dict[str, Any]:
        kw = dict(project=project or backend.project, category=category,
                  max_results=max_results, reinforce=reinforce)

        def recall(store) -> dict[str, Any]:
            fx = backend.features
            out = fx.recall(store, query, **kw) if fx is not None else None
            return out if out is not None else h.recall_memory(store, query, **kw)
        return on_store(ctx, recall)

    @mcp.tool(description="Keyword search over the workspace memory files (MEMORY.md, "
                          "memory/*.md; when the server has a workspace) and stored memories.",
              annotations=ro)
    def memory_search(
        query: Annotated[str, Field(min_length=1)],
        max_results: Annotated[int, Field(ge=1, le=100)] = 10,
        category: Annotated[CategoryName | None, Field(description="store filter")] = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        return on_store(ctx, h.search_memory, query, workspace=backend.workspace,
                        max_results=max_results, category=category)

    @mcp.tool(description="Get one stored memory by id, or lines of a workspace memory file "
                          "by path (e.g. a citation from memory_search).", annotations=ro)
    def memory_get(
        id: Annotated[str | None, Field(description="memory id")] = None,  # noqa: A002
        path: Annotated[str | None, Field(description="workspace memory file")] = None,
        from_line: Annotated[int, Field(ge=1)] = 1,
        lines: Annotated[int | None, Field(ge=1)] = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        if (id is None) == (path is None):
            raise _tool_error(ValidationError("give exactly one of id or path"))
        if id is not None:
            return on_store(ctx, lambda store: {"ok": True, "entry": h.entry_dict(store.get(id))})
        if backend.workspace is None:
            raise _tool_error(ValidationError("no workspace configured (serve --workspace DIR)"))
        from maclaw_fast.workspace.agent_api import memory_get as ws_get

        out = ws_get(path, from_line, lines, index=backend.workspace)
        if not out.get("ok"):
            raise _tool_error(ValidationError(out.get("error", "cannot read that file")))
        return out

    @mcp.tool(description="Forget (delete) a memory by id.",
              annotations=ToolAnnotations(destructiveHint=True, idempotentHint=True))
    def memory_forget(id: Annotated[str, Field(min_length=1)],  # noqa: A002
                      ctx: Context = None) -> dict[str, Any]:
        return on_store(ctx, h.forget_memory, id)

    @mcp.tool(description="Pin a memory (never evicted or compressed), or unpin it.",
              annotations=ToolAnnotations(idempotentHint=True))
    def memory_pin(id: Annotated[str, Field(min_length=1)],  # noqa: A002
                   pinned: bool = True, ctx: Context = None) -> dict[str, Any]:
        return on_store(ctx, h.pin_memory, id, pinned)

    def need_router():
        if backend.router is None:
            raise _tool_error(ValidationError("no tool catalog loaded (serve --catalog FILE)"))
        return backend.router

    @mcp.tool(description="Choose the tools of the catalog that fit a message (hybrid "
                          "retrieval, experience, priority, keyword groups; at most 28).",
              annotations=ro)
    def route_tools(
        message: Annotated[str, Field(description="the user's request")],
        session: Annotated[str | None, Field(description="session whose discovered tools "
                                                         "count as core")] = None,
    ) -> dict[str, Any]:
        router = need_router()
        res = guard(router.route, message, session=session)
        reg = router.registry
        tools = []
        for t in res.tools:
            try:
                desc = reg.get(t.name).description
            except NotFoundError:
                desc = ""
            tools.append({"name": t.name, "reason": t.reason, "score": round(t.score, 4),
                          "description": desc})
        return {"ok": True, "tools": tools, "groups": list(res.groups), "total": res.total,
                "hint": res.hint, "reranked": list(res.reranked)}

    @mcp.tool(description="Find tools for a need and activate them for a session (they are "
                          "then always routed for that session).")
    def discover_tool(
        query: Annotated[str, Field(min_length=1)],
        session: Annotated[str, Field(min_length=1)] = "default",
    ) -> dict[str, Any]:
        router = need_router()
        names = guard(router.discover, query, session)
        return {"ok": True, "activated": [
            {"name": n, "description": router.registry.get(n).description} for n in names
            if n in router.registry]}

    return mcp
