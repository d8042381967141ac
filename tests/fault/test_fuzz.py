"""Hypothesis fuzz of every public entry point (the MemoryStore API, the CLI, the MCP tools)
with text from the whole Unicode range, lone surrogates included, and values of every type.

The promise checked: a call either works or raises a project error (``MaclawError``; the CLI:
a one-line message and a non-zero exit; MCP: a tool error), and whatever was accepted can be
stored (a snapshot after each example succeeds, a reopen gives the same state)."""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import warnings
from pathlib import Path

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from maclaw_fast import MaclawError, MemoryConfig, MemoryStore
from maclaw_fast.config import CATEGORIES, CATEGORY_ALIASES, CapacityConfig, PersistConfig
from tests.fault.harness import store_state

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]

CHARS = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
    st.sampled_from(["\x00", "\ufeff", "\u202e", "\n", " ", "\t", "é", "部", "😀"]),
)
TEXT = st.text(alphabet=CHARS, max_size=30)
WORDS = st.sampled_from(["tea", "deploy script", "部署", "kettle", "x", ""])
SCALARS = st.one_of(
    TEXT, WORDS, st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True), st.binary(max_size=6),
    TEXT.map(np.str_))
ANY = st.one_of(SCALARS, st.lists(SCALARS, max_size=3),
                st.dictionaries(TEXT, SCALARS, max_size=2))
CATEGORY = st.one_of(st.sampled_from(list(CATEGORIES) + list(CATEGORY_ALIASES)), ANY)
IO_DIR = Path(tempfile.gettempdir())  # set by test_fuzz_api to its own scratch folder


def _conf() -> MemoryConfig:
    return MemoryConfig(capacity=CapacityConfig(store_capacity=40, gc_threshold=30),
                        persist=PersistConfig(fsync="never", snapshot_debounce_s=0))


def _id(data, store):
    """An id of the store (most of the time) or any value. The draws never depend on the
    store's state, so that hypothesis sees the same shape of data on every run."""
    existing, index, other = data.draw(st.tuples(st.integers(0, 3), st.integers(0, 9), ANY))
    ids = [e.id for e in store.list(limit=10)]
    return ids[index % len(ids)] if existing and ids else other


def _call(data, store):
    op = data.draw(st.sampled_from([
        "save", "save", "save", "save_many", "update", "set_fields", "touch", "recall", "recall_dynamic",
        "recall_batch", "list", "get", "delete", "pin", "import_records", "set_meta", "gc",
        "decay", "restore", "vector", "export", "import"]))
    d = data.draw
    if op in ("export", "import"):  # a path in a scratch folder (names from all of Unicode)
        # or any value at all
        path = d(st.one_of(TEXT.map(lambda t: str(IO_DIR / ("x" + t.replace("/", "_")))),
                           st.just(str(IO_DIR)), st.just(str(IO_DIR / "no" / "dir")), ANY))
        return (store.export_maclaw(path) if op == "export" else store.import_maclaw(path))
    if op == "save":
        kw = {}
        if d(st.booleans()):
            kw["tags"] = d(st.one_of(st.lists(TEXT, max_size=3), ANY))
        if d(st.booleans()):
            kw["pinned"] = d(ANY)
        return store.save(d(st.one_of(TEXT, WORDS, ANY)), category=d(CATEGORY), **kw)
    if op == "save_many":
        item = st.one_of(TEXT, WORDS, st.fixed_dictionaries(
            {"content": st.one_of(TEXT, ANY)}, optional={"category": CATEGORY, "tags": ANY}))
        return store.save_many(d(st.one_of(st.lists(item, max_size=3), ANY)),
                               category=d(st.one_of(st.none(), CATEGORY)))
    if op == "update":
        kw = {k: d(st.one_of(TEXT, ANY)) for k in ("content", "tags", "category")
              if d(st.booleans())}
        return store.update(_id(data, store), **kw)
    if op == "set_fields":
        field = d(st.sampled_from(["status", "strength", "compact_form", "access_count",
                                   "updated_at", "pinned", "content", "bogus"]))
        value = d(st.one_of(st.sampled_from(["active", "dormant", "superseded"]), ANY))
        return store.set_fields(_id(data, store), **{field: value})
    if op == "touch":
        if d(st.booleans()):
            return store.touch([_id(data, store) for _ in range(d(st.integers(0, 2)))])
        return store.touch(d(ANY))
    if op == "recall":
        return store.recall(d(st.one_of(TEXT, WORDS, ANY)), project=d(st.one_of(st.none(), ANY)),
                            reinforce=d(st.one_of(st.booleans(), ANY)))
    if op == "recall_dynamic":
        return store.recall_dynamic(d(st.one_of(TEXT, ANY)), category=d(st.one_of(
            st.none(), CATEGORY)))
    if op == "recall_batch":
        return store.recall_batch(d(st.one_of(st.lists(st.one_of(TEXT, WORDS), max_size=3),
                                              ANY)),
                                  projects=d(st.one_of(st.none(), ANY)))
    if op == "list":
        return store.list(category=d(st.one_of(st.none(), CATEGORY)),
                          keyword=d(st.one_of(st.none(), TEXT, ANY)),
                          limit=d(st.one_of(st.none(), ANY)))
    if op in ("get", "delete", "pin", "restore", "vector"):
        return getattr(store, op)(_id(data, store))
    if op == "import_records":
        rec = st.fixed_dictionaries({"content": st.one_of(TEXT, ANY), "category": CATEGORY},
                                    optional={k: ANY for k in (
                                        "id", "tags", "created_at", "updated_at",
                                        "access_count", "strength", "status", "pinned",
                                        "compact_form", "related_ids", "related_strengths")})
        return store.import_records(d(st.one_of(st.lists(rec, max_size=3), ANY)))
    if op == "set_meta":
        return store.set_meta(d(ANY), d(ANY))
    if op == "gc":
        return store.gc()
    return store.decay(now=d(st.one_of(st.none(), ANY)))


def test_fuzz_api(tmp_path, scale, fault_stats, monkeypatch):
    global IO_DIR
    IO_DIR = tmp_path / "io"
    IO_DIR.mkdir()
    monkeypatch.chdir(IO_DIR)  # a relative path drawn for export lands in the scratch folder
    store = MemoryStore.open(tmp_path / "store", embedder="hash", config=_conf())
    counts = {"inputs": 0, "ok": 0, "project_errors": 0}

    @settings(max_examples=scale["fuzz_api"], deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        counts["inputs"] += 1
        try:
            _call(data, store)
            counts["ok"] += 1
        except MaclawError:
            counts["project_errors"] += 1
        store.flush()  # whatever was accepted can be written

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run()
    before = store_state(store)
    store.close()
    with MemoryStore.open(tmp_path / "store", embedder="hash", config=_conf()) as again:
        assert store_state(again) == before
    counts["raw_exceptions"] = 0  # any other exception fails the test above
    fault_stats["fuzz_api"] = counts
    assert counts["ok"] > 0 and counts["project_errors"] > 0


def test_fuzz_pool_names(tmp_path, scale, fault_stats):
    """StorePool store names from all of Unicode and of every type: each call works or raises
    a project error, and no name reaches outside the pool's folder."""
    from maclaw_fast import StorePool

    root = tmp_path / "pool"
    counts = {"inputs": 0, "ok": 0, "project_errors": 0}
    name = st.one_of(TEXT, st.sampled_from(["user-1", "..", ".", "a/b", "a\\b", "x" * 300,
                                            ".hidden", "con", "a\x00b"]), ANY)
    with StorePool(root, max_open=3, embedder="hash") as pool:

        @settings(max_examples=scale["fuzz_pool"], deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data):
            d = data.draw
            op = d(st.sampled_from(["save", "recall", "recall_batch", "store"]))
            who = d(name)
            counts["inputs"] += 1
            try:
                if op == "save":
                    pool.save(who, d(st.one_of(TEXT, WORDS)), category="preference")
                elif op == "recall":
                    pool.recall(who, d(st.one_of(TEXT, WORDS)))
                elif op == "recall_batch":
                    pool.recall_batch([(who, d(WORDS))], reinforce=False)
                else:
                    with pool.store(who) as s:
                        len(s)
                counts["ok"] += 1
            except MaclawError:
                counts["project_errors"] += 1

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            pool.save("known", "tea", category="preference")  # one call known to work
            with pytest.raises(MaclawError):
                pool.save("../escape", "tea", category="preference")  # one known to fail
            run()
    outside = [p for p in tmp_path.iterdir() if p.name not in ("pool",)]
    assert outside == []
    assert all(p.parent == root for p in root.iterdir())
    counts["raw_exceptions"] = 0
    fault_stats["fuzz_pool"] = counts
    assert counts["inputs"] > 0


# ---------------------------------------------------------------- CLI
def _cli(argv: list[str]) -> tuple[int, str]:
    from maclaw_fast.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage + one error line, exit 2
            code = exc.code
    return code, err.getvalue()


def test_fuzz_cli(tmp_path, scale, fault_stats):
    store = str(tmp_path / "store")
    qfile = tmp_path / "q.txt"
    counts = {"inputs": 0, "ok": 0, "errors": 0}
    arg = st.one_of(TEXT, WORDS, st.integers(-5, 5).map(str))

    @settings(max_examples=scale["fuzz_cli"], deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        d = data.draw
        cmd = d(st.sampled_from(["save", "recall", "stats", "import", "export",
                                 "recall-batch"]))
        base = [cmd, "--store", store, "--embedder", "none"]
        if cmd == "save":
            argv = base + ["--category", d(st.one_of(st.sampled_from(CATEGORIES), arg)),
                           "--", d(arg)]
        elif cmd == "recall":
            argv = base + ["--project", d(arg), "--", d(arg)]
        elif cmd in ("import", "export"):
            argv = base + [str(tmp_path / "io") + d(arg).replace("/", "_")]
        elif cmd == "recall-batch":
            qfile.write_bytes(d(st.binary(max_size=40)))
            argv = base + ["--in", str(qfile), "--out", str(tmp_path / "o.parquet"),
                           "--chunk", d(st.integers(-2, 3)).__str__(), "--quiet"]
        else:
            argv = base + d(st.lists(arg, max_size=2))
        check(argv)

    def check(argv: list[str]) -> int:
        code, err = _cli(argv)
        counts["inputs"] += 1
        assert isinstance(code, int), code
        assert "Traceback" not in err
        if code == 0:
            counts["ok"] += 1
        else:
            counts["errors"] += 1
            assert "error" in err.splitlines()[-1], err
        return code

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # One call known to work and one known to fail, so that both outcomes are checked on
        # every run however few examples the random draw makes (15 draws can all fail).
        assert check(["save", "--store", store, "--embedder", "none", "--category", "user_fact",
                      "--", "tea"]) == 0
        assert check(["save", "--store", store, "--embedder", "none",
                      "--category", "no-such-category", "--", "tea"]) != 0
        run()
    fault_stats["fuzz_cli"] = counts
    assert counts["ok"] > 0 and counts["errors"] > 0


# ---------------------------------------------------------------- MCP
def test_fuzz_mcp_tools(tmp_path, scale, fault_stats):
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

    from maclaw_fast.server.mcp_server import Backend, ServerConfig, build_server

    ws = Path(tempfile.mkdtemp(dir=tmp_path))
    (ws / "memory").mkdir()
    (ws / "MEMORY.md").write_text("# Notes\nThe kettle is in the kitchen.\n")
    cfg = ServerConfig(store=str(tmp_path / "store"), workspace=str(ws),
                       catalog=str(ROOT / "data" / "tools.json"), embedder="hash")
    counts = {"inputs": 0, "ok": 0, "tool_errors": 0}
    raw: list[str] = []
    with Backend.open(cfg) as backend:
        mcp = build_server(backend)
        tools = anyio.run(mcp.list_tools)
        params = {t.name: sorted(t.input_schema.get("properties", {})) for t in tools}

        @settings(max_examples=scale["fuzz_mcp"], deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data):
            name = data.draw(st.sampled_from(sorted(params)))
            args = {}
            for p in params[name]:
                if data.draw(st.integers(0, 3)):
                    args[p] = data.draw(st.one_of(TEXT, WORDS, SCALARS.filter(
                        lambda v: not isinstance(v, (bytes, np.str_))),
                        st.lists(TEXT, max_size=2)))
            if data.draw(st.integers(0, 9)) == 0:
                args[data.draw(TEXT)] = data.draw(TEXT)
            counts["inputs"] += 1
            try:
                anyio.run(mcp.call_tool, name, args)
                counts["ok"] += 1
            except UnexpectedToolError as exc:
                raw.append(f"{name}({args!r}): {exc.__cause__!r}")
            except ToolError:
                counts["tool_errors"] += 1

        # One call known to work and one known to fail, so that both outcomes are checked on
        # every run however few of the random draws are valid (all 60 can fail).
        saved = anyio.run(mcp.call_tool, "memory_save", {"content": "the kettle is blue"})
        assert saved
        with pytest.raises(ToolError):
            anyio.run(mcp.call_tool, "memory_forget", {"id": ""})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            run()
        backend.store.flush()
    shutil.rmtree(ws, ignore_errors=True)
    counts["raw_exceptions"] = len(raw)
    fault_stats["fuzz_mcp"] = counts
    assert raw == []
    assert counts["inputs"] > 0
