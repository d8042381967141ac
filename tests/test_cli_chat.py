"""What ``maclaw-fast chat`` shows a user on a terminal besides the conversation: the loading
line before the first prompt, the "thinking" line while a turn waits for its first output, and
at ``/new`` each memory the knowledge extractor saved."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.test_chat_pty import FACT, Terminal, _model

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")]

ROOT = Path(__file__).resolve().parents[1]


def _chat(tmp_path, llm_server, **env_extra) -> Terminal:
    llm_server.default = _model
    env = dict(os.environ, PYTHONPATH=str(ROOT), MACLAW_HOME=str(tmp_path / "home"),
               TERM="xterm", COLUMNS="120", **env_extra)
    return Terminal([sys.executable, "-m", "maclaw_fast.cli", "chat", "--llm-url",
                     llm_server.url + "/v1", "--model", "test-model", "--embedder", "hash",
                     "--store", str(tmp_path / "store")], env, tmp_path)


def test_chat_shows_loading_thinking_and_what_was_extracted(tmp_path, llm_server):
    term = _chat(tmp_path, llm_server, MACLAW_PROGRESS="1")
    try:
        start = term.expect(r"you> ", timeout=60)
        assert "loading the embedding model and the tool index … " in start
        assert " done" in start.split("loading the embedding model")[-1]
        term.send("Remember that Kai owns the November order audit")
        turn = term.expect(r"assistant> Noted\.")
        assert "thinking … " in turn  # shown until the first output, then erased
        term.expect(r"you> ")
        term.send("/new")
        shown = term.expect(r"\(new conversation\)")
        assert "extracting knowledge from the conversation … " in shown
        assert "knowledge extraction saved 1 memory:" in shown
        assert f"+ [project_knowledge] {FACT}" in shown
        term.expect(r"you> ")
        term.send("/exit")
        term.proc.wait(timeout=30)
        assert term.proc.returncode == 0
    finally:
        term.close()


def test_chat_quiet_shows_no_status_lines(tmp_path, llm_server):
    term = _chat(tmp_path, llm_server, MACLAW_PROGRESS="0")
    try:
        term.expect(r"you> ", timeout=60)
        term.send("hello")
        term.expect(r"assistant> Noted\.")
        term.expect(r"you> ")
        term.send("/exit")
        term.proc.wait(timeout=30)
        assert "thinking" not in term.screen and "loading the embedding" not in term.screen
    finally:
        term.close()
