"""No user-visible step over a second without progress: the bars and status lines of import,
workspace index and maintain, forced on with ``--progress`` and read from stderr; and silent
with ``--quiet`` or when stderr is not a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from benchmarks.gen_workspace import generate


def run(*args, env_extra=None):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env.pop("MACLAW_PROGRESS", None)
    env.update(env_extra or {})
    res = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args], capture_output=True,
                         text=True, timeout=600, env=env)
    assert res.returncode == 0, f"{args} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    return res


def _memories(n: int) -> list[dict]:
    cats = ("preference", "instruction", "project_knowledge", "user_fact")
    return [{"content": f"note {i}: the {['red', 'blue', 'green'][i % 3]} build step {i * 7}",
             "category": cats[i % len(cats)], "tags": [f"t{i % 5}"], "age_hours": i / 10}
            for i in range(n)]


def test_import_of_1000_memories_shows_progress(tmp_path):
    src = tmp_path / "memories.json"
    src.write_text(json.dumps(_memories(1000)), encoding="utf-8")
    store = str(tmp_path / "store")
    res = run("import", str(src), "--store", store, "--embedder", "hash", "--progress")
    assert "imported 1000 entries" in res.stdout
    assert "import: embedding" in res.stderr and "import: adding" in res.stderr
    assert res.stderr.count("1000/1000") >= 2  # both stages reach the end
    assert "opening the store" in res.stderr and "writing the store" in res.stderr
    assert res.stderr.startswith("starting maclaw-fast … ")  # before the imports, first
    assert "import:" not in res.stdout  # progress never mixes with the result
    # stderr is not a terminal here: without --progress nothing but the result
    other = str(tmp_path / "other")
    quiet = run("import", str(src), "--store", other, "--embedder", "hash")
    assert quiet.stderr.strip() == "" and "imported 1000 entries" in quiet.stdout
    forced_env = run("import", str(src), "--store", str(tmp_path / "third"), "--embedder",
                     "hash", env_extra={"MACLAW_PROGRESS": "1"})
    assert "1000/1000" in forced_env.stderr
    muted = run("import", str(src), "--store", str(tmp_path / "fourth"), "--embedder", "hash",
                "--quiet", env_extra={"MACLAW_PROGRESS": "1"})
    assert muted.stderr.strip() == ""


def test_workspace_index_of_500_files_shows_progress(tmp_path):
    ws = tmp_path / "ws"
    info = generate(ws, n_files=500, target_mb=0.5, seed=3)
    assert info["files"] == 500
    res = run("index", "--workspace", str(ws), "--embedder", "hash", "--progress")
    assert "+500 files" in res.stdout
    for stage in ("index: reading files", "index: chunking files", "index: embedding chunks"):
        assert stage in res.stderr, res.stderr[-2000:]
    assert "500/500" in res.stderr
    quiet = run("index", "--workspace", str(ws), "--embedder", "hash", "--force", "--quiet")
    assert quiet.stderr.strip() == "" and "~500 changed" in quiet.stdout


def test_maintain_shows_an_activity_line(tmp_path):
    store = str(tmp_path / "store")
    run("save", "Lin drinks green tea", "--category", "preference", "--store", store,
        "--embedder", "hash")
    res = run("maintain", "--store", store, "--embedder", "hash", "--progress")
    assert "maintenance: backup, gc, decay" in res.stderr and " done" in res.stderr
    assert json.loads(res.stdout)["backup"]["entries"] == 1
