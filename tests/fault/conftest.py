"""Scale of the fault suite: bounded by default (part of the README's test command), full with
``--soak``. Each test records its figures in ``fault_stats``; with ``MACLAW_FAULT_STATS=path``
they are written there as JSON at the end (``benchmarks/reliability.py`` reads them)."""

from __future__ import annotations

import json
import os

import pytest

BOUNDED = {"kills": 5, "workspace_kills": 4, "corruptions_per_file": 2,
           "whole_file": "journal", "fuzz_api": 120, "fuzz_pool": 30, "fuzz_cli": 15,
           "fuzz_mcp": 60, "soak_seconds": 0.0, "soak_ops": 40}
# full scale: >= 400 corruption trials (9 files x (24 + 24 + 3)), >= 2,000
# fuzzed store API calls (and 400 of StorePool names), >= 40 kills during workspace sync
SOAK = {"kills": 25, "workspace_kills": 60, "corruptions_per_file": 24, "whole_file": "all",
        "fuzz_api": 2000, "fuzz_pool": 400, "fuzz_cli": 150, "fuzz_mcp": 600,
        "soak_seconds": 60.0, "soak_ops": 40}

_STATS: dict = {}


@pytest.fixture(scope="session")
def scale(request) -> dict:
    return SOAK if request.config.getoption("--soak") else BOUNDED


@pytest.fixture(scope="session")
def fault_stats(request):
    yield _STATS


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get("MACLAW_FAULT_STATS")
    if target and _STATS:
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(_STATS, fh, indent=2, sort_keys=True)
