"""index and search keep the workspace's index outside the workspace (under $MACLAW_HOME),
and still use an index made inside it before."""

from __future__ import annotations

import os
import subprocess
import sys

from maclaw_fast.workspace.location import default_index_dir


def _cli(*args, home):
    env = dict(os.environ, MACLAW_HOME=str(home), MACLAW_QUIET_COMPILE="1",
               PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "maclaw_fast", *args], capture_output=True,
                          check=False, text=True, env=env, timeout=300)


def test_index_and_search_write_nothing_into_the_workspace(tmp_path):
    ws, home = tmp_path / "notes", tmp_path / "home"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("Lin is allergic to peanuts\n", encoding="utf-8")
    res = _cli("index", "--workspace", str(ws), "--embedder", "hash", home=home)
    assert res.returncode == 0, res.stderr
    res = _cli("search", "peanuts", "--workspace", str(ws), "--embedder", "hash", home=home)
    assert res.returncode == 0 and "MEMORY.md" in res.stdout, res.stderr
    assert sorted(p.name for p in ws.iterdir()) == ["MEMORY.md"]
    (made,) = (home / "workspaces").iterdir()
    assert made.name.startswith("notes-") and any(made.iterdir())


def test_an_index_made_inside_the_workspace_before_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("MACLAW_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    (ws / ".maclaw").mkdir(parents=True)
    assert default_index_dir(ws) == ws.resolve() / ".maclaw"
    other = tmp_path / "other"
    other.mkdir()
    assert default_index_dir(other).parent == tmp_path / "home" / "workspaces"
    assert default_index_dir(other) != default_index_dir(ws)
