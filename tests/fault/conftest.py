"""Scale of the fault suite: bounded by default (part of the README's test command), full with
``--soak``. Each test records its figures in ``fault_stats``; with ``MACLAW_FAULT_STATS=path``
they are written there as JSON at the end (``benchmarks/reliability.py`` reads them)."""

from __future__ import annotations

import json
import os

import pytest

BOUNDED = {"kills": 5, "corruptions_per_file": 2, "fuzz_api": 120, "fuzz_cli": 15,
           "fuzz_mcp": 60, "soak_seconds": 0.0,
           "soak_ops": 40}
SOAK = {"kills": 25, "corruptions_per_file": 12, "fuzz_api": 1500, "fuzz_cli": 150,
        "fuzz_mcp": 600, "soak_seconds": 60.0,
        "soak_ops": 40}

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
