"""Shared pytest configuration."""

from tests.conftest_llm import llm_protocol, llm_server  # noqa: F401
