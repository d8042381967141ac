"""The documentation site builds with one command, with the whole public API and no broken link."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import maclaw_fast

ROOT = Path(__file__).resolve().parent.parent


def _build_module():
    spec = importlib.util.spec_from_file_location("docs_build", ROOT / "docs" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "build.py"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    return out, proc


def test_the_build_succeeds_without_problems(site):
    out, proc = site
    assert proc.returncode == 0, proc.stderr
    assert "problem:" not in proc.stderr and "0 problems" in proc.stderr, proc.stderr


def test_every_page_and_figure_is_in_the_site(site):
    out, _ = site
    assert (out / "index.html").is_file()
    for md in (ROOT / "docs").glob("*.md"):
        page = out / f"{md.stem}.html"
        assert page.is_file(), page
    for png in (ROOT / "docs" / "img").glob("*.png"):
        assert (out / "files" / "docs" / "img" / png.name).is_file(), png.name
    for md in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:  # every table rendered
        page = out / ("index.html" if md.name == "README.md" else f"{md.stem}.html")
        tables = sum(1 for line in md.read_text(encoding="utf-8").splitlines()
                     if line.startswith("|---"))
        assert page.read_text(encoding="utf-8").count("<table>") == tables, md.name
    evaluation = (out / "evaluation.html").read_text(encoding="utf-8")
    assert 'src="files/docs/img/recall_at_k.png"' in evaluation


def test_every_public_name_is_in_the_api_reference(site):
    out, _ = site
    text = (out / "api" / "maclaw_fast.html").read_text(encoding="utf-8")
    missing = [n for n in maclaw_fast.__all__ if f'id="{n}"' not in text]
    assert not missing, missing
    for module in _build_module().API_MODULES:
        assert (out / "api" / (module.replace(".", "/") + ".html")).is_file(), module


def test_the_link_check_finds_broken_links_and_anchors(tmp_path):
    build = _build_module()
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.html").write_text('<h1 id="top">a</h1><a href="sub/b.html#here">b</a>'
                                     '<img src="missing.png"><a href="https://example.org/x">'
                                     '</a><script>x = `<a href="${url}">`</script>',
                                     encoding="utf-8")
    (tmp_path / "sub" / "b.html").write_text('<p id="there"><a href="../a.html#top">a</a></p>',
                                             encoding="utf-8")
    problems: list[str] = []
    assert build.check_links(tmp_path, problems) == 3
    assert problems == ["a.html: no anchor #here in sub/b.html", "a.html: broken link missing.png"]


def test_a_markdown_link_to_a_missing_file_is_a_problem(tmp_path):
    build = _build_module()
    src = ROOT / "docs" / "example.md"
    problems: list[str] = []
    body = build._rewrite_links('<a href="nowhere.md">x</a> <a href="architecture.md#x">y</a>',
                                src, "example.html", {ROOT / "docs" / "architecture.md":
                                                      "architecture.html"}, tmp_path, problems)
    assert problems == ["docs/example.md: broken link nowhere.md"]
    assert 'href="architecture.html#x"' in body
