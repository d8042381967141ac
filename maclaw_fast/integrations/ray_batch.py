"""Batch recall over many stores with Ray Data: a table of ``(store, query[, project])`` rows in,
a table of hits out, each store opened and recalled by one task (all its queries at once).

The rows are grouped by store on the driver (one dataset row per store: its queries and their
row numbers), so no shuffle is needed and no two tasks ever open the same store. Every task
runs the same ``recall_batch_arrow`` as a local call, so the hits are equal to the local ones,
bit for bit, when both see the same clock (``now``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maclaw_fast.config import MemoryConfig
from maclaw_fast.errors import ValidationError

HIT_COLUMNS = ("row", "store", "rank", "id", "score", "recency", "importance", "bm25", "cos",
               "affinity", "graph", "reason")


def read_requests(source) -> pa.Table:
    """``source`` (a ``pyarrow.Table`` or a Parquet path) checked: string columns ``store`` and
    ``query``, optional string ``project``, nothing else."""
    if isinstance(source, (str, os.PathLike)):
        import pyarrow.parquet as pq

        if not Path(source).is_file():
            raise ValidationError(f"no Parquet file at {source}")
        source = pq.read_table(source)
    if not isinstance(source, pa.Table):
        raise ValidationError("requests must be a pyarrow.Table or a Parquet file path")
    extra = set(source.column_names) - {"store", "query", "project"}
    if extra or not {"store", "query"} <= set(source.column_names):
        raise ValidationError("requests need string columns store, query and optionally "
                              f"project; got {source.column_names}")
    for name in source.column_names:
        if not pa.types.is_string(source.schema.field(name).type) and \
                not pa.types.is_large_string(source.schema.field(name).type):
            raise ValidationError(f"column {name!r} must hold strings")
    for name in ("store", "query"):
        if source.column(name).null_count:
            raise ValidationError(f"column {name!r} has nulls")
    return source


def group_by_store(requests: pa.Table) -> pa.Table:
    """One row per store: ``store``, ``rows`` (input row numbers), ``queries``, ``projects``."""
    n = requests.num_rows
    projects = (requests.column("project") if "project" in requests.column_names
                else pa.nulls(n, pa.string()))
    table = pa.table({"store": requests.column("store"), "row": pa.array(np.arange(n)),
                      "query": requests.column("query"), "project": projects})
    return table.group_by("store", use_threads=False).aggregate(
        [("row", "list"), ("query", "list"), ("project", "list")]).rename_columns(
        ["store", "rows", "queries", "projects"])


def recall_stores(batch: pa.Table, *, root: str, embedder, config: MemoryConfig,
                  now: float | None) -> pa.Table:
    """Open each store of ``batch`` under ``root`` and recall its queries (no reinforcement);
    the hits with their input row numbers. A Ray Data task runs this; so can any process."""
    from maclaw_fast.compat.stores import check_name
    from maclaw_fast.memory.store import MemoryStore

    clock = (lambda: now) if now is not None else None
    parts = []
    for store_name, rows, queries, projects in zip(*(batch.column(c).to_pylist() for c in
                                                     ("store", "rows", "queries", "projects"))):
        path = Path(root) / check_name(store_name)
        if not path.is_dir():
            raise ValidationError(f"no store {store_name!r} under {root}")
        kw = {} if clock is None else {"clock": clock}
        with MemoryStore.open(path, embedder=embedder, config=config, **kw) as store:
            hits = store.recall_batch_arrow(queries, projects=projects, reinforce=False)
        parts.append(_with_rows(hits, store_name, np.asarray(rows, dtype=np.int64)))
    return pa.concat_tables(parts) if parts else empty_hits()


def _with_rows(hits: pa.Table, store_name: str, rows: np.ndarray) -> pa.Table:
    """``recall_batch_arrow``'s hits with the input row (from ``query_index``), the store name
    and ``reason`` as plain strings."""
    qi = hits.column("query_index").to_numpy()
    out = {"row": pa.array(rows[qi]), "store": pa.array([store_name] * hits.num_rows, pa.string())}
    for name in HIT_COLUMNS[2:]:
        col = hits.column(name)
        out[name] = pc.cast(col, pa.string()) if name == "reason" else col
    return pa.table(out)


def empty_hits() -> pa.Table:
    types = {"row": pa.int64(), "store": pa.string(), "rank": pa.int32(), "id": pa.string(),
             "reason": pa.string()}
    return pa.table({c: pa.array([], types.get(c, pa.float64())) for c in HIT_COLUMNS})


def recall_batch_ray(requests, root, *, embedder="default", config: MemoryConfig = MemoryConfig(),
                     now: float | None = None, workers: int | None = None,
                     stores_per_task: int = 8) -> pa.Table:
    """Recall every ``(store, query[, project])`` row of ``requests`` (a table or a Parquet path)
    on the stores under ``root`` with Ray Data; hits sorted by input row, then rank.

    ``now`` fixes the stores' clock (recency), ``workers`` caps the concurrent tasks (None: as
    many as Ray's CPUs allow), ``stores_per_task`` stores go to one task. Needs ``ray.init()``
    (or a cluster) and ``root`` on a file system every worker sees.

    Examples
    --------
    >>> import pyarrow as pa
    >>> req = pa.table({"store": ["alice", "bob", "alice"], "query": ["tea", "jazz", "deploy"]})
    >>> group_by_store(req).column("rows").to_pylist()      # what each task receives
    [[0, 2], [1]]
    >>> hits = recall_batch_ray(req, "stores/", embedder="hash")  # doctest: +SKIP
    """
    import ray

    requests = read_requests(requests)
    if isinstance(stores_per_task, bool) or not isinstance(stores_per_task, int) \
            or stores_per_task < 1:
        raise ValidationError("stores_per_task must be a positive integer")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValidationError("workers must be a positive integer or None")
    if not isinstance(embedder, str) and embedder is not None:
        raise ValidationError("embedder must be a name ('default', 'onnx', 'hash') or None: "
                              "each worker builds its own")
    grouped = group_by_store(requests)
    if grouped.num_rows == 0:
        return empty_hits()
    ds = ray.data.from_arrow(grouped).repartition(
        max(1, -(-grouped.num_rows // stores_per_task)))
    ds = ds.map_batches(recall_stores, batch_format="pyarrow", batch_size=stores_per_task,
                        concurrency=workers,
                        fn_kwargs={"root": str(root), "embedder": embedder, "config": config,
                                   "now": now})
    parts = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    if not parts:
        return empty_hits()
    table = pa.concat_tables(parts)
    return table.sort_by([("row", "ascending"), ("rank", "ascending")])
