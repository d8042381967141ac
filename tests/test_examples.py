"""The examples in examples/ run: the LangGraph agent against the local OpenAI-protocol server
over HTTP (LangChain's own OpenAI client), the mem0 switch-over without an LLM. (The Ray batch
job runs in tests/test_ray.py, on the Ray instance started there.)"""

from __future__ import annotations

import runpy
from pathlib import Path

from tests.llm_server import Reply, call

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _main(name: str):
    return runpy.run_path(str(EXAMPLES / name), run_name="example")["main"]


def test_langgraph_agent_example(llm_server, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url + "/v1")
    llm_server.script(
        Reply(tool_calls=[call("manage_memory", content="The user prefers green tea",
                               action="create")]),
        Reply(text="Saved: you prefer green tea."),
        Reply(tool_calls=[call("search_memory", query="what the user likes to drink")]),
        lambda body: Reply(text="You like green tea." if "green tea" in str(body["messages"][-1])
                           else "I do not know."))
    replies = _main("langgraph_agent.py")(["--store", str(tmp_path / "mem"), "--embedder",
                                           "hash", "I prefer green tea", "What do I drink?"])
    assert replies == ["Saved: you prefer green tea.", "You like green tea."]
    assert "1 memories in" in capsys.readouterr().out
    tools = {t["function"]["name"] for t in llm_server.requests[0].json["tools"]}
    assert tools == {"manage_memory", "search_memory"}


def test_mem0_switch_example(tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "MACLAW_LLM_BASE_URL", "MACLAW_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    out = _main("mem0_switch.py")(["--store", str(tmp_path / "m")])
    assert [h["event"] for h in out["history"]] == ["ADD", "UPDATE"]
    assert out["related"]["results"][0]["memory"] == "Likes to play tennis on weekends"
    assert len(out["all"]["results"]) == 2
