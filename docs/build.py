"""Build the documentation site: the README, ``docs/*.md``, the benchmark results and the profiling
notes as HTML pages, and an API reference generated from the docstrings by pdoc.

    python docs/build.py                 # → site/ (open site/index.html)
    python docs/build.py --out DIR

Needs ``pip install -e ".[docs]"`` (pdoc and matplotlib; the ``test`` extra has them too). Every
relative link and image of every page is checked after the build, and pdoc's warnings are
collected: the command prints each problem and exits with status 1 if there is any.
"""

from __future__ import annotations

import argparse
import html
import importlib
import os
import re
import shutil
import sys
import warnings
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# The public API: the package itself (its ``__all__``) and the modules users import from.
API_MODULES = [
    "maclaw_fast", "maclaw_fast.config", "maclaw_fast.errors", "maclaw_fast.records",
    "maclaw_fast.memory", "maclaw_fast.tools", "maclaw_fast.workspace",
    "maclaw_fast.maintenance", "maclaw_fast.agent", "maclaw_fast.embedding", "maclaw_fast.llm",
    "maclaw_fast.text", "maclaw_fast.compat.mem0", "maclaw_fast.integrations.langchain",
    "maclaw_fast.integrations.langgraph_store", "maclaw_fast.integrations.ray_batch",
]

# pdoc evaluates annotations to link their types. A few cannot be evaluated at run time although
# they are correct for type checkers: inside a class with a method named ``list``, ``list[X]``
# names the method; ``threading.RLock`` is a factory function. pdoc then shows the annotation as
# written, which is what a reader needs, so only these are not counted as problems.
BENIGN_ANNOTATION = re.compile(r"^Error parsing type annotation .* for .*: ("
                               r"'function' object is not subscriptable|"
                               r"unsupported operand type\(s\) for \|: 'function' and )")

MARKDOWN_EXTRAS = ["tables", "fenced-code-blocks", "header-ids", "code-friendly",
                   "cuddled-lists", "strike"]

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} — maclaw_fast</title>
<style>
body {{ font: 15px/1.55 system-ui, sans-serif; margin: 0; color: #1f2328; }}
nav {{ background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: .6em 1.2em; }}
nav a {{ margin-right: 1em; }}
main {{ max-width: 60em; margin: 0 auto; padding: 1em 1.5em 3em; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 13px; display: block;
         overflow-x: auto; }}
th, td {{ border: 1px solid #d0d7de; padding: .3em .6em; vertical-align: top; }}
pre {{ background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: 13px; }}
code {{ font-size: 90%; }}
img {{ max-width: 100%; }}
</style></head>
<body><nav>{nav}</nav><main>
{body}
</main></body></html>
"""


def pages() -> dict[Path, str]:
    """Markdown source → path of its HTML page in the site."""
    out = {ROOT / "README.md": "index.html"}
    for md in sorted(DOCS.glob("*.md")):
        out[md] = f"{md.stem}.html"
    out[ROOT / "profiling" / "README.md"] = "profiling.html"
    for md in sorted((ROOT / "benchmarks" / "results").glob("*.md")):
        out[md] = f"results/{md.stem}.html"
    return {src: dst for src, dst in out.items() if src.exists()}


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^#\s+(.+)$", text, re.M)
    return m.group(1).strip().strip("`") if m else fallback


def _relative(from_page: str, to_path: str) -> str:
    return os.path.relpath(to_path, os.path.dirname(from_page) or ".").replace(os.sep, "/")


def _rewrite_links(body: str, src: Path, dst: str, site: dict[Path, str], out: Path,
                   problems: list[str]) -> str:
    """Relative links of a rendered page: Markdown pages → their HTML page; other files of the
    repository → a copy under ``files/``; anything that does not resolve → a problem."""

    def fix(m: re.Match) -> str:
        attr, url = m.group(1), html.unescape(m.group(2))
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or url.startswith(("#", "mailto:")) or not parts.path:
            return m.group(0)
        target = (src.parent / unquote(parts.path)).resolve()
        frag = f"#{parts.fragment}" if parts.fragment else ""
        if target in site:
            new = _relative(dst, site[target]) + frag
        elif target.is_file() and ROOT in target.parents:
            rel = target.relative_to(ROOT).as_posix()
            copy = out / "files" / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target, copy)
            new = _relative(dst, f"files/{rel}") + frag
        else:
            problems.append(f"{src.relative_to(ROOT)}: broken link {url}")
            return m.group(0)
        return f'{attr}="{html.escape(new, quote=True)}"'

    return re.sub(r'\b(href|src)="([^"]*)"', fix, body)


def build_pages(out: Path, problems: list[str]) -> list[str]:
    import markdown2

    site = pages()
    nav_items = [("index.html", "maclaw_fast")] + [
        (dst, _title(src.read_text(encoding="utf-8"), src.stem))
        for src, dst in site.items() if src.parent == DOCS] + [
        ("api/maclaw_fast.html", "API reference")]
    written = []
    for src, dst in site.items():
        text = src.read_text(encoding="utf-8")
        body = markdown2.markdown(text, extras=MARKDOWN_EXTRAS)
        body = _rewrite_links(body, src, dst, site, out, problems)
        nav = " ".join(f'<a href="{_relative(dst, href)}">{html.escape(label)}</a>'
                       for href, label in nav_items)
        path = out / dst
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PAGE.format(title=html.escape(_title(text, src.stem)), nav=nav,
                                    body=body), encoding="utf-8")
        written.append(dst)
    return written


def build_api(out: Path, problems: list[str]) -> None:
    import pdoc
    import pdoc.render

    package = importlib.import_module("maclaw_fast")
    # the package loads MemoryStore, StorePool… on first use (``__getattr__``); pdoc reads the
    # module's namespace, so the names of ``__all__`` are loaded into it first
    for name in package.__all__:
        setattr(package, name, getattr(package, name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.render.configure(docformat="markdown", show_source=False,
                              footer_text="maclaw_fast " + getattr(package, "__version__", ""))
        pdoc.pdoc(*API_MODULES, output_directory=out / "api")
    for w in caught:
        message = str(w.message)
        if not BENIGN_ANNOTATION.match(message):
            problems.append(f"pdoc: {message}")


def check_links(out: Path, problems: list[str]) -> int:
    """Every relative ``href``/``src`` of every page points at a file of the site, and every
    ``#fragment`` into a page of the site at an ``id`` there. Returns the links checked."""
    ids: dict[Path, set[str]] = {}

    def ids_of(path: Path) -> set[str]:
        if path not in ids:
            ids[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(encoding="utf-8")))
        return ids[path]

    checked = 0
    for page in sorted(out.rglob("*.html")):
        # scripts build URLs of their own (pdoc's search): only the markup's links are checked
        text = re.sub(r"<script\b.*?</script>", "", page.read_text(encoding="utf-8"), flags=re.S)
        for url in re.findall(r'\b(?:href|src)="([^"]*)"', text):
            url = html.unescape(url)
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            checked += 1
            if not target.exists():
                problems.append(f"{page.relative_to(out)}: broken link {url}")
            elif parts.fragment and target.suffix == ".html" \
                    and parts.fragment not in ids_of(target):
                problems.append(f"{page.relative_to(out)}: no anchor #{parts.fragment} in "
                                f"{target.relative_to(out)}")
    return checked


def build(out: Path) -> list[str]:
    """Build the site into ``out`` (replaced); returns the problems found (empty when clean)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    problems: list[str] = []
    build_pages(out, problems)
    build_api(out, problems)
    check_links(out, problems)
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "site"), help="output folder (replaced)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    problems = build(out)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    print(f"built {out / 'index.html'} ({len(list(out.rglob('*.html')))} pages, "
          f"{len(problems)} problems)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
