"""The HTTP server's bearer-token checks: the one ``Authorization`` header of a request, the 401
answer, and the shared-token middleware (per-user tokens: :mod:`maclaw_fast.server.users`)."""

from __future__ import annotations

import hmac
import json


def authorization(scope) -> bytes | None:
    """The request's ``Authorization`` value; ``b""`` when absent; None when it is given more
    than once (a proxy and a client may disagree on which counts: such a request is refused)."""
    found = [value for key, value in scope.get("headers") or () if key == b"authorization"]
    if len(found) > 1:
        return None
    return found[0] if found else b""


async def send_unauthorized(send, description: str) -> None:
    """Answer an ASGI request with 401 and a bearer challenge (a JSON error body)."""
    body = json.dumps({"error": "unauthorized", "error_description": description}).encode()
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"application/json"),
        (b"www-authenticate", b'Bearer realm="maclaw-fast"'),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: HTTP requests must carry ``Authorization: Bearer <token>`` once.

    Lifespan events pass through untouched (the SDK's session manager starts there).
    """

    def __init__(self, app, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = authorization(scope)
            if given is None:
                await send_unauthorized(send, "more than one Authorization header")
                return
            if not hmac.compare_digest(given, self._expected):
                await send_unauthorized(send, "missing or wrong bearer token")
                return
        await self.app(scope, receive, send)
