"""The Arrow side of :meth:`StorePool.recall_batch`: rows in, grouped by store, results merged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import validate
from maclaw_fast.memory.validate import check_store_name
from maclaw_fast.persist.arrow_numpy import arrow_of, numpy_of, strings_of


def _columns(rows) -> tuple[list, list, list]:
    """(stores, queries, projects) of Arrow or tuple ``rows``."""
    if isinstance(rows, (pa.Table, pa.RecordBatch)):
        names = rows.schema.names
        if "store" not in names or "query" not in names:
            raise ValidationError("recall_batch rows need 'store' and 'query' columns")
        stores = rows.column("store").to_pylist()
        queries = rows.column("query").to_pylist()
        projects = (rows.column("project").to_pylist() if "project" in names
                    else [None] * len(stores))
        return stores, queries, projects
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise ValidationError("recall_batch rows must be an Arrow table or (store, query"
                              "[, project]) tuples")
    rows = list(rows)
    for i, row in enumerate(rows):
        if not isinstance(row, (tuple, list)) or len(row) not in (2, 3):
            raise ValidationError(f"row {i} must be (store, query) or (store, query, project)")
    return ([r[0] for r in rows], [r[1] for r in rows],
            [r[2] if len(r) == 3 else None for r in rows])


def grouped_rows(rows) -> dict[str, tuple[list[int], list[str], list]]:
    """Validated rows by store name: (input row numbers, queries, projects), first-seen order."""
    stores, queries, projects = _columns(rows)
    groups: dict[str, tuple[list[int], list[str], list]] = {}
    for i, (name, query, project) in enumerate(zip(stores, queries, projects)):
        try:
            name = check_store_name(name)
            query = validate.query(query)
            project = validate.project(project)
        except ValidationError as exc:
            raise ValidationError(f"row {i}: {exc}") from None
        group = groups.setdefault(name, ([], [], []))
        group[0].append(i)
        group[1].append(query)
        group[2].append(project)
    return groups


def merge_results(parts) -> object:
    """One table from per-store ``(name, input rows, recall_batch_arrow table)`` parts: the
    ``query_index`` column becomes ``row`` (the input row) and a ``store`` column is added."""
    tables = []
    for name, indices, table in parts:
        local = numpy_of(table.column("query_index"))
        row = np.asarray(indices, np.int64)[local] if len(local) else np.zeros(0, np.int64)
        rest = table.drop_columns(["query_index"])
        store_col = strings_of([name] * len(row))
        tables.append(pa.table({"row": arrow_of(row), "store": store_col,
                                **{c: rest.column(c) for c in rest.column_names}}))
    if not tables:
        return pa.table({"row": arrow_of(np.zeros(0, np.int64)), "store": strings_of([]),
                         "rank": arrow_of(np.zeros(0, np.int32)), "id": strings_of([])})
    merged = pa.concat_tables(tables)
    order = pc.sort_indices(merged, sort_keys=[("row", "ascending"), ("rank", "ascending")])
    return merged.take(order)
