"""Packaging rules: every subpackage is listed, kernels stay independent of maclaw_fast."""

from __future__ import annotations

import ast
import sys
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
    allowed = {"numpy", "numba", "maclaw_kernels"} | set(sys.stdlib_module_names)
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


def test_a_changed_kernel_file_invalidates_every_kernels_cache(tmp_path, monkeypatch):
    """numba checks only a function's own file; the package registers locators that stamp
    every kernel with all of its sources, so a changed callee recompiles its callers."""
    import shutil

    import maclaw_kernels
    from maclaw_kernels.recall import recall_block
    from numba.core import caching

    locator = None
    for cls in caching.CacheImpl._locator_classes:
        locator = cls.from_function(recall_block.py_func, recall_block.py_func.__code__.co_filename)
        if locator is not None:
            break
    assert type(locator).__name__.startswith("Kernels")
    stamp = locator.get_source_stamp()
    assert stamp == maclaw_kernels._package_stamp()
    copy = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(maclaw_kernels, "_HERE", copy)
    assert maclaw_kernels._package_stamp() == stamp
    (copy / "topk.py").write_text((copy / "topk.py").read_text() + "\n# changed\n")
    assert maclaw_kernels._package_stamp() != stamp
    # a function outside the package keeps numba's own locator
    assert all(cls.from_function(json_like.__code__, __file__) is None
               for cls in caching.CacheImpl._locator_classes[:3])


def json_like():  # a plain function of this test file (not a kernel)
    return 0
