"""The design §12 core tools beyond memory, discover_tool and the file tools: ``web_fetch``,
``set_nickname``, ``call_mcp_tool`` and, where ``bash`` is enabled, the shell session tools —
and the rule that a tool this process cannot run is never offered to the model.

Core tools that need what a headless host lacks (``screenshot``, ``browser_*``, ``send_file``),
or a service nobody configured (``web_search``, skills), get no handler here; a catalog entry for
them, like any other entry without a handler, is withheld (status ``unavailable``), so routing
never spends a slot on it and the model never sees it as callable.
"""

from __future__ import annotations

import html.parser
import os
import re

from maclaw_fast.agent.handlers import BuiltinHandler, ToolContext
from maclaw_fast.agent.sessions import ACTIONS, ShellSessions
from maclaw_fast.errors import NotFoundError, ValidationError

__all__ = ["Toolbox", "has_network", "withhold_unrunnable"]

_OBJ = "object"
WEB_FETCH_SCHEMA = {"type": _OBJ, "properties": {
    "url": {"type": "string", "description": "http:// or https:// address"},
    "max_chars": {"type": "integer", "minimum": 1,
                  "description": "return at most this much text (default 20000)"}},
    "required": ["url"]}
NICKNAME_SCHEMA = {"type": _OBJ, "properties": {
    "nickname": {"type": "string", "description": "what the user wants to call the assistant"}},
    "required": ["nickname"]}
CALL_MCP_SCHEMA = {"type": _OBJ, "properties": {
    "server": {"type": "string", "description": "MCP server name"},
    "tool": {"type": "string", "description": "the server's tool name"},
    "arguments": {"type": "object", "description": "the tool's arguments"}},
    "required": ["server", "tool"]}
_ID = {"id": {"type": "string", "description": "session id from create_session"}}
SESSION_TOOLS = {
    "create_session": ("Start a long-running shell command (build, server, REPL) in the "
                       "workspace as a session; read and drive it with the other session tools.",
                       {"command": {"type": "string"}}, ["command"], "create"),
    "list_sessions": ("List the shell sessions with their state.", {}, [], "list"),
    "send_and_observe": ("Send a line of input to a session and return what it prints in "
                         "reply.", {**_ID, "input": {"type": "string"},
                                    "wait_s": {"type": "number", "minimum": 0}}, ["id"],
                         "send_and_observe"),
    "get_session_output": ("The latest output of a session.",
                           {**_ID, "tail_chars": {"type": "integer", "minimum": 1}}, ["id"],
                           "output"),
    "get_session_events": ("What happened to a session: started, signals, exit code.", _ID,
                           ["id"], "events"),
    "control_session": ("Interrupt (Ctrl-C), terminate or kill a session.",
                        {**_ID, "action": {"type": "string", "enum": list(ACTIONS)}},
                        ["id", "action"], "control"),
}


def has_network() -> bool:
    """Whether the host has a route beyond itself (a default route, or ``MACLAW_OFFLINE`` unset
    on hosts without ``/proc/net/route``). Cheap: no DNS lookup, no connection."""
    if os.environ.get("MACLAW_OFFLINE", "").strip() not in ("", "0"):
        return False
    try:
        with open("/proc/net/route", encoding="ascii") as fh:
            rows = fh.read().splitlines()[1:]
    except OSError:
        return True  # not Linux: assume a network, a failed fetch says so
    return any(len(r.split()) > 1 and r.split()[1] == "00000000" for r in rows) or os.path.exists(
        "/proc/net/ipv6_route") and _ipv6_default()


def _ipv6_default() -> bool:
    try:
        with open("/proc/net/ipv6_route", encoding="ascii") as fh:
            return any(line.split()[0] == "0" * 32 and line.split()[1] == "00"
                       and not line.split()[-1].startswith("lo") for line in fh if line.strip())
    except (OSError, IndexError):
        return False


def withhold_unrunnable(registry) -> list[str]:
    """Mark every tool without a handler ``unavailable`` (so it is neither routed nor offered);
    returns their names."""
    names = [t.name for t in registry.list() if t.handler is None and t.status != "unavailable"]
    for n in names:
        registry.set_status(n, "unavailable")
    return names


class _Text(html.parser.HTMLParser):
    """Visible text of an HTML page (script, style and head content left out)."""

    _SKIP = {"script", "style", "head", "noscript", "template"}
    _BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
              "article", "pre", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
        if tag in self._SKIP:
            self.skip += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if tag in self._SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if not self.skip:
            self.parts.append(data)


def html_text(page: str) -> tuple[str, str]:
    """``(title, visible text)`` of an HTML page, blank runs collapsed.

    Examples
    --------
    >>> html_text("<html><head><title>T</title><style>x{}</style></head>"
    ...           "<body><p>Hello <b>you</b></p><p>there</p></body></html>")
    ('T', 'Hello you\\nthere')
    """
    p = _Text()
    p.feed(page)
    p.close()
    text = re.sub(r"[ \t\r\f\v]+", " ", "".join(p.parts))
    text = re.sub(r"\s*\n\s*", "\n", text).strip()
    return p.title.strip(), text


class Toolbox:
    """Handlers of the core tools an :class:`~maclaw_fast.agent.Agent` runs besides memory,
    discover_tool and the file tools. :meth:`builtins` gives the agent's registry entries;
    :meth:`close` stops the shell sessions.

    Examples
    --------
    >>> tb = Toolbox(agent)                        # doctest: +SKIP
    >>> sorted(tb.builtins())[:3]                  # doctest: +SKIP
    ['call_mcp_tool', 'set_nickname', 'web_fetch']
    """

    def __init__(self, agent, *, fetch_timeout_s: float = 15.0,
                 max_fetch_bytes: int = 2_000_000) -> None:
        self.agent = agent
        self.fetch_timeout_s, self.max_fetch_bytes = fetch_timeout_s, max_fetch_bytes
        self.network = has_network()
        self.sessions: ShellSessions | None = None
        self.statuses: dict[str, str] = {}  # registry status of a tool when not "available"
        self._unwatch = None

    def builtins(self) -> dict[str, tuple[str, dict, list[str], BuiltinHandler]]:
        """``name -> (description, schema, tags, handler)``; see :attr:`statuses`."""
        out = {}
        fetch_desc = "Fetch a web page or URL and return its text."
        if not self.network:
            fetch_desc += " (No network on this host: only local addresses answer.)"
            self.statuses["web_fetch"] = "degraded"
        out["web_fetch"] = (fetch_desc, WEB_FETCH_SCHEMA, ["web", "fetch", "url", "http"],
                            BuiltinHandler(self.web_fetch, "web_fetch"))
        out["set_nickname"] = ("Remember the name the user gives the assistant.",
                               NICKNAME_SCHEMA, ["identity", "name"],
                               BuiltinHandler(self.set_nickname, "set_nickname"))
        out["call_mcp_tool"] = ("Call a tool of an attached MCP server by server and tool name.",
                                CALL_MCP_SCHEMA, ["mcp", "tool"],
                                BuiltinHandler(self.call_mcp_tool, "call_mcp_tool"))
        # offered only while an MCP server's tools are there to call
        registry = self.agent.registry
        if self._unwatch is None:
            self._unwatch = registry.on_change(self._on_change)
        self.statuses["call_mcp_tool"] = "available" if self._mcp_tools() else "unavailable"
        sandbox = getattr(self.agent, "sandbox", None)
        if self.agent.config.enable_bash and sandbox is not None:
            if self.sessions is None:
                self.sessions = ShellSessions(sandbox.root,
                                              max_output_chars=self.agent.config
                                              .max_tool_output_chars)
            for name, (desc, props, required, method) in SESSION_TOOLS.items():
                fn = getattr(self.sessions, method)
                schema = {"type": _OBJ, "properties": props, "required": required}
                out[name] = (desc, schema, ["session", "shell", "command"],
                             BuiltinHandler(lambda a, _c, fn=fn: fn(a), name))
        return out

    def _mcp_tools(self) -> bool:
        return any(t.category == "mcp" and t.handler is not None and t.status != "unavailable"
                   for t in self.agent.registry.list())

    def _on_change(self, event: str, name: str, tool) -> None:
        if tool is None or tool.category != "mcp" or "call_mcp_tool" not in self.agent.registry:
            return
        current = self.agent.registry.get("call_mcp_tool")
        if isinstance(current.handler, BuiltinHandler):  # not a caller's own implementation
            want = "available" if self._mcp_tools() else "unavailable"
            self.statuses["call_mcp_tool"] = want
            if current.status != want:
                self.agent.registry.set_status("call_mcp_tool", want)

    # ------------------------------------------------------------------ handlers
    def web_fetch(self, args: dict, _ctx: ToolContext) -> dict:
        import httpx

        url = args.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url.strip()):
            raise ValidationError(f"url must be an http:// or https:// address, got {url!r}")
        limit = args.get("max_chars", 20_000)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError(f"max_chars must be an integer >= 1, got {limit!r}")
        try:
            with httpx.Client(timeout=self.fetch_timeout_s, follow_redirects=True) as client:
                with client.stream("GET", url.strip(),
                                   headers={"User-Agent": "maclaw-fast web_fetch"}) as resp:
                    data = bytearray()
                    for chunk in resp.iter_bytes():
                        data += chunk
                        if len(data) >= self.max_fetch_bytes:
                            break
                    ctype = resp.headers.get("content-type", "")
                    status, final = resp.status_code, str(resp.url)
                    encoding = resp.encoding or "utf-8"
        except httpx.HTTPError as exc:
            why = f"{type(exc).__name__}: {exc}"
            if not self.network:
                why = f"no network on this host ({why})"
            elif isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
                host = httpx.URL(url.strip()).host
                why = f"cannot reach {host} (no network, unknown host or nothing listening: {why})"
            return {"ok": False, "url": url, "error": why}
        body = bytes(data).decode(encoding, errors="replace")
        title = ""
        if "html" in ctype.lower() or body.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
            title, body = html_text(body)
        cut = len(body) > limit
        return {"ok": 200 <= status < 400, "url": final, "status": status,
                "content_type": ctype, "title": title, "text": body[:limit], "truncated": cut}

    def set_nickname(self, args: dict, ctx: ToolContext) -> dict:
        name = args.get("nickname")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ValidationError("nickname must be a non-empty string of at most 100 "
                                  "characters")
        store = self.agent.store
        e = store.save(f"My nickname, given by the user, is {name.strip()}.",
                       category="self_identity", tags=["nickname"], pinned=True,
                       thread=ctx.session)
        old = [o for o in store.list(category="self_identity", keyword="My nickname")
               if o.id != e.id and "nickname" in o.tags]
        for o in old:  # one nickname at a time: the previous one would contradict it
            store.delete(o.id)
        return {"ok": True, "event": "memory:save", "nickname": name.strip(), "id": e.id,
                "replaced": [o.id for o in old]}

    def call_mcp_tool(self, args: dict, _ctx: ToolContext) -> dict:
        server, tool = args.get("server"), args.get("tool")
        if not isinstance(server, str) or not isinstance(tool, str) or not server or not tool:
            raise ValidationError("server and tool must be non-empty strings")
        arguments = args.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ValidationError("arguments must be an object")
        registry = self.agent.registry
        servers: dict[str, list[str]] = {}
        for t in registry.list():
            h = t.handler
            if t.category != "mcp" or not t.server or h is None:
                continue
            own = getattr(h, "tool", t.name)
            servers.setdefault(t.server, []).append(own)
            if t.server == server and tool in (own, t.name):
                if t.status == "unavailable":
                    return {"ok": False, "error": f"MCP server {server!r} is unavailable"}
                return {"ok": True, "server": server, "tool": own, "result": h(arguments)}
        if server not in servers:
            raise NotFoundError(f"no attached MCP server {server!r}; attached: "
                                f"{', '.join(sorted(servers)) or 'none'}")
        raise NotFoundError(f"MCP server {server!r} has no tool {tool!r}; it has "
                            f"{', '.join(sorted(servers[server]))}")

    def close(self) -> None:
        """Stop the shell sessions (they also stop when the process exits)."""
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self.sessions is not None:
            self.sessions.close()
