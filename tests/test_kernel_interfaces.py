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
    callback, and the wrapper numba would build for each costs compile time (~2 s in all)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for dec in getattr(node, "decorator_list", ()):
            call = dec if isinstance(dec, ast.Call) else None
            if getattr(call.func if call else dec, "id", None) != "njit":
                continue
            options = {k.arg: getattr(k.value, "value", None) for k in (call.keywords if call else ())}
            assert options.get("cache") is True and options.get("no_cfunc_wrapper") is True, \
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
