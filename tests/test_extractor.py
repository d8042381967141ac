"""KnowledgeExtractor, ConflictDetector, recall_with_llm_filter and the maintenance CLI, against
the local LLM server (design §6, §10)."""

from __future__ import annotations

import json
import threading

import pytest

from maclaw_fast.cli import main
from maclaw_fast.errors import ValidationError
from maclaw_fast.maintenance import ConflictDetector, KnowledgeExtractor, recall_with_llm_filter
from maclaw_fast.maintenance.extractor import has_save_signal, is_duplicate
from maclaw_fast.memory import MemoryStore
from tests.llm_server import Empty, Malformed, Reply, Slow, Status
from tests.maint_helpers import H, Clock, Router, kind_of, prompt_text

FAILURES = [Malformed(), Empty(), Slow(3.0), Status(429), Status(500)]
FAIL_IDS = ["malformed", "empty", "slow", "429", "500"]
CONVO = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "How do I run the atlas tests?"},
    {"role": "assistant", "content": "Run `make test` from the repo root."},
    {"role": "tool", "content": "exit 0"},
    {"role": "user", "content": "Always use make, never call pytest directly."},
]
ITEMS = [{"content": "atlas tests run with `make test` from the repository root",
          "category": "project_knowledge"},
         {"content": "Always use make, never call pytest directly", "category": "feedback"},
         {"content": "something", "category": "self_identity"},
         {"content": ""}, "junk"]


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(clock):
    with MemoryStore.in_memory(embedder=None, clock=clock) as s:
        yield s


# --- KnowledgeExtractor ---------------------------------------------------------------------

def test_extract_saves_classified_items(llm_server, llm_protocol, store, clock):
    llm_server.default = Router(extract=ITEMS)
    ex = KnowledgeExtractor(store, llm_server.client(llm_protocol), clock=clock)
    rep = ex.extract(CONVO, project="atlas")
    assert rep.saved == 3 and rep.rejected == 2 and not rep.precompressed
    got = [store.get(i) for i in rep.saved_ids]
    assert [e.category for e in got] == ["project_knowledge", "instruction",
                                         "project_knowledge"]
    assert all(e.tags == ("extracted", "atlas") for e in got)
    text = prompt_text(llm_server.last.json)
    assert "user: How do I run the atlas tests?" in text
    assert "You are helpful" not in text and "exit 0" not in text  # user/assistant only


def test_extract_skips_duplicates_of_stored_entries(llm_server, store, clock):
    store.save("ATLAS tests run with `make test` from the repository root.",
               category="project_knowledge")
    store.save("never call pytest directly", category="instruction")
    llm_server.default = Router(extract=ITEMS[:2] + [ITEMS[0]])
    rep = KnowledgeExtractor(store, llm_server.client(), clock=clock).extract(CONVO)
    assert rep.saved == 0 and rep.duplicates == 3


@pytest.mark.parametrize("message", [
    {"role": "assistant", "content": "好的，已保存到记忆。"},
    {"role": "assistant", "content": "Done - SAVED TO MEMORY"},
    {"role": "assistant", "content": "记住了"},
    {"role": "assistant", "content": "已记录"},
    {"role": "tool", "content": "memory:save ok id=1"},
    {"role": "tool", "content": '{"tool": "memory_save"}'},
    {"role": "tool", "content": "save_memory done"},
    {"role": "tool", "content": "memory:update ok"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "memory_save", "arguments": "{}"}}]},
])
def test_mutual_exclusion_signals(llm_server, store, clock, message):
    llm_server.default = Router(extract=ITEMS)
    ex = KnowledgeExtractor(store, llm_server.client(), clock=clock)
    rep = ex.extract(CONVO + [message])
    assert "already saved" in rep.skipped and not llm_server.requests
    assert ex.last_started is None  # a skipped run does not start the cooldown


def test_signal_outside_the_last_10_messages_does_not_count():
    old = [{"role": "assistant", "content": "saved to memory"}]
    filler = [{"role": "user", "content": f"m{i}"} for i in range(10)]
    assert not has_save_signal(old + filler)
    assert has_save_signal(old + filler[:9])
    assert not has_save_signal([{"role": "user", "content": "已保存到记忆"}])


def test_cooldown_is_set_before_the_work(llm_server, store, clock):
    llm_server.default = Status(500)
    ex = KnowledgeExtractor(store, llm_server.client(), clock=clock)
    rep = ex.extract(CONVO)
    assert rep.error and rep.saved == 0
    rep = ex.extract(CONVO)
    assert rep.skipped.startswith("cooldown") and len(llm_server.requests) == 1
    clock.t += 3599
    assert ex.extract(CONVO).skipped.startswith("cooldown")
    clock.t += 1
    llm_server.default = Router(extract=ITEMS[:1])
    assert ex.extract(CONVO).saved == 1


def test_long_conversations_are_precompressed(llm_server, llm_protocol, store, clock):
    convo = []
    for i in range(11):
        convo += [{"role": "user", "content": f"question {i} about the billing service"},
                  {"role": "assistant", "content": f"answer {i}"}]
    llm_server.default = Router(precompress=Reply(text="Summary: billing uses Stripe."),
                                extract=[{"content": "billing uses Stripe webhooks",
                                          "category": "project_knowledge"}])
    rep = KnowledgeExtractor(store, llm_server.client(llm_protocol), clock=clock).extract(convo)
    assert rep.precompressed and rep.saved == 1
    assert [kind_of(r.json) for r in llm_server.requests] == ["precompress", "extract"]
    assert "question 10" in prompt_text(llm_server.requests[0].json)
    assert "billing uses Stripe." in prompt_text(llm_server.requests[1].json)
    # exactly 20 messages are not precompressed
    store2 = MemoryStore.in_memory(embedder=None, clock=clock)
    llm_server.reset()
    rep = KnowledgeExtractor(store2, llm_server.client(llm_protocol),
                             clock=clock).extract(convo[:20])
    assert not rep.precompressed and [kind_of(r.json) for r in llm_server.requests] == ["extract"]


def test_only_one_extraction_at_a_time(llm_server, store, clock):
    llm_server.default = Router(extract=Slow(0.5, Reply(text="[]")))
    ex = KnowledgeExtractor(store, llm_server.client(), clock=clock)
    results = []
    t = threading.Thread(target=lambda: results.append(ex.extract(CONVO)))
    t.start()
    while not llm_server.requests:
        threading.Event().wait(0.01)
    assert "another extraction" in ex.extract(CONVO).skipped
    t.join()
    assert results[0].saved == 0 and not results[0].skipped


@pytest.mark.parametrize("failure", FAILURES, ids=FAIL_IDS)
def test_extract_fallback(llm_server, llm_protocol, store, clock, failure):
    llm_server.default = failure
    ex = KnowledgeExtractor(store, llm_server.client(llm_protocol, timeout_s=0.5), clock=clock)
    rep = ex.extract(CONVO)
    assert rep.error and rep.saved == 0 and len(store) == 0


def test_extract_validates_and_needs_llm(store):
    ex = KnowledgeExtractor(store)
    assert ex.extract(CONVO).skipped == "no LLM configured"
    with pytest.raises(ValidationError):
        ex.extract("hello")
    with pytest.raises(ValidationError):
        ex.extract([{"content": "no role"}])
    assert is_duplicate("short", ["short"]) and not is_duplicate("tea", ["green tea please"])


# --- ConflictDetector -----------------------------------------------------------------------

def conflict_store(clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    old = s.save("The user prefers the vim editor with the solarized theme",
                 category="preference")
    pinned = s.save("The user prefers the vim editor for commit messages",
                    category="preference", pinned=True)
    s.save("Unrelated: the office is in Berlin", category="user_fact")
    for i in range(30):  # a corpus large enough for BM25 to weigh the shared words
        s.save(f"filler fact {i} about lunch and coffee number {i}", category="user_fact")
    clock.t += H
    new = s.save("The user now prefers the helix editor over the vim editor",
                 category="preference")
    return s, old, pinned, new


def test_conflict_supersedes_older(llm_server, llm_protocol, clock):
    s, old, pinned, new = conflict_store(clock)
    det = ConflictDetector(s, llm_server.client(llm_protocol))
    assert det.candidates(new.id) == [old.id]  # pinned and unrelated entries are not asked
    llm_server.default = Router(conflict={"conflict": True, "reason": "editor changed"})
    rep = det.check(new.id)
    assert rep.superseded_ids == [old.id] and rep.reasons[old.id] == "editor changed"
    assert s.get(old.id).status == "superseded" and s.get(new.id).status == "active"
    hits = [h.entry.id for h in s.recall("vim editor", reinforce=False)]
    assert old.id not in hits
    text = prompt_text(llm_server.last.json)
    assert "Older memory: The user prefers the vim" in text and "Newer memory" in text


def test_conflict_false_and_newer_are_kept(llm_server, clock):
    s, old, _, new = conflict_store(clock)
    llm_server.default = Router(conflict={"conflict": False, "reason": "compatible"})
    assert ConflictDetector(s, llm_server.client()).check(new.id).superseded_ids == []
    # checking the old entry: the candidate (new) is newer, never superseded
    llm_server.default = Router(conflict={"conflict": True})
    assert ConflictDetector(s, llm_server.client()).check(old.id).superseded_ids == []
    assert s.get(new.id).status == "active"


@pytest.mark.parametrize("failure", FAILURES, ids=FAIL_IDS)
def test_conflict_fallback(llm_server, llm_protocol, clock, failure):
    s, old, _, new = conflict_store(clock)
    llm_server.default = failure
    rep = ConflictDetector(s, llm_server.client(llm_protocol, timeout_s=0.5)).check(new.id)
    assert rep.error and rep.superseded_ids == [] and s.get(old.id).status == "active"


# --- recall_with_llm_filter -----------------------------------------------------------------

def filter_store(clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    ids = [s.save(f"deploy note {i}: the deploy step {i} uses make target deploy-{i}",
                  category="project_knowledge").id for i in range(8)]
    return s, ids


def test_filter_uses_llm_order(llm_server, llm_protocol, clock):
    s, ids = filter_store(clock)
    llm_server.default = Router(filter=Reply(
        text=f'The relevant ones:\n```json\n["{ids[6]}", "nope", "{ids[2]}", "{ids[6]}"]\n```'))
    hits = s.recall_with_llm_filter("deploy step", llm_server.client(llm_protocol), max=3)
    assert [h.entry.id for h in hits] == [ids[6], ids[2]]
    assert [s.get(i).access_count for i in (ids[6], ids[2], ids[0])] == [2, 2, 1]
    assert hits[0].entry.access_count == 2
    sent = json.loads(prompt_text(llm_server.last.json).split("(JSON):\n")[1].split("\n\n")[0])
    assert len(sent) == 8 and set(sent[0]) == {"id", "category", "description", "tags"}
    assert all(len(c["description"]) <= 150 for c in sent)


def test_filter_without_llm_or_few_candidates(llm_server, clock):
    s, ids = filter_store(clock)
    top = [h.entry.id for h in s.recall("deploy step", reinforce=False)][:5]
    assert [h.entry.id for h in recall_with_llm_filter(s, "deploy step", None)] == top
    hits = recall_with_llm_filter(s, "deploy step", llm_server.client(), max=10)
    assert len(hits) == 8 and not llm_server.requests
    with pytest.raises(ValidationError):
        recall_with_llm_filter(s, "x", None, max=0)


@pytest.mark.parametrize("failure", FAILURES + [Reply(text="[]")], ids=FAIL_IDS + ["no-ids"])
def test_filter_fallback(llm_server, llm_protocol, clock, failure):
    s, ids = filter_store(clock)
    top = [h.entry.id for h in s.recall("deploy step", reinforce=False)][:3]
    llm_server.default = failure
    hits = s.recall_with_llm_filter("deploy step", llm_server.client(llm_protocol, timeout_s=0.5),
                                    max=3)
    assert [h.entry.id for h in hits] == top


# --- CLI ------------------------------------------------------------------------------------

def test_cli_maintain_gc_archive_extract(tmp_path, llm_server, capsys):
    store = str(tmp_path / "st")
    for i in range(3):
        assert main(["save", f"note {i} on the atlas project", "--category", "preference",
                     "--store", store, "--embedder", "none"]) == 0
    assert main(["save", "Note 0 on the atlas project", "--category", "preference",
                 "--store", store, "--embedder", "none"]) == 0
    capsys.readouterr()
    assert main(["maintain", "--store", store, "--embedder", "none"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["compress"]["deduplicated"] == 1 and rep["backup"]["entries"] == 4
    assert main(["gc", "--store", store, "--embedder", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["before"] == 3
    with MemoryStore.open(store, embedder=None) as s:
        victim = s.entries()[0].id
        s.archive_rows([s.row_of_id(victim)])
    assert main(["archive", "list", "--store", store, "--embedder", "none"]) == 0
    assert victim in capsys.readouterr().out
    assert main(["archive", "restore", victim, "--store", store, "--embedder", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["access_count"] == 1
    assert main(["archive", "restore", "missing", "--store", store, "--embedder", "none"]) == 2
    capsys.readouterr()
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"messages": CONVO}))
    llm_server.default = Router(extract=ITEMS[:2])
    assert main(["extract", "--conversation", str(conv), "--store", store, "--embedder",
                 "none", "--llm-url", llm_server.url + "/v1", "--model", "m",
                 "--protocol", "anthropic", "--api-key", "k"]) == 0
    assert json.loads(capsys.readouterr().out)["saved"] == 2
    assert main(["maintain", "--store", store, "--embedder", "none"]) == 0
    assert "not due for 6.0 h" in json.loads(capsys.readouterr().out)["skipped"]
    assert main(["maintain", "--now", "--store", store, "--embedder", "none", "--llm-url",
                 llm_server.url + "/v1", "--model", "m"]) == 0
    assert "promote" in json.loads(capsys.readouterr().out)
    assert main(["maintain", "--store", store, "--embedder", "none", "--model", "m"]) == 2
