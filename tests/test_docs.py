"""The user documentation: short README, no history of the work, a complete config reference."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import msgspec

from maclaw_fast import config

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HISTORY = re.compile(r"\b(this|last|earlier|previous|prior|other|next|later) sessions?\b"
                     r"|\bsession's (other |first )?(report )?(runs|tree)\b|\bthe issue\b"
                     r"|\bissue \d+\b|\bpreviously\b|\b(now|was) fixed\b|\bfirst build\b"
                     r"|\b(first|second|third|fourth|fifth) pass on\b|\bearlier (report )?runs\b"
                     r"|\bbefore (this|the) (session|change)\b|\bthe default changed\b", re.I)


def _gen_config():
    spec = importlib.util.spec_from_file_location("gen_config", DOCS / "gen_config.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _user_texts() -> list[Path]:
    """Everything a user reads: the README, docs/, the profiling notes, the results files."""
    return [*_pages(), ROOT / "profiling" / "README.md",
            *sorted((ROOT / "benchmarks" / "results").glob("*.md"))]


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 180, f"README.md has {len(lines)} lines (at most 180)"


def test_no_line_speaks_of_the_history_of_the_work():
    bad = [f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
           for page in _user_texts()
           for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
           if HISTORY.search(line)]
    assert not bad, "\n".join(bad)


def test_history_pattern_catches_the_phrases():
    for phrase in ["in this session's runs", "46 µs last session", "what the issue names",
                   "as previously measured", "an earlier session", "Targets (issue 2)",
                   "the bug is now fixed", "no stemming (the first build)", "(next session)",
                   "Second pass on the single recall", "against the session's first tree",
                   "1.75 s before this session", "in earlier report runs",
                   "made before the default changed"]:
        assert HISTORY.search(phrase), phrase
    for fine in ["one MCP session per client; session start reopens the index",
                 "the int8 first pass reads a quarter of the bytes", "before the call returns",
                 "an issue tracker link", "sessions 0–4 of each conversation"]:
        assert not HISTORY.search(fine), fine


def test_every_config_field_is_in_the_reference():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    structs = [c for c in vars(config).values() if isinstance(c, type)
               and issubclass(c, config.Config) and c is not config.Config]
    assert len(structs) >= 5
    for cls in structs:
        heading = f"## `{cls.__name__}`"
        assert heading in text, f"{cls.__name__} missing from docs/configuration.md"
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        for field in msgspec.structs.fields(cls):
            assert f"| `{field.name}` |" in section, f"{cls.__name__}.{field.name} undocumented"


def test_config_reference_is_regenerated():
    gen = _gen_config()
    assert (DOCS / "configuration.md").read_text(encoding="utf-8") == gen.render(), \
        "docs/configuration.md is stale: run python docs/gen_config.py"


def test_relative_links_resolve():
    broken = []
    for page in _pages():
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_project_points_nowhere_outside_itself():
    """README, docs, the package and the kernels never send a reader to files a user does not
    have (the design lives in docs/design.md, the data comes from benchmarks/data.py)."""
    root = DOCS.parent
    found = []
    for path in [root / "README.md", *DOCS.rglob("*.md"), *(root / "maclaw_fast").rglob("*.py"),
                 *(root / "kernels").rglob("*.py")]:
        if "../shared" in path.read_text(encoding="utf-8"):
            found.append(str(path.relative_to(root)))
    assert found == []
