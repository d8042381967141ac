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
    res = run("demo", "--embedder", "hash", "--queries", "3", "--progress")
    assert "demo store: 200 memories" in res.stdout
    for step in ("compiling the memory kernels", "compiling the workspace kernels",
                 "demo store: embedding", "200/200",
                 "building the tool catalog: embedding", "indexing the sample workspace"):
        assert step in res.stderr, step  # every wait says what it is doing
    assert res.stdout.count("\nrecall ") == 3
    assert "route '我要查询数据库里上个月的订单'" in res.stdout and "db_query" in res.stdout
    assert "workspace search" in res.stdout


def test_warmup_compiles_kernels():
    assert "compiled" in run("warmup").stdout


def test_console_entry_skips_the_teardown_unless_a_thread_must_finish(tmp_path):
    # when the command returns, a daemon thread (as the idle timer thread) or a non-daemon one
    # is running; only the second needs the normal exit (SystemExit, which joins it)
    code = ("import sys, threading, time\n"
            "import maclaw_fast.cli as cli\n"
            "daemon = sys.argv[1] == 'daemon'\n"
            "command = cli.main\n"
            "def main():\n"
            "    code = command()\n"
            "    threading.Thread(target=lambda: (time.sleep(0.5 if not daemon else 60),"
            " print('JOINED', flush=True)), daemon=daemon).start()\n"
            "    return code\n"
            "cli.main = main\n"
            "sys.argv = ['maclaw-fast', 'save', 'likes tea', '--category', 'preference',"
            f" '--store', {str(tmp_path / 's')!r}, '--embedder', 'none']\n"
            "try:\n"
            "    cli.run()\n"
            "except SystemExit as exc:\n"
            "    print('NORMAL EXIT', exc.code, flush=True)\n"
            "    raise\n")
    direct = subprocess.run([sys.executable, "-c", code, "daemon"], capture_output=True,
                            text=True, timeout=300)
    assert direct.returncode == 0, direct.stderr
    assert '"category": "preference"' in direct.stdout
    assert "NORMAL EXIT" not in direct.stdout and "JOINED" not in direct.stdout
    joined = subprocess.run([sys.executable, "-c", code, "thread"], capture_output=True,
                            text=True, timeout=300)
    assert joined.returncode == 0, joined.stderr
    assert "NORMAL EXIT 0" in joined.stdout and "JOINED" in joined.stdout
    out = run("recall", "tea", "--store", str(tmp_path / "s"), "--embedder", "none")
    assert "likes tea" in out.stdout
