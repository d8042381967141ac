"""Shared pytest configuration."""

import atexit
import os
import shutil
import tempfile

from tests.conftest_llm import llm_protocol, llm_server  # noqa: F401

# the CLI keeps its state (default store, workspace indexes) under $MACLAW_HOME: a test run
# (and every process it starts) writes there, never into the home of whoever runs it
os.environ["MACLAW_HOME"] = tempfile.mkdtemp(prefix="maclaw_home_tests_")
atexit.register(shutil.rmtree, os.environ["MACLAW_HOME"], ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help="run tests/fault at full scale (more kills, corruptions, fuzz "
                          "examples and a 60 s soak) instead of the bounded form")
