"""kill -9 at random moments during saves, deletes, snapshots and archive moves: no
acknowledged write is lost, under fsync ``always`` and ``interval``."""

from __future__ import annotations

import pytest

from tests.fault.harness import kill_cycles

pytestmark = pytest.mark.timeout(900)


@pytest.mark.parametrize("fsync", ["always", "interval"])
def test_no_acknowledged_write_lost_across_kills(tmp_path, fsync, scale, fault_stats):
    result = kill_cycles(tmp_path / "store", fsync, scale["kills"], seed=7)
    fault_stats[f"kill_{fsync}"] = result
    assert result["acknowledged"] >= scale["kills"]  # the writers did get going
    assert result["lost"] == 0, result["lost_ids"]
