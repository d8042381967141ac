"""A LangGraph ReAct agent whose long-term memory is a maclaw_fast store.

LangMem's memory tools save and search through ``MaclawLangGraphStore``; the memories persist in
``--store`` and come back in the next run. Needs an OpenAI-compatible chat model:

    OPENAI_API_KEY=... python examples/langgraph_agent.py --store ./agent-memory \
        "I prefer green tea" "What do I like to drink?"

(``OPENAI_BASE_URL`` points it at any compatible server; ``--model`` picks the model.)
"""

from __future__ import annotations

import argparse
import warnings

from langchain_openai import ChatOpenAI
from langmem import create_manage_memory_tool, create_search_memory_tool

from maclaw_fast.integrations.langchain import MaclawEmbeddings
from maclaw_fast.integrations.langgraph_store import MaclawLangGraphStore

with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.x
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def main(argv=None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("messages", nargs="+", help="user messages, one agent run each")
    ap.add_argument("--store", required=True, help="directory of the memory store")
    ap.add_argument("--user", default="me")
    ap.add_argument("--model", default="gpt-4o-mini")
    ap.add_argument("--embedder", default="default", help="default (MiniLM ONNX) or hash")
    args = ap.parse_args(argv)

    emb = MaclawEmbeddings(args.embedder)
    store = MaclawLangGraphStore(path=args.store, index={"dims": emb.embedder.dim, "embed": emb,
                                                         "fields": ["content"]})
    namespace = ("memories", args.user)
    agent = create_react_agent(
        ChatOpenAI(model=args.model),
        [create_manage_memory_tool(namespace=namespace),
         create_search_memory_tool(namespace=namespace)],
        store=store,
        prompt="You are a helpful assistant. Save what the user wants remembered; search your "
               "memories before answering questions about the user.")
    replies = []
    for message in args.messages:
        out = agent.invoke({"messages": [("user", message)]})
        replies.append(out["messages"][-1].content)
        print(f"you: {message}\nagent: {replies[-1]}")
    print(f"{len(store.search(namespace, limit=1000))} memories in {args.store}")
    store.close()
    return replies


if __name__ == "__main__":
    main()
