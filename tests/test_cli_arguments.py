"""Bad command-line arguments are refused at once with exit code 2 and a one-line reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CASES = [
    (["serve", "--port", "99999"], "--port: must be between 1 and 65535"),
    (["serve", "--port", "http"], "--port: not a port number"),
    (["recall", ""], "query: must not be empty"),
    (["route", "   "], "message: must not be empty"),
    (["search", "x", "--min-score", "5"], "--min-score: must be between 0 and 1"),
    (["search", "x", "--min-score", "-0.1"], "--min-score: must be between 0 and 1"),
    (["search", "x", "--workspace", ".", "--max-results", "0"], "--max-results: must be at least"),
    (["recall-batch", "--in", "missing.txt", "--out", "o.parquet", "--embedder", "hash",
      "--store", "st"], "No such file or directory (missing.txt)"),
]


@pytest.mark.parametrize("args,reason", CASES)
def test_bad_arguments_exit_2_with_the_reason(args, reason, tmp_path):
    env = dict(os.environ, MACLAW_QUIET_COMPILE="1")
    proc = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert reason in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / ".maclaw").exists()


def test_the_readme_route_example_finds_its_tools():
    """The README's route example asks for what the sample catalog serves."""
    env = dict(os.environ, MACLAW_QUIET_COMPILE="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", "route",
                           "check the weather in Oslo and email it to Lin", "--catalog",
                           os.path.join(root, "data", "tools.json")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "get_weather" in proc.stdout and "send_email" in proc.stdout


def test_the_exit_codes_are_documented_as_the_cli_has_them():
    from maclaw_fast.cli import EPILOG, EXIT_CODES

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "interfaces.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in doc
        assert f" {code} " in EPILOG.replace("\n", " ")
