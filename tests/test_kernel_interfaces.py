"""The kernels' shape as a reader and numba's compiler meet it: no kernel takes more than 20
parameters, and no kernel passes a literal number or bool to another jitted function (numba
compiles a second specialization of the callee for a literal argument, seconds of a fresh
install's first answer)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KERNELS = sorted((Path(__file__).resolve().parent.parent / "kernels").glob("*.py"))


def _jitted(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's functions decorated with ``njit``, except ``inline="always"`` ones (numba
    inlines those into each caller: a literal argument there costs nothing)."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            name = (call.func if call else dec)
            if getattr(name, "id", None) != "njit":
                continue
            inline = any(k.arg == "inline" and getattr(k.value, "value", None) == "always"
                         for k in (call.keywords if call else ()))
            if not inline:
                out[node.name] = node
    return out


def _all_jitted() -> dict[str, ast.FunctionDef]:
    found = {}
    for path in KERNELS:
        found.update(_jitted(ast.parse(path.read_text(encoding="utf-8"))))
    return found


def test_the_kernel_files_hold_jitted_functions():
    assert len(_all_jitted()) > 30  # the scan below sees the kernels (not an empty set)


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
def test_every_kernel_is_cached_without_a_cfunc_wrapper(path):
    """``cache=True``: compiled once per install; ``no_cfunc_wrapper=True``: no kernel is a C
    callback, and the wrapper numba would build for each costs compile time (~2 s in all); a
    kernel not inlined and without fastmath has ``nogil`` and the NumPy error model."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for dec in getattr(node, "decorator_list", ()):
            call = dec if isinstance(dec, ast.Call) else None
            if getattr(call.func if call else dec, "id", None) != "njit":
                continue
            options = {k.arg: getattr(k.value, "value", None) for k in (call.keywords if call else ())}
            assert options.get("cache") is True and options.get("no_cfunc_wrapper") is True, \
                f"{path.name}:{node.name}"
            if "inline" not in options and "fastmath" not in options:
                # one option set: numba compiles the NumPy and builtin helpers once per set
                assert options.get("nogil") is True and options.get("error_model") == "numpy", \
                    f"{path.name}:{node.name}"


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
def test_no_kernel_takes_more_than_20_parameters(path):
    for name, fn in _jitted(ast.parse(path.read_text(encoding="utf-8"))).items():
        n = len(fn.args.args) + len(fn.args.kwonlyargs)
        assert n <= 20, f"{path.name}:{name} takes {n} parameters"


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
def test_no_literal_argument_into_a_jitted_callee(path):
    jitted = _all_jitted()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in _jitted(tree).values():
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in jitted):
                continue
            for arg in node.args + [k.value for k in node.keywords]:
                literal = isinstance(arg, ast.Constant) and isinstance(arg.value, (bool, int))
                assert not literal, (f"{path.name}:{fn.name} line {node.lineno} passes the "
                                     f"literal {arg.value!r} to {node.func.id}")


def _without_entry_point() -> set[str]:
    """The kernels compiled with ``no_cpython_wrapper=True``: only other kernels call them."""
    names = set()
    for path in KERNELS:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for dec in getattr(node, "decorator_list", ()):
                if isinstance(dec, ast.Call) and any(
                        k.arg == "no_cpython_wrapper" and getattr(k.value, "value", None) is True
                        for k in dec.keywords):
                    names.add(node.name)
    return names


def test_the_engine_never_calls_a_kernel_without_an_entry_point():
    """Calling such a kernel from Python crashes the interpreter (numba jumps to the missing
    wrapper), so the engine's modules never import one; tests and profiling go through
    ``maclaw_kernels.entry``."""
    hidden = _without_entry_point()
    assert {"top_k_known", "fuse", "ranked_rows"} <= hidden  # the scan sees the decorators
    package = Path(__file__).resolve().parent.parent / "maclaw_fast"
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "maclaw_kernels"):
                bad = {a.name for a in node.names} & hidden
                assert not bad, f"{path.relative_to(package.parent)} imports {sorted(bad)}"
            if isinstance(node, ast.Attribute) and node.attr in hidden:
                assert False, f"{path.relative_to(package.parent)}:{node.lineno} .{node.attr}"


def test_tests_and_scripts_call_such_kernels_through_entry():
    """A test, benchmark or profiling script that imports a kernel without an entry point
    calls it only after rebinding it through ``entry`` (else the interpreter crashes)."""
    hidden = _without_entry_point()
    root = Path(__file__).resolve().parent.parent
    for folder in ("tests", "benchmarks", "profiling"):
        for path in (root / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imported = {a.asname or a.name for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom)
                        and (node.module or "").startswith("maclaw_kernels")
                        for a in node.names if a.name in hidden}
            rebound = {t.id for node in tree.body if isinstance(node, ast.Assign)
                       and "entry" in ast.unparse(node.value)
                       for target in node.targets for t in ast.walk(target)
                       if isinstance(t, ast.Name)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    name = node.func.id
                    assert name not in imported - rebound, \
                        f"{path.relative_to(root)}:{node.lineno} calls {name} without entry()"


def test_entry_gives_a_callable_copy():
    import numpy as np
    from maclaw_kernels import entry
    from maclaw_kernels.topk import top_k_known

    copy = entry(top_k_known)
    assert copy is not top_k_known or not hasattr(top_k_known, "py_func")
    score = np.array([0.5, 2.0, 1.0])
    got = copy(score, np.zeros(3, np.int64), np.arange(3), np.ones(3, np.bool_), 2, 0.5, 2.0, 3)
    assert got.tolist() == [1, 2]
