"""recall's --category/--dynamic/--max/--json, stats read from the store, import's age_hours,
and chat's report of what the extractor saved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from maclaw_fast import MemoryStore
from maclaw_fast.tools import RouteLog


def run(*args, check=True):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    res = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args], capture_output=True,
                         text=True, timeout=300, env=env)
    if check and res.returncode != 0:
        raise AssertionError(f"{args} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


def _import(tmp_path, records, *extra):
    src = tmp_path / "in.json"
    src.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    store = str(tmp_path / "store")
    return store, run("import", str(src), "--store", store, "--embedder", "hash", *extra,
                      check=False)


def test_import_honours_age_hours(tmp_path):
    records = [{"content": "the staging database moved to db2", "category": "project_knowledge",
                "age_hours": 48},
               {"content": "Lin prefers short answers", "category": "preference",
                "age_hours": 0.5},
               {"content": "an entry with its own times", "category": "user_fact",
                "created_at": "2024-01-02T03:04:05Z", "updated_at": "2024-01-02T03:04:05Z",
                "age_hours": 1},
               {"content": "no age at all", "category": "instruction"}]
    before = time.time()
    store, res = _import(tmp_path, records)
    after = time.time()
    assert res.returncode == 0 and "imported 4 entries" in res.stdout, res.stderr
    with MemoryStore.open(store, embedder="hash") as s:
        by = {e.content: e for e in s.entries()}
    old = by["the staging database moved to db2"]
    assert before - 48 * 3600 - 1 <= old.created_at <= after - 48 * 3600 + 1
    assert old.updated_at == old.created_at
    recent = by["Lin prefers short answers"]
    assert before - 1800 - 1 <= recent.created_at <= after - 1800 + 1
    assert by["an entry with its own times"].created_at == 1704164645.0  # times win over age
    assert before - 1 <= by["no age at all"].created_at <= after + 1


def test_import_refuses_a_bad_age_and_changes_nothing(tmp_path):
    records = [{"content": "fine", "category": "preference", "age_hours": 2},
               {"content": "bad", "category": "preference", "age_hours": -3}]
    store, res = _import(tmp_path, records)
    assert res.returncode == 2 and "age_hours must be a finite number >= 0.0" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    with MemoryStore.open(store, embedder="hash") as s:
        assert len(s) == 0


def _saved_store(tmp_path):
    store = str(tmp_path / "store")
    items = [{"content": f"green tea note {i}: brew at {70 + i} degrees", "category":
              "preference" if i % 2 else "instruction"} for i in range(30)]
    items.append({"content": "green tea grows in Hangzhou", "category": "user_fact"})
    src = tmp_path / "tea.json"
    src.write_text(json.dumps(items), encoding="utf-8")
    run("import", str(src), "--store", store, "--embedder", "hash")
    return store, ["--store", store, "--embedder", "hash", "--no-reinforce", "--json"]


def test_recall_category_dynamic_max(tmp_path):
    store, common = _saved_store(tmp_path)
    full = json.loads(run("recall", "green tea", *common).stdout)
    dynamic = json.loads(run("recall", "green tea", "--dynamic", *common).stdout)
    assert len(full) == 20 and len(dynamic) == 15  # the two budgets: 20 and 15 entries
    prefs = json.loads(run("recall", "green tea", "--category", "preference", *common).stdout)
    assert prefs and {h["entry"]["category"] for h in prefs} == {"preference"}
    assert len(prefs) == 15  # 15 preferences stored, within the dynamic budget
    alias = json.loads(run("recall", "green tea", "--category", "user", *common).stdout)
    assert [h["entry"]["content"] for h in alias] == ["green tea grows in Hangzhou"]
    # --max counts ranked hits: the leading user fact comes on top of them
    lead = [h["entry"]["id"] for h in full if h["reason"] in ("self_identity", "user_fact")]
    assert len(lead) == 1
    top3 = json.loads(run("recall", "green tea", "--max", "3", *common).stdout)
    assert [h["entry"]["id"] for h in top3] == [h["entry"]["id"] for h in full[:4]]
    text = run("recall", "green tea", "--max", "2", "--store", store, "--embedder", "hash",
               "--no-reinforce").stdout
    assert text.count("score ") == 2 and " 1. [" in text and " 3. [" not in text
    block, ranked = text.split("ranked, best first:")
    assert "always recalled" in block and "green tea grows in Hangzhou" in block
    assert "Hangzhou" not in ranked and "=" not in text  # the score line is no sum


def test_recall_shows_the_identity_block_apart_and_escapes_stored_controls(tmp_path):
    store = str(tmp_path / "store")
    items = [{"content": f"I am Juniper, persona note {i}", "category": "self_identity"}
             for i in range(3)]
    items += [{"content": f"deploy step {i}: run \x1b[2J\x1b]0;pwned\x07 deploy.sh",
               "category": "project_knowledge"} for i in range(5)]
    src = tmp_path / "m.json"
    src.write_text(json.dumps(items), encoding="utf-8")
    run("import", str(src), "--store", store, "--embedder", "hash")
    text = run("recall", "deploy", "--max", "3", "--store", store, "--embedder", "hash",
               "--no-reinforce").stdout
    block, ranked = text.split("ranked, best first:")
    assert block.count("persona note") == 3 and "persona note" not in ranked
    assert ranked.count("deploy step") == 3  # --max 3: three ranked, identity on top
    assert "\x1b" not in text and "\x07" not in text
    assert "^[[2J^[]0;pwned\\x07 deploy.sh" in text


def test_stats_reports_the_store_not_the_flags(tmp_path):
    store, _ = _saved_store(tmp_path)
    RouteLog(os.path.join(store, "tool_route.log")).write(
        "hello", total=3, core=1, candidates=2, hybrid=True, body_aware=False,
        top=[("db_query", 0.9)], selected=["db_query"])
    RouteLog(os.path.join(store, "tool_route.log")).write(
        "again", total=3, core=1, candidates=2, hybrid=True, body_aware=False,
        top=[("web_fetch", 0.5)], selected=["web_fetch"])
    report = json.loads(run("stats", "--store", store, "--json").stdout)
    assert report["embedder"].startswith("hash") and report["dim"] == 384
    assert report["entries"] == 31
    assert report["categories"]["preference"] == 15 and report["categories"]["instruction"] == 15
    assert report["categories"]["user_fact"] == 1 and report["categories"]["self_identity"] == 0
    on_disk = {}
    for name in os.listdir(store):
        full = os.path.join(store, name)
        on_disk[name + ("/" if os.path.isdir(full) else "")] = (
            sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(full) for f in fs)
            if os.path.isdir(full) else os.path.getsize(full))
    # stats closed the store after reading it (a final snapshot may be written): compare names
    assert set(report["disk"]["files"]) == set(on_disk)
    assert report["disk"]["total_bytes"] == sum(report["disk"]["files"].values()) > 0
    assert report["route_log"]["decisions"] == 2 and report["route_log"]["reranked"] == 0
    assert report["maintenance"] is None and report["maintenance_due_in_s"] == 0
    run("maintain", "--store", store, "--embedder", "hash")
    after = json.loads(run("stats", "--store", store, "--json").stdout)
    assert after["maintenance"]["ok"] and after["maintenance"]["counts"]["backup"] == 31
    assert after["maintenance_due_in_s"] > 5 * 3600  # the next run is 6 h after this one
    text = run("stats", "--store", store).stdout
    assert "model " in text and "hash" in text and "preference 15" in text
    assert "route log  2 decisions" in text and "maintained never" not in text
    # the store keeps its model and vectors: looking changed nothing
    with MemoryStore.open(store, embedder="hash") as s:
        assert all(s.vector(e.id) is not None for e in s.entries())


def test_show_extraction_lists_saved_memories():
    from maclaw_fast.commands.agent import show_extraction
    from maclaw_fast.maintenance.extractor import ExtractReport

    store = MemoryStore.in_memory(embedder=None)
    a = store.save("Lin's cat is called Miso", category="user_fact")
    b = store.save("Deploys go through deploy.sh", category="project_knowledge")
    lines: list[str] = []
    show_extraction(ExtractReport(saved=2, saved_ids=[a.id, b.id], duplicates=1), store,
                    lines.append)
    assert lines[0] == "  knowledge extraction saved 2 memories (1 duplicate(s)):"
    assert lines[1:] == ["    + [user_fact] Lin's cat is called Miso",
                         "    + [project_knowledge] Deploys go through deploy.sh"]
    lines.clear()
    show_extraction(ExtractReport(skipped="cooldown: 40 min left"), store, lines.append)
    assert lines == ["  knowledge extraction skipped: cooldown: 40 min left"]
    lines.clear()
    show_extraction(None, store, lines.append)
    assert lines == []


def test_a_store_opened_with_another_model_is_re_embedded_with_progress(tmp_path):
    """A BM25-only store of 100 memories (more than the vector column's first 64 rows) opened
    with an embedder: every memory gets a vector, with a bar, and stats names the new model."""
    src = tmp_path / "m.json"
    src.write_text(json.dumps([{"content": f"fact number {i} about the build", "category":
                                "project_knowledge"} for i in range(100)]), encoding="utf-8")
    store = str(tmp_path / "store")
    run("import", str(src), "--store", store, "--embedder", "none")
    assert json.loads(run("stats", "--store", store, "--json").stdout)["embedder"] is None
    res = run("recall", "build", "--store", store, "--embedder", "hash", "--progress",
              "--max", "3", "--json")
    assert len(json.loads(res.stdout)) == 3
    assert "re-embedding with hash-v1" in res.stderr and "100/100" in res.stderr
    report = json.loads(run("stats", "--store", store, "--json").stdout)
    assert report["model"] == "hash-v1" and report["entries"] == 100
    with MemoryStore.open(store, embedder="hash") as s:
        assert sum(s.vector(e.id) is not None for e in s.entries()) == 100


def test_a_120kb_message_answers_within_seconds(tmp_path):
    """save, recall and route each answer a 120 KB message within 10 s on the command line
    (the e5 model keeps a long text's head: tests/test_embedding_clip.py)."""
    text = "the deploy failed on staging because a key was missing; " * 2150
    assert 120_000 < len(text.encode()) < 131_072  # one argument of at most 128 KiB
    store = str(tmp_path / "s")
    for args in (("save", text, "--category", "project", "--store", store, "--embedder", "hash"),
                 ("recall", text, "--store", store, "--embedder", "hash"),
                 ("route", text, "--embedder", "hash")):
        start = time.perf_counter()
        res = run(*args)
        assert time.perf_counter() - start < 10.0, args[0]
        assert res.stdout.strip() or res.stderr.strip(), args[0]  # an answer, not silence
