"""The maintenance pipeline (design §10): dedup, LLM merge/compression/compact forms, promote,
reflect, backups, the circuit breaker, and every LLM step's fallback against a real local
HTTP server speaking both protocols."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.maintenance import Maintenance, compress, promote, reflect
from maclaw_fast.maintenance.compress import find_exact_duplicates, validate_merge_reply
from maclaw_fast.maintenance.pipeline import list_backups
from maclaw_fast.maintenance.prompts import cut_bytes, plain_reply
from maclaw_fast.maintenance.reflect import LAST_REFLECTION
from maclaw_fast.memory import MemoryStore
from tests.llm_server import Empty, Malformed, Reply, Slow, Status
from tests.maint_helpers import H, T0, Clock, Router, kind_of, prompt_text

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu").split()
OPEN_CATS = ["instruction", "preference", "project_knowledge", "session_checkpoint",
             "conversation_summary", "user_fact"]
FAILURES = [Malformed(), Empty(), Slow(3.0), Status(429), Status(500)]
FAIL_IDS = ["malformed", "empty", "slow", "429", "500"]


def rec(i, content, category, *, access=2, age_h=10.0, pinned=False, tags=()):
    ts = T0 - age_h * H
    return {"id": f"m{i:04d}", "content": content, "category": category, "tags": tuple(tags),
            "created_at": ts, "updated_at": ts, "access_count": access, "strength": 1.0,
            "status": "active", "pinned": pinned, "compact_form": "", "related_ids": [],
            "related_strengths": [], "embedding": None}


def planted_records(seed=0):
    """500 records: 390 distinct bases, 10 controls that must survive, 100 planted duplicates
    that must go. Returns (records, ids of the planted duplicates)."""
    rng = np.random.default_rng(seed)
    base = []
    for i in range(390):
        cat = "self_identity" if i < 10 else OPEN_CATS[i % len(OPEN_CATS)]
        words = " ".join(rng.choice(WORDS, 6))
        base.append(rec(i, f"memo-{i:04d} {words} end-{i:04d}", cat, access=3,
                        pinned=(i % 37 == 5)))
    out, planted, k = list(base), set(), 1000
    for j in range(50):  # case / whitespace variants, any category, fewer accesses
        src = base[(j * 7) % 390]
        text = src["content"].upper() if j % 2 else f"  {src['content']}\t "
        out.append(rec(k, text, OPEN_CATS[j % len(OPEN_CATS)], access=1))
        planted.add(f"m{k:04d}")
        k += 1
    for j in range(50):  # in-category substrings of ≥ 20 characters
        src = base[10 + (j * 11) % 380]
        a = int(rng.integers(0, 5))
        n = 20 + int(rng.integers(0, 10))
        while len(src["content"][a:a + n].strip()) < 20:
            n += 1
        out.append(rec(k, src["content"][a:a + n], src["category"], access=9))
        planted.add(f"m{k:04d}")
        k += 1
    unpinned = [b for b in base[10:] if not b["pinned"]]
    controls = [
        rec(k, unpinned[0]["content"][2:30], OPEN_CATS[(OPEN_CATS.index(
            unpinned[0]["category"]) + 1) % 6]),  # substring, other category
        rec(k + 1, unpinned[1]["content"][:19], unpinned[1]["category"]),  # < 20 characters
        rec(k + 2, unpinned[2]["content"][:25], unpinned[2]["category"], pinned=True),
        rec(k + 3, base[0]["content"][:24], "self_identity"),  # protected substring
        rec(k + 4, unpinned[3]["content"] + " plus more", unpinned[3]["category"], access=1),
    ]
    # the last control *contains* a base entry: the shorter base (unpinned) is the duplicate
    planted.add(unpinned[3]["id"])
    for c in range(5, 10):
        controls.append(rec(k + c, f"control {c} " + " ".join(rng.choice(WORDS, 5)),
                            OPEN_CATS[c % 6]))
    out += controls
    planted.discard(None)
    return out, planted


@pytest.fixture
def clock():
    return Clock()


def test_dedup_removes_exactly_the_planted_duplicates(clock):
    records, planted = planted_records()
    store = MemoryStore.in_memory(embedder=None, clock=clock)
    assert store.import_records(records) == 500 and len(store) == 500
    protected = {e.id for e in store.entries() if e.pinned or e.category == "self_identity"}
    assert set(find_exact_duplicates(store)) == planted
    report = compress(store)
    assert set(report.dedup_ids) == planted and report.deduplicated == len(planted)
    assert len(store) == 500 - len(planted)
    assert protected <= {e.id for e in store.entries()}
    assert report.llm_calls == 0 and not report.llm_errors
    assert compress(store).deduplicated == 0  # idempotent


def test_dedup_tie_breaks(clock):
    store = MemoryStore.in_memory(embedder=None, clock=clock)
    store.import_records([rec(1, "Use pnpm in this repository", "instruction", access=2),
                          rec(2, "use pnpm in this repository", "instruction", access=5),
                          rec(3, "Deploy on fridays only", "preference", age_h=5),
                          rec(4, "deploy on fridays only", "preference", age_h=50),
                          rec(5, "Pinned note text", "user_fact", pinned=True, access=1),
                          rec(6, "pinned note text", "user_fact", access=9)])
    # lower access goes; then the older; a pinned member always survives
    assert sorted(find_exact_duplicates(store)) == ["m0001", "m0004", "m0006"]


def test_dedup_is_one_journal_record_and_fast(tmp_path, clock):
    records, planted = planted_records(1)
    with MemoryStore.open(tmp_path / "st", embedder=None, clock=clock) as s:
        s.import_records(records)
        seq = s.durability.seq
        t = time.perf_counter()
        assert set(compress(s).dedup_ids) == planted
        assert time.perf_counter() - t < 0.5
        assert s.durability.seq == seq + 1


# --- LLM merge -------------------------------------------------------------------------------

def merge_store(clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    s.import_records([
        rec(1, "Prefers dark mode in the editor", "preference", access=2, tags=["ui"]),
        rec(2, "Likes a dark theme for editors", "preference", access=7, tags=["editor"]),
        rec(3, "Uses fish as the login shell", "preference", access=1),
        rec(4, "I am Claw, the build assistant", "self_identity"),
    ])
    return s


def test_merge_applies_a_validated_group(llm_server, llm_protocol, clock):
    s = merge_store(clock)
    merged = "Prefers dark mode / dark theme in editors"
    router = Router(merge=Reply(text=f'Sure! Here are the groups:\n```json\n'
                                     f'[{{"keep": 0, "remove": [1], "merged": "{merged}"}}]\n'
                                     f'```\nLet me know.'))
    llm_server.default = router
    rep = compress(s, llm_server.client(llm_protocol))
    assert (rep.merged_groups, rep.merged_removed, rep.merge_rejected) == (1, 1, 0)
    assert not rep.llm_errors
    assert "m0001" not in s and "m0002" in s  # the most-used member survives
    e = s.get("m0002")
    assert e.content == merged and set(e.tags) == {"ui", "editor"} and e.access_count == 7
    assert e.updated_at == T0 - 10 * H  # rewording does not refresh
    # the protected entry was never shown to the LLM
    merge_req = [r for r in llm_server.requests if kind_of(r.json) == "merge"][0]
    assert "Claw" not in prompt_text(merge_req.json)
    assert "[0] Prefers dark mode" in prompt_text(merge_req.json)


@pytest.mark.parametrize("reply", [
    [{"keep": 5, "remove": [1], "merged": "x"}],
    [{"keep": 0, "remove": [0], "merged": "x"}],
    [{"keep": 0, "remove": [], "merged": "x"}],
    [{"keep": 0, "remove": [1], "merged": "  "}],
    [{"keep": True, "remove": [1], "merged": "x"}],
    [{"keep": 0, "remove": [1, 1], "merged": "x"}],
    [{"keep": "0", "remove": [1], "merged": "x"}],
    [{"keep": 0, "remove": [1], "merged": "I am Claw, the build assistant"}],  # duplicate
    {"keep": 0, "remove": [1], "merged": "x"},
    ["nonsense"],
], ids=["range", "keep-in-remove", "empty-remove", "empty-merged", "bool", "twice", "str",
        "duplicate-content", "not-a-list", "not-an-object"])
def test_merge_rejects_invalid_replies(llm_server, reply, clock):
    s = merge_store(clock)
    before = {e.id: e for e in s.entries()}
    llm_server.default = Router(merge=reply)
    rep = compress(s, llm_server.client())
    assert rep.merged_groups == 0
    assert rep.merge_rejected >= 1 or rep.llm_errors
    assert {e.id: e.content for e in s.entries()} == {k: v.content for k, v in before.items()}


def test_validate_merge_reply_index_used_twice():
    groups, rejected = validate_merge_reply(
        [{"keep": 0, "remove": [1], "merged": "a"}, {"keep": 2, "remove": [0], "merged": "b"},
         {"keep": 2, "remove": [3], "merged": "c"}], 4)
    assert groups == [(0, [1], "a"), (2, [3], "c")] and rejected == 1


def test_merge_preselects_by_cosine(llm_server, clock):
    s = MemoryStore.in_memory(embedder="hash", clock=clock)
    a = np.zeros(s.dim, np.float32)
    a[0] = 1.0
    b = a.copy()
    b[1] = 0.2
    far = np.zeros(s.dim, np.float32)
    far[5] = 1.0
    ids = [s.save(t, category="preference", vector=v).id
           for t, v in (("likes tea", a), ("enjoys tea", b / np.linalg.norm(b)),
                        ("uses vim", far), ("rides a bike", -a))]
    from maclaw_fast.maintenance.compress import merge_batches

    assert merge_batches(s) == [("preference", ids[:2])]


# --- LLM compression and compact forms ----------------------------------------------------------

LONG = ("The staging deployment for project atlas runs through `make release ENV=staging` "
        "from the repository root; it needs AWS_REGION=eu-west-1 and the VPN to be up, and "
        "it takes roughly twelve minutes, after which you should check /var/log/atlas/deploy.log"
        " for errors and also verify the health endpoint responds.")


@pytest.mark.parametrize("factor,accepted", [(0.49, True), (0.5, False), (0.8, False)])
def test_compression_needs_under_half(llm_server, llm_protocol, clock, factor, accepted):
    s = MemoryStore.in_memory(embedder="hash", clock=clock)
    e = s.save(LONG, category="project_knowledge", tags=["atlas"])
    short = ("make release ENV=staging; AWS_REGION=eu-west-1, VPN; ~12 min; check "
             "/var/log/atlas/deploy.log and health endpoint. ")
    text = (short * 3)[: math.ceil(len(LONG) * factor) - 1] + "."  # exactly ⌈factor·len⌉
    llm_server.default = Router(compress=Reply(text=f"```\n{text}\n```"), compact=[])
    rep = compress(s, llm_server.client(llm_protocol))
    got = s.get(e.id)
    if accepted:
        assert rep.compressed == 1 and got.content == text.strip()
        assert got.updated_at == e.updated_at and got.tags == ("atlas",)
        assert s.recall("deploy.log", reinforce=False)[0].entry.id == e.id
    else:
        assert rep.compressed == 0 and rep.compress_rejected == 1 and got.content == LONG
    req = [r for r in llm_server.requests if kind_of(r.json) == "compress"][0]
    assert f"fewer than {int(len(LONG) * 0.5)} characters" in prompt_text(req.json)
    assert "Keep names, numbers, paths, commands" in prompt_text(req.json)


def test_pinned_and_protected_are_not_compressed(llm_server, clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    s.save(LONG, category="self_identity")
    s.save(LONG + " (pinned)", category="instruction", pinned=True)
    llm_server.default = Router(compress=Reply(text="short"), compact=[])
    rep = compress(s, llm_server.client())
    assert rep.compressed == 0 and "compress" not in llm_server.default.seen


def test_compact_backfill(llm_server, clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    a = s.save("The CI pipeline runs on GitHub Actions with a matrix of py3.11/3.12",
               category="project_knowledge")
    b = s.save("Always answer in British English spelling", category="instruction")
    s.save("short one", category="preference")  # ≤ 20 characters: not asked
    s.save("I am the assistant of the atlas team", category="self_identity")
    reply = [{"index": 0, "compact": "CI: GH Actions, py3.11/3.12"},
             {"index": 1, "compact": "Always answer in British English spelling, please!"},
             {"index": 0, "compact": "twice"}, {"index": 9, "compact": "x"}]
    llm_server.default = Router(compact=lambda body: Reply(text=json.dumps(
        reply if "GitHub Actions" in prompt_text(body).split("[0]")[1].split("[1]")[0]
        else [reply[1] | {"index": 0}, reply[0] | {"index": 1}])))
    rep = compress(s, llm_server.client())
    assert rep.compact_filled == 1 and rep.compact_rejected == 3
    assert s.get(a.id).compact_form == "CI: GH Actions, py3.11/3.12"
    assert s.get(b.id).compact_form == ""  # longer than the content: rejected
    text = prompt_text(llm_server.requests[-1].json)
    assert "short one" not in text and "atlas team" not in text


# --- fallbacks of every LLM step --------------------------------------------------------------

def _client(server, protocol):
    return server.client(protocol, timeout_s=0.5)


@pytest.mark.parametrize("failure", FAILURES, ids=FAIL_IDS)
def test_compress_fallback(llm_server, llm_protocol, clock, failure):
    s = merge_store(clock)
    s.save("Prefers dark mode in the editor ", category="preference")  # exact duplicate
    before = {e.id: e.content for e in s.entries()}
    llm_server.default = failure
    rep = compress(s, _client(llm_server, llm_protocol))
    assert rep.deduplicated == 1 and len(rep.llm_errors) == 1 and rep.llm_calls == 1
    after = {e.id: e.content for e in s.entries()}
    assert len(after) == len(before) - 1 and all(before[k] == v for k, v in after.items())


def episodic_store(clock, n=60, n_episodic=12):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    recs = [rec(i, f"session {i}: worked on the atlas deploy script and its tests number {i}",
                "session_checkpoint" if i < n_episodic else "project_knowledge", age_h=n - i)
            for i in range(n)]
    s.import_records(recs)
    return s


@pytest.mark.parametrize("failure", FAILURES, ids=FAIL_IDS)
def test_promote_and_reflect_fallback(llm_server, llm_protocol, clock, failure):
    s = episodic_store(clock)
    n = len(s)
    llm_server.default = failure
    llm = _client(llm_server, llm_protocol)
    p = promote(s, llm)
    r = reflect(s, llm)
    assert p.error and p.promoted == 0 and r.error and r.insights == 0
    assert len(s) == n and LAST_REFLECTION not in s.meta


# --- promote ------------------------------------------------------------------------------------

def test_promote_keeps_evidence_and_caps(llm_server, llm_protocol, clock):
    s = episodic_store(clock)
    items = [{"content": f"User works on atlas deploy scripts, aspect {i}",
              "category": ["preference", "instruction", "user_fact", "self_identity"][i % 4],
              "evidence_count": 3 + i} for i in range(8)]
    items.insert(0, {"content": "only twice", "category": "preference", "evidence_count": 2})
    items.insert(1, {"content": "", "evidence_count": 5})
    llm_server.default = Router(promote=items)
    rep = promote(s, llm_server.client(llm_protocol))
    assert rep.promoted == 5 and rep.rejected == 5
    got = [s.get(i) for i in rep.promoted_ids]
    assert [e.category for e in got] == ["preference", "instruction", "user_fact",
                                         "preference", "preference"]
    assert all(e.tags == ("promoted", "auto_generated") and e.scope == "global" for e in got)
    text = prompt_text(llm_server.last.json)
    assert text.count(": worked on the atlas") == 12 and "at least 3 different entries" in text
    assert "[0] session 11:" in text  # newest first


def test_promote_needs_six_episodic_and_cuts_to_200_bytes(llm_server, clock):
    s = episodic_store(clock, n_episodic=5)
    llm_server.default = Router(promote=[])
    rep = promote(s, llm_server.client())
    assert "5 active episodic" in rep.skipped and not llm_server.requests
    s.save("会话: " + "很长的内容" * 100, category="conversation_summary")
    promote(s, llm_server.client())
    line = [ln for ln in prompt_text(llm_server.last.json).splitlines() if "很长" in ln][0]
    assert len(line[4:].encode()) <= 200


def test_promote_window_is_latest_50(llm_server, clock):
    s = episodic_store(clock, n=80, n_episodic=70)
    llm_server.default = Router(promote=[])
    promote(s, llm_server.client())
    text = prompt_text(llm_server.last.json)
    assert "session 69:" in text and "session 20:" in text and "session 19:" not in text


# --- reflect ------------------------------------------------------------------------------------

def test_reflect_conditions_and_persisted_time(llm_server, tmp_path, clock):
    path = tmp_path / "st"
    s = MemoryStore.open(path, embedder=None, clock=clock)
    s.import_records([rec(i, f"session {i}: fixed flaky test number {i} in atlas",
                          "conversation_summary" if i < 8 else "user_fact")
                      for i in range(49)])
    llm_server.default = Router(reflect=[{"content": "User fixes flaky tests first",
                                          "category": "preference"},
                                         {"content": "bad", "category": "self_identity"},
                                         {"nope": 1}])
    llm = llm_server.client()
    assert "49 entries" in reflect(s, llm).skipped
    s.save("one more fact about atlas", category="user_fact")
    rep = reflect(s, llm)
    assert rep.insights == 2 and rep.rejected == 1
    assert [s.get(i).category for i in rep.insight_ids] == ["preference", "preference"]
    assert s.get(rep.insight_ids[0]).tags == ("reflection", "auto_generated")
    assert float(s.meta[LAST_REFLECTION]) == clock.t
    s.close()
    clock.t += 23 * H
    s = MemoryStore.open(path, embedder=None, clock=clock)
    assert "h ago" in reflect(s, llm).skipped  # survived the restart
    clock.t += 2 * H
    assert not reflect(s, llm).skipped
    s.close()


# --- pipeline, backups, breaker ----------------------------------------------------------------

def test_run_once_without_llm(tmp_path, clock):
    records, planted = planted_records(2)
    with MemoryStore.open(tmp_path / "st", embedder=None, clock=clock) as s:
        s.import_records(records[:300] + records[390:])
        clock.t += 800 * H
        s.touch([records[0]["id"]])
        m = Maintenance(s)
        rep = m.run_once()
        assert rep.backup.entries == len(records[:300] + records[390:])
        assert rep.gc.archived == 0 and rep.decay.dormant > 0
        assert rep.compress.deduplicated > 0 and rep.compress.llm_calls == 0
        assert rep.promote.skipped == rep.reflect.skipped == "no LLM configured"
        assert not rep.errors and m.failures == 0
        import msgspec

        assert json.loads(msgspec.json.encode(rep))["gc"]["archived"] == 0


def test_backups_keep_newest_20_and_import_back(tmp_path, clock):
    with MemoryStore.open(tmp_path / "st", embedder=None, clock=clock) as s:
        s.save("likes green tea", category="preference", tags=["tea"])
        m = Maintenance(s)
        for _ in range(22):
            clock.t += 61
            m.run_once()
        files = list_backups(tmp_path / "st" / "backups")
        assert len(files) == 20
        assert files[-1].name == time.strftime("memories_%Y%m%d_%H%M%S.json",
                                               time.gmtime(clock.t))
        m.run_once()  # same second: a second file, not an overwrite
        assert len(list_backups(tmp_path / "st" / "backups")) == 20
        data = json.loads(files[-1].read_text())
        assert data[0]["content"] == "likes green tea" and data[0]["embedding"] is None
    with MemoryStore.in_memory(embedder=None) as fresh:
        assert fresh.import_maclaw(files[-1]) == 1
        assert fresh.entries()[0].tags == ("tea",)


def test_backup_failure_skips_compress_and_counts(tmp_path, clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    s.save("x note", category="preference")
    s.save("X note", category="preference")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    m = Maintenance(s, backup_dir=blocker / "sub")
    rep = m.run_once()
    assert rep.backup.error and "backup failed" in rep.compress.skipped
    assert m.failures == 1 and len(s) == 2


def test_circuit_breaker(llm_server, clock):
    s = merge_store(clock)
    llm_server.default = Status(500)
    m = Maintenance(s, llm_server.client())
    for i in range(3):
        rep = m.run_once()
        assert rep.compress.llm_errors and rep.breaker_failures == i + 1
    assert m.breaker_open
    calls = len(llm_server.requests)
    rep = m.run_once()
    assert "circuit breaker" in rep.compress.skipped
    assert [kind_of(r.json) for r in llm_server.requests[calls:]] == []  # promote: < 6 episodic
    llm_server.default = Router(merge=[], compact=[])
    rep = m.run_once(scheduled=True)  # the next scheduled cycle tries again
    assert not rep.compress.skipped and not rep.compress.llm_errors and m.failures == 0


def test_background_start_stop(clock):
    s = MemoryStore.in_memory(embedder=None, clock=clock)
    s.save("a note", category="preference")
    m = Maintenance(s, config=MaintenanceConfig(interval_h=0.05 / 3600))
    m.start()
    deadline = time.time() + 5
    while m.last_report is None and time.time() < deadline:
        time.sleep(0.01)
    m.stop()
    assert m.last_report is not None and m.last_report.scheduled and not m.running


def test_prompt_helpers():
    assert cut_bytes("abc", 10) == "abc" and cut_bytes("日本語", 8) == "日本"
    assert plain_reply('"quoted"') == "quoted"
    assert plain_reply("Compressed: make it so") == "make it so"
    assert plain_reply("```text\nline1\nline2\n```") == "line1\nline2"
