"""tantivy's one-byte document-length encoding, which the BM25 mirror scores with so that its
scores equal tantivy's."""

from __future__ import annotations

import numpy as np


def _fieldnorm_table() -> np.ndarray:
    """tantivy's 256 one-byte document-length codes: exact to 23, then 4-bit-mantissa floats
    (tantivy ``fieldnorm/code.rs`` documents the rule; the parity test checks it against tantivy)."""
    table = np.empty(256, dtype=np.int64)
    for code in range(256):
        if code < 24:
            table[code] = code
            continue
        x = code - 24
        bits, shift = x & 7, x >> 3
        table[code] = 24 + (bits if shift == 0 else (bits | 8) << (shift - 1))
    return table


FIELDNORM_TABLE = _fieldnorm_table()
FIELDNORMS = FIELDNORM_TABLE.tolist()  # for one document at a time, bisect beats NumPy


def encode_length(n_tokens: np.ndarray | int) -> np.ndarray:
    """The length tantivy scores a document of ``n_tokens`` with (largest table value ≤ n)."""
    idx = np.searchsorted(FIELDNORM_TABLE, np.asarray(n_tokens), side="right") - 1
    return FIELDNORM_TABLE[idx].astype(np.float32)
