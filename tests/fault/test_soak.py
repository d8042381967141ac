"""Eight threads of mixed operations on one journaled store; invariants checked at the end."""

from __future__ import annotations

import pytest

from tests.fault.harness import soak

pytestmark = pytest.mark.timeout(900)


def test_eight_thread_soak_keeps_invariants(tmp_path, scale, fault_stats):
    result = soak(tmp_path / "store", 8, scale["soak_seconds"], seed=11,
                  min_ops=scale["soak_ops"])
    fault_stats["soak"] = result
    assert result["errors"] == []
    # (an operation that found no entry to work on is not counted)
    assert result["operations"] >= 6 * scale["soak_ops"] and result["ok"] > 100
