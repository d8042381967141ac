"""The HTTP client: one ``complete`` call over either protocol, with bounded retries."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm.config import LLMConfig
from maclaw_fast.llm.stream import AnthropicStream, OpenAIStream, iter_sse
from maclaw_fast.llm.text import StreamTextFilter, extract_json
from maclaw_fast.llm.types import LLMReply
from maclaw_fast.llm.wire import (
    build_request,
    check_messages,
    check_tools,
    error_message,
    parse_anthropic,
    parse_openai,
)

log = logging.getLogger("maclaw_fast.llm")


class _Retryable(Exception):
    """A failure worth another attempt (429, 5xx, connection error, timeout, cut stream)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status_error(resp: httpx.Response) -> Exception:
    """The exception for a non-2xx response whose body has been read."""
    try:
        detail = error_message(resp.json())
    except ValueError:
        detail = None
    detail = detail or resp.text[:300] or resp.reason_phrase
    message = f"LLM HTTP {resp.status_code}: {detail}"
    if resp.status_code == 429 or resp.status_code >= 500:
        return _Retryable(message, _retry_after(resp.headers))
    return LLMError(message)


class LLMClient:
    """Chat-completion client for OpenAI- and Anthropic-protocol servers.

    One ``httpx.Client`` is shared by all calls, so an ``LLMClient`` may be used from several
    threads at once. Close it (or use it as a context manager) to release connections.

    Parameters
    ----------
    config : LLMConfig
        Endpoint, model, timeouts and retry policy.
    sleep : callable, optional
        Used to wait between retries (tests pass a recorder).
    transport : httpx.BaseTransport, optional
        Custom transport (proxies, mocks).

    Examples
    --------
    >>> cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)
    >>> with LLMClient(cfg) as llm:                                 # doctest: +SKIP
    ...     reply = llm.complete([{"role": "user", "content": "Say hi"}])
    ...     print(reply.text)
    hi
    """

    def __init__(self, config: LLMConfig, *, sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not isinstance(config, LLMConfig):
            raise ValidationError(f"LLMClient needs an LLMConfig, got {type(config).__name__}")
        self.config = config
        self._url = config.endpoint()
        self._sleep = sleep
        self._http = httpx.Client(timeout=httpx.Timeout(config.timeout_s), transport=transport)
        self._closed = False

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection pool; later calls raise LLMError."""
        self._closed = True
        self._http.close()

    def complete(self, messages: list[dict], tools: list[dict] | None = None,
                 stream: bool = False, on_delta: Callable[[str], None] | None = None, *,
                 tool_choice: Any = None, temperature: float | None = None,
                 max_tokens: int | None = None) -> LLMReply:
        """Send a conversation, return the model's reply.

        Parameters
        ----------
        messages : list of dict
            OpenAI-style messages: ``{"role", "content"}`` plus ``tool_calls`` on assistant
            messages (OpenAI dicts or ``ToolCall``) and ``tool_call_id`` on tool messages.
        tools : list of dict, optional
            OpenAI function tools ``{"type": "function", "function": {name, description,
            parameters}}``; translated for the Anthropic protocol.
        stream : bool
            Use server-sent events; ``on_delta`` then receives text as it arrives.
        on_delta : callable, optional
            Called with each piece of visible text (think blocks filtered out); not called
            when ``stream`` is False.
        tool_choice : str or dict, optional
            ``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function":
            {"name": ...}}`` in OpenAI terms.
        temperature, max_tokens : optional
            Override the config for this call.

        Returns
        -------
        LLMReply

        Raises
        ------
        ValidationError
            Malformed messages or tools (nothing was sent).
        LLMError
            Connection error, timeout, non-2xx status after the retries, malformed JSON, an
            error object from the provider, or a reply with neither text nor tool calls.
            Retries happen only for 429, 5xx, connection errors, timeouts and cut streams,
            and never once streamed text has reached ``on_delta``.

        Examples
        --------
        >>> llm.complete([{"role": "system", "content": "Be brief."},  # doctest: +SKIP
        ...               {"role": "user", "content": "2+2?"}]).text
        '4'
        """
        if self._closed:
            raise LLMError("LLM client is closed")
        if on_delta is not None and not callable(on_delta):
            raise ValidationError("on_delta must be callable")
        headers, body = build_request(
            self.config, check_messages(messages), check_tools(tools) if tools else None,
            bool(stream), tool_choice=tool_choice, temperature=temperature,
            max_tokens=max_tokens)
        cfg = self.config
        attempt = 0
        while True:
            delivered = [False]
            try:
                return self._attempt(headers, body, bool(stream), on_delta, delivered)
            except _Retryable as exc:
                if attempt >= cfg.max_retries or delivered[0]:
                    tries = attempt + 1
                    raise LLMError(
                        f"{exc.message} (gave up after {tries} attempt{'s' * (tries > 1)})"
                    ) from None
                delay = cfg.backoff_s * (2 ** attempt)
                if exc.retry_after is not None:
                    delay = exc.retry_after
                delay = min(delay, cfg.max_backoff_s)
                log.warning("LLM attempt %d failed (%s); retrying in %.2fs",
                            attempt + 1, exc.message, delay)
                self._sleep(delay)
                attempt += 1

    def _attempt(self, headers: dict, body: dict, stream: bool,
                 on_delta: Callable[[str], None] | None, delivered: list[bool]) -> LLMReply:
        try:
            if not stream:
                resp = self._http.post(self._url, headers=headers, json=body)
                if not resp.is_success:
                    raise _status_error(resp)
                return self._parse_body(resp)
            with self._http.stream("POST", self._url, headers=headers, json=body) as resp:
                if not resp.is_success:
                    resp.read()
                    raise _status_error(resp)
                if "text/event-stream" not in resp.headers.get("content-type", ""):
                    # Some servers ignore "stream": true and answer with one JSON body.
                    resp.read()
                    return self._parse_body(resp)
                return self._consume(resp, on_delta, delivered)
        except httpx.TimeoutException as exc:
            raise _Retryable(
                f"LLM request to {self._url} timed out after {self.config.timeout_s}s "
                f"({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise _Retryable(
                f"cannot reach LLM at {self._url}: {type(exc).__name__}: {exc}") from None
        except httpx.HTTPError as exc:
            raise LLMError(f"LLM request to {self._url} failed: {exc}") from None

    def _parse_body(self, resp: httpx.Response) -> LLMReply:
        try:
            body = resp.json()
        except ValueError:
            raise LLMError(
                f"malformed JSON from LLM (HTTP {resp.status_code}): {resp.text[:200]!r}"
            ) from None
        if self.config.protocol == "anthropic":
            return parse_anthropic(body)
        return parse_openai(body)

    def _consume(self, resp: httpx.Response, on_delta: Callable[[str], None] | None,
                 delivered: list[bool]) -> LLMReply:
        visible = StreamTextFilter()

        def on_text(piece: str) -> None:
            if on_delta is None:
                return
            shown = visible.feed(piece)
            if shown:
                delivered[0] = True
                on_delta(shown)

        asm_cls = AnthropicStream if self.config.protocol == "anthropic" else OpenAIStream
        asm = asm_cls(on_text)
        for event in iter_sse(resp.iter_lines()):
            asm.handle(event)
            if asm.done:
                break
        if not asm.finished:
            raise _Retryable("LLM stream ended before the reply was finished")
        if on_delta is not None:
            tail = visible.flush()
            if tail:
                on_delta(tail)
        return asm.reply()


def chat_json(client: LLMClient | None, messages: list[dict], *,
              expect: type | tuple[type, ...] | None = None, **kwargs: Any) -> Any:
    """Ask for a JSON answer and parse it.

    Parameters
    ----------
    client : LLMClient or None
        ``None`` raises LLMError, so callers handle "no LLM" and "LLM failed" alike.
    messages : list of dict
        The prompt.
    expect : type or tuple of types, optional
        ``list`` or ``dict``: the JSON value must be of this type.
    **kwargs
        Passed to :meth:`LLMClient.complete` (``temperature``, ``max_tokens``, ...).

    Returns
    -------
    Any
        The parsed JSON value.

    Raises
    ------
    LLMError
        No client, the call failed, or the reply holds no JSON of the expected type.

    Examples
    --------
    >>> chat_json(llm, [{"role": "user", "content": "List 2 primes as JSON"}],  # doctest: +SKIP
    ...           expect=list)
    [2, 3]
    """
    if client is None:
        raise LLMError("no LLM configured")
    reply = client.complete(messages, **kwargs)
    return extract_json(reply.text, expect=expect)
