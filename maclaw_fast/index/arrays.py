"""Growable flat arrays: the one helper every columnar index uses to make room."""

from __future__ import annotations

import numpy as np


def grow(arr: np.ndarray, n: int, fill=0) -> np.ndarray:
    """``arr`` with room for at least ``n`` rows (doubling; new rows = ``fill``).

    Examples
    --------
    >>> grow(np.zeros(2), 3, fill=-1).shape
    (64,)
    """
    if n <= arr.shape[0]:
        return arr
    new = np.full((max(n, 2 * arr.shape[0], 64),) + arr.shape[1:], fill, dtype=arr.dtype)
    new[: arr.shape[0]] = arr
    return new
