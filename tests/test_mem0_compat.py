"""maclaw_fast.compat.mem0.Memory: mem0's README quickstart run unchanged but for its import
(its OpenAI calls answered by the local LLM server over HTTP), mem0's method shapes, routing by
user/agent/run id, search against a plain cosine reference, history, persistence and refusals."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from maclaw_fast.compat.mem0 import Memory
from maclaw_fast.errors import LLMError, ValidationError
from tests.llm_server import Reply, Status

HASH = {"embedder": {"provider": "maclaw", "config": {"model": "hash"}}}

# mem0's README "Basic Usage" quickstart (mem0ai/mem0, Apache-2.0), verbatim except the import of
# Memory: it is the code a mem0 user already has.
QUICKSTART = '''
from openai import OpenAI
from maclaw_fast.compat.mem0 import Memory

openai_client = OpenAI()
memory = Memory()

def chat_with_memories(message: str, user_id: str = "default_user") -> str:
    # Retrieve relevant memories
    relevant_memories = memory.search(query=message, filters={"user_id": user_id}, top_k=3)
    memories_str = "\\n".join(f"- {entry['memory']}" for entry in relevant_memories["results"])

    # Generate Assistant response
    system_prompt = f"You are a helpful AI. Answer the question based on query and memories.\\nUser Memories:\\n{memories_str}"
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": message}]
    response = openai_client.chat.completions.create(model="gpt-5-mini", messages=messages)
    assistant_response = response.choices[0].message.content

    # Create new memories from the conversation
    messages.append({"role": "assistant", "content": assistant_response})
    memory.add(messages, user_id=user_id)

    return assistant_response

def main():
    print("Chat with AI (type 'exit' to quit)")
    while True:
        user_input = input("You: ").strip()
        if user_input.lower() == 'exit':
            print("Goodbye!")
            break
        print(f"AI: {chat_with_memories(user_input)}")

if __name__ == "__main__":
    main()
'''


def _fake_openai(body):
    """The chat reply for the quickstart's own call; a fact list for the extractor's call."""
    system = body["messages"][0]["content"]
    if system.startswith("You are a helpful AI"):
        memories = system.split("User Memories:\n", 1)[1]
        return Reply(text=f"Answer using: {memories or 'nothing yet'}")
    convo = body["messages"][-1]["content"]
    facts = []
    if "tennis" in convo:
        facts.append({"content": "The user plays tennis on weekends", "category": "instruction"})
    if "Lisbon" in convo:
        facts.append({"content": "The user lives in Lisbon", "category": "project_knowledge"})
    return Reply(text=json.dumps(facts))


def test_mem0_readme_quickstart_runs_with_only_the_import_changed(llm_server, monkeypatch,
                                                                   capsys):
    llm_server.default = _fake_openai
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url + "/v1")
    for name in ("MACLAW_LLM_BASE_URL", "MACLAW_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    ns = {"__name__": "quickstart"}
    exec(compile(QUICKSTART, "mem0_quickstart.py", "exec"), ns)
    replies = iter(["I play tennis on weekends", "I live in Lisbon", "What sport do I play?",
                    "exit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(replies))
    ns["main"]()
    out = capsys.readouterr().out
    assert "Goodbye!" in out
    # the third turn's prompt carried the memory extracted from the first
    assert "Answer using: - The user plays tennis on weekends" in out
    mem = ns["memory"]
    stored = [r["memory"] for r in mem.get_all(filters={"user_id": "default_user"})["results"]]
    assert sorted(stored) == ["The user lives in Lisbon", "The user plays tennis on weekends"]
    models = {r.json["model"] for r in llm_server.requests}
    assert models == {"gpt-5-mini"}  # mem0's default model for the extraction too
    mem.close()


def test_shapes_ids_metadata_and_history():
    m = Memory(HASH)
    r = m.add([{"role": "system", "content": "be brief"},
               {"role": "user", "content": "I am vegetarian"},
               {"role": "assistant", "content": "Noted: vegetarian meals", "name": "chef"}],
              user_id="alice", agent_id="chef", metadata={"source": "chat", "n": 3}, infer=False)
    assert [x["event"] for x in r["results"]] == ["ADD", "ADD"]
    assert [x["role"] for x in r["results"]] == ["user", "assistant"]
    mid = r["results"][0]["id"]
    got = m.get(mid)
    assert got["memory"] == "I am vegetarian" and got["user_id"] == "alice"
    assert got["agent_id"] == "chef" and got["metadata"] == {"source": "chat", "n": 3}
    assert set(got) >= {"id", "memory", "hash", "created_at", "updated_at"}
    assert m.get(r["results"][1]["id"])["actor_id"] == "chef"
    m.add("Bob likes jazz", user_id="bob", infer=False)
    m.add("a run note", run_id="r1", infer=False)
    alice = m.get_all(filters={"user_id": "alice"})["results"]
    assert {x["memory"] for x in alice} == {"I am vegetarian", "Noted: vegetarian meals"}
    assert m.get_all(filters={"user_id": "alice", "role": "assistant"})["results"][0][
        "memory"] == "Noted: vegetarian meals"
    assert m.get_all(filters={"user_id": "alice", "n": {"gt": 5}})["results"] == []
    assert len(m.get_all(filters={"user_id": "alice", "OR": [{"role": "user"},
                                                            {"n": {"in": [3]}}]})["results"]) == 2
    assert m.get_all(filters={"user_id": "alice"}, top_k=1)["results"][0]["id"] == mid
    assert m.update(mid, text="I am vegan", metadata={"source": "edit"}) == {
        "message": "Memory updated successfully!"}
    assert m.get(mid)["memory"] == "I am vegan"
    assert m.get(mid)["metadata"] == {"source": "edit", "n": 3}  # merged, as mem0
    m.update(mid, data="I am vegan, mostly")
    assert m.delete(mid) == {"message": "Memory deleted successfully!"}
    assert m.get(mid) is None
    events = m.history(mid)
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "I am vegetarian"), ("UPDATE", "I am vegetarian", "I am vegan"),
        ("UPDATE", "I am vegan", "I am vegan, mostly"), ("DELETE", "I am vegan, mostly", None)]
    assert all(e["memory_id"] == mid for e in events) and events[-1]["is_deleted"]
    assert m.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert m.get_all(filters={"user_id": "alice"})["results"] == []
    assert len(m.get_all(filters={"user_id": "bob"})["results"]) == 1
    m.reset()
    assert m.get_all(filters={"user_id": "bob"})["results"] == []
    assert m.get_all(filters={"run_id": "r1"})["results"] == []


def test_search_is_the_cosine_ranking_with_threshold_and_filters():
    m = Memory(HASH)
    words = ["tea", "coffee", "deploy", "staging", "tennis", "jazz", "lisbon", "python"]
    rng = np.random.default_rng(3)
    for i in range(40):
        m.add(" ".join(rng.choice(words, 3)) + f" note {i}", user_id="u",
              metadata={"i": i}, infer=False)
    items = m.get_all(filters={"user_id": "u"}, top_k=100)["results"]
    emb = m._stores.embedder
    mat = emb.embed([x["memory"] for x in items])
    q = emb.embed(["tea tennis"])[0]
    ref = sorted(((float(s), x["id"]) for s, x in zip(mat @ q, items) if s >= 0.2),
                 key=lambda t: -t[0])
    got = m.search("tea tennis", filters={"user_id": "u"}, top_k=100, threshold=0.2)["results"]
    assert [x["id"] for x in got] == [i for _, i in ref]
    assert np.allclose([x["score"] for x in got], [s for s, _ in ref], atol=1e-5)
    even = m.search("tea tennis", filters={"user_id": "u", "i": {"lt": 20}}, top_k=5)["results"]
    assert len(even) <= 5 and all(x["metadata"]["i"] < 20 for x in even)
    assert m.search("tea", filters={"user_id": "nobody"})["results"] == []


def test_memories_survive_reopen(tmp_path):
    cfg = {**HASH, "vector_store": {"provider": "maclaw", "config": {"path": str(tmp_path)}}}
    m = Memory(cfg)
    mid = m.add("I live in Lisbon", user_id="a/b..c", metadata={"k": [1, 2]},
                infer=False)["results"][0]["id"]
    m.update(mid, text="I live in Porto")
    m.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".mem0-ids", "user-a%2Fb%2E%2Ec"]
    assert str(uuid.UUID(mid)) == mid  # ids are UUIDs, as mem0's
    m = Memory.from_config(cfg)
    assert m.get(mid)["memory"] == "I live in Porto" and m.get(mid)["metadata"] == {"k": [1, 2]}
    assert [e["event"] for e in m.history(mid)] == ["ADD", "UPDATE"]
    assert m.search("Porto", filters={"user_id": "a/b..c"})["results"][0]["id"] == mid
    m.close()


def test_infer_uses_the_extractor_and_reports_llm_failures(llm_server):
    url = llm_server.url + "/v1"
    m = Memory({**HASH, "llm": {"provider": "openai",
                                "config": {"model": "m1", "openai_base_url": url}}})
    llm_server.script(Reply(text=json.dumps([{"content": "Deploys need AWS_REGION set",
                                              "category": "project_knowledge"}])))
    r = m.add("our deploy failed because AWS_REGION was missing", agent_id="ops")
    assert [(x["memory"], x["event"]) for x in r["results"]] == [
        ("Deploys need AWS_REGION set", "ADD")]
    assert llm_server.requests[-1].json["model"] == "m1"
    llm_server.script(Status(500), Status(500), Status(500))
    with pytest.raises(LLMError):
        m.add("another conversation about staging", agent_id="ops")
    assert len(m.get_all(filters={"agent_id": "ops"})["results"]) == 1


def test_unsupported_arguments_are_refused(monkeypatch):
    for name in ("OPENAI_API_KEY", "MACLAW_LLM_BASE_URL", "MACLAW_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    m = Memory(HASH)
    mid = m.add("kept", user_id="u", infer=False)["results"][0]["id"]
    bad = [lambda: m.add("x", user_id="u"),  # infer=True without an LLM
           lambda: m.add("x", infer=False),
           lambda: m.add("x", user_id="u", infer=False, timestamp=1),
           lambda: m.add("x", user_id="u", infer=False, memory_type="procedural_memory"),
           lambda: m.add("x", user_id="u", infer=False, metadata={"o": object()}),
           lambda: m.add([{"role": "robot", "content": "x"}], user_id="u", infer=False),
           lambda: m.search("x", user_id="u"),
           lambda: m.search("x", filters={"user_id": "u"}, rerank=True),
           lambda: m.search("x", filters={"user_id": "u", "k": {"regex": "a"}}),
           lambda: m.search("x", filters={"k": 1}),
           lambda: m.get_all(filters={"user_id": "u"}, limit=3),
           lambda: m.update(mid),
           lambda: m.update(mid, text="y", expiration_date="2030-01-01"),
           lambda: m.delete("user-u/nope"),
           lambda: m.delete_all(),
           lambda: Memory({**HASH, "graph_store": {}}),
           lambda: Memory({"vector_store": {"provider": "qdrant"}}),
           lambda: Memory({"llm": {"provider": "groq", "config": {}}})]
    for call in bad:
        with pytest.raises(ValidationError):
            call()
    assert [x["memory"] for x in m.get_all(filters={"user_id": "u"})["results"]] == ["kept"]


def test_edge_values_behave_as_mem0():
    m = Memory(HASH)
    m.add("green tea in the morning", user_id="u", metadata={"k": 1}, infer=False)
    m.add("black coffee at night", user_id="u", infer=False)
    assert m.get("not-an-id") is None and m.get("user-u/nope") is None
    assert m.search("tea", filters={"user_id": "u"}, top_k=0) == {"results": []}
    assert m.get_all(filters={"user_id": "u"}, top_k=0) == {"results": []}
    for bad in (2.0, -0.5):
        with pytest.raises(ValidationError, match="between 0 and 1"):
            m.search("tea", filters={"user_id": "u"}, threshold=bad)
    with pytest.raises(ValidationError):
        m.search("tea", filters={"user_id": "u"}, top_k=-1)
    assert len(m.get_all(filters={"user_id": "u", "k": "*"})["results"]) == 1  # key present
    plain = m.get_all(filters={"user_id": "u", "k": {"ne": 1}})["results"]
    assert plain == []  # a missing key does not pass a comparison
    one = m.get_all(filters={"user_id": "u"})["results"]
    assert {x["memory"]: x["metadata"] for x in one} == {"green tea in the morning": {"k": 1},
                                                          "black coffee at night": None}
    assert m.get(one[1]["id"])["score"] is None and "score" not in one[1]
    assert len(m.get_all(filters={"user_id": "u", "k": 1})["results"]) == 1


def test_secondary_ids_find_memories_of_other_primary_ids():
    m = Memory(HASH)
    m.add("the chef prefers olive oil", user_id="alice", agent_id="chef", run_id="r1",
          infer=False)
    m.add("the chef buys basil", agent_id="chef", infer=False)
    m.add("bob plays chess", user_id="bob", agent_id="coach", infer=False)
    chef = m.get_all(filters={"agent_id": "chef"})["results"]
    assert {x["memory"] for x in chef} == {"the chef prefers olive oil", "the chef buys basil"}
    hits = m.search("olive oil chef", filters={"agent_id": "chef"}, threshold=0.0)["results"]
    assert hits[0]["memory"] == "the chef prefers olive oil"
    assert [x["score"] for x in hits] == sorted((x["score"] for x in hits), reverse=True)
    assert [x["memory"] for x in m.get_all(filters={"run_id": "r1"})["results"]] == [
        "the chef prefers olive oil"]
    assert m.get_all(filters={"user_id": "alice", "agent_id": "coach"})["results"] == []
    m.delete_all(agent_id="chef")
    assert m.get_all(filters={"agent_id": "chef"})["results"] == []
    assert len(m.get_all(filters={"user_id": "bob"})["results"]) == 1


def test_search_with_a_narrow_filter_looks_past_the_first_candidates():
    m = Memory(HASH)
    for i in range(120):
        m.add(f"note {i} about tea and chess", user_id="u", metadata={"i": i}, infer=False)
    got = m.search("tea chess", filters={"user_id": "u", "i": {"gte": 118}}, threshold=0.0,
                   top_k=5)["results"]
    assert sorted(x["metadata"]["i"] for x in got) == [118, 119]
    every = m.search("tea chess", filters={"user_id": "u"}, threshold=0.0, top_k=200)["results"]
    assert len(every) == 120


def test_async_memory_gives_the_same_results():
    import asyncio

    from maclaw_fast.compat.mem0 import AsyncMemory

    async def script():
        m = AsyncMemory(HASH)
        added = await asyncio.gather(*(m.add(f"fact {i} about tea", user_id="u", infer=False,
                                             metadata={"i": i}) for i in range(10)))
        mid = added[0]["results"][0]["id"]
        await m.update(mid, metadata={"j": 1})
        got = await m.get(mid)
        hits = await m.search("tea", filters={"user_id": "u"}, top_k=3, threshold=0.0)
        every = await m.get_all(filters={"user_id": "u"})
        await m.delete(mid)
        gone = await m.get(mid)
        events = await m.history(mid)
        m.close()
        return got, hits, every, gone, events

    got, hits, every, gone, events = asyncio.run(script())
    assert got["metadata"] == {"i": 0, "j": 1} and gone is None
    assert len(hits["results"]) == 3 and len(every["results"]) == 10
    assert [e["event"] for e in events] == ["ADD", "UPDATE", "DELETE"]


def test_langchain_embedder_config_and_uuid_ids():
    """mem0's ``embedder: {provider: langchain, config: {model: <Embeddings>}}`` works as in mem0,
    and every id is a UUID that get/update/history/delete take."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    m = Memory({"embedder": {"provider": "langchain",
                             "config": {"model": DeterministicFakeEmbedding(size=32)}}})
    ids = [m.add(t, user_id="u", agent_id="a", infer=False)["results"][0]["id"]
           for t in ("green tea at four", "deploy on fridays")]
    assert all(str(uuid.UUID(i)) == i for i in ids) and len(set(ids)) == 2
    hits = m.search("green tea", filters={"agent_id": "a"}, threshold=0.0)["results"]
    assert {h["id"] for h in hits} <= set(ids) and all(-1 <= h["score"] <= 1 for h in hits)
    m.update(ids[1], text="deploy on mondays")
    assert m.get(ids[1])["memory"] == "deploy on mondays"
    m.delete(ids[1])
    assert m.get(ids[1]) is None and [e["event"] for e in m.history(ids[1])] == [
        "ADD", "UPDATE", "DELETE"]
    assert {e["memory_id"] for e in m.history(ids[1])} == {ids[1]}
    assert m.get(str(uuid.uuid4())) is None
    for bad in ({"provider": "langchain", "config": {"model": "text-embedding-3-small"}},
                {"provider": "openai", "config": {"model": "text-embedding-3-small"}}):
        with pytest.raises(ValidationError, match="langchain"):
            Memory({"embedder": bad})
