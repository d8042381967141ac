"""The forgetting curve (design §7) over strength / updated_at columns."""

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _strength_now(strength, updated_at, now, rate):
    if strength <= 0.0:
        return 0.0
    return strength * np.exp(-rate * max(now - updated_at, 0.0) / 3600.0)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def decay_pass(strength, updated_at, exempt, active, now, rate, threshold, out_strength,
               out_dormant):
    """``S = strength·exp(-rate·hours)``; rows that are ``active`` and not ``exempt`` (self
    identity) with ``S < threshold`` become dormant (``out_dormant``) and keep ``S`` as strength;
    every other row keeps its stored strength. Returns how many became dormant. Releases the
    GIL: a very large store runs row ranges on several threads."""
    count = 0
    for i in range(strength.shape[0]):
        out_strength[i] = strength[i]
        out_dormant[i] = False
        if exempt[i] or not active[i]:
            continue
        s = _strength_now(strength[i], updated_at[i], now, rate)
        if s < threshold:
            out_strength[i] = s
            out_dormant[i] = True
            count += 1
    return count


@njit(cache=True, no_cfunc_wrapper=True)
def touch_rows(rows, access, strength, updated_at, access_add, strength_add, set_time,
               time_value, out):
    """Reinforce ``rows`` in place: ``access += access_add`` and ``strength += strength_add``
    once per listing (a row listed twice counts twice, as ``np.add.at``), and
    ``updated_at = time_value`` when ``set_time``; then ``out[:, j]`` = the new (access,
    strength, updated_at) of ``rows[j]`` (a caller's cached copies are brought up to date from
    it without gathering the columns back)."""
    for r in rows:
        access[r] += access_add
        strength[r] += strength_add
        if set_time:
            updated_at[r] = time_value
    for j in range(rows.shape[0]):
        r = rows[j]
        out[0, j] = access[r]
        out[1, j] = strength[r]
        out[2, j] = updated_at[r]
