"""The docs' figures: one command draws them from the results files, and they follow those files."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import plots

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ["recall_at_k.png", "memory_ablations.png", "recall_500.png",
           "recall_vs_store_size.png", "batch_throughput.png"]
PNG = b"\x89PNG\r\n\x1a\n"


def test_one_command_draws_every_figure_from_the_committed_results(tmp_path):
    out = tmp_path / "img"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plots.py"), "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FIGURES)
    for name in FIGURES:
        data = (out / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5_000, name


def test_the_committed_figures_are_the_ones_drawn_and_shown_in_the_docs():
    committed = sorted(p.name for p in (ROOT / "docs" / "img").glob("*.png"))
    assert committed == sorted(FIGURES)
    shown = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    for name in FIGURES:
        assert f"](img/{name})" in shown, f"docs/img/{name} is not shown in docs/"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"!\[[^\]]+\]\(docs/img/[a-z_0-9]+\.png\)", readme)


def test_number_and_duration_cells():
    assert plots.number("**0.547**") == 0.547
    assert plots.number("1,329") == 1329.0
    assert plots.number("0.92×") == 0.92
    assert plots.seconds("42.6 µs") == pytest.approx(42.6e-6)
    assert plots.seconds("10.34 ms") == pytest.approx(10.34e-3)
    assert plots.seconds("1.02 s") == pytest.approx(1.02)
    with pytest.raises(ValueError):
        plots.number("—")


def _write_results(folder: Path) -> None:
    """Small results files in the layout the benchmarks write, with numbers chosen here."""
    (folder / "scaling.md").write_text(
        "# Scaling\n\n## `recall` against store size\n\n"
        "| entries | maclaw_fast recall p50 (µs) | glue A p50 (µs) | glue A ÷ engine |\n"
        "|---|---|---|---|\n| 100 | 11.5 | 30.0 | 2.61 |\n| 1000 | 55.0 | 400.0 | 7.27 |\n\n"
        "## `recall_batch_arrow` against batch size\n\n"
        "| batch | arrow queries/s | glue B queries/s | glue B ÷ arrow |\n|---|---|---|---|\n"
        "| 1 | 900 | 3000 | 0.3 |\n| 64 | 12,000 | 5,000 | 2.4 |\n", encoding="utf-8")
    (folder / "memory.md").write_text(
        "# Memory\n\n## Interleaved: `recall`, one query, 500 entries\n\n"
        "| contender | p50 (median of rounds) | ÷ engine (median) | range over rounds |\n"
        "|---|---|---|---|\n| maclaw_fast recall | 50.0 µs | — | — |\n"
        "| oracle | 2.00 ms | 40.00× | 30–50× |\n| glue | 75.0 µs | 1.50× | 1.4–1.6× |\n",
        encoding="utf-8")
    cols = ("| variant | clock | R@5 held-out 5–9 | R@10 held-out 5–9 | R@5 all 10 | R@10 all 10 |\n"
            "|---|---|---|---|---|---|\n")
    rows = "".join(f"| {v} | ({c}) x | 0.{i}1 | 0.{i}2 | 0.{i}3 | 0.{i}4 |\n"
                   for i, (v, c) in enumerate([("default", "a"), ("default", "b"),
                                               ("vector alone", "a"), ("BM25 alone", "a"),
                                               ("BM25 alone", "b")], 1))
    (folder / "quality_memory.md").write_text(
        "# Memory quality\n\n### Default configuration and ablations (each change off)\n\n"
        + cols + rows, encoding="utf-8")
    (folder / "quality_tools.md").write_text(
        "# Tool retrieval quality\n\n| set / split | BM25 only | vector only | "
        "hybrid 0.2/0.8 tune / held-out | ≈ whole |\n|---|---|---|---|---|\n"
        "| MetaTool single-tool, Hit@5 | 0.5 | 0.6 | 0.7 / 0.7 | 0.71 |\n"
        "| HammerBench-zh IS (auto), Hit@5 | 0.55 | 0.65 | 0.8 / 0.8 | 0.81 |\n\n"
        "## Run 1\n\nDefault fusion (`RouterConfig`): 0.4·minmax(bm25) + 0.6·minmax(cos).\n\n"
        "| set | split | metric | BM25 only | vector only | hybrid | hybrid held-out |\n"
        "|---|---|---|---|---|---|---|\n"
        "| MetaTool | single-tool | Hit@1 | 0.30 | 0.40 | **0.45** | 0.44 |\n"
        "| MetaTool | single-tool | Hit@5 | 0.50 | 0.60 | **0.69** | 0.68 |\n"
        "| HammerBench-zh | IS | Hit@1 | 0.35 | 0.45 | **0.50** | 0.5 |\n"
        "| HammerBench-zh | IS | Hit@5 | 0.55 | 0.65 | **0.79** | 0.78 |\n", encoding="utf-8")


def test_the_figures_follow_the_results_files(tmp_path):
    _write_results(tmp_path)
    sizes, lat, batches, qps = plots.scaling_data(tmp_path)
    assert sizes == [100, 1000] and batches == [1, 64]
    assert lat["maclaw_fast recall"] == pytest.approx([11.5e-6, 55.0e-6])
    assert lat["glue A"] == pytest.approx([30.0e-6, 400.0e-6])
    assert qps == {"arrow": [900.0, 12000.0], "glue B": [3000.0, 5000.0]}
    r500 = plots.recall_500_data(tmp_path)
    assert [name for name, _ in r500] == ["maclaw_fast recall", "glue", "oracle"]
    assert [t for _, t in r500] == pytest.approx([50e-6, 75e-6, 2e-3])
    assert plots.ablation_data(tmp_path) == [("default", 0.22, 0.24), ("BM25 alone", 0.52, 0.54)]
    curves = plots.recall_at_k_data(tmp_path)
    (memory,) = [v for k, v in curves.items() if k.startswith("LoCoMo")]
    assert memory == {"BM25 only": {5: 0.43, 10: 0.44}, "vector only": {5: 0.33, 10: 0.34},
                      "default (hybrid)": {5: 0.13, 10: 0.14}}
    (meta,) = [v for k, v in curves.items() if k.startswith("MetaTool")]
    assert meta == {"BM25 only": {1: 0.30, 5: 0.50}, "vector only": {1: 0.40, 5: 0.60},
                    "hybrid 0.4/0.6": {1: 0.45, 5: 0.69},
                    "hybrid 0.2/0.8 (default), Hit@5": {5: 0.71}}
    (hammer,) = [v for k, v in curves.items() if k.startswith("HammerBench")]
    assert hammer["hybrid 0.2/0.8 (default), Hit@5"] == {5: 0.81}
    written = plots.draw_all(tmp_path, tmp_path / "img")
    assert sorted(p.name for p in written) == sorted(FIGURES)


def test_a_results_file_without_its_table_is_a_clear_error(tmp_path):
    _write_results(tmp_path)
    shutil.copy(tmp_path / "memory.md", tmp_path / "scaling.md")
    with pytest.raises(KeyError, match="store size"):
        plots.scaling_data(tmp_path)


def test_the_committed_figures_are_drawn_from_the_current_results():
    """A results file rerun without `python benchmarks/plots.py` leaves a stale figure: each PNG
    carries a digest of the numbers it was drawn from, compared here with the results files."""
    expected = plots.figure_digests()
    assert sorted(expected) == sorted(FIGURES)
    stale = [name for name, digest in expected.items()
             if plots.stored_digest(ROOT / "docs" / "img" / name) != digest]
    assert not stale, f"redraw with `python benchmarks/plots.py`: {stale} are stale"


def test_a_changed_number_changes_the_digest(tmp_path):
    _write_results(tmp_path)
    before = plots.figure_digests(tmp_path)
    scaling = tmp_path / "scaling.md"
    scaling.write_text(scaling.read_text(encoding="utf-8").replace("| 55.0 |", "| 56.0 |"),
                       encoding="utf-8")
    after = plots.figure_digests(tmp_path)
    assert after["recall_vs_store_size.png"] != before["recall_vs_store_size.png"]
    assert {k: v for k, v in after.items() if k != "recall_vs_store_size.png"} == \
        {k: v for k, v in before.items() if k != "recall_vs_store_size.png"}
    drawn = plots.draw_all(tmp_path, tmp_path / "img")
    for path in drawn:
        assert plots.stored_digest(path) == after[path.name]
