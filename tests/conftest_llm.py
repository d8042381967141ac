"""Pytest fixtures for the local LLM server (see tests/llm_server.py).

Register in tests/conftest.py with::

    from tests.conftest_llm import llm_protocol, llm_server  # noqa: F401
"""

from __future__ import annotations

import pytest

from tests.llm_server import LLMServer


@pytest.fixture
def llm_server():
    """A running :class:`LLMServer`, stopped (with its clients closed) after the test."""
    with LLMServer() as server:
        yield server


@pytest.fixture(params=["openai", "anthropic"])
def llm_protocol(request) -> str:
    """Runs a test once per wire protocol."""
    return request.param
