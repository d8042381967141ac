"""The fault scenarios, shared by the tests in this folder and by
``benchmarks/reliability.py`` (which runs them at a larger scale and writes the figures).

* :func:`kill_cycles` — a writer process is killed (SIGKILL) at a random moment while it saves,
  deletes, snapshots and moves entries to the archive; every acknowledged write is checked
  after each reopen and at the end.
* :func:`corruption_trials` — single-bit flips and truncations of every persisted file; each
  trial must end recovered (same state) or reported (a warning, the file moved or copied
  aside) with a store that opens cleanly afterwards.
* :func:`soak` — threads doing mixed operations on one store, invariants checked at the end.

Writers are forked from a ``forkserver`` that imported the package once: a fresh interpreter
per kill costs seconds on a loaded machine.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import shutil
import signal
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import msgspec

from maclaw_fast import MaclawError, MemoryConfig, MemoryStore
from maclaw_fast.config import CapacityConfig, PersistConfig
from maclaw_fast.errors import CorruptStoreError

_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(["maclaw_fast.memory.store", "maclaw_fast.workspace",
                                    "tests.fault.harness"])
    return _CTX


def writer_config(fsync: str) -> MemoryConfig:
    """Small capacity (archive moves all the time), near-immediate debounced snapshots."""
    return MemoryConfig(
        capacity=CapacityConfig(store_capacity=60, gc_threshold=45, archive_capacity=100_000),
        persist=PersistConfig(fsync=fsync, fsync_interval_s=0.05, snapshot_debounce_s=0.1),
        auto_link=True)


def _missing(store, puts: dict[str, str], dels: set[str]) -> list[str]:
    """Acknowledged writes the store does not reflect."""
    lost = []
    for entry_id, content in puts.items():
        if entry_id in dels:
            continue
        if entry_id in store:
            got = store.get(entry_id).content
        elif entry_id in store.archive:
            got = store.archive.get(entry_id).content
        else:
            got = None
        if got != content:
            lost.append(entry_id)
    lost += [i for i in dels if i in store]
    return lost


def _writer(path: str, fsync: str, seed: int, puts: dict, dels: set, conn) -> None:
    """Child: reopen (recovery), check what earlier children acknowledged, then write until
    killed, sending each acknowledgement after the call returned."""
    warnings.simplefilter("ignore")
    rng = random.Random(seed)
    store = MemoryStore.open(path, embedder=None, config=writer_config(fsync))
    conn.send(("ready", _missing(store, puts, dels)))
    i = 0
    while True:
        i += 1
        r = rng.random()
        if r < 0.7:
            content = f"seed {seed} write {i} topic {rng.randrange(50)} {rng.random():.6f}"
            e = store.save(content, category=rng.choice(["preference", "project", "user"]),
                           tags=[f"t{rng.randrange(5)}"])
            conn.send(("put", e.id, content))
        elif r < 0.8 and len(store):
            victim = rng.choice(store.list(limit=30)).id
            conn.send(("deleting", victim))  # killed inside delete(): either outcome is right
            store.delete(victim)
            conn.send(("del", victim))
        elif r < 0.86:
            store.gc()
        elif r < 0.9:
            store.flush()
        else:
            store.recall(f"topic {rng.randrange(50)}")


def kill_cycles(path: Path, fsync: str, kills: int, seed: int = 0, max_acks: int = 40,
                max_delay_s: float = 0.02) -> dict:
    """Run ``kills`` writer processes on one store, each killed at a random moment; returns
    ``{kills, acknowledged, lost, lost_ids}`` (``lost`` must be 0)."""
    ctx = _context()
    rng = random.Random(seed)
    puts: dict[str, str] = {}
    dels: set[str] = set()
    lost: set[str] = set()
    acknowledged = 0
    def take(msg) -> None:
        nonlocal acknowledged
        if msg[0] == "deleting":
            puts.pop(msg[1], None)  # no longer checked either way until acknowledged
            return
        acknowledged += 1
        if msg[0] == "put":
            puts[msg[1]] = msg[2]
            dels.discard(msg[1])
        else:
            dels.add(msg[1])

    for k in range(kills):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_writer, args=(str(path), fsync, seed * 1000 + k, puts, dels,
                                                 child), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(120):
            proc.kill()
            raise RuntimeError("writer did not start")
        tag, missing = parent.recv()
        lost.update(missing)
        # kill after a random number of acknowledgements, then a random sub-millisecond to
        # tens-of-milliseconds delay, so the kill lands anywhere inside an operation
        target, seen = rng.randrange(max_acks), 0
        deadline = time.monotonic() + 60
        while seen < target and time.monotonic() < deadline and parent.poll(5):
            take(parent.recv())
            seen += 1
        time.sleep(rng.uniform(0.0, max_delay_s))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        while True:  # everything the child sent before it died was acknowledged
            try:
                if not parent.poll(0):
                    break
                msg = parent.recv()
            except (EOFError, OSError):
                break
            take(msg)
        parent.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with MemoryStore.open(path, embedder=None, config=writer_config(fsync)) as store:
            lost.update(_missing(store, puts, dels))
    return {"kills": kills, "acknowledged": acknowledged, "lost": len(lost),
            "lost_ids": sorted(lost)[:10]}


# ---------------------------------------------------------------- corruption
def build_corpus(path: Path) -> None:
    """A store whose every persisted file exists and holds data: two snapshots (+ .prev), a
    rotated and a live journal, and the same for its archive."""
    conf = MemoryConfig(capacity=CapacityConfig(store_capacity=30, gc_threshold=25),
                        persist=PersistConfig(snapshot_debounce_s=0))
    for round_ in range(3):
        with MemoryStore.open(path, embedder="hash", config=conf) as s:
            for i in range(20):
                s.save(f"round {round_} memory {i}: the quick brown fox {i * 13}",
                       category=["preference", "project", "instruction", "user"][i % 4],
                       tags=[f"t{i % 3}"])
            s.recall("quick fox")
    # live journals: a process that dies without a final snapshot
    s = MemoryStore.open(path, embedder="hash", config=conf)
    for i in range(8):
        s.save(f"journal tail memory {i} about kettles", category="preference")
    s.recall("kettles")
    s.durability.journal.close()
    s.archive._journal.close()
    s.durability.lock.release()


def persisted_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name != "store.lock")


def store_state(store) -> bytes:
    entries = sorted(store.entries(), key=lambda e: e.id)
    archived = sorted(store.archive.list(), key=lambda e: e.id)
    return msgspec.msgpack.encode([entries, archived])


def _damaged(path: Path) -> list[str]:
    return sorted(p.name for p in path.rglob("*.corrupt.*"))


WHOLE_FILE = ("delete", "empty", "garbage")  # the whole file deleted, emptied, random bytes


def _damage(path: Path, kind: str, at: int, rng: random.Random) -> None:
    if kind == "delete":
        path.unlink()
        return
    data = bytearray(path.read_bytes())
    if kind == "flip":
        data[at // 8] ^= 1 << (at % 8)
    elif kind == "truncate":
        del data[at:]
    elif kind == "empty":
        data = bytearray()
    else:
        data = bytearray(rng.randbytes(len(data)))
    path.write_bytes(bytes(data))


def corruption_trials(workdir: Path, per_file: int, seed: int = 0,
                      whole_file: str | None = None) -> dict:
    """Flip one bit (``per_file`` times) and truncate (``per_file`` times) each persisted file
    of a pristine corpus, and delete, empty and overwrite with random bytes every file
    (``whole_file="journal"``: the live journal only; None: none). Each trial must end
    recovered (the same state), reported (a warning) or refused (``CorruptStoreError`` naming
    the loss, then ``recover=True`` opens with a warning); never a changed state without a
    word (a silent rollback), and never a loss of bytes still on disk without a copy aside
    (``*.corrupt.*``). Returns the counts and the failures (must be none)."""
    rng = random.Random(seed)
    pristine = workdir / "pristine"
    build_corpus(pristine)
    reference = workdir / "reference"
    shutil.copytree(pristine, reference)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pristine corpus opens without a word
        with MemoryStore.open(reference, embedder="hash") as s:
            expected = store_state(s)
    files = persisted_files(pristine)
    out = Counter()
    failures: list[str] = []
    trial = 0
    for f in files:
        rel = f.relative_to(pristine)
        size = f.stat().st_size
        kinds = [("flip", rng.randrange(size * 8)) for _ in range(per_file)] if size else []
        kinds += [("truncate", rng.randrange(size)) for _ in range(per_file)] if size else []
        if whole_file == "all" or (whole_file == "journal" and rel.name == "journal.bin"):
            kinds += [(k, 0) for k in WHOLE_FILE]
        for kind, at in kinds:
            trial += 1
            d = workdir / f"t{trial}"
            shutil.copytree(pristine, d)
            _damage(d / rel, kind, at, rng)
            out["tried"] += 1
            out[f"tried_{kind}"] += 1
            refused = False
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        s = MemoryStore.open(d, embedder="hash")
                    except CorruptStoreError as exc:
                        if "recover=True" not in str(exc):
                            raise
                        refused = True  # the user must accept the loss: that is loud
                        s = MemoryStore.open(d, embedder="hash", recover=True)
                    with s:
                        same = store_state(s) == expected
                        s.save("written after the damage", category="preference")
                warned = any(issubclass(w.category, RuntimeWarning) for w in caught)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # the next open is clean
                    with MemoryStore.open(d, embedder="hash") as s:
                        assert "written after the damage" in {e.content for e in s.entries()}
            except Exception as exc:  # noqa: BLE001 - every failure is counted and shown
                failures.append(f"{rel} {kind}@{at}: {type(exc).__name__}: {exc}")
                out["failed"] += 1
                continue  # the directory stays for a person to look at
            copied = bool(_damaged(d))
            shutil.rmtree(d, ignore_errors=True)
            if same:
                out["recovered"] += 1
                continue
            if not (refused or (warned and _damaged_or_reported(caught))):
                failures.append(f"{rel} {kind}@{at}: state changed without a warning")
                out["silent_rollbacks"] += 1
                out["failed"] += 1
                continue
            if kind in ("flip", "garbage", "truncate") and not copied:
                # bytes still on disk were dropped: a copy must be kept for a person to read
                failures.append(f"{rel} {kind}@{at}: bytes dropped without a copy aside")
                out["dropped_without_copy"] += 1
                out["failed"] += 1
                continue
            out["refused" if refused else "reported"] += 1
    return {"files": len(files), "tried": out["tried"], "recovered": out["recovered"],
            "reported": out["reported"], "refused": out["refused"], "failed": out["failed"],
            "silent_rollbacks": out["silent_rollbacks"],
            "dropped_without_copy": out["dropped_without_copy"],
            "kinds": {k[6:]: v for k, v in out.items() if k.startswith("tried_")},
            "failures": failures[:10]}


def _damaged_or_reported(caught) -> bool:
    words = ("moved to", "copy is in", "lost", "torn", "missing", "unreadable")
    return any(any(w in str(c.message) for w in words) for c in caught)


# ---------------------------------------------------------------- soak
def soak(path: Path, threads: int, seconds: float, seed: int = 0, min_ops: int = 0) -> dict:
    """``threads`` threads of mixed operations on one journaled store for ``seconds`` (and at
    least ``min_ops`` operations each); then
    invariants: capacity held, indexes agree with the entries, a reopen gives the same state.
    Returns ``{threads, operations, errors}`` (``errors``: non-project exceptions, must be
    empty)."""
    conf = MemoryConfig(capacity=CapacityConfig(store_capacity=120, gc_threshold=100),
                        persist=PersistConfig(fsync="interval", snapshot_debounce_s=0.05))
    store = MemoryStore.open(path, embedder="hash", config=conf)
    stop = time.monotonic() + seconds
    ops = Counter()
    errors: list[str] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        rng = random.Random(seed * 100 + k)
        n = 0
        while n < min_ops or time.monotonic() < stop:
            n += 1
            r = rng.random()
            try:
                if r < 0.35:
                    store.save(f"thread {k} note {n} on topic {rng.randrange(40)}",
                               category=rng.choice(["preference", "project", "user",
                                                    "conversation_summary"]),
                               tags=[f"t{rng.randrange(6)}"])
                elif r < 0.6:
                    store.recall(f"topic {rng.randrange(40)}", project=rng.choice([None, "t1"]))
                elif r < 0.65:
                    store.recall_batch([f"topic {rng.randrange(40)}" for _ in range(4)])
                else:
                    ids = [e.id for e in store.list(limit=20)]
                    if not ids:
                        continue
                    victim = rng.choice(ids)
                    if r < 0.72:
                        store.delete(victim)
                    elif r < 0.8:
                        store.update(victim, tags=[f"u{rng.randrange(4)}"])
                    elif r < 0.86:
                        store.touch([victim])
                    elif r < 0.9:
                        store.set_fields(victim, compact_form=f"short {n}")
                    elif r < 0.93:
                        store.pin(victim) if rng.random() < 0.5 else store.unpin(victim)
                    elif r < 0.96:
                        store.gc()
                    else:
                        store.flush()
                with lock:
                    ops["ok"] += 1
            except MaclawError:  # another thread deleted the id first: expected
                with lock:
                    ops["project_error"] += 1
            except Exception as exc:  # noqa: BLE001
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    problems = list(errors)
    if len(store) > conf.capacity.store_capacity:
        problems.append(f"{len(store)} entries over capacity {conf.capacity.store_capacity}")
    for e in store.entries():
        if store.get(e.id) != e:
            problems.append(f"entry {e.id} reads back differently")
            break
        if any(r not in store for r in e.related_ids):
            problems.append(f"entry {e.id} links to a missing entry")
            break
    overlap = {e.id for e in store.entries()} & {e.id for e in store.archive.list()}
    if overlap:
        problems.append(f"{len(overlap)} entries both in the store and in the archive")
    before = store_state(store)
    store.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with MemoryStore.open(path, embedder="hash", config=conf) as again:
            if store_state(again) != before:
                problems.append("reopen gives a different state")
    return {"threads": threads, "operations": sum(ops.values()), "ok": ops["ok"],
            "project_errors": ops["project_error"], "errors": problems[:10]}


# ---------------------------------------------------------------- workspace sync
WS_FILES = [f"memory/note-{i}.md" for i in range(10)] + ["MEMORY.md"]


def ws_content(rel: str, version: int) -> str:
    """File ``rel`` at ``version``: a header naming both, then lines enough for a few chunks
    (the longer versions make several)."""
    rng = random.Random(f"{rel} {version}")  # str seeds are stable across processes
    lines = [f"# {rel} version {version}"]
    lines += [f"line {j} of version {version}: " + " ".join(
        rng.choice(["kettle", "deploy", "ferry", "atlas", "green", "tea", "noon", "vault"])
        for _ in range(8)) for j in range(rng.choice([3, 40, 160]))]
    return "\n".join(lines) + "\n"


def _ws_writer(root: str, seed: int, conn) -> None:
    """Child: open the index without a sync, then change files and sync until killed; each
    version is announced before it is written and acknowledged once a sync returned."""
    warnings.simplefilter("ignore")
    from maclaw_fast.workspace import WorkspaceIndex

    rng = random.Random(seed)
    ix = WorkspaceIndex.open(root, embedder=None, sync=False)
    conn.send(("ready",))
    i = 0
    while True:
        done = []
        for _ in range(rng.randint(1, 3)):
            i += 1
            rel = rng.choice(WS_FILES)
            version = -1 if rng.random() < 0.15 else seed * 10_000 + i
            conn.send(("writing", rel, version))
            path = Path(root) / rel
            if version < 0:
                path.unlink(missing_ok=True)
            else:  # whole versions only (temp file + rename), as editors save
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_text(ws_content(rel, version), encoding="utf-8")
                os.replace(tmp, path)
            done.append((rel, version))
        ix.sync()
        conn.send(("synced", done))
        if rng.random() < 0.1:
            ix.save()  # a snapshot (its journal emptied) now and then, as a big sync does


def ws_state_problems(root: Path, acked: dict, pending: dict) -> list[str]:
    """What the persisted index of ``root`` (read as a reopen with ``sync=False`` does) gets
    wrong: a file whose acknowledged version (or a later one in flight) it does not hold, or a
    file whose chunks are not its recorded version's text."""
    import hashlib

    from maclaw_fast.config import SearchConfig
    from maclaw_fast.workspace.state import IndexState

    c = SearchConfig()
    loaded = IndexState(root / ".maclaw", (c.chunk_tokens, c.chunk_overlap,
                                           c.chars_per_token)).load()
    files, chunks = loaded if loaded is not None else ({}, None)
    texts: dict[str, list[str]] = {}
    if chunks is not None:
        for path, text in zip(chunks.path, chunks.text):
            texts.setdefault(path, []).append(text)
    problems = []
    for rel, version in acked.items():
        allowed = {version} | pending.get(rel, set())
        rec = files.get(rel)
        if rec is None:
            if -1 not in allowed:
                problems.append(f"{rel}: acknowledged version {version} missing")
            continue
        match = [v for v in allowed if v >= 0 and hashlib.sha256(
            ws_content(rel, v).encode()).hexdigest() == rec.hash]
        if not match:
            problems.append(f"{rel}: holds none of the versions {sorted(allowed)}")
            continue
        body = ws_content(rel, match[0])
        if not texts.get(rel) or any(t not in body for t in texts[rel]):
            problems.append(f"{rel}: chunks are not the text of version {match[0]}")
    return problems


def workspace_kill_cycles(root: Path, kills: int, seed: int = 0, max_acks: int = 12,
                          max_delay_s: float = 0.05) -> dict:
    """Kill a syncing writer ``kills`` times; after each kill the persisted index (no sync) must
    hold every acknowledged file version. Returns ``{kills, acknowledged, lost, problems}``."""
    from maclaw_fast.workspace import WorkspaceIndex

    ctx = _context()
    rng = random.Random(seed)
    (root / "memory").mkdir(parents=True, exist_ok=True)
    acked: dict[str, int] = {}
    pending: dict[str, set[int]] = {}
    acknowledged = 0
    problems: list[str] = []

    def take(msg) -> None:
        nonlocal acknowledged
        if msg[0] == "writing":
            pending.setdefault(msg[1], set()).add(msg[2])
        elif msg[0] == "synced":
            for rel, version in msg[1]:
                acknowledged += 1
                acked[rel] = version  # the batch's last write of a file wins
                pending[rel] = set()  # every earlier write of it was read by this sync

    for k in range(kills):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_ws_writer, args=(str(root), seed * 1000 + k, child),
                           daemon=True)
        proc.start()
        child.close()
        if not parent.poll(120):
            proc.kill()
            raise RuntimeError("workspace writer did not start")
        parent.recv()
        target, seen = rng.randrange(1, max_acks), 0
        deadline = time.monotonic() + 60
        while seen < target and time.monotonic() < deadline and parent.poll(10):
            msg = parent.recv()
            take(msg)
            seen += msg[0] == "synced"
        time.sleep(rng.uniform(0.0, max_delay_s))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        while True:
            try:
                if not parent.poll(0):
                    break
                take(parent.recv())
            except (EOFError, OSError):
                break
        parent.close()
        problems += [f"after kill {k + 1}: {p}" for p in ws_state_problems(root, acked, pending)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with WorkspaceIndex.open(root, embedder=None):  # a sync brings it level with the files
            pass
    final = {rel: set() for rel in acked}
    for rel in acked:
        path = root / rel
        first = path.read_text(encoding="utf-8").split("\n", 1)[0] if path.exists() else None
        final[rel] = int(first.rsplit(" ", 1)[1]) if first else -1
    problems += [f"after the last sync: {p}" for p in ws_state_problems(root, final, {})]
    lost = {p.split(":")[1].strip() for p in problems}
    return {"kills": kills, "acknowledged": acknowledged, "lost": len(lost),
            "problems": problems[:10]}
