"""Single-bit flips and truncations of every persisted file: each is recovered (the same
state) or reported (a warning, the file moved or copied aside), and the store opens cleanly
afterwards."""

from __future__ import annotations

import pytest

from tests.fault.harness import corruption_trials

pytestmark = pytest.mark.timeout(900)


def test_every_damaged_file_recovered_or_reported(tmp_path, scale, fault_stats):
    result = corruption_trials(tmp_path, scale["corruptions_per_file"], seed=3)
    fault_stats["corruption"] = result
    assert result["files"] >= 8  # snapshots, .prev, journals, rotated journals, archive's too
    assert result["failed"] == 0, result["failures"]
    assert result["recovered"] + result["reported"] == result["tried"]
