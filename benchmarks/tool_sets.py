"""Loaders of the public tool-retrieval sets for ``quality_tools.py`` (read in place, never copied).

Each loader returns ``(tools, splits)``: the catalog as :class:`RegisteredTool` records and
``{split name: [(query, gold names), ...]}``. Protocols: the data sets' protocols (``benchmarks/data.py`` lists their sources).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from maclaw_fast.tools import RegisteredTool


def metatool(root: Path):
    """MetaTool: ``plugin_des.json`` (199 tools), single-tool queries of ``all_clean_data.csv``."""
    des = json.loads((root / "plugin_des.json").read_text(encoding="utf-8"))
    tools = [RegisteredTool(name=n, description=d) for n, d in des.items()]
    with open(root / "all_clean_data.csv", encoding="utf-8") as fh:
        queries = [(r["Query"], {r["Tool"]}) for r in csv.DictReader(fh) if r["Tool"] in des]
    return tools, {"single-tool": queries}


def seal_tools(root: Path):
    """Seal-Tools: ``tool.jsonl`` (4,076 tools, body from the parameters); the in-domain and
    out-of-domain test queries as two splits, gold = every ``calling[*].api``."""
    tools = []
    for line in (root / "tool.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = json.loads(line)
            params = t.get("parameters") or {}
            tools.append(RegisteredTool(name=t["api_name"], description=t.get("api_description", ""),
                                        category="mcp", input_schema={"properties": params}))
    names = {t.name for t in tools}
    splits = {}
    for split, fname in (("in-domain", "test_in_domain.jsonl"),
                         ("out-of-domain", "test_out_domain.jsonl")):
        queries = []
        for line in (root / fname).read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                gold = {c["api"] for c in q.get("calling", [])} & names
                if gold:
                    queries.append((q["query"], gold))
        splits[split] = queries
    return tools, splits


HAMMER_FILES = (("IS", "multi-turn/HammerBench_IS.json"),
                ("External", "multi-turn/HammerBench_External.json"),
                ("mQsA", "multi-turn/HammerBench_mQsA.json"),
                ("ir_ST_External", "single-turn/ir_ST_External.json"))


def hammerbench(root: Path):
    """HammerBench zh: catalog = union of ``multiple_tools`` and ``single_tool`` over the four
    files (941 functions); one split per file: the first user message (in ``ir_ST_External`` the
    text after ``query:``) → the first ``function call``'s name; gold outside the catalog
    dropped."""
    catalog: dict[str, RegisteredTool] = {}
    data = {}
    for split, rel in HAMMER_FILES:
        items = json.loads((root / "zh" / rel).read_text(encoding="utf-8"))
        data[split] = items
        for it in items:
            for t in (it.get("multiple_tools") or []) + (it.get("single_tool") or []):
                if t["name"] not in catalog:
                    catalog[t["name"]] = RegisteredTool(
                        name=t["name"], description=t.get("description", ""), category="mcp",
                        input_schema=t.get("parameters") or {})
    splits = {}
    for split, _ in HAMMER_FILES:
        queries = []
        for it in data[split]:
            msgs = it["messages"]
            user = next(m["content"] for m in msgs if m["role"] == "user")
            if "query:" in user:
                user = user.split("query:", 1)[1]
            gold = next(m["content"]["name"] for m in msgs if m["role"] == "function call")
            if gold in catalog:
                queries.append((user.strip(), {gold}))
        splits[split] = queries
    return list(catalog.values()), splits


# set name → (loader, folder under the data root, metrics reported, the metric defaults are
# chosen on)
SETS = {
    "metatool": ("MetaTool", metatool, "metatool", ("Hit@1", "Hit@5"), "Hit@5"),
    "seal": ("Seal-Tools", seal_tools, "seal-tools", ("Recall@5", "COMP@5"), "Recall@5"),
    "hammer": ("HammerBench-zh", hammerbench, "hammerbench-zh", ("Hit@1", "Hit@5"), "Hit@5"),
}
