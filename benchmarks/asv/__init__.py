"""asv benchmarks (``asv.conf.json`` at the repository root; see ``bench_recall.py``)."""
