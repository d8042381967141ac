"""The memory subcommands of ``maclaw-fast``, run as real processes on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq


def run(*args, check=True):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    res = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args], capture_output=True,
                         text=True, timeout=300, env=env)
    if check and res.returncode != 0:
        raise AssertionError(f"{args} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


def test_save_recall_batch_export_import(tmp_path):
    store = str(tmp_path / "store")
    common = ["--store", store, "--embedder", "hash"]
    saved = json.loads(run("save", "deploy.sh fails without AWS_REGION", "--category", "project",
                           "--tag", "atlas", *common).stdout)
    run("save", "Lin drinks green tea", "--category", "preference", *common)
    hits = json.loads(run("recall", "deploy", "--project", "atlas", "--json", *common).stdout)
    assert hits[0]["entry"]["id"] == saved["id"] and hits[0]["breakdown"]["affinity"] == 3.0
    queries = tmp_path / "q.txt"
    queries.write_text("deploy\ngreen tea\n部署\n", encoding="utf-8")
    out = tmp_path / "hits.parquet"
    run("recall-batch", "--in", str(queries), "--out", str(out), "--quiet", *common)
    table = pq.read_table(out)
    assert set(table.column("query_index").to_pylist()) == {0, 1, 2}
    assert {"rank", "id", "score", "bm25", "cos", "graph"} <= set(table.column_names)
    stats = json.loads(run("stats", "--json", "--store", store).stdout)
    assert stats["entries"] == 2
    exported = tmp_path / "memories.json"
    run("export", str(exported), "--store", store)  # the store's own model, no --embedder
    assert len(json.loads(exported.read_text(encoding="utf-8"))) == 2
    other = ["--store", str(tmp_path / "other"), "--embedder", "hash"]
    assert "imported 2" in run("import", str(exported), *other).stdout


def test_bad_input_is_a_clear_error(tmp_path):
    res = run("save", "x", "--category", "nonsense", "--store", str(tmp_path / "s"),
              "--embedder", "none", check=False)
    assert res.returncode == 2 and "invalid choice: 'nonsense'" in res.stderr
    assert "preference" in res.stderr  # the valid ones are listed
    assert len(res.stderr.strip().splitlines()) == 1 and not os.path.exists(tmp_path / "s")


def test_demo_runs_on_bundled_data():
    res = run("demo", "--embedder", "hash", "--queries", "3")
    assert "demo store: 200 memories" in res.stdout
    assert res.stdout.count("\nrecall ") == 3
    assert "route '我要查询数据库里上个月的订单'" in res.stdout and "db_query" in res.stdout
    assert "workspace search" in res.stdout


def test_warmup_compiles_kernels():
    assert "compiled" in run("warmup").stdout
