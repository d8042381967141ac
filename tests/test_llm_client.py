"""LLM client against a real local HTTP server speaking both protocols (design §11)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm import (
    LLMClient,
    LLMConfig,
    StreamTextFilter,
    ToolCall,
    chat_json,
    clean_text,
    extract_json,
    iter_sse,
    strip_think,
)
from tests.llm_server import (
    Disconnect,
    Empty,
    LLMServer,
    Malformed,
    Raw,
    Reply,
    Slow,
    Status,
    Truncated,
    call,
)

USER = [{"role": "user", "content": "hello"}]
TOOLS = [
    {"type": "function", "function": {
        "name": "search", "description": "Search memory",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"},
                                                        "limit": {"type": "integer"}},
                       "required": ["q"]}}},
    {"type": "function", "function": {
        "name": "open", "description": "Open a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
]


def _complete(client, stream, messages=USER, **kw):
    deltas: list[str] = []
    reply = client.complete(messages, stream=stream, on_delta=deltas.append if stream else None,
                            **kw)
    return reply, deltas


# --- plain and streamed text ------------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_text_reply(llm_server, llm_protocol, stream):
    llm_server.api_key = "sk-secret"
    llm_server.script(Reply(text="Hello there, general Kenobi", chunk_size=3))
    client = llm_server.client(llm_protocol, api_key="sk-secret")
    messages = [{"role": "system", "content": "Be terse."}, *USER]
    reply, deltas = _complete(client, stream, messages)

    assert reply.text == "Hello there, general Kenobi"
    assert reply.raw_text == "Hello there, general Kenobi"
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert reply.usage["output_tokens"] > 0 and reply.usage["input_tokens"] > 0
    req = llm_server.last
    assert req.problem is None
    assert req.json["model"] == "test-model"
    assert req.json.get("stream", False) is stream
    if stream:
        assert len(deltas) >= 5  # really streamed, not one block
        assert "".join(deltas) == "Hello there, general Kenobi"
    if llm_protocol == "anthropic":
        assert req.path == "/v1/messages"
        assert req.headers["x-api-key"] == "sk-secret"
        assert req.headers["anthropic-version"]
        assert req.json["system"] == "Be terse."
        assert req.json["messages"] == [{"role": "user",
                                         "content": [{"type": "text", "text": "hello"}]}]
        assert req.json["max_tokens"] == 4096
    else:
        assert req.path == "/v1/chat/completions"
        assert req.headers["authorization"] == "Bearer sk-secret"
        assert req.json["messages"] == messages


def test_wrong_api_key_is_not_retried(llm_server, llm_protocol):
    llm_server.api_key = "right"
    client = llm_server.client(llm_protocol, api_key="wrong", max_retries=3)
    with pytest.raises(LLMError, match="401"):
        client.complete(USER)
    assert len(llm_server.requests) == 1


# --- tool calls ---------------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls(llm_server, llm_protocol, stream):
    llm_server.script(Reply(text="Let me look.", chunk_size=3, tool_calls=[
        call("search", q="quarterly {report}", limit=3), call("open", path="/tmp/a b.txt")]))
    client = llm_server.client(llm_protocol)
    reply, deltas = _complete(client, stream, tools=TOOLS)

    assert [tc.name for tc in reply.tool_calls] == ["search", "open"]
    assert reply.tool_calls[0].arguments == {"q": "quarterly {report}", "limit": 3}
    assert reply.tool_calls[1].arguments == {"path": "/tmp/a b.txt"}
    assert all(tc.arguments_valid for tc in reply.tool_calls)
    assert len({tc.id for tc in reply.tool_calls}) == 2
    assert reply.finish_reason == "tool_calls"
    assert reply.text == "Let me look."
    sent = llm_server.last.json["tools"]
    if llm_protocol == "anthropic":
        assert sent[0] == {"name": "search", "description": "Search memory",
                           "input_schema": TOOLS[0]["function"]["parameters"]}
    else:
        assert sent == TOOLS


def test_streamed_tool_arguments_arrive_in_fragments(llm_server, llm_protocol):
    args = {"q": "a long query with \"quotes\" and {braces}", "limit": 10}
    llm_server.script(Reply(tool_calls=[call("search", id="c-1", **args)], chunk_size=2))
    reply, _ = _complete(llm_server.client(llm_protocol), True, tools=TOOLS)
    assert reply.tool_calls == [ToolCall("c-1", "search", args, json.dumps(args))]
    assert reply.text == ""


def test_malformed_tool_arguments_are_reported_not_fatal(llm_server, llm_protocol):
    llm_server.script(Reply(tool_calls=[{"name": "search", "arguments": "{bad json"}]))
    reply = llm_server.client(llm_protocol).complete(USER, tools=TOOLS)
    tc = reply.tool_calls[0]
    assert tc.arguments == {}
    assert tc.arguments_valid is False
    if llm_protocol == "openai":
        assert tc.raw_arguments == "{bad json"


def test_tool_history_is_translated(llm_server, llm_protocol):
    """A full tool round trip must pass the server's protocol checks for both wire formats."""
    llm_server.script(Reply(text="Found it."))
    history = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "find the report"},
        {"role": "assistant", "content": "Searching.", "tool_calls": [
            ToolCall("c1", "search", {"q": "report"}),
            {"id": "c2", "type": "function",
             "function": {"name": "open", "arguments": {"path": "/r.txt"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": "contents"},
    ]
    reply = llm_server.client(llm_protocol).complete(history, tools=TOOLS)
    assert reply.text == "Found it."
    body = llm_server.last.json
    if llm_protocol == "anthropic":
        assert body["system"] == "You are helpful."
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assistant = body["messages"][1]["content"]
        assert assistant[0] == {"type": "text", "text": "Searching."}
        assert assistant[1] == {"type": "tool_use", "id": "c1", "name": "search",
                                "input": {"q": "report"}}
        assert assistant[2]["input"] == {"path": "/r.txt"}
        assert body["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "c1", "content": "r.txt"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "contents"}]
    else:
        calls = body["messages"][2]["tool_calls"]
        assert calls[0]["function"] == {"name": "search", "arguments": '{"q": "report"}'}
        assert calls[1]["function"]["arguments"] == '{"path": "/r.txt"}'
        assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "r.txt"}


def test_reply_to_message_round_trips(llm_server):
    llm_server.script(Reply(tool_calls=[call("open", path="/x")]), Reply(text="done"))
    client = llm_server.client()
    first = client.complete(USER, tools=TOOLS)
    history = [*USER, first.to_message(),
               {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "ok"}]
    assert client.complete(history, tools=TOOLS).text == "done"
    assert llm_server.last.problem is None


# --- think blocks and markup ---------------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_think_blocks_are_stripped(llm_server, llm_protocol, stream):
    raw = "<think>secret plan: say 42</think>\n\nThe answer is 42."
    llm_server.script(Reply(text=raw, chunk_size=3))
    reply, deltas = _complete(llm_server.client(llm_protocol), stream)
    assert reply.text == "The answer is 42."
    assert reply.raw_text == raw
    if stream:
        assert "".join(deltas) == "The answer is 42."
        assert not any("secret" in d or "<" in d for d in deltas)


def test_anthropic_thinking_block_and_openai_reasoning_are_not_text(llm_server, llm_protocol):
    llm_server.script(Reply(thinking="deliberating", text="Result"),
                      Reply(thinking="deliberating", text="Result"))
    client = llm_server.client(llm_protocol)
    assert client.complete(USER).text == "Result"
    deltas: list[str] = []
    assert client.complete(USER, stream=True, on_delta=deltas.append).text == "Result"
    assert "".join(deltas) == "Result"


def test_only_thinking_is_an_empty_reply(llm_server, llm_protocol):
    llm_server.script(Reply(text="<think>unfinished reasoning, cut off by max_tokens"))
    with pytest.raises(LLMError, match="empty reply"):
        llm_server.client(llm_protocol).complete(USER)


def test_strip_think_variants():
    assert strip_think("<think>a</think>B<think>c</think>D") == "BD"
    assert strip_think("prefilled reasoning</think>\nAnswer") == "Answer"
    assert strip_think("Answer <think>trailing, never closed") == "Answer"
    assert strip_think("<THINKING>x</THINKING>ok") == "ok"
    assert strip_think("no tags") == "no tags"
    assert clean_text('Sure.<tool_call>{"name": "x"}</tool_call> Done.') == "Sure. Done."
    assert clean_text("Hi<|tool_calls_section_begin|>junk<|tool_calls_section_end|>") == "Hi"
    assert clean_text('ok <invoke name="f"><parameter>1</parameter></invoke>') == "ok"
    assert clean_text("text [TOOL_CALLS][{...}]") == "text"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=60), max_size=6))
def test_stream_filter_is_split_independent(cuts):
    text = "  <think>hidden <b>x</b></think>Hello <b>bold</b> <tool_call>{}</tool_call>end</think>!"
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    f = StreamTextFilter()
    out = "".join(f.feed(p) for p in pieces) + f.flush()
    assert out == "Hello <b>bold</b> end!"


# --- system merge ---------------------------------------------------------------------------------

SYSTEMS = [{"role": "system", "content": "Rule one."}, *USER,
           {"role": "assistant", "content": "hi"},
           {"role": "system", "content": "Rule two."},
           {"role": "user", "content": "again"}]


def test_system_merge_for_single_system_providers():
    with LLMServer(single_system=True) as srv:
        srv.script(Reply(text="ok"))
        with pytest.raises(LLMError, match="400.*system"):
            srv.client(merge_system=False).complete(SYSTEMS)
        reply = srv.client(merge_system=True).complete(SYSTEMS)
        assert reply.text == "ok"
        sent = srv.last.json["messages"]
        assert sent[0] == {"role": "system", "content": "Rule one.\n\nRule two."}
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]


def test_anthropic_pulls_all_system_messages_out(llm_server):
    llm_server.script(Reply(text="ok"))
    llm_server.client("anthropic").complete(SYSTEMS)
    body = llm_server.last.json
    assert body["system"] == "Rule one.\n\nRule two."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


# --- retries, errors, timeouts ------------------------------------------------------------------

def test_retries_429_and_500_with_backoff_then_success(llm_server, llm_protocol):
    sleeps: list[float] = []
    llm_server.script(Status(429, retry_after=0.05), Status(500), Reply(text="finally"))
    client = llm_server.client(llm_protocol, max_retries=2, backoff_s=0.01, sleep=sleeps.append)
    assert client.complete(USER).text == "finally"
    assert sleeps == [0.05, 0.02]  # Retry-After honoured, then 0.01 * 2**1
    assert len(llm_server.requests) == 3


def test_backoff_really_waits(llm_server):
    llm_server.script(Status(503), Status(503), Reply(text="ok"))
    client = llm_server.client(max_retries=2, backoff_s=0.05)
    t0 = time.perf_counter()
    assert client.complete(USER).text == "ok"
    assert time.perf_counter() - t0 >= 0.05 + 0.1


def test_retry_after_is_capped(llm_server):
    sleeps: list[float] = []
    llm_server.script(Status(429, retry_after=120), Reply(text="ok"))
    client = llm_server.client(max_retries=1, max_backoff_s=0.2, sleep=sleeps.append)
    assert client.complete(USER).text == "ok"
    assert sleeps == [0.2]


def test_gives_up_after_max_retries(llm_server, llm_protocol):
    llm_server.script(Status(503, message="overloaded"), Status(503), Status(503), Reply("late"))
    client = llm_server.client(llm_protocol, max_retries=2, sleep=lambda s: None)
    with pytest.raises(LLMError, match=r"503.*3 attempts"):
        client.complete(USER, stream=True)
    assert len(llm_server.requests) == 3
    assert llm_server.pending == 1


@pytest.mark.parametrize("code", [400, 404, 422])
def test_client_errors_are_not_retried(llm_server, code):
    llm_server.script(Status(code, message="bad thing"), Reply(text="never"))
    with pytest.raises(LLMError, match=f"{code}.*bad thing"):
        llm_server.client(max_retries=3, sleep=lambda s: None).complete(USER)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_json_raises(llm_server, llm_protocol, stream):
    llm_server.script(Malformed(), Reply(text="never"))
    client = llm_server.client(llm_protocol, max_retries=2, sleep=lambda s: None)
    with pytest.raises(LLMError, match="malformed JSON"):
        _complete(client, stream)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_empty_reply_raises(llm_server, llm_protocol, stream):
    llm_server.script(Empty())
    with pytest.raises(LLMError, match="empty reply"):
        _complete(llm_server.client(llm_protocol), stream)
    # The unscripted default is an empty answer too, so stray calls fail loudly.
    with pytest.raises(LLMError, match="empty reply"):
        _complete(llm_server.client(llm_protocol), stream)
    assert len(llm_server.requests) == 2


def test_provider_error_object_in_200_body(llm_server):
    llm_server.script(Raw(json.dumps({"error": {"message": "quota exceeded"}})))
    with pytest.raises(LLMError, match="quota exceeded"):
        llm_server.client().complete(USER)


def test_slow_reply_times_out_within_bound(llm_server, llm_protocol):
    llm_server.script(Slow(3.0), Slow(3.0), Reply(text="never"))
    client = llm_server.client(llm_protocol, timeout_s=0.3, max_retries=1, backoff_s=0.01)
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match="timed out"):
        client.complete(USER)
    elapsed = time.perf_counter() - t0
    assert 0.6 <= elapsed < 1.5
    assert len(llm_server.requests) == 2


def test_slow_then_retry_succeeds(llm_server):
    llm_server.script(Slow(2.0), Slow(0.05, then=Reply(text="in time")))
    client = llm_server.client(timeout_s=0.3, max_retries=1, backoff_s=0.0)
    assert client.complete(USER, stream=True).text == "in time"


def test_dropped_connection_is_retried(llm_server):
    llm_server.script(Disconnect(), Reply(text="second try"))
    assert llm_server.client(max_retries=1).complete(USER).text == "second try"
    with LLMServer() as gone:
        cfg = gone.config(max_retries=1)
    with LLMClient(cfg, sleep=lambda s: None) as client:
        with pytest.raises(LLMError, match="cannot reach.*2 attempts"):
            client.complete(USER)


def test_cut_stream_is_retried_only_before_text_was_shown(llm_server, llm_protocol):
    llm_server.script(Truncated("partial answer"), Reply(text="full answer"))
    client = llm_server.client(llm_protocol, max_retries=2)
    assert client.complete(USER, stream=True).text == "full answer"

    llm_server.reset()
    llm_server.script(Truncated("partial answer"), Reply(text="full answer"))
    shown: list[str] = []
    with pytest.raises(LLMError, match="ended before"):
        client.complete(USER, stream=True, on_delta=shown.append)
    assert "".join(shown).startswith("par")
    assert len(llm_server.requests) == 1  # re-sending would show the text twice


def test_stream_request_answered_with_plain_json(llm_server):
    llm_server.script(Raw(json.dumps({"choices": [{"message": {"content": "plain"},
                                                   "finish_reason": "stop"}]})))
    assert llm_server.client().complete(USER, stream=True).text == "plain"


# --- scripting, concurrency, validation ---------------------------------------------------------

def test_callable_script_answers_by_content(llm_server):
    def echo(body):
        last = body["messages"][-1]["content"]
        return Reply(text=f"echo:{last}")

    llm_server.default = echo
    client = llm_server.client()
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        results[i] = client.complete([{"role": "user", "content": str(i)}]).text

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {i: f"echo:{i}" for i in range(8)}


@pytest.mark.parametrize("bad", [
    [], "hello", [{"role": "robot", "content": "x"}], [{"role": "tool", "content": "x"}],
    [{"role": "user", "content": 5}],
])
def test_bad_messages_raise_before_sending(llm_server, bad):
    with pytest.raises(ValidationError):
        llm_server.client().complete(bad)
    assert llm_server.requests == []


def test_closed_client_raises(llm_server):
    client = llm_server.client()
    client.close()
    with pytest.raises(LLMError, match="closed"):
        client.complete(USER)


def test_chat_json(llm_server):
    llm_server.script(Reply(text='<think>hmm</think>Sure:\n```json\n[{"id": 3}]\n```'),
                      Reply(text='{"conflict": false}'))
    client = llm_server.client()
    assert chat_json(client, USER, expect=list) == [{"id": 3}]
    with pytest.raises(LLMError, match="expected list"):
        chat_json(client, USER, expect=list)
    with pytest.raises(LLMError, match="no LLM configured"):
        chat_json(None, USER)


# --- configuration --------------------------------------------------------------------------------

def test_from_env():
    assert LLMConfig.from_env(environ={}) is None
    assert LLMConfig.from_env(environ={"MACLAW_LLM_BASE_URL": "http://h/v1"}) is None
    cfg = LLMConfig.from_env(environ={
        "MACLAW_LLM_BASE_URL": "https://api.anthropic.com", "MACLAW_LLM_MODEL": "claude-x",
        "MACLAW_LLM_API_KEY": "k", "MACLAW_LLM_PROTOCOL": "Anthropic",
        "MACLAW_LLM_TIMEOUT_S": "12.5"})
    assert (cfg.protocol, cfg.model, cfg.api_key, cfg.timeout_s) == (
        "anthropic", "claude-x", "k", 12.5)
    assert cfg.endpoint() == "https://api.anthropic.com/v1/messages"
    assert cfg.merge_system is False
    mm = LLMConfig.from_env(prefix="X_", environ={"X_BASE_URL": "https://api.minimax.chat/v1",
                                                 "X_MODEL": "MiniMax-M1"})
    assert mm.merge_system is True and mm.protocol == "openai"
    assert mm.endpoint() == "https://api.minimax.chat/v1/chat/completions"
    with pytest.raises(ValidationError, match="protocol"):
        LLMConfig.from_env(environ={"MACLAW_LLM_BASE_URL": "http://h", "MACLAW_LLM_MODEL": "m",
                                    "MACLAW_LLM_PROTOCOL": "grpc"})
    with pytest.raises(ValidationError, match="TIMEOUT_S"):
        LLMConfig.from_env(environ={"MACLAW_LLM_BASE_URL": "http://h", "MACLAW_LLM_MODEL": "m",
                                    "MACLAW_LLM_TIMEOUT_S": "soon"})


def test_from_env_reads_os_environ(monkeypatch):
    monkeypatch.setenv("MACLAW_LLM_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("MACLAW_LLM_MODEL", "local")
    assert LLMConfig.from_env().endpoint() == "http://127.0.0.1:1/v1/chat/completions"
    monkeypatch.delenv("MACLAW_LLM_MODEL")
    assert LLMConfig.from_env() is None


def test_config_validation_and_repr():
    with pytest.raises(ValidationError):
        LLMConfig(base_url="ftp://x", model="m")
    with pytest.raises(ValidationError):
        LLMConfig(base_url="http://x", model="m", timeout_s=0)
    cfg = LLMConfig(base_url="http://x/api/paas/v4", model="m", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(cfg)
    assert cfg.endpoint() == "http://x/api/paas/v4/chat/completions"
    assert LLMConfig(base_url="http://x/v1/chat/completions", model="m").endpoint() == \
        "http://x/v1/chat/completions"


# --- extract_json and SSE parsing ---------------------------------------------------------------

def test_extract_json_code_fences():
    assert extract_json('```json\n{"keep": 0, "remove": [1, 2]}\n```') == {
        "keep": 0, "remove": [1, 2]}
    assert extract_json("Result:\n```\n[1, 2, 3]\n```\nHope that helps!") == [1, 2, 3]


def test_extract_json_prose_and_think():
    text = '<think>maybe {"wrong": 1}</think>Sure! Here it is: {"a": {"b": [1, 2]}} -- enjoy.'
    assert extract_json(text) == {"a": {"b": [1, 2]}}
    # the biggest value wins over small bracketed prose
    assert extract_json('See note [1]. Answer: [{"id": "x"}, {"id": "y"}]') == [
        {"id": "x"}, {"id": "y"}]
    assert extract_json('Got [1] hit: {"hit": 1}', expect=dict) == {"hit": 1}


def test_extract_json_braces_inside_strings():
    text = 'Output: {"merged": "use {curly} and ] brackets", "remove": [2]} end'
    assert extract_json(text) == {"merged": "use {curly} and ] brackets", "remove": [2]}


def test_extract_json_failures():
    with pytest.raises(LLMError, match="no JSON"):
        extract_json("I could not find anything relevant.")
    with pytest.raises(LLMError, match="empty"):
        extract_json("<think>only thinking</think>")
    with pytest.raises(LLMError, match="expected dict"):
        extract_json("[1, 2]", expect=dict)
    with pytest.raises(LLMError, match="no JSON"):
        extract_json('{"unterminated": [1, 2')


def test_iter_sse_multiline_and_comments():
    lines = [": hello", "event: message_start", 'data: {"a":', "data: 1}", "", "", "data:x"]
    events = list(iter_sse(lines))
    assert [(e.event, e.data) for e in events] == [
        ("message_start", '{"a":\n1}'), ("message", "x")]
