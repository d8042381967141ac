"""One stderr line whenever a process compiles the engine's numba kernels.

The kernels compile on their first use after an install (or after the kernel sources change)
and are cached on disk from then on; a first call that takes seconds should say why. Each
outermost compile of a ``maclaw_kernels`` function that takes over :data:`NOTICE_AFTER_S` prints
``maclaw_fast: compiled <kernel> in X s (first use; cached on disk)``. Set
``MACLAW_QUIET_COMPILE=1`` to silence it. ``maclaw-fast warmup`` compiles everything ahead.
"""

from __future__ import annotations

import os
import sys
import time

NOTICE_AFTER_S = 0.5
_STATE = {"registered": False, "depth": 0, "start": 0.0}


def register() -> None:
    """Install the listener once per process (numba's compile events)."""
    if _STATE["registered"]:
        return
    _STATE["registered"] = True
    try:
        from numba.core import event
    except ImportError:  # an older numba without compile events: stay silent
        return

    class _Notice(event.Listener):
        def on_start(self, ev):
            if _STATE["depth"] == 0:
                _STATE["start"] = time.perf_counter()
            _STATE["depth"] += 1

        def on_end(self, ev):
            _STATE["depth"] -= 1
            if _STATE["depth"] > 0 or os.environ.get("MACLAW_QUIET_COMPILE"):
                return
            took = time.perf_counter() - _STATE["start"]
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            module = getattr(func, "__module__", "") or ""
            if took >= NOTICE_AFTER_S and module.startswith("maclaw_kernels"):
                print(f"maclaw_fast: compiled {func.__name__} in {took:.1f} s "
                      "(first use; cached on disk)", file=sys.stderr, flush=True)

    event.register("numba:compile", _Notice())
