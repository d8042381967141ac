"""One test per defect found by a hostile run (bad text, damaged files, unchecked config, raw
exceptions): each asserts a clear project error before anything changes, or a recovery that
keeps the data and says what it did."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from maclaw_fast import MaclawError, MemoryConfig, MemoryStore, ValidationError
from maclaw_fast.config import CapacityConfig, PersistConfig, RecallConfig
from maclaw_fast.errors import CorruptStoreError

BAD_TEXTS = ["x\ud878y", "\udcff", "tail \udfff"]


def cfg(**persist):
    persist.setdefault("snapshot_debounce_s", 0)
    return MemoryConfig(persist=PersistConfig(**persist))


def state(store) -> list:
    return [(e.id, e.content, e.tags, e.access_count, e.strength, e.pinned, e.compact_form)
            for e in store.entries()]


# ---------------------------------------------------------------- 1. unstorable text
@pytest.mark.parametrize("bad", BAD_TEXTS)
def test_lone_surrogates_rejected_before_anything_changes(tmp_path, bad):
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        e = s.save("fine memory", category="preference")
        before = state(s)
        with pytest.raises(ValidationError):
            s.save(bad, category="preference")
        with pytest.raises(ValidationError):
            s.save("ok text", category="preference", tags=[bad])
        with pytest.raises(ValidationError):
            s.update(e.id, content=bad)
        with pytest.raises(ValidationError):
            s.set_fields(e.id, compact_form=bad)
        with pytest.raises(ValidationError):
            s.set_meta(bad, "v")
        assert state(s) == before
        s.flush()  # still writable
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        assert state(s) == before


def test_set_fields_compact_form_must_be_text(tmp_path):
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        e = s.save("fine memory", category="preference")
        before = state(s)
        for bad in ({"compact_form": 5}, {"strength": float("nan")}, {"access_count": -1},
                    {"pinned": "yes"}, {"updated_at": float("inf")}, {"strength": "1"},
                    {"access_count": True}, {"status": 3}):
            with pytest.raises(ValidationError):
                s.set_fields(e.id, **bad)
        assert state(s) == before
        s.flush()


def test_import_with_bad_field_types_changes_nothing(tmp_path):
    good = {"id": "a-1", "content": "kept text", "category": "preference"}
    cases = [
        [good, {"id": "b", "content": "c2", "category": "preference", "compact_form": 5}],
        [good, {"id": "b", "content": "c2", "category": "preference", "access_count": "many"}],
        [good, {"id": "b", "content": "c2", "category": "preference", "created_at": 1e300}],
        [good, {"id": "b", "content": "c2", "category": "preference", "pinned": "yes"}],
        [good, {"id": "b", "content": "c2", "category": "preference", "strength": "NaN"}],
        [good, {"id": "a-1", "content": "other", "category": "preference"}],  # duplicate id
        [good, {"id": "b", "content": "x\ud800", "category": "preference"}],
    ]
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        for i, rows in enumerate(cases):
            p = tmp_path / f"in{i}.json"
            p.write_text(json.dumps(rows), encoding="utf-8")
            with pytest.raises(ValidationError):
                s.import_maclaw(p)
            assert len(s) == 0
        bad_utf8 = tmp_path / "bad.json"
        bad_utf8.write_bytes(b'[{"id": "x", "content": "\xff\xfe", "category": "preference"}]')
        with pytest.raises(ValidationError):
            s.import_maclaw(bad_utf8)
        deep = tmp_path / "deep.json"
        deep.write_text("[" * 100_000 + "]" * 100_000)
        with pytest.raises(ValidationError):
            s.import_maclaw(deep)
        assert len(s) == 0


def test_cli_argument_with_invalid_utf8_byte(tmp_path):
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    store = str(tmp_path / "s")
    r = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", "save", "--store", store,
                        "--embedder", "none", "--category", "preference", b"bad \xff arg"],
                       capture_output=True, env=env, timeout=120)
    assert r.returncode != 0
    assert b"Traceback" not in r.stderr and r.stderr.strip().count(b"\n") == 0
    with MemoryStore.open(store, embedder=None) as s:
        assert len(s) == 0


# ---------------------------------------------------------------- 2/3. snapshots
def _two_snapshots(path):
    with MemoryStore.open(path, embedder="hash", config=cfg()) as s:
        for i in range(30):
            s.save(f"memory {i} about the number {i * 7}", category="preference",
                   tags=[f"t{i % 3}"])
    with MemoryStore.open(path, embedder="hash", config=cfg()) as s:
        s.save("one more after the first snapshot", category="instruction")
        return state(s)


def test_bit_flip_in_snapshot_is_detected_and_prev_plus_journal_used(tmp_path):
    path = tmp_path / "s"
    expected = _two_snapshots(path)
    snap = path / "snapshot.arrow"
    data = bytearray(snap.read_bytes())
    # flip one bit in every 97th byte position tried until one changes served content
    data[len(data) // 2] ^= 0x04
    snap.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="snapshot"):
        s = MemoryStore.open(path, embedder="hash", config=cfg())
    with s:
        assert state(s) == expected  # .prev + both journals lose nothing
    assert any(p.name.startswith("snapshot.arrow.corrupt.") for p in path.iterdir())


@pytest.mark.parametrize("where", [0.25, 0.5, 0.75, 0.9])
def test_overwritten_snapshot_bytes_never_crash_open(tmp_path, where):
    path = tmp_path / "s"
    expected = _two_snapshots(path)
    snap = path / "snapshot.arrow"
    data = bytearray(snap.read_bytes())
    at = int(len(data) * where)
    data[at:at + 32] = b"\xff" * 32
    snap.write_bytes(bytes(data))
    # a subprocess: a segfault must fail this test, not kill the test run
    code = ("import sys, warnings; warnings.simplefilter('ignore');"
            "from maclaw_fast import MemoryStore;"
            "s = MemoryStore.open(sys.argv[1], embedder='hash'); print(len(s)); s.close()")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout.strip()) == len(expected)


def test_hostile_readable_snapshot_is_refused_not_trusted(tmp_path):
    """A well-formed Arrow file with the right checksum but wrong column types / absurd sizes
    is moved aside, never a KeyError / MemoryError."""
    import pyarrow as pa

    from maclaw_fast.persist.snapshot import encode_snapshot

    path = tmp_path / "s"
    path.mkdir()
    table = pa.table({"id": [1, 2], "content": ["a", "b"]}).replace_schema_metadata(
        {"maclaw": b'{"format": 2, "seq": 0}'})
    (path / "snapshot.arrow").write_bytes(encode_snapshot(table))
    with pytest.warns(RuntimeWarning):
        with MemoryStore.open(path, embedder=None) as s:
            assert len(s) == 0
    assert any(p.name.startswith("snapshot.arrow.corrupt.") for p in path.iterdir())


# ---------------------------------------------------------------- 4. journal
def test_one_corrupt_journal_record_skips_only_that_record(tmp_path):
    path = tmp_path / "s"
    s = MemoryStore.open(path, embedder=None, config=cfg(fsync="always", snapshot_debounce_s=0))
    ids = [s.save(f"journal only memory {i}", category="preference").id for i in range(10)]
    s.durability.journal.close()
    s.durability.lock.release()  # the process dies: no snapshot
    data = bytearray((path / "journal.bin").read_bytes())
    # past the journal's header and three records, flip a bit inside the 4th record's payload
    pos = 0
    for _ in range(4):
        length = int.from_bytes(data[pos:pos + 4], "little")
        pos += 8 + length
    data[pos + 8 + 5] ^= 0x10
    (path / "journal.bin").write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="journal"):
        s2 = MemoryStore.open(path, embedder=None, config=cfg())
    with s2:
        got = [i for i in ids if i in s2]
        assert got == ids[:3] + ids[4:]
    copies = [p for p in path.iterdir() if p.name.startswith("journal.bin.corrupt.")]
    assert copies and copies[0].read_bytes() == bytes(data)


def test_damaged_archive_journal_is_copied_aside_with_a_warning(tmp_path):
    path = tmp_path / "s"
    conf = MemoryConfig(capacity=CapacityConfig(store_capacity=5, gc_threshold=4),
                        persist=PersistConfig(fsync="always", snapshot_debounce_s=0))
    s = MemoryStore.open(path, embedder=None, config=conf)
    for i in range(12):
        s.save(f"archived soon {i}", category="preference")
    archived = [e.id for e in s.archive.list()]
    assert len(archived) == 7
    s.durability.journal.close()
    s.archive._journal.close()
    s.durability.lock.release()
    aj = path / "archive" / "journal.bin"
    data = bytearray(aj.read_bytes())
    data[12] ^= 0x01  # inside the first record's payload
    aj.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="journal"):
        s2 = MemoryStore.open(path, embedder=None, config=conf)
    with s2:
        assert len(s2.archive) == 6  # only the damaged record is lost
    assert any(p.name.startswith("journal.bin.corrupt.") for p in (path / "archive").iterdir())


# ---------------------------------------------------------------- 5. config
@pytest.mark.parametrize("build", [
    lambda: MemoryConfig(capacity=5),
    lambda: MemoryConfig(capacity=CapacityConfig(store_capacity=0)),
    lambda: RecallConfig(token_budget=-5),
    lambda: RecallConfig(max_entries="20"),
    lambda: RecallConfig(bm25_weight=float("nan")),
    lambda: RecallConfig(bm25_norm="fancy"),
    lambda: PersistConfig(fsync="sometimes"),
    lambda: PersistConfig(fsync_interval_s=-1.0),
    lambda: MemoryConfig(auto_link="yes"),
    lambda: MemoryConfig(query_cache_size=1.5),
    lambda: MemoryConfig(persist={"fsync": "always"}),
    lambda: MemoryConfig(batch_threads="many"),
])
def test_config_checked_when_built(build):
    with pytest.raises(ValidationError):
        build()


# ---------------------------------------------------------------- 6. str subclasses
def test_str_subclass_is_stored_as_plain_text(tmp_path):
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        e = s.save(np.str_("numpy text"), category=np.str_("preference"),
                   tags=[np.str_("t1")])
        assert type(s.get(e.id).content) is str and type(s.get(e.id).tags[0]) is str
        s.flush()
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        assert [x.content for x in s.entries()] == ["numpy text"]


# ---------------------------------------------------------------- 7. serve auth
def test_non_default_loopback_host_needs_a_token():
    from maclaw_fast.server.http import check_bind

    for host in ("127.0.0.2", "127.1.2.3", "0.0.0.0", "example.org"):
        with pytest.raises(ValidationError):
            check_bind(host, None)
    for token in (" " * 8, "\t" * 12, "  short  "):
        with pytest.raises(ValidationError):
            check_bind("127.0.0.1", token)


def test_host_header_checked_on_any_bound_address():
    import anyio
    import httpx

    from maclaw_fast.server.http import build_app
    from maclaw_fast.server.mcp_server import Backend, build_server

    token = "a-long-enough-token"
    app = build_app(build_server(Backend(MemoryStore.in_memory(embedder=None))),
                    host="127.0.0.2", token=token)
    inner = app.app  # the SDK's Starlette app inside the bearer check

    async def go():
        codes = {}
        async with inner.router.lifespan_context(inner):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport,
                                         base_url="http://127.0.0.2:8765") as c:
                headers = {"Authorization": f"Bearer {token}",
                           "Accept": "application/json, text/event-stream"}
                body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}}
                for name, extra in (("evil", {"Host": "evil.example"}),
                                    ("origin", {"Origin": "http://evil.example"}),
                                    ("good", {})):
                    r = await c.post("/mcp", json=body, headers={**headers, **extra})
                    codes[name] = r.status_code
        return codes

    codes = anyio.run(go)
    assert codes["good"] == 200, codes
    assert codes["evil"] == 421 and codes["origin"] == 403, codes


# ---------------------------------------------------------------- 8. deleted snapshot
def test_deleted_snapshot_is_reported_not_silently_empty(tmp_path):
    path = tmp_path / "s"
    expected = _two_snapshots(path)
    (path / "snapshot.arrow").unlink()
    with pytest.warns(RuntimeWarning, match="missing"):
        s = MemoryStore.open(path, embedder="hash", config=cfg())
    with s:
        assert state(s) == expected  # .prev + journals rebuild it
        assert any("missing" in n for n in s.durability.notes)


def test_deleted_snapshot_and_prev_is_an_error_not_an_empty_store(tmp_path):
    path = tmp_path / "s"
    _two_snapshots(path)
    (path / "snapshot.arrow").unlink()
    (path / "snapshot.arrow.prev").unlink()
    with pytest.raises(CorruptStoreError, match="missing"):
        MemoryStore.open(path, embedder="hash", config=cfg())
    # nothing was rewritten: the journals are still there for a person to look at
    assert (path / "journal.bin.prev").exists()


# ---------------------------------------------------------------- 9. raw exceptions
def test_open_on_bad_paths_is_a_clear_error(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    for bad in (f, str(tmp_path / "a\x00b"), 5, ""):
        with pytest.raises(ValidationError):
            MemoryStore.open(bad, embedder=None)
    d = tmp_path / "jdir"
    d.mkdir()
    (d / "journal.bin").mkdir()
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(MaclawError):
        MemoryStore.open(d, embedder=None)
    assert len(os.listdir("/proc/self/fd")) == fds
    with MemoryStore.open(d / "ok", embedder=None):  # and the lock was released
        pass


def test_touch_and_ids_validated(tmp_path):
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg()) as s:
        e = s.save("a memory", category="preference")
        before = state(s)
        for bad in (None, 5, [None], [e.id, 3], [e.id, "missing-id"]):
            with pytest.raises(MaclawError):
                s.touch(bad)
        assert state(s) == before


@pytest.mark.parametrize("argv", [
    ["recall-batch", "--chunk", "0", "--in", "{q}", "--out", "{tmp}/o.parquet"],
    ["recall-batch", "--chunk", "-3", "--in", "{q}", "--out", "{tmp}/o.parquet"],
    ["stats", "--store", "{file}"],
    ["save", "--store", "{file}", "--category", "preference", "x"],
    ["recall-batch", "--in", "{tmp}/missing.txt", "--out", "{tmp}/o.parquet"],
    ["import", "{file}"],
    ["export", "{tmp}/no/such/dir/out.json"],
    ["save", "--category", "nope", "text"],
])
def test_cli_errors_are_one_line(tmp_path, argv):
    q = tmp_path / "q.txt"
    q.write_text("hello\n")
    f = tmp_path / "afile"
    f.write_text("not json")
    args = [a.format(q=q, tmp=tmp_path, file=f) for a in argv]
    if "--store" not in args:
        args[1:1] = ["--store", str(tmp_path / "store")]
    args[1:1] = ["--embedder", "none"]
    from maclaw_fast.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(args)  # in-process: an escaping exception fails the test here
        except SystemExit as exc:  # argparse
            code = exc.code
    assert code != 0
    lines = err.getvalue().strip().splitlines()
    # one error line (argparse puts its usage above it)
    assert sum("error:" in line for line in lines) == 1 and "error:" in lines[-1], lines


def test_sandbox_read_far_offset(tmp_path):
    from maclaw_fast.agent.sandbox import Sandbox

    (tmp_path / "f.txt").write_text("hello")
    sb = Sandbox(tmp_path)
    out = sb.read_file({"path": "f.txt", "offset": 10 ** 15})
    assert out["content"] == "" and not out["truncated"]


def test_memory_tool_flags_and_limits(tmp_path):
    from maclaw_fast.agent import handlers as h
    from maclaw_fast.agent.handlers import ToolContext

    s = MemoryStore.in_memory(embedder=None)
    tool = h.memory_handler(s)
    ctx = ToolContext(session="s")
    with pytest.raises(ValidationError):
        tool({"action": "save", "content": "fact one", "pinned": "false"}, ctx)
    assert len(s) == 0
    s.save("fact one about tea", category="preference")
    s.save("fact two about tea", category="preference")
    with pytest.raises(ValidationError):
        h.recall_memory(s, "tea", max_results=-1)
    with pytest.raises(ValidationError):
        tool({"action": "pin", "id": s.entries()[0].id, "pinned": "false"}, ctx)


# ---------------------------------------------------------------- 10. capacity
def test_capacity_enforced_on_reopen(tmp_path):
    path = tmp_path / "s"
    with MemoryStore.open(path, embedder=None, config=cfg()) as s:
        for i in range(40):
            s.save(f"memory {i}", category="preference")
    small = MemoryConfig(capacity=CapacityConfig(store_capacity=25, gc_threshold=20),
                         persist=PersistConfig(snapshot_debounce_s=0))
    with MemoryStore.open(path, embedder=None, config=small) as s:
        assert len(s) == 25 and len(s.archive) == 15


def test_gc_leaves_store_below_threshold_after_revival(tmp_path):
    conf = MemoryConfig(capacity=CapacityConfig(store_capacity=60, gc_threshold=45,
                                                revive_top=20, revive_max=10))
    s = MemoryStore.in_memory(embedder=None, config=conf)
    for i in range(60):
        s.save(f"topic memory {i}", category="preference", tags=["shared"])
    s.gc()  # first run archives; the archive now holds revivable entries
    for i in range(60, 80):
        s.save(f"topic memory {i}", category="preference", tags=["shared"])
    report = s.gc()
    assert report.revived > 0
    assert len(s) < conf.capacity.gc_threshold
    assert report.before == report.after + report.archived - report.revived
