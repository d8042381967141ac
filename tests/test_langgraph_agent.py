"""A LangGraph ReAct agent whose memory tools (LangMem's manage/search tools and a tool reading
the injected store) write to and read from MaclawLangGraphStore. The model is scripted; the
graph, the tool node and the tools are LangGraph's and LangMem's own."""

from __future__ import annotations

import warnings
from typing import Annotated

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import InjectedStore
from langgraph.store.base import BaseStore
from langmem import create_manage_memory_tool, create_search_memory_tool

from maclaw_fast.integrations.langgraph_store import MaclawLangGraphStore
from tests.lg_helpers import ScriptedChatModel, TrigramEmbeddings, tool_call

with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in LangGraph 1.x
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@tool
def count_memories(store: Annotated[BaseStore, InjectedStore()]) -> str:
    """How many memories the user has."""
    return str(len(store.search(("memories", "lin"), limit=100)))


def test_react_agent_remembers_through_our_store(tmp_path):
    emb = TrigramEmbeddings(64)
    store = MaclawLangGraphStore(index={"dims": 64, "embed": emb, "fields": ["content"]},
                                 path=tmp_path / "agent")
    tools = [create_manage_memory_tool(namespace=("memories", "lin")),
             create_search_memory_tool(namespace=("memories", "lin")), count_memories]
    model = ScriptedChatModel(script=[
        tool_call("manage_memory", {"content": "Lin prefers green tea", "action": "create"}, "1"),
        tool_call("manage_memory", {"content": "Lin deploys atlas on Fridays",
                                    "action": "create"}, "2"),
        AIMessage(content="Noted."),
        tool_call("search_memory", {"query": "what tea does Lin like"}, "3"),
        tool_call("count_memories", {}, "4"),
        AIMessage(content="Green tea."),
    ])
    agent = create_react_agent(model, tools, store=store)
    agent.invoke({"messages": [("user", "I like green tea; I deploy atlas on Fridays")]})
    saved = store.search(("memories", "lin"), limit=10)
    assert sorted(i.value["content"] for i in saved) == ["Lin deploys atlas on Fridays",
                                                         "Lin prefers green tea"]
    out = agent.invoke({"messages": [("user", "what tea do I like?")]})
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Lin prefers green tea" in results[0].content
    first = results[0].content.index("green tea")
    assert "atlas" not in results[0].content or results[0].content.index("atlas") > first
    assert results[1].content == "2"
    store.close()
    reopened = MaclawLangGraphStore(index={"dims": 64, "embed": emb, "fields": ["content"]},
                                    path=tmp_path / "agent")
    assert len(reopened.search(("memories", "lin"))) == 2
    reopened.close()
