"""The examples in the public docstrings run and print what they say (numpydoc examples are
documentation users copy; they must not rot)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import maclaw_fast
import maclaw_kernels


def _modules():
    for pkg in (maclaw_fast, maclaw_kernels):
        yield pkg.__name__
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
            yield info.name


@pytest.mark.parametrize("name", sorted(set(_modules())))
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
