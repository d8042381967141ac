"""Draw the figures of the docs from the benchmark results files (``benchmarks/results/*.md``).

    python benchmarks/plots.py                   # writes docs/img/*.png
    python benchmarks/plots.py --results DIR --out DIR

Every number comes from the Markdown tables the benchmarks write, so rerunning a benchmark and
then this command redraws its figures. Needs matplotlib (``pip install -e ".[docs]"``; the
``test`` extra has it too).

Figures (file → results it reads):

* ``recall_at_k.png`` — recall@k per data set for BM25 only, vector only and the hybrid:
  LoCoMo memory recall (``quality_memory.md``, the ablation table, clock (a), all 10
  conversations), MetaTool and HammerBench-zh IS tool routing (``quality_tools.md``, the run
  tables' Hit@1 and Hit@5, plus the shipped default fusion's Hit@5 from the summary table).
* ``memory_ablations.png`` — LoCoMo turn R@10 with each part of the default switched off, on the
  held-out half and on all 10 conversations (``quality_memory.md``).
* ``recall_500.png`` — one recall over 500 entries, the engine against each baseline, medians of
  the interleaved rounds (``memory.md``).
* ``recall_vs_store_size.png`` — recall p50 against store size beside the hand-written glues
  (``scaling.md``).
* ``batch_throughput.png`` — queries per second against batch size (``scaling.md``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
IMG = HERE.parent / "docs" / "img"
DIGEST_KEY = "Source-Digest"  # PNG text chunk: digest of the numbers a figure was drawn from

COLOURS = {"engine": "#d1495b", "bm25": "#00798c", "vector": "#edae49", "hybrid": "#d1495b",
           "default": "#30638e"}
GLUE_COLOURS = ["#00798c", "#edae49", "#66a182", "#8d96a3", "#b07aa1"]


# --------------------------------------------------------------------------- parsing
@dataclass
class Table:
    """One Markdown table: the headings above it (outermost first), its header and its rows."""

    headings: list[str]
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def column(self, name: str) -> int:
        """Index of the first column whose header contains ``name``."""
        for i, c in enumerate(self.columns):
            if name in c:
                return i
        raise KeyError(f"no column {name!r} in {self.columns}")

    def row(self, first_cell: str) -> list[str]:
        """The first row whose first cell starts with ``first_cell``."""
        for r in self.rows:
            if r[0].startswith(first_cell):
                return r
        raise KeyError(f"no row {first_cell!r} under {self.headings}")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_tables(path: Path) -> list[Table]:
    """Every table of a Markdown file, with the headings (``#``… and bold lines) it sits under."""
    tables: list[Table] = []
    heads: dict[int, str] = {}
    current: Table | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if s.startswith("|"):
            cells = _cells(s)
            if current is None:
                current = Table([heads[k] for k in sorted(heads)], cells)
                tables.append(current)
            elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.rows.append(cells)
            continue
        current = None
        m = re.match(r"(#+)\s+(.*)", s)
        if m:
            level = len(m.group(1))
            heads = {k: v for k, v in heads.items() if k < level}
            heads[level] = m.group(2)
        elif re.fullmatch(r"\*\*[^*]+\*\*", s):
            heads[9] = s.strip("*")
    return tables


def find_table(tables: list[Table], heading: str = "", column: str = "") -> Table:
    """The first table under a heading containing ``heading`` with a column containing
    ``column``."""
    for t in tables:
        if any(heading in h for h in t.headings) and any(column in c for c in t.columns):
            return t
    raise KeyError(f"no table under {heading!r} with a column {column!r}")


def number(cell: str) -> float:
    """``'**0.547**'`` → 0.547, ``'1,329'`` → 1329.0, ``'0.92×'`` → 0.92."""
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", cell.replace("*", ""))
    if not m:
        raise ValueError(f"no number in {cell!r}")
    return float(m.group(0).replace(",", ""))


def seconds(cell: str) -> float:
    """A duration cell (``'42.6 µs'``, ``'10.34 ms'``, ``'1.02 s'``) in seconds."""
    scale = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    m = re.search(r"(-?\d[\d,]*(?:\.\d+)?)\s*(ns|µs|us|ms|s)\b", cell)
    if not m:
        raise ValueError(f"no duration in {cell!r}")
    return float(m.group(1).replace(",", "")) * scale[m.group(2)]


# --------------------------------------------------------------------------- data
def recall_at_k_data(results: Path) -> dict[str, dict[str, dict[int, float]]]:
    """data set → method → {k: recall@k}."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    mem = read_tables(results / "quality_memory.md")
    abl = find_table(mem, "ablations", "R@10 all")
    clock_a = [r for r in abl.rows if r[1].startswith("(a)")]
    ks = {5: abl.column("R@5 all"), 10: abl.column("R@10 all")}

    def pick(prefix: str) -> dict[int, float]:
        row = next(r for r in clock_a if r[0].startswith(prefix))
        return {k: number(row[i]) for k, i in ks.items()}

    out["LoCoMo memory recall (turn R@k, 1,536 questions)"] = {
        "BM25 only": pick("BM25 alone"), "vector only": pick("vector alone"),
        "default (hybrid)": pick("default")}

    tools = read_tables(results / "quality_tools.md")
    summary = find_table(tools, "Tool retrieval quality", "≈ whole")
    # the fusion weights of the runs and of the shipped default, as the file states them
    text = (results / "quality_tools.md").read_text(encoding="utf-8")
    m = re.search(r"Default fusion \(`RouterConfig`\): ([\d.]+)·(?:minmax|z)\(bm25\) \+ ([\d.]+)",
                  text)
    run_hybrid = f"hybrid {m.group(1)}/{m.group(2)}" if m else "hybrid"
    d = re.search(r"hybrid ([\d.]+/[\d.]+)", summary.columns[summary.column("hybrid")])
    default = f"hybrid {d.group(1)} (default), Hit@5" if d else "default fusion, Hit@5"
    for label, set_name, split in (("MetaTool (Hit@k, {n} queries)", "MetaTool", "single-tool"),
                                   ("HammerBench-zh IS (Hit@k)", "HammerBench-zh", "IS")):
        run = next(t for t in tools if "metric" in t.columns and any(
            r[0] == set_name and r[1] == split for r in t.rows))
        if "queries" in run.columns:  # the size of the run's sample, as the table gives it
            n = next(r[run.column("queries")] for r in run.rows if r[0] == set_name)
            label = label.replace("{n}", n)
        else:
            label = label.replace(", {n} queries", "")
        series: dict[str, dict[int, float]] = {"BM25 only": {}, "vector only": {},
                                               run_hybrid: {}}
        for r in run.rows:
            if r[0] != set_name or r[1] != split:
                continue
            k = int(r[run.column("metric")].split("@")[1])
            series["BM25 only"][k] = number(r[run.column("BM25 only")])
            series["vector only"][k] = number(r[run.column("vector only")])
            series[run_hybrid][k] = number(r[run.column("hybrid")])
        srow = next(r for r in summary.rows if r[0].startswith(set_name)
                    and (split == "single-tool" or f" {split} " in r[0]))
        series[default] = {5: number(srow[summary.column("≈ whole")])}
        out[label] = series
    return out


def ablation_data(results: Path) -> list[tuple[str, float, float]]:
    """(variant, R@10 held-out, R@10 all) for clock (b), default first."""
    abl = find_table(read_tables(results / "quality_memory.md"), "ablations", "R@10 all")
    held, whole = abl.column("R@10 held-out"), abl.column("R@10 all")
    return [(r[0], number(r[held]), number(r[whole])) for r in abl.rows
            if r[1].startswith("(b)") and not r[0].startswith("re-tune")]  # parts, not knobs


def recall_500_data(results: Path) -> list[tuple[str, float]]:
    """(contender, p50 seconds) of the interleaved single-recall table, fastest first."""
    t = find_table(read_tables(results / "memory.md"), "Interleaved: `recall`,", "p50")
    col = t.column("p50")
    return sorted(((r[0], seconds(r[col])) for r in t.rows), key=lambda x: x[1])


def scaling_data(results: Path) -> tuple[list[int], dict[str, list[float]],
                                         list[int], dict[str, list[float]]]:
    """Store sizes and p50 seconds per contender; batch sizes and queries/s per contender."""
    tables = read_tables(results / "scaling.md")
    st = find_table(tables, "store size", "p50 (µs)")
    sizes = [int(number(r[0])) for r in st.rows]
    lat = {c.replace(" p50 (µs)", ""): [number(r[i]) * 1e-6 for r in st.rows]
           for i, c in enumerate(st.columns) if c.endswith("p50 (µs)")}
    bt = find_table(tables, "batch size", "queries/s")
    batches = [int(number(r[0])) for r in bt.rows]
    qps = {c.replace(" queries/s", ""): [number(r[i]) for r in bt.rows]
           for i, c in enumerate(bt.columns) if c.endswith("queries/s")}
    return sizes, lat, batches, qps


# --------------------------------------------------------------------------- drawing
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                         "axes.grid": True, "grid.alpha": 0.3, "svg.hashsalt": "maclaw"})
    return plt


def data_digest(data) -> str:
    """A short digest of a figure's numbers; stored in the PNG so a stale figure can be found."""
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def figure_digests(results: Path = RESULTS) -> dict[str, str]:
    """The digest each figure drawn from ``results`` carries, by file name."""
    sizes, lat, batches, qps = scaling_data(results)
    return {"recall_at_k.png": data_digest(recall_at_k_data(results)),
            "memory_ablations.png": data_digest(ablation_data(results)),
            "recall_500.png": data_digest(recall_500_data(results)),
            "recall_vs_store_size.png": data_digest([sizes, lat]),
            "batch_throughput.png": data_digest([batches, qps])}


def stored_digest(png: Path) -> str | None:
    """The digest a drawn PNG carries (its ``Source-Digest`` text chunk), or None."""
    from PIL import Image

    with Image.open(png) as image:
        return image.text.get(DIGEST_KEY)


def _save(fig, path: Path, data) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None, DIGEST_KEY: data_digest(data)})
    fig.clf()
    return path


def _colour(name: str, i: int) -> str:
    low = name.lower()
    if "(default)" in low:
        return COLOURS["default"]
    if low.startswith("maclaw_fast"):
        return COLOURS["engine"]
    for key in ("bm25", "vector", "default", "hybrid"):
        if low.startswith(key):
            return COLOURS[key]
    return GLUE_COLOURS[i % len(GLUE_COLOURS)]


def plot_recall_at_k(results: Path, out: Path) -> Path:
    plt = _plt()
    data = recall_at_k_data(results)
    fig, axes = plt.subplots(1, len(data), figsize=(4.0 * len(data), 3.3))
    for ax, (title, series) in zip(axes, data.items()):
        for i, (method, points) in enumerate(series.items()):
            ks = sorted(points)
            style = dict(marker="*", markersize=11, linestyle="none") if len(ks) == 1 else \
                dict(marker="o")
            ax.plot(ks, [points[k] for k in ks], label=method, color=_colour(method, i), **style)
        ks = sorted({k for p in series.values() for k in p})
        ax.set_xticks(ks)
        ax.set_xlabel("k")
        ax.set_ylim(0, 1)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8, loc="lower right")
    axes[0].set_ylabel("recall@k / Hit@k")
    return _save(fig, out / "recall_at_k.png", data)


def plot_ablations(results: Path, out: Path) -> Path:
    plt = _plt()
    rows = ablation_data(results)
    fig, ax = plt.subplots(figsize=(7.5, 0.38 * len(rows) + 1.2))
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], [r[2] for r in rows], height=0.4, label="all 10 conversations",
            color=COLOURS["default"])
    ax.barh([i - 0.2 for i in y], [r[1] for r in rows], height=0.4,
            label="held-out half (5–9)", color=COLOURS["vector"])
    ax.set_yticks(list(y), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("LoCoMo turn R@10 (memories saved at their session dates)")
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    return _save(fig, out / "memory_ablations.png", rows)


def plot_recall_500(results: Path, out: Path) -> Path:
    plt = _plt()
    rows = recall_500_data(results)
    fig, ax = plt.subplots(figsize=(7.5, 0.4 * len(rows) + 1.2))
    engine = rows[[r[0] for r in rows].index("maclaw_fast recall")][1] \
        if any(r[0] == "maclaw_fast recall" for r in rows) else rows[0][1]
    ax.barh(range(len(rows)), [r[1] * 1e6 for r in rows],
            color=[_colour(r[0], i) for i, r in enumerate(rows)])
    for i, (_, t) in enumerate(rows):
        ax.text(t * 1e6 * 1.08, i, f"{t * 1e6:,.0f} µs  ({t / engine:.1f}×)", va="center",
                fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=max(r[1] for r in rows) * 1e6 * 12)
    ax.set_xlabel("one recall, 500 entries: p50 (µs, log scale), interleaved rounds")
    return _save(fig, out / "recall_500.png", rows)


def plot_scaling(results: Path, out: Path) -> list[Path]:
    plt = _plt()
    sizes, lat, batches, qps = scaling_data(results)
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for i, (name, ys) in enumerate(lat.items()):
        ax.plot(sizes, [y * 1e3 for y in ys], marker="o", label=name, color=_colour(name, i),
                linewidth=2.2 if name.startswith("maclaw_fast") else 1.4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories in the store")
    ax.set_ylabel("one recall, p50 (ms)")
    ax.legend(fontsize=8)
    first = _save(fig, out / "recall_vs_store_size.png", [sizes, lat])
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for i, (name, ys) in enumerate(qps.items()):
        ax.plot(batches, ys, marker="o", label=name,
                color=["#d1495b", "#30638e", "#edae49", "#00798c"][i % 4])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("queries per call (500 memories)")
    ax.set_ylabel("queries per second")
    ax.legend(fontsize=8)
    return [first, _save(fig, out / "batch_throughput.png", [batches, qps])]


def draw_all(results: Path = RESULTS, out: Path = IMG) -> list[Path]:
    """Draw every figure; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    return [plot_recall_at_k(results, out), plot_ablations(results, out),
            plot_recall_500(results, out), *plot_scaling(results, out)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(RESULTS), help="the results folder to read")
    ap.add_argument("--out", default=str(IMG), help="where the PNG files go")
    args = ap.parse_args(argv)
    for path in draw_all(Path(args.results), Path(args.out)):
        print(f"written {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
