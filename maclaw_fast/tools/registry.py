"""Tool registry (design §12): records, thread-safe registration with change callbacks, platform
filtering, body summaries and the MCP-schema body builder."""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from maclaw_fast.errors import NotFoundError, ValidationError

CATEGORIES = ("builtin", "mcp", "skill", "non_code")
STATUSES = ("available", "degraded", "unavailable")
NEEDS = ("display", "clipboard", "network")
BODY_SUMMARY_CHARS = 1500


class RegisteredTool(msgspec.Struct, kw_only=True):
    """One tool the router can pick.

    ``body_summary`` is filled from ``body`` at registration (``truncate_body(body, 1500)``) when
    left empty. ``deferred`` tools stay out of routing until found by ``search_deferred`` or
    activated for a session. ``handler`` is never serialised.

    Examples
    --------
    >>> t = RegisteredTool(name="query_database", description="Run SQL", tags=["database"])
    >>> t.category, t.status
    ('builtin', 'available')
    """

    name: str
    description: str = ""
    category: str = "builtin"
    tags: list[str] = msgspec.field(default_factory=list)
    priority: int = 0
    status: str = "available"
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    body: str = ""
    body_summary: str = ""
    needs: list[str] = msgspec.field(default_factory=list)
    deferred: bool = False
    server: str = ""
    handler: Any = None

    def to_definition(self) -> dict:
        """The OpenAI-style function definition the LLM receives."""
        schema = self.input_schema or {"type": "object", "properties": {}}
        return {"type": "function", "function": {"name": self.name,
                                                 "description": self.description,
                                                 "parameters": schema}}


class Platform(msgspec.Struct, frozen=True, kw_only=True):
    """Host capabilities that tools may need."""

    display: bool = True
    clipboard: bool = True
    network: bool = True

    @classmethod
    def detect(cls) -> Platform:
        """Headless Linux (no ``DISPLAY``/``WAYLAND_DISPLAY``) has neither display nor clipboard."""
        if sys.platform.startswith("linux"):
            gui = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
            return cls(display=gui, clipboard=gui)
        return cls()


def truncate_body(body: str, max_chars: int = BODY_SUMMARY_CHARS) -> str:
    """Shorten ``body`` to whole lines within ``max_chars`` (design §12).

    Examples
    --------
    >>> truncate_body("ab\\ncd\\nef", 5)
    'ab\\ncd\\n...'
    >>> truncate_body("abcdef", 3)
    'abc...'
    """
    if max_chars < 0:
        raise ValidationError("max_chars must be >= 0")
    if len(body) <= max_chars:
        return body
    lines = body.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        add = len(line) + (1 if kept else 0)
        if used + add > max_chars:
            break
        kept.append(line)
        used += add
    if not kept:
        return lines[0][:max_chars] + "..."
    return "\n".join(kept) + "\n..."


def body_from_schema(schema: dict | None) -> str:
    """MCP tool body: ``"Parameters:"`` then ``"- name (type): description"`` per property, sorted
    by name (``any`` when untyped, no ``": …"`` without a description); ``""`` without properties.

    Examples
    --------
    >>> print(body_from_schema({"properties": {"sql": {"type": "string", "description": "query"},
    ...                                        "db": {}}}))
    Parameters:
    - db (any)
    - sql (string): query
    """
    props = (schema or {}).get("properties") or {}
    if not isinstance(props, dict) or not props:
        return ""
    lines = ["Parameters:"]
    for name in sorted(props):
        spec = props[name] if isinstance(props[name], dict) else {}
        typ = spec.get("type") or "any"
        if isinstance(typ, list):
            typ = "|".join(str(t) for t in typ)
        desc = spec.get("description")
        lines.append(f"- {name} ({typ}): {desc}" if desc else f"- {name} ({typ})")
    return "\n".join(lines)


_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(name: str) -> str:
    """The words of a camelCase or PascalCase tool name, space-separated; ``""`` when the name
    has no inner capital (snake_case and dotted names already split into words in the
    tokenizer). Added to a tool's BM25 text: "analyzeEvidence" alone is one token that no
    request contains.

    Examples
    --------
    >>> name_words("analyzeEvidence"), name_words("ChatOCR"), name_words("Navigation.queryViolation")
    ('analyze evidence', 'chat ocr', 'navigation query violation')
    >>> name_words("query_database"), name_words("calculator")
    ('', '')
    """
    if not any(a.islower() and b.isupper() for a, b in zip(name, name[1:])):
        return ""
    return " ".join(_CAMEL.findall(name)).lower()


def check_tool(tool: RegisteredTool) -> RegisteredTool:
    """Validate a tool at the boundary and fill ``body_summary`` (and an MCP body from its
    schema). Returns the tool."""
    if not isinstance(tool, RegisteredTool):
        raise ValidationError(f"expected a RegisteredTool, got {type(tool).__name__}")
    if not isinstance(tool.name, str) or not tool.name.strip():
        raise ValidationError("tool name must be a non-empty string")
    if tool.category not in CATEGORIES:
        raise ValidationError(f"tool {tool.name!r}: category {tool.category!r} not in {CATEGORIES}")
    if tool.status not in STATUSES:
        raise ValidationError(f"tool {tool.name!r}: status {tool.status!r} not in {STATUSES}")
    bad = [n for n in tool.needs if n not in NEEDS]
    if bad:
        raise ValidationError(f"tool {tool.name!r}: unknown needs {bad}; allowed {NEEDS}")
    if not isinstance(tool.priority, int) or isinstance(tool.priority, bool):
        raise ValidationError(f"tool {tool.name!r}: priority must be an int")
    if not tool.body and tool.category == "mcp":
        tool.body = body_from_schema(tool.input_schema)
    if not tool.body_summary:
        tool.body_summary = truncate_body(tool.body, BODY_SUMMARY_CHARS)
    return tool


ChangeCallback = Callable[[str, str, "RegisteredTool | None"], None]


class ToolRegistry:
    """Thread-safe name → tool map, in registration order, with change callbacks.

    Callbacks get ``(event, name, tool)`` with event ``"register"`` (also on replace),
    ``"unregister"`` (tool = the removed one) or ``"status"``; they run after the lock is released.

    Examples
    --------
    >>> reg = ToolRegistry()
    >>> reg.register(RegisteredTool(name="bash", description="Run a shell command"))
    >>> [t.name for t in reg.list()]
    ['bash']
    """

    def __init__(self, tools: Iterable[RegisteredTool] = ()) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._lock = threading.RLock()
        self._callbacks: list[ChangeCallback] = []
        self.version = 0
        self.register_many(tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Subscribe; returns a function that unsubscribes."""
        with self._lock:
            self._callbacks.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)
        return unsubscribe

    def _notify(self, events: list[tuple[str, str, RegisteredTool | None]]) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for cb in callbacks:
            for ev in events:
                cb(*ev)

    def register(self, tool: RegisteredTool) -> None:
        """Add or replace ``tool`` (by name)."""
        self.register_many([tool])

    def register_many(self, tools: Iterable[RegisteredTool]) -> None:
        """Register many tools under one lock; all are validated before any is added. A name
        given twice in one call is an error (which of the two was meant cannot be told)."""
        checked = [check_tool(t) for t in tools]
        if not checked:
            return
        dup = duplicate_names(t.name for t in checked)
        if dup:
            raise ValidationError(f"duplicate tool names: {', '.join(dup)}")
        with self._lock:
            for t in checked:
                self._tools.pop(t.name, None)  # a replaced tool moves to the end
                self._tools[t.name] = t
            self.version += 1
        self._notify([("register", t.name, t) for t in checked])

    def unregister(self, name: str) -> RegisteredTool:
        with self._lock:
            tool = self._tools.pop(name, None)
            if tool is None:
                raise NotFoundError(f"no tool named {name!r}")
            self.version += 1
        self._notify([("unregister", name, tool)])
        return tool

    def set_status(self, name: str, status: str) -> None:
        if status not in STATUSES:
            raise ValidationError(f"status {status!r} not in {STATUSES}")
        with self._lock:
            tool = self.get(name)
            if tool.status == status:
                return
            tool.status = status
            self.version += 1
        self._notify([("status", name, tool)])

    def get(self, name: str) -> RegisteredTool:
        tool = self._tools.get(name)
        if tool is None:
            raise NotFoundError(f"no tool named {name!r}")
        return tool

    def list(self) -> list[RegisteredTool]:
        with self._lock:
            return list(self._tools.values())

    def available(self, platform: Platform | None = None) -> list[RegisteredTool]:
        """Tools that can run here: not ``unavailable``, and not needing a display or clipboard
        the platform lacks."""
        platform = platform or Platform.detect()
        return [t for t in self.list() if is_available(t, platform)]


def is_available(tool: RegisteredTool, platform: Platform) -> bool:
    if tool.status == "unavailable":
        return False
    needs = tool.needs
    return not (("display" in needs and not platform.display)
                or ("clipboard" in needs and not platform.clipboard)
                or ("network" in needs and not platform.network))


_CATALOG_FIELDS = ("name", "description", "category", "tags", "priority", "status",
                   "input_schema", "body", "body_summary", "needs", "deferred", "server")


def tool_from_dict(item: dict) -> RegisteredTool:
    """A tool from a catalog entry (unknown keys ignored; ``needs`` may also be a dict of flags)."""
    if not isinstance(item, dict):
        raise ValidationError(f"catalog entries must be objects, got {type(item).__name__}")
    fields = {k: item[k] for k in _CATALOG_FIELDS if k in item and item[k] is not None}
    needs = fields.get("needs")
    if isinstance(needs, dict):
        fields["needs"] = [k for k, v in needs.items() if v]
    if "input_schema" not in fields and isinstance(item.get("inputSchema"), dict):
        fields["input_schema"] = item["inputSchema"]
    try:
        return msgspec.convert(fields, RegisteredTool)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"bad catalog entry {item.get('name')!r}: {exc}") from None


def load_catalog(path: str | os.PathLike) -> list[RegisteredTool]:
    """Read a catalog JSON file: a list of tool objects, or ``{"tools": [...]}``.

    Examples
    --------
    >>> tools = load_catalog("data/tools.json")          # doctest: +SKIP
    """
    p = Path(path)
    try:
        raw = msgspec.json.decode(p.read_bytes())
    except FileNotFoundError:
        raise ValidationError(f"catalog {p} not found") from None
    except msgspec.DecodeError as exc:
        raise ValidationError(f"catalog {p} is not valid JSON: {exc}") from None
    if isinstance(raw, dict):
        raw = raw.get("tools")
    if not isinstance(raw, list):
        raise ValidationError(f"catalog {p} must be a list of tools or {{'tools': [...]}}")
    tools = [check_tool(tool_from_dict(item)) for item in raw]
    dup = duplicate_names(t.name for t in tools)
    if dup:
        raise ValidationError(f"catalog {p} names a tool more than once: {', '.join(dup)}")
    return tools


def duplicate_names(names: Iterable[str]) -> list[str]:
    """Names that occur more than once, in first-seen order.

    Examples
    --------
    >>> duplicate_names(["a", "b", "a", "c", "b", "a"])
    ['a', 'b']
    """
    seen: set[str] = set()
    dup: dict[str, None] = {}
    for n in names:
        if n in seen:
            dup[n] = None
        seen.add(n)
    return list(dup)
