"""Reinforcement of recalled rows (design §7): access, strength and updated_at in place."""

from numba import njit


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
