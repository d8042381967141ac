"""Round-robin timing: the contenders take turns, so a drift in the machine's speed hits them all.

On the shared 2-core project machine the speed of short calls drifts by up to 1.6× within
minutes (the same recall took 45 µs in one run and 67 µs twenty minutes later, the plain-Python
oracle only 1.13× slower). Timing each contender in its own block of rounds, one after the
other, puts that drift into the ratios. Here every round times a short chunk of calls of each
contender in turn (the order rotates), and each round gives a ratio to the engine measured
seconds apart; the report gives the median ratio over the rounds and its range.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np


def round_robin(contenders: dict[str, tuple[Callable[[], object], int]],
                rounds: int) -> dict[str, list[float]]:
    """``contenders``: name → (call, calls per round). Returns name → the median time of each
    round's calls, in seconds (one value per round)."""
    names = list(contenders)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            call, calls = contenders[name]
            times = np.empty(calls)
            for j in range(calls):
                t0 = time.perf_counter()
                call()
                times[j] = time.perf_counter() - t0
            out[name].append(float(np.median(times)))
    return out


def ratio_summary(per_round: dict[str, list[float]], engine: str) -> dict[str, dict]:
    """Per contender: median time over the rounds and ``contender / engine`` per round
    (median, min, max)."""
    eng = np.asarray(per_round[engine])
    out = {}
    for name, times in per_round.items():
        t = np.asarray(times)
        ratio = t / eng
        out[name] = {"p50": float(np.median(t)), "ratio": float(np.median(ratio)),
                     "ratio_min": float(ratio.min()), "ratio_max": float(ratio.max())}
    return out
