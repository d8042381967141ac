"""Built-in tools of the agent (``memory``, ``discover_tool``, sandboxed files, opt-in ``bash``)
and the memory operations they share with the MCP server.

A built-in handler is a :class:`BuiltinHandler`: called as ``handler(arguments, context=ctx)``
with the turn's :class:`ToolContext`, it returns a JSON-ready dict or raises a
:class:`~maclaw_fast.errors.MaclawError`; the agent turns both into the tool message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from maclaw_fast.config import CATEGORIES, CATEGORY_ALIASES
from maclaw_fast.errors import ValidationError
from maclaw_fast.records import Entry, RecallHit

MEMORY_ACTIONS = ("save", "recall", "search", "pin", "forget")
_CATEGORY_NAMES = list(CATEGORIES) + list(CATEGORY_ALIASES)


class ToolContext(msgspec.Struct, kw_only=True):
    """What a built-in handler may know about the turn that called it."""

    session: str
    message: str = ""
    project: str | None = None
    activated: list[str] = msgspec.field(default_factory=list)  # filled by discover_tool


class BuiltinHandler:
    """A handler that receives the turn's :class:`ToolContext` (``wants_context``).

    Called without a context (e.g. by code that treats all handlers alike) it uses a default
    session, so it still works.
    """

    wants_context = True

    def __init__(self, fn: Callable[[dict, ToolContext], Any], name: str) -> None:
        self.fn, self.name = fn, name

    def __call__(self, arguments: dict | None = None, /, context: ToolContext | None = None,
                 **kwargs: Any) -> Any:
        args = dict(arguments or {})
        args.update(kwargs)
        return self.fn(args, context or ToolContext(session="default"))

    def __repr__(self) -> str:
        return f"<builtin tool {self.name!r}>"


# ---------------------------------------------------------------------- shared memory operations
def entry_dict(e: Entry, *, full: bool = True) -> dict:
    """An entry as the tools show it (no vectors, times as unix seconds)."""
    out = {"id": e.id, "content": e.content, "category": e.category, "tags": list(e.tags),
           "pinned": e.pinned, "status": e.status}
    if full:
        out.update(scope=e.scope, strength=round(e.strength, 4), access_count=e.access_count,
                   created_at=e.created_at, updated_at=e.updated_at,
                   related_ids=list(e.related_ids), compact_form=e.compact_form)
    return out


def hit_dict(h: RecallHit) -> dict:
    """A recall hit with its score breakdown."""
    d = entry_dict(h.entry, full=False)
    b = h.breakdown
    d.update(score=round(h.score, 4), reason=h.reason,
             breakdown={"recency": round(b.recency, 4), "importance": round(b.importance, 4),
                        "bm25": round(b.bm25, 4), "cos": round(b.cos, 4),
                        "affinity": b.affinity, "graph": round(b.graph, 4)})
    return d


def _str_arg(args: dict, name: str, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string")
    return value


def _limit_arg(args: dict, name: str, default: int) -> int:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _flag_arg(args: dict, name: str, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):  # "false" is a true string: refuse, never guess
        raise ValidationError(f"{name} must be true or false, got {value!r}")
    return value


def _tags_arg(args: dict) -> list[str]:
    tags = args.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValidationError("tags must be a list of strings")
    return tags


def save_memory(store, content: str, category: str, tags=(), pinned: bool = False,
                thread: str | None = None) -> dict:
    """Save (or refresh identical content) and describe the result; ``thread`` (the agent's
    session, an MCP client's conversation) links consecutive saves of one conversation."""
    before = len(store)
    e = store.save(content, category=category, tags=list(tags), pinned=pinned, thread=thread)
    # "memory:save" is the reference's save signal: the knowledge extractor looks for it in
    # recent tool results and skips a conversation whose agent already saved what mattered
    return {"ok": True, "event": "memory:save", "saved": entry_dict(e),
            "created": len(store) > before}


def recall_memory(store, query: str, *, project: str | None = None,
                  category: str | None = None, max_results: int | None = None,
                  dynamic: bool = False, reinforce: bool = True) -> dict:
    """``recall`` (up to 3 self-identity entries and the relevant user facts first) or, with
    ``dynamic`` or a category, ``recall_dynamic`` (the agent tool's view)."""
    if max_results is not None and (isinstance(max_results, bool)
                                    or not isinstance(max_results, int) or max_results < 1):
        raise ValidationError(f"max_results must be an integer >= 1, got {max_results!r}")
    cut = max_results is not None and reinforce
    if dynamic or category is not None:
        hits = store.recall_dynamic(query, category=category, project=project,
                                    reinforce=reinforce and not cut)
    else:
        hits = store.recall(query, project=project, reinforce=reinforce and not cut)
    if max_results is not None:
        hits = hits[:max_results]
    if cut:  # only what is returned is strengthened
        store.reinforce(hits)
    return {"ok": True, "query": query, "results": [hit_dict(h) for h in hits]}


def search_memory(store, query: str, *, workspace=None, max_results: int = 10,
                  category: str | None = None) -> dict:
    """Keyword search: workspace memory files when a workspace is configured (design §14
    ``memory_search``), plus store entries containing the query (case-insensitive)."""
    out: dict = {"ok": True, "query": query}
    if workspace is not None:
        from maclaw_fast.workspace.agent_api import memory_search

        ws = memory_search(query, index=workspace, max_results=max_results)
        out["workspace"] = {k: ws.get(k) for k in ("ok", "mode", "results", "fallback",
                                                   "degraded", "reason", "error") if k in ws}
    entries = store.list(category=category, keyword=query, limit=max_results)
    out["store"] = [entry_dict(e, full=False) for e in entries]
    return out


def pin_memory(store, entry_id: str, pinned: bool = True) -> dict:
    """Pin (protect from eviction and compression) or unpin an entry."""
    if not isinstance(pinned, bool):
        raise ValidationError(f"pinned must be true or false, got {pinned!r}")
    e = store.pin(entry_id) if pinned else store.unpin(entry_id)
    return {"ok": True, "entry": entry_dict(e, full=False)}


def forget_memory(store, entry_id: str) -> dict:
    """Delete an entry; the result shows what was forgotten."""
    e = store.delete(entry_id)
    return {"ok": True, "forgotten": entry_dict(e, full=False)}


# ---------------------------------------------------------------------- tool definitions
MEMORY_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(MEMORY_ACTIONS),
                   "description": "save a memory, recall ranked memories for a query, search "
                                  "by keyword (and the workspace notes), pin or forget by id"},
        "content": {"type": "string", "description": "save: the fact, preference or "
                                                     "instruction, self-contained"},
        "category": {"type": "string", "enum": _CATEGORY_NAMES,
                     "description": "save: kind of memory (default user_fact); "
                                    "recall/search: optional filter"},
        "tags": {"type": "array", "items": {"type": "string"},
                 "description": "save: tags; a project name makes a project memory visible "
                                "in that project"},
        "query": {"type": "string", "description": "recall/search: what to look for"},
        "id": {"type": "string", "description": "pin/forget: the memory id"},
        "pinned": {"type": "boolean", "description": "pin: false to unpin (default true)"},
        "max_results": {"type": "integer", "minimum": 1},
    },
    "required": ["action"],
}


def memory_handler(store, *, workspace=None, default_category: str = "user_fact"
                   ) -> BuiltinHandler:
    """The ``memory`` tool: actions save, recall, search, pin, forget."""

    def run(args: dict, ctx: ToolContext) -> dict:
        action = args.get("action")
        if action not in MEMORY_ACTIONS:
            raise ValidationError(f"action must be one of {', '.join(MEMORY_ACTIONS)}, "
                                  f"got {action!r}")
        if action == "save":
            return save_memory(store, _str_arg(args, "content"),
                               args.get("category") or default_category, _tags_arg(args),
                               _flag_arg(args, "pinned", False), thread=ctx.session)
        if action == "recall":
            return recall_memory(store, _str_arg(args, "query"), project=ctx.project,
                                 category=args.get("category"), dynamic=True,
                                 max_results=_limit_arg(args, "max_results", 15))
        if action == "search":
            return search_memory(store, _str_arg(args, "query"), workspace=workspace,
                                 max_results=_limit_arg(args, "max_results", 10),
                                 category=args.get("category"))
        entry_id = _str_arg(args, "id")
        if action == "pin":
            return pin_memory(store, entry_id, _flag_arg(args, "pinned", True))
        return forget_memory(store, entry_id)

    return BuiltinHandler(run, "memory")


DISCOVER_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string",
                             "description": "what the needed tool should do"}},
    "required": ["query"],
}


def discover_handler(router) -> BuiltinHandler:
    """``discover_tool``: activate the best matching tools for the session (design §12)."""

    def run(args: dict, ctx: ToolContext) -> dict:
        names = router.discover(_str_arg(args, "query"), ctx.session)
        ctx.activated.extend(n for n in names if n not in ctx.activated)
        tools = []
        for n in names:
            try:
                t = router.registry.get(n)
            except KeyError:
                continue
            tools.append({"name": n, "description": t.description})
        return {"ok": True, "activated": tools,
                "note": "these tools are now available" if tools else "no matching tool"}

    return BuiltinHandler(run, "discover_tool")


FILE_SCHEMAS = {
    "read_file": ("Read a text file of the workspace.", {
        "type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"},
            "offset": {"type": "integer", "minimum": 0},
            "max_bytes": {"type": "integer", "minimum": 1}}, "required": ["path"]}),
    "write_file": ("Create or overwrite a text file in the workspace.", {
        "type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to the workspace"},
            "content": {"type": "string"},
            "append": {"type": "boolean", "description": "append instead of overwrite"}},
        "required": ["path", "content"]}),
    "list_directory": ("List a directory of the workspace.", {
        "type": "object", "properties": {
            "path": {"type": "string", "description": "directory (default: the workspace)"}}}),
}

BASH_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "a bash command line"}},
    "required": ["command"],
}
