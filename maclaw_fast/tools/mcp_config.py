"""MCP server configuration files in the format agent users already have.

Reads the ``mcpServers`` map of Claude Desktop (``claude_desktop_config.json``), Cursor
(``.cursor/mcp.json``) and Claude Code (``.mcp.json``), and the ``servers`` map of VS Code
(``.vscode/mcp.json``)::

    {"mcpServers": {
        "files":  {"command": "npx", "env": {"DEBUG": "0"},
                   "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "orders": {"type": "http", "url": "http://127.0.0.1:8000/mcp",
                   "headers": {"Authorization": "Bearer ${ORDERS_TOKEN}"}}}}

An entry with ``command`` is a stdio server (``args``, ``env``, ``cwd``), one with ``url`` is
streamable HTTP (``headers``); ``type`` may say ``stdio``, ``http`` or ``streamable-http``
(``sse`` is refused: the SDK's streamable-HTTP client is the supported remote transport).
``disabled: true`` (or ``enabled: false``) skips an entry; ``timeout`` (seconds, default 30)
bounds each tool call, list and ping, ``startup_timeout`` (default 30) starting the server. ``${VAR}`` and ``${VAR:-default}`` in command, args,
env, url and headers are replaced from the environment, as Claude Code does. Keys these clients
add for their own use (``autoApprove``, ``alwaysAllow``, ``description``...) are ignored.

Every entry is checked before any server starts; an error names the file and the entry.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maclaw_fast.errors import ValidationError
from maclaw_fast.tools.mcp_servers import McpServerConfig

__all__ = ["load_mcp_config", "parse_mcp_servers"]

_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http",
          "streamable_http": "http", "streamableHttp": "http"}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def load_mcp_config(path: str | os.PathLike) -> list[McpServerConfig]:
    """The servers of an MCP configuration file (see the module docstring for the format).

    Relative ``cwd`` values are taken relative to the file's folder.

    Raises
    ------
    ValidationError
        The file is missing or not JSON, or an entry is malformed (the message names it).

    Examples
    --------
    >>> import json, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "mcp.json")
    >>> _ = open(p, "w").write(json.dumps({"mcpServers": {
    ...     "db": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}))
    >>> [(c.name, c.transport, c.url) for c in load_mcp_config(p)]
    [('db', 'http', 'http://127.0.0.1:9/mcp')]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"MCP config {p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"MCP config {p}: cannot read it: {exc}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"MCP config {p}: not valid JSON: {exc}") from None
    return parse_mcp_servers(obj, source=str(p), base_dir=p.resolve().parent)


def parse_mcp_servers(obj: Mapping[str, Any] | str, *, source: str = "MCP server configuration",
                      base_dir: str | os.PathLike | None = None,
                      environ: Mapping[str, str] | None = None) -> list[McpServerConfig]:
    """Servers of an ``{"mcpServers": {name: {...}}}`` object (or its JSON text).

    ``source`` prefixes error messages; ``environ`` (default ``os.environ``) fills ``${VAR}``.

    Examples
    --------
    >>> cfgs = parse_mcp_servers({"mcpServers": {"fs": {"command": "mcp-fs", "args": ["/tmp"]}}})
    >>> cfgs[0].transport, cfgs[0].args
    ('stdio', ('/tmp',))
    >>> try:
    ...     parse_mcp_servers({"mcpServers": {"fs": {"args": ["/tmp"]}}}, source="mcp.json")
    ... except ValidationError as exc:
    ...     print(exc)
    mcp.json: server 'fs': needs "command" (stdio) or "url" (HTTP)
    """
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(obj, Mapping):
        raise ValidationError(f"{source}: must be a JSON object with \"mcpServers\"")
    if "mcpServers" in obj:
        servers = obj["mcpServers"]
    elif "servers" in obj:  # VS Code's .vscode/mcp.json
        servers = obj["servers"]
    else:
        servers = obj
    if not isinstance(servers, Mapping):
        raise ValidationError(f"{source}: \"mcpServers\" must be an object of name -> server")
    env = os.environ if environ is None else environ
    return [_entry(name, entry, f"{source}: server {name!r}", base_dir, env)
            for name, entry in servers.items()]


def _entry(name: str, entry: Any, where: str, base_dir, env: Mapping[str, str]
           ) -> McpServerConfig:
    if not isinstance(entry, Mapping):
        raise ValidationError(f"{where}: must be an object")
    kind = entry.get("type", entry.get("transport"))
    if kind == "sse":
        raise ValidationError(f"{where}: the SSE transport is not supported; the server's "
                              "streamable-HTTP endpoint (usually /mcp) works")
    if kind is not None and kind not in _TYPES:
        raise ValidationError(f"{where}: unknown type {kind!r} (use stdio or http)")
    command, url = entry.get("command"), entry.get("url")
    if command is not None and url is not None:
        raise ValidationError(f"{where}: give \"command\" (stdio) or \"url\" (HTTP), not both")
    if command is None and url is None:
        raise ValidationError(f"{where}: needs \"command\" (stdio) or \"url\" (HTTP)")
    transport = "stdio" if command is not None else "http"
    if kind is not None and _TYPES[kind] != transport:
        raise ValidationError(f"{where}: type {kind!r} does not fit "
                              f"{'a command' if command is not None else 'a url'}")

    def text(key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise ValidationError(f"{where}: {key} must be a string, got "
                                  f"{type(value).__name__}")
        return _expand(value, env, f"{where}: {key}")

    def strings(key: str, kind_: type) -> Any:
        value = entry.get(key)
        if value is None:
            return kind_()
        if kind_ is list:
            if not isinstance(value, list):
                raise ValidationError(f"{where}: {key} must be a list of strings")
            return [text(f"{key}[{i}]", v) for i, v in enumerate(value)]
        if not isinstance(value, Mapping):
            raise ValidationError(f"{where}: {key} must be an object of name -> string")
        return {str(k): text(f"{key}.{k}", v) for k, v in value.items()}

    cwd = entry.get("cwd")
    if cwd is not None:
        cwd = text("cwd", cwd)
        if base_dir is not None and not os.path.isabs(cwd):
            cwd = os.path.join(os.fspath(base_dir), cwd)
        if not os.path.isdir(cwd):
            raise ValidationError(f"{where}: cwd {cwd} is not a directory")
    timeout = entry.get("timeout_s", entry.get("timeout", 30.0))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValidationError(f"{where}: timeout must be a number of seconds > 0, "
                              f"got {timeout!r}")
    startup = entry.get("startup_timeout", entry.get("startup_timeout_sec", 30.0))
    if isinstance(startup, bool) or not isinstance(startup, (int, float)) or not startup > 0:
        raise ValidationError(f"{where}: startup_timeout must be a number of seconds > 0, "
                              f"got {startup!r}")
    flags = {}
    for key in ("disabled", "enabled"):
        value = entry.get(key)
        if value is not None and not isinstance(value, bool):
            raise ValidationError(f"{where}: {key} must be true or false, got {value!r}")
        flags[key] = value
    enabled = flags["enabled"] is not False and flags["disabled"] is not True
    try:
        if transport == "stdio":
            cmd = text("command", command)
            if not cmd.strip():
                raise ValidationError(f"{where}: command is empty")
            return McpServerConfig(name=name, transport="stdio", command=cmd,
                                   args=tuple(strings("args", list)), env=strings("env", dict),
                                   cwd=cwd, enabled=enabled, timeout_s=float(timeout),
                                   startup_timeout_s=float(startup))
        return McpServerConfig(name=name, transport="http", url=text("url", url),
                               headers=strings("headers", dict), enabled=enabled,
                               timeout_s=float(timeout), startup_timeout_s=float(startup))
    except ValidationError as exc:
        msg = str(exc)
        raise ValidationError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def _expand(value: str, env: Mapping[str, str], where: str) -> str:
    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ValidationError(f"{where}: environment variable {name} is not set "
                              f"(write ${{{name}:-default}} for a default)")
    return _VAR.sub(sub, value)
