"""Generate a synthetic agent workspace of Markdown memory files for the workspace benchmark.

Deterministic for a seed: ``MEMORY.md``, dated daily logs ``memory/YYYY-MM-DD.md`` and undated
notes under ``memory/projects``, ``memory/people`` and ``memory/topics``, about ``target_mb`` in
all. Words follow a Zipf law over a syllable vocabulary (so BM25 sees realistic document
frequencies), with some Chinese phrases mixed in; lines are headings, bullets and paragraphs of
varied length.

Usage: ``python benchmarks/gen_workspace.py OUT_DIR [--files 2000] [--mb 20] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
from pathlib import Path

import numpy as np

_SYLLABLES = ["ka", "ri", "to", "mo", "na", "shi", "lu", "ve", "pe", "dor", "an", "el", "is", "or", "un", "ta", "ko", "mi", "ra", "so", "be", "de", "fa", "go", "ha", "ji", "li", "ma", "ne", "po", "qu", "sa", "ti", "vo", "wa", "xe", "yo", "zu", "bar", "tin", "gol", "mer", "vin", "dra", "kel"]
_ZH = ("部署", "数据库", "迁移", "测试", "会议", "项目", "备份", "监控", "告警", "回滚", "发布",
       "性能", "缓存", "索引", "日志", "权限", "配置", "脚本", "服务器", "客户")


def vocabulary(n: int, rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        k = int(rng.integers(2, 5))
        words.add("".join(rng.choice(_SYLLABLES, size=k)))
    out = sorted(words)
    rng.shuffle(out)  # frequency rank must not follow the alphabet
    return out


def zipf_weights(n: int, s: float = 1.05) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


class _Writer:
    def __init__(self, rng: np.random.Generator, vocab: list[str]) -> None:
        self.rng = rng
        self.vocab = np.array(vocab, dtype=object)
        self.cdf = np.cumsum(zipf_weights(len(vocab)))

    def words(self, n: int) -> str:
        idx = np.minimum(np.searchsorted(self.cdf, self.rng.random(n)), self.vocab.size - 1)
        ws = self.vocab[idx]
        if self.rng.random() < 0.15:
            ws[int(self.rng.integers(0, n))] = self.rng.choice(_ZH)
        return " ".join(ws)

    def document(self, title: str, n_chars: int) -> str:
        out = [f"# {title}", ""]
        size = 0
        while size < n_chars:
            kind = self.rng.random()
            if kind < 0.08:
                line = f"\n## {self.words(int(self.rng.integers(2, 5))).title()}"
            elif kind < 0.6:
                line = "- " + self.words(int(self.rng.integers(5, 25))) + "."
            else:
                line = self.words(int(self.rng.integers(15, 60))).capitalize() + "."
            out.append(line)
            size += len(line) + 1
        return "\n".join(out) + "\n"


def generate(root: str | Path, *, n_files: int = 2000, target_mb: float = 20.0,
             seed: int = 0) -> dict:
    """Write the workspace under ``root`` (replacing it); returns counts and the vocabulary."""
    root = Path(root)
    if root.exists():
        shutil.rmtree(root)
    rng = np.random.default_rng(seed)
    vocab = vocabulary(8000, rng)
    w = _Writer(rng, vocab)
    per_file = int(target_mb * 1e6 / n_files)
    n_daily = int(n_files * 0.6)
    start = dt.date(2023, 1, 1)
    paths = [Path("MEMORY.md")]
    paths += [Path("memory") / f"{start + dt.timedelta(days=i)}.md" for i in range(n_daily)]
    groups = ("projects", "people", "topics")
    rest = n_files - len(paths)
    paths += [Path("memory") / groups[i % 3] / f"note-{i:04d}.md" for i in range(rest)]
    total = 0
    for rel in paths:
        full = root / rel
        full.parent.mkdir(parents=True, exist_ok=True)
        n_chars = int(per_file * rng.uniform(0.5, 1.5))
        text = w.document(rel.stem, n_chars)
        full.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return {"files": len(paths), "bytes": total, "vocab": vocab}


def queries(vocab: list[str], n: int = 200, seed: int = 1) -> list[str]:
    """Queries of 1–4 words drawn from the mid-frequency band of the vocabulary (where a query
    has a few dozen to a few hundred matching chunks, as a real one would)."""
    rng = np.random.default_rng(seed)
    band = vocab[50:3000]
    out = []
    for _ in range(n):
        k = int(rng.integers(1, 5))
        out.append(" ".join(rng.choice(band, size=k, replace=False)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    info = generate(args.out, n_files=args.files, target_mb=args.mb, seed=args.seed)
    print(f"wrote {info['files']} files, {info['bytes'] / 1e6:.1f} MB to {args.out}")


if __name__ == "__main__":
    main()
