"""The benchmark, evaluation and profiling scripts stay runnable.

The test suite does not run them (they take minutes and print timings), so an API they reach
into can move without a test noticing: each script is imported here, and the two profiling
scripts run on a small store.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "profiling").glob("*.py")])


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_script_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # as the scripts find their siblings
    name = f"_script_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    if path.name != "__init__.py" and "__main__" in path.read_text(encoding="utf-8"):
        assert callable(getattr(module, "main", None)), f"{path.name} has no main()"


@pytest.mark.parametrize("script, args, expect", [
    ("recall_stages.py", ["--entries", "60", "--queries", "30"], "recall() p50"),
    ("recall_batch.py", ["--entries", "60", "--queries", "20", "--seconds", "0.3"],
     "queries/s"),
])
def test_profiling_scripts_run(script, args, expect):
    done = subprocess.run([sys.executable, str(ROOT / "profiling" / script), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert expect in done.stdout
