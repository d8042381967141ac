"""The joint re-tune's coordinate ascent (benchmarks/locomo_tune.py) takes a knob's value only
when it lifts the tuning objective by more than the step and keeps the adversarial category."""

from __future__ import annotations

import importlib
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


class FakeTuner:
    """R@10 peaks at bm25_weight 0.5; speaker_keep 4 would lift it more but costs category 5;
    cos_weight 0.7 lifts it by less than the step."""

    def score(self, changes):
        r10 = 0.70 - abs(changes.get("bm25_weight", 0.4) - 0.5)
        r10 += 0.05 if changes.get("speaker_keep") == 4 else 0.0
        r10 += 0.0004 if changes.get("cos_weight") == 0.7 else 0.0
        adv = 0.8 if changes.get("speaker_keep") == 4 else 0.9
        return r10, adv, 0.9


def test_ascent_takes_only_lifts_that_keep_category_5(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # as the scripts find their siblings
    locomo_tune = importlib.import_module("locomo_tune")
    monkeypatch.setattr(locomo_tune, "GRID", {"bm25_weight": [0.3, 0.4, 0.5, 0.6],
                                              "cos_weight": [0.6, 0.7],
                                              "speaker_keep": [1, 2, 4]})
    chosen = locomo_tune.ascend(FakeTuner(), {}, rounds=3, step=0.0005, log=lambda m: None)
    assert chosen == {"bm25_weight": 0.5}
