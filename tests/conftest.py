"""Shared pytest configuration."""

from tests.conftest_llm import llm_protocol, llm_server  # noqa: F401


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help="run tests/fault at full scale (more kills, corruptions, fuzz "
                          "examples and a 60 s soak) instead of the bounded form")
