"""A scriptable local LLM server speaking OpenAI chat-completions and Anthropic messages.

Every test that exercises an LLM step talks to this over real HTTP on 127.0.0.1, so the
client's wire handling (JSON, SSE, status codes, timeouts) is what gets tested, not a mock.

Usage::

    with LLMServer() as srv:                # or the ``llm_server`` fixture
        srv.script(Reply(text="hi"), Status(429), Reply(tool_calls=[call("f", x=1)]))
        llm = srv.client("anthropic")       # an LLMClient aimed at this server
        ...
        assert srv.requests[0].json["messages"][0]["role"] == "user"

Scripted responses are consumed one per request, in order; when none is left the server
answers ``srv.default`` (an empty reply unless changed). A callable in the queue (or as the
default) is called with the request's JSON body and returns the response to send.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


# --- scripted responses ------------------------------------------------------------------------

@dataclass
class Reply:
    """A normal answer. ``tool_calls`` items: ``{"name", "arguments": dict | str, "id"?}``
    (see :func:`call`). Streams split text and tool arguments into ``chunk_size`` pieces."""

    text: str = ""
    tool_calls: list = field(default_factory=list)
    finish_reason: str | None = None
    thinking: str = ""  # anthropic: a thinking block; openai: reasoning_content
    usage: dict | None = None
    chunk_size: int = 4


@dataclass
class Status:
    """An HTTP error in the protocol's error format, optionally with ``Retry-After``."""

    code: int
    retry_after: float | str | None = None
    message: str = "scripted error"


@dataclass
class Malformed:
    """HTTP 200 whose body (or SSE data) is not valid JSON."""

    body: str = '{"choices": [{"message": '


@dataclass
class Empty:
    """A well-formed reply with no text and no tool calls."""


@dataclass
class Slow:
    """Wait ``seconds`` before answering ``then`` (to run past a client timeout)."""

    seconds: float
    then: Any = field(default_factory=lambda: Reply(text="late"))


@dataclass
class Disconnect:
    """Close the connection without sending anything."""


@dataclass
class Truncated:
    """Start the answer, then close the connection before it is complete."""

    text: str = "partial answer"


@dataclass
class Raw:
    """Send exactly this body."""

    body: str | bytes
    status: int = 200
    content_type: str = "application/json"


def call(name: str, /, id: str | None = None, **arguments: Any) -> dict:
    """A scripted tool call: ``call("search", q="x")``."""
    out: dict = {"name": name, "arguments": arguments}
    if id:
        out["id"] = id
    return out


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    protocol: str | None
    headers: dict
    json: Any
    problem: str | None = None  # why strict validation rejected it (400), else None
    answered: Any = None  # the scripted response that was sent

    @property
    def messages(self) -> list:
        return (self.json or {}).get("messages", []) if isinstance(self.json, dict) else []


# --- the server --------------------------------------------------------------------------------

class LLMServer:
    """Threaded HTTP server on ``127.0.0.1:<free port>``; see the module docstring.

    Parameters
    ----------
    default : response or callable, optional
        Sent when the script is exhausted (``Reply(text="")``, an empty reply, if omitted).
    strict : bool
        Reject (HTTP 400, like the real APIs) requests that break the protocol.
    single_system : bool
        Also reject OpenAI requests with more than one system message or one that is not
        first, as MiniMax does.
    api_key : str, optional
        When set, requests must carry it (Bearer / x-api-key) or get HTTP 401.
    """

    def __init__(self, default: Any = None, *, strict: bool = True, single_system: bool = False,
                 api_key: str | None = None) -> None:
        self.default = Reply(text="") if default is None else default
        self.strict = strict
        self.single_system = single_system
        self.api_key = api_key
        self._queue: deque = deque()
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._clients: list = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> LLMServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in Slow
        for client in self._clients:
            client.close()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # scripting and inspection
    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("LLMServer is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, *responses: Any) -> LLMServer:
        """Queue responses (a plain ``str`` means ``Reply(text=str)``)."""
        with self._lock:
            self._queue.extend(responses)
        return self

    @property
    def pending(self) -> int:
        """Scripted responses not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    @property
    def last(self) -> Request:
        with self._lock:
            if not self._requests:
                raise AssertionError("the LLM server received no request")
            return self._requests[-1]

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    def config(self, protocol: str = "openai", **overrides: Any):
        """An ``LLMConfig`` for this server: fast-failing defaults (no retries, 5 s timeout)."""
        from maclaw_fast.llm import LLMConfig

        kwargs = {"protocol": protocol, "base_url": self.url + "/v1", "model": "test-model",
                  "api_key": self.api_key or "test-key", "timeout_s": 5.0, "max_retries": 0,
                  "backoff_s": 0.0}
        kwargs.update(overrides)
        return LLMConfig(**kwargs)

    def client(self, protocol: str = "openai", **overrides: Any):
        """An ``LLMClient`` for this server, closed when the server stops."""
        from maclaw_fast.llm import LLMClient

        sleep = overrides.pop("sleep", time.sleep)
        client = LLMClient(self.config(protocol, **overrides), sleep=sleep)
        self._clients.append(client)
        return client

    def _next(self, body: Any) -> Any:
        with self._lock:
            item = self._queue.popleft() if self._queue else self.default
        if callable(item) and not isinstance(item, type):
            item = item(body)
        if isinstance(item, str):
            item = Reply(text=item)
        return item

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)


class _Handler(BaseHTTPRequestHandler):
    owner: LLMServer
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        try:
            self._post()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client gave up (timeout tests); nothing to answer

    def _post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        protocol = ("openai" if path.endswith("/chat/completions")
                    else "anthropic" if path.endswith("/messages") else None)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = Request("POST", self.path, protocol, headers, body)
        self.owner._record(req)
        if protocol is None:
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        problem = self._auth_problem(protocol, headers)
        if problem:
            req.problem = problem
            return self._json(401, _error(protocol, problem, "authentication_error"))
        if self.owner.strict:
            req.problem = check_request(protocol, headers, body, self.owner.single_system)
            if req.problem:
                return self._json(400, _error(protocol, req.problem, "invalid_request_error"))
        response = self.owner._next(body)
        req.answered = response
        self._answer(protocol, body, response)

    def _auth_problem(self, protocol: str, headers: dict) -> str | None:
        key = self.owner.api_key
        if not key:
            return None
        got = (headers.get("x-api-key") if protocol == "anthropic"
               else headers.get("authorization", "").removeprefix("Bearer "))
        return None if got == key else "invalid api key"

    def _answer(self, protocol: str, body: dict, response: Any) -> None:
        stream = bool(isinstance(body, dict) and body.get("stream"))
        model = body.get("model", "test-model") if isinstance(body, dict) else "test-model"
        if isinstance(response, Slow):
            if self.owner._stopping.wait(response.seconds):
                return
            return self._answer(protocol, body, response.then)
        if isinstance(response, Status):
            extra = {}
            if response.retry_after is not None:
                extra["Retry-After"] = str(response.retry_after)
            kind = "rate_limit_error" if response.code == 429 else "api_error"
            return self._json(response.code, _error(protocol, response.message, kind), extra)
        if isinstance(response, Disconnect):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(response, Raw):
            data = response.body.encode() if isinstance(response.body, str) else response.body
            return self._send(response.status, response.content_type, data)
        if isinstance(response, Malformed):
            if stream:
                return self._sse([("message", response.body)], ended=False)
            return self._send(200, "application/json", response.body.encode())
        if isinstance(response, Truncated):
            reply = Reply(text=response.text)
            if stream:
                events = (anthropic_events(reply, model, body) if protocol == "anthropic"
                          else openai_chunks(reply, model, body))
                return self._sse(events[: max(2, len(events) // 2)], ended=False)
            payload = (anthropic_json(reply, model, body) if protocol == "anthropic"
                       else openai_json(reply, model, body))
            data = json.dumps(payload).encode()
            return self._send(200, "application/json", data[: len(data) // 2],
                              length=len(data))
        if isinstance(response, Empty):
            response = Reply(text="")
        if not isinstance(response, Reply):
            raise TypeError(f"LLMServer cannot send {response!r}")
        if protocol == "anthropic":
            if stream:
                return self._sse(anthropic_events(response, model, body))
            return self._json(200, anthropic_json(response, model, body))
        if stream:
            return self._sse(openai_chunks(response, model, body))
        return self._json(200, openai_json(response, model, body))

    # low-level writers
    def _send(self, code: int, ctype: str, data: bytes, extra: dict | None = None,
              length: int | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _json(self, code: int, payload: Any, extra: dict | None = None) -> None:
        self._send(code, "application/json", json.dumps(payload).encode(), extra)

    def _sse(self, events: list[tuple[str, str]], ended: bool = True) -> None:
        # HTTP/1.0 without Content-Length: the body ends when the connection closes.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for name, data in events:
            head = "" if name == "message" else f"event: {name}\n"
            self.wfile.write(f"{head}data: {data}\n\n".encode())
            self.wfile.flush()
        if not ended:
            self.close_connection = True


def _error(protocol: str, message: str, kind: str) -> dict:
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": None}}



Responder = Callable[[Any], Any]


# --- wire formats ------------------------------------------------------------------------------

def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i:i + size] for i in range(0, len(text), size)]


def _calls(reply: Reply, prefix: str) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) per scripted call; arguments stay a str when scripted as one."""
    out = []
    for n, c in enumerate(reply.tool_calls):
        out.append((c.get("id") or f"{prefix}_{n}", c["name"], c.get("arguments", {})))
    return out


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _usage(reply: Reply, body: Any) -> tuple[int, int]:
    if reply.usage:
        return (int(reply.usage.get("input_tokens", reply.usage.get("prompt_tokens", 0))),
                int(reply.usage.get("output_tokens", reply.usage.get("completion_tokens", 0))))
    prompt = len(json.dumps((body or {}).get("messages", []))) // 4
    return prompt, len(reply.text) // 4 + 1


def openai_json(reply: Reply, model: str, body: Any) -> dict:
    calls = _calls(reply, "call")
    message: dict = {"role": "assistant", "content": reply.text if reply.text or not calls
                     else None}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function",
                                  "function": {"name": n, "arguments": _args_text(a)}}
                                 for i, n, a in calls]
    if reply.thinking:
        message["reasoning_content"] = reply.thinking
    p, c = _usage(reply, body)
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": reply.finish_reason or
                         ("tool_calls" if calls else "stop")}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}


def openai_chunks(reply: Reply, model: str, body: Any) -> list[tuple[str, str]]:
    def chunk(delta: dict, finish: str | None = None, choices: bool = True, **extra) -> tuple:
        payload = {"id": "chatcmpl-test", "object": "chat.completion.chunk",
                   "created": int(time.time()), "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
                   if choices else [], **extra}
        return ("message", json.dumps(payload))

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": p}) for p in _pieces(reply.thinking, reply.chunk_size)]
    events += [chunk({"content": p}) for p in _pieces(reply.text, reply.chunk_size)]
    calls = _calls(reply, "call")
    for index, (cid, name, args) in enumerate(calls):
        events.append(chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        for piece in _pieces(_args_text(args), reply.chunk_size):
            events.append(chunk({"tool_calls": [{"index": index,
                                                 "function": {"arguments": piece}}]}))
    events.append(chunk({}, reply.finish_reason or ("tool_calls" if calls else "stop")))
    p, c = _usage(reply, body)
    events.append(chunk({}, choices=False, usage={"prompt_tokens": p, "completion_tokens": c,
                                                  "total_tokens": p + c}))
    events.append(("message", "[DONE]"))
    return events


def anthropic_json(reply: Reply, model: str, body: Any) -> dict:
    content: list[dict] = []
    if reply.thinking:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    calls = _calls(reply, "toolu")
    for cid, name, args in calls:
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass  # a deliberately broken input is sent as the string
        content.append({"type": "tool_use", "id": cid, "name": name, "input": args})
    p, c = _usage(reply, body)
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
            "content": content,
            "stop_reason": reply.finish_reason or ("tool_use" if calls else "end_turn"),
            "stop_sequence": None, "usage": {"input_tokens": p, "output_tokens": c}}


def anthropic_events(reply: Reply, model: str, body: Any) -> list[tuple[str, str]]:
    def ev(kind: str, **payload) -> tuple[str, str]:
        return (kind, json.dumps({"type": kind, **payload}))

    p, c = _usage(reply, body)
    events = [ev("message_start", message={
        "id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": p, "output_tokens": 1}}), ev("ping")]
    index = 0
    if reply.thinking:
        events.append(ev("content_block_start", index=index,
                         content_block={"type": "thinking", "thinking": ""}))
        events += [ev("content_block_delta", index=index,
                      delta={"type": "thinking_delta", "thinking": piece})
                   for piece in _pieces(reply.thinking, reply.chunk_size)]
        events.append(ev("content_block_stop", index=index))
        index += 1
    if reply.text:
        events.append(ev("content_block_start", index=index,
                         content_block={"type": "text", "text": ""}))
        events += [ev("content_block_delta", index=index,
                      delta={"type": "text_delta", "text": piece})
                   for piece in _pieces(reply.text, reply.chunk_size)]
        events.append(ev("content_block_stop", index=index))
        index += 1
    calls = _calls(reply, "toolu")
    for cid, name, args in calls:
        events.append(ev("content_block_start", index=index, content_block={
            "type": "tool_use", "id": cid, "name": name, "input": {}}))
        events += [ev("content_block_delta", index=index,
                      delta={"type": "input_json_delta", "partial_json": piece})
                   for piece in _pieces(_args_text(args), reply.chunk_size)]
        events.append(ev("content_block_stop", index=index))
        index += 1
    events.append(ev("message_delta", delta={
        "stop_reason": reply.finish_reason or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None}, usage={"output_tokens": c}))
    events.append(ev("message_stop"))
    return events


# --- protocol checks (what the real APIs reject with HTTP 400) ---------------------------------

_OPENAI_ROLES = {"system", "user", "assistant", "tool", "developer"}
_BLOCK_TYPES = {"text", "image", "document", "tool_use", "tool_result", "thinking",
                "redacted_thinking"}


def check_request(protocol: str, headers: dict, body: Any, single_system: bool) -> str | None:
    """Why a request breaks the protocol, or None when it is well formed."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: must be a non-empty list"
    if "stream" in body and not isinstance(body["stream"], bool):
        return "stream: must be a boolean"
    if protocol == "anthropic":
        return _check_anthropic(headers, body, messages)
    return _check_openai(body, messages, single_system)


def _check_openai(body: dict, messages: list, single_system: bool) -> str | None:
    open_ids: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _OPENAI_ROLES:
            return f"messages[{i}]: invalid role"
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return f"messages[{i}].content: must be a string, a list or null"
        if m["role"] == "system" and single_system and (i != 0 or any(
                x.get("role") == "system" for x in messages[i + 1:])):
            return "invalid message role: system (only one leading system message allowed)"
        if m["role"] == "assistant":
            for tc in m.get("tool_calls") or ():
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not tc.get("id") or tc.get("type") != "function" or not isinstance(fn, dict) \
                        or not fn.get("name") or not isinstance(fn.get("arguments"), str):
                    return f"messages[{i}].tool_calls: malformed tool call {tc!r}"
                open_ids.add(tc["id"])
        if m["role"] == "tool":
            if m.get("tool_call_id") not in open_ids:
                return (f"messages[{i}]: tool message answers unknown tool_call_id "
                        f"{m.get('tool_call_id')!r}")
    for j, t in enumerate(body.get("tools") or ()):
        fn = t.get("function") if isinstance(t, dict) else None
        if t.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name") \
                or not isinstance(fn.get("parameters", {}), dict):
            return f"tools[{j}]: expected {{type: function, function: {{name, parameters}}}}"
    return None


def _check_anthropic(headers: dict, body: dict, messages: list) -> str | None:
    if not headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] <= 0:
        return "max_tokens: field required (positive integer)"
    if "system" in body and not isinstance(body["system"], (str, list)):
        return "system: must be a string or a list of text blocks"
    previous_tool_uses: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            return f"messages[{i}].role: must be user or assistant, got {role!r}"
        if i == 0 and role != "user":
            return "messages: first message must use the user role"
        if i > 0 and messages[i - 1].get("role") == role:
            return f"messages[{i}]: roles must alternate between user and assistant"
        content = m.get("content")
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        elif isinstance(content, list) and content:
            blocks = content
        else:
            return f"messages[{i}].content: must be a string or a non-empty list of blocks"
        tool_uses = set()
        for b in blocks:
            kind = b.get("type") if isinstance(b, dict) else None
            if kind not in _BLOCK_TYPES:
                return f"messages[{i}].content: unknown block type {kind!r}"
            if kind == "text" and not b.get("text"):
                return f"messages[{i}]: text content blocks must be non-empty"
            if kind == "tool_use":
                if role != "assistant" or not b.get("id") or not b.get("name") \
                        or not isinstance(b.get("input"), dict):
                    return f"messages[{i}]: malformed tool_use block {b!r}"
                tool_uses.add(b["id"])
            if kind == "tool_result":
                if role != "user" or b.get("tool_use_id") not in previous_tool_uses:
                    return (f"messages[{i}]: tool_result must answer a tool_use of the "
                            f"previous assistant message, got {b.get('tool_use_id')!r}")
        previous_tool_uses = tool_uses
    for j, t in enumerate(body.get("tools") or ()):
        if not isinstance(t, dict) or not t.get("name") or "function" in t \
                or not isinstance(t.get("input_schema"), dict):
            return f"tools[{j}]: expected {{name, description, input_schema}}"
    return None
