"""Single-bit flips and truncations of every persisted file, and files deleted, emptied or
overwritten with random bytes: each is recovered (the same state), reported (a warning, the
file moved or copied aside) or refused until the loss is accepted (``recover=True``); never a
silent rollback, never bytes dropped without a copy; the store opens cleanly afterwards."""

from __future__ import annotations

import pytest

from tests.fault.harness import corruption_trials

pytestmark = pytest.mark.timeout(900)


def test_every_damaged_file_recovered_or_reported(tmp_path, scale, fault_stats):
    result = corruption_trials(tmp_path, scale["corruptions_per_file"], seed=3,
                               whole_file=scale["whole_file"])
    fault_stats["corruption"] = result
    assert result["files"] >= 8  # snapshots, .prev, journals, rotated journals, archive's too
    assert result["failed"] == 0, result["failures"]
    assert result["silent_rollbacks"] == 0 and result["dropped_without_copy"] == 0
    assert result["recovered"] + result["reported"] + result["refused"] == result["tried"]
