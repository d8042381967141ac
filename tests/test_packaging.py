"""Packaging rules: every subpackage is listed, kernels stay independent of maclaw_fast."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "maclaw_fast").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert "maclaw_kernels" in listed


def test_kernels_import_only_numpy_and_numba():
    allowed = {"numpy", "numba", "maclaw_kernels", "importlib", "pkgutil", "math"}
    for path in (ROOT / "kernels").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_no_top_level_kernels_module_is_installed():
    import importlib.util

    import maclaw_kernels

    assert Path(maclaw_kernels.__file__).resolve().parent == ROOT / "kernels"
    spec = importlib.util.find_spec("kernels")
    # only the source folder itself (when the repo root is on sys.path) may answer to "kernels"
    assert spec is None or Path(spec.origin).resolve().parent == ROOT / "kernels"
