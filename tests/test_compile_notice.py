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


def test_background_warmup_runs_the_parts_on_a_daemon_thread(monkeypatch):
    from maclaw_fast import warmup as warm

    ran = []
    monkeypatch.setattr(warm, "warmup", lambda parts, out: ran.append((tuple(parts), out)))
    thread = warm.warm_in_background(("router",))
    thread.join(timeout=30)
    assert thread.daemon and not thread.is_alive()
    assert ran == [(("router",), None)]


def test_a_failed_background_warmup_is_reported_not_raised(monkeypatch, capsys):
    from maclaw_fast import warmup as warm

    def boom(parts, out):
        raise RuntimeError("no disk")

    monkeypatch.setattr(warm, "warmup", boom)
    warm.warm_in_background(("memory",)).join(timeout=30)
    assert "background warmup failed: no disk" in capsys.readouterr().err
