"""Streamable-HTTP serving of the MCP server: loopback by default, bearer token otherwise.

The SDK's own auth (``AuthSettings`` + ``TokenVerifier``) is built for OAuth resource servers
and advertises an authorization server; a locally generated shared token needs none of that,
so a small ASGI wrapper checks ``Authorization: Bearer <token>`` in constant time instead.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import sys
import threading

from maclaw_fast.errors import ValidationError
from maclaw_fast.server.auth import BearerAuth, send_unauthorized  # noqa: F401 (API)

TOKEN_ENV = "MACLAW_MCP_TOKEN"


# the only addresses served without a token: what a local client means by "this machine"
TOKENLESS_HOSTS = ("127.0.0.1", "localhost", "::1")
_WILDCARD = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1).

    Examples
    --------
    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_token(token: str | None) -> None:
    """A bearer token: at least 8 visible characters, no whitespace or control characters."""
    if token is None:
        return
    if isinstance(token, str) and not token.strip():
        raise ValidationError("the bearer token is empty: leave out --token (and "
                              "MACLAW_MCP_TOKEN) to serve loopback clients without one")
    if not isinstance(token, str) or len(token) < 8:
        raise ValidationError("the bearer token must be at least 8 characters")
    if any(c.isspace() or not c.isprintable() for c in token):
        raise ValidationError("the bearer token must not contain spaces or control characters")


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen anywhere but 127.0.0.1 / localhost / ::1 without a bearer token
    (another loopback address such as 127.0.0.2 is often forwarded or shared).

    Examples
    --------
    >>> check_bind("0.0.0.0", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: refusing to bind 0.0.0.0 without a bearer token ...
    """
    check_token(token)
    if host.strip("[]") not in TOKENLESS_HOSTS and not token:
        raise ValidationError(f"refusing to bind {host} without a bearer token (only "
                              f"{', '.join(TOKENLESS_HOSTS)} are served without one): pass "
                              f"--token T or set {TOKEN_ENV}")


def transport_security(host: str):
    """Host/Origin checks (DNS-rebinding protection) for every address that names itself: the
    bound address (and, on loopback, the loopback names). A wildcard bind cannot know the names
    clients use, so there the bearer token is the only gate."""
    from mcp.server.transport_security import TransportSecuritySettings

    bare = host.strip("[]")
    if bare in _WILDCARD:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = [f"[{bare}]" if ":" in bare else bare]
    if is_loopback(bare):
        names += ["127.0.0.1", "localhost", "[::1]"]
    names = list(dict.fromkeys(names))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[n + suffix for n in names for suffix in ("", ":*")],
        allowed_origins=[f"{scheme}://{n}{suffix}" for n in names
                         for scheme in ("http", "https") for suffix in ("", ":*")])


def build_app(mcp, *, host: str, token: str | None, path: str = "/mcp",
              users: dict[str, str] | None = None):
    """The ASGI app: the SDK's streamable-HTTP app (Host/Origin checks on any named address),
    wrapped in :class:`BearerAuth` when a token is given, or in
    :class:`~maclaw_fast.server.users.UserAuth` when ``users`` (token → store name) is."""
    if users and token:
        raise ValidationError("give one shared token or per-user tokens, not both")
    if not users:  # per-user tokens are checked when the users file is read (≥ 16 chars)
        check_bind(host, token)
    # JSON responses: every tool answers once, no server-initiated stream is needed, and plain
    # JSON costs less per request than an SSE stream
    app = mcp.streamable_http_app(streamable_http_path=path, json_response=True, host=host,
                                  transport_security=transport_security(host))
    if users:
        from maclaw_fast.server.users import UserAuth

        return UserAuth(app, users)
    return BearerAuth(app, token) if token else app


def check_listen(host: str, port: int) -> None:
    """Raise :class:`ValidationError` with the reason when ``host:port`` cannot be listened on
    (taken, not an address of this machine)."""
    try:
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        raise ValidationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve_http(mcp, *, host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
               path: str = "/mcp", log_level: str = "warning",
               users: dict[str, str] | None = None) -> None:
    """Serve until interrupted (SIGINT / SIGTERM)."""
    import uvicorn

    app = build_app(mcp, host=host, token=token, path=path, users=users)
    check_listen(host, port)  # a clear message before uvicorn prints its own traceback
    shown = f"[{host}]" if ":" in host else host
    print(f"maclaw-fast MCP server on http://{shown}:{port}{path}"
          f"{' (bearer token required)' if token or users else ''}", file=sys.stderr, flush=True)
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal; with the default
    # handler that would kill the process before the caller closes (snapshots) the store.
    exit_on_sigterm()
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit(0)`` (main thread only), so ``with`` blocks still close
    the store when a supervisor stops the server."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_exit)


def _raise_exit(signum, frame) -> None:
    raise SystemExit(0)
