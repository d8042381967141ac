"""A process that compiles a kernel says so on stderr, once per outermost compile."""

from __future__ import annotations

import numba
import numpy as np

from maclaw_fast import compile_notice


def _kernel_named(name: str, module: str):
    def f(x):
        return x.sum() + 1.0

    f.__name__ = name
    f.__module__ = module
    return numba.njit(f)


def test_compiling_a_kernel_prints_one_line(capsys, monkeypatch):
    compile_notice.register()
    monkeypatch.setattr(compile_notice, "NOTICE_AFTER_S", 0.0)
    monkeypatch.delenv("MACLAW_QUIET_COMPILE", raising=False)
    kernel = _kernel_named("tiny_kernel", "maclaw_kernels.fake")
    assert kernel(np.ones(3)) == 4.0
    err = capsys.readouterr().err
    assert err.count("maclaw_fast: compiled tiny_kernel in") == 1
    assert kernel(np.ones(3)) == 4.0  # compiled already: silent
    assert capsys.readouterr().err == ""


def test_other_functions_and_quiet_mode_print_nothing(capsys, monkeypatch):
    compile_notice.register()
    monkeypatch.setattr(compile_notice, "NOTICE_AFTER_S", 0.0)
    _kernel_named("not_ours", "somebody.else")(np.ones(2))
    monkeypatch.setenv("MACLAW_QUIET_COMPILE", "1")
    _kernel_named("quiet_kernel", "maclaw_kernels.fake")(np.ones(2))
    assert "maclaw_fast: compiled" not in capsys.readouterr().err
