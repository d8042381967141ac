"""Per-user stores over HTTP: the operator's token → store mapping, and the ASGI middleware that
turns a request's bearer token into the one store it may use.

The store of a request is decided here and only here, from the token: nothing the client sends
(a path, a header, a tool argument) names a store. Tokens are looked up by their SHA-256 digest,
so the lookup's timing says nothing about how much of a wrong token was right.

The users file is JSON: ``{"users": {"<token>": "<store name>", ...}}`` (tokens ≥ 16
characters, store names as :func:`~maclaw_fast.memory.pool.check_store_name` allows; two tokens
may share a store, e.g. one user's two devices).
"""

from __future__ import annotations

import hashlib
import json
import os

from maclaw_fast.errors import ValidationError
from maclaw_fast.memory.pool import check_store_name
from maclaw_fast.server.auth import authorization, send_unauthorized

STORE_KEY = "maclaw.store"  # where UserAuth puts the request's store name in the ASGI scope
MIN_TOKEN = 16


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


def parse_users(data) -> dict[str, str]:
    """Checked ``token → store name`` from the users file's parsed JSON.

    Examples
    --------
    >>> parse_users({"users": {"alice-token-0123456789": "alice"}})
    {'alice-token-0123456789': 'alice'}
    >>> parse_users({"users": {"short": "alice"}})
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: users file: a token needs at least 16 characters
    """
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict) or not users:
        raise ValidationError('users file: expected {"users": {"<token>": "<store>", ...}}')
    out = {}
    for token, name in users.items():
        if not isinstance(token, str) or len(token) < MIN_TOKEN or not token.isprintable() \
                or token != token.strip():
            raise ValidationError(f"users file: a token needs at least {MIN_TOKEN} characters")
        try:
            out[token] = check_store_name(name)
        except ValidationError as exc:
            raise ValidationError(f"users file: {exc}") from None
    return out


def load_users(path: str | os.PathLike) -> dict[str, str]:
    """:func:`parse_users` of the JSON file at ``path``."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ValidationError(f"cannot read the users file {path}: {exc.strerror or exc}") \
            from None
    except ValueError as exc:
        raise ValidationError(f"the users file {path} is not valid JSON: {exc}") from None
    return parse_users(data)


class UserAuth:
    """ASGI middleware: an HTTP request must carry ``Authorization: Bearer <token>`` of a known
    user; the request then goes on with ``scope["maclaw.store"]`` set to that user's store.

    Examples
    --------
    >>> auth = UserAuth(app=None, users={"alice-token-0123456789": "alice"})
    >>> auth.store_of(b"Bearer alice-token-0123456789"), auth.store_of(b"Bearer guess")
    ('alice', None)
    """

    def __init__(self, app, users: dict[str, str]) -> None:
        self.app = app
        self._stores = {_digest(f"Bearer {t}".encode()): name for t, name in users.items()}

    def store_of(self, authorization: bytes) -> str | None:
        """The store of an ``Authorization`` header's value, None for an unknown one."""
        return self._stores.get(_digest(authorization))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = authorization(scope)
        if given is None:
            await send_unauthorized(send, "more than one Authorization header")
            return
        name = self.store_of(given)
        if name is None:
            await send_unauthorized(send, "missing or unknown bearer token")
            return
        scope = dict(scope)  # a request's own copy: never another request's store
        scope[STORE_KEY] = name
        await self.app(scope, receive, send)


def request_store(ctx) -> str:
    """The store name :class:`UserAuth` attached to the request behind an MCP tool call."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):  # no request behind the call (e.g. stdio)
        request = None
    scope = getattr(request, "scope", None)
    name = scope.get(STORE_KEY) if isinstance(scope, dict) else None
    if not name:
        raise ValidationError("this server keeps one store per user: the request carries no "
                              "authenticated user")
    return name
