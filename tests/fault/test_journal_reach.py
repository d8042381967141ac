"""A store tells a journal that was deleted, emptied or replaced since the last snapshot from one
with nothing new in it (the journal starts with a header of the snapshot's record number): it
refuses to open, or opens loudly when the loss is accepted; never silently. Garbage where a
journal's tail should be is damage, copied aside, not an unfinished write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.errors import CorruptStoreError

CRASHING = """
import os, signal, sys
from maclaw_fast import MemoryStore
s = MemoryStore.open(sys.argv[1], embedder=None)
a = s.save("A: the ferry leaves at nine", category="preference")
s.flush()
s.delete(a.id)
s.save("B: lunch is at noon", category="preference")
os.kill(os.getpid(), signal.SIGKILL)
"""


def crashed_store(tmp_path):
    path = tmp_path / "s"
    proc = subprocess.run([sys.executable, "-c", CRASHING, str(path)])
    assert proc.returncode == -signal.SIGKILL
    return path


def contents(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with MemoryStore.open(path, embedder=None, **kw) as s:
            return sorted(e.content for e in s.entries()), [str(w.message) for w in caught]


def test_an_intact_journal_after_a_crash_loses_nothing(tmp_path):
    path = crashed_store(tmp_path)
    assert contents(path)[0] == ["B: lunch is at noon"]


@pytest.mark.parametrize("damage", ["deleted", "emptied", "random bytes"])
def test_a_journal_that_no_longer_reaches_the_snapshot_refuses_to_open(tmp_path, damage):
    path = crashed_store(tmp_path)
    journal = path / "journal.bin"
    if damage == "deleted":
        journal.unlink()
    elif damage == "emptied":
        journal.write_bytes(b"")
    else:
        journal.write_bytes(os.urandom(3000))
    with pytest.raises(CorruptStoreError, match="may be lost.*maclaw-fast recover.*recover=True"):
        MemoryStore.open(path, embedder=None)
    got, said = contents(path, recover=True)  # the user accepts the loss explicitly
    assert got == ["A: the ferry leaves at nine"]  # the snapshot's state, said out loud
    assert any("may be lost" in w for w in said)
    if damage == "random bytes":
        assert any("damaged" in w and "copy" in w for w in said)
        assert [p for p in path.iterdir() if p.name.startswith("journal.bin.corrupt.")]
    assert contents(path) == (got, [])  # accepted once: consistent from then on


def test_garbage_after_the_last_record_is_damage_kept_aside(tmp_path):
    path = crashed_store(tmp_path)
    journal = path / "journal.bin"
    intact = journal.read_bytes()
    journal.write_bytes(intact + os.urandom(500))
    got, said = contents(path)
    assert got == ["B: lunch is at noon"]  # every intact record applied
    assert any("damaged" in w for w in said) and not any("unfinished" in w for w in said)
    copies = [p for p in path.iterdir() if p.name.startswith("journal.bin.corrupt.")]
    assert copies and copies[0].read_bytes() == intact + copies[0].read_bytes()[len(intact):]


def test_an_unfinished_last_write_is_still_a_torn_tail(tmp_path):
    path = crashed_store(tmp_path)
    journal = path / "journal.bin"
    data = journal.read_bytes()
    journal.write_bytes(data + data[-30:-10])  # the first bytes of a frame, cut short
    got, said = contents(path)
    assert got == ["B: lunch is at noon"]
    assert any("unfinished" in w for w in said)


def test_a_crash_between_the_journal_renames_loses_nothing(tmp_path):
    """A snapshot's journal swap (the new journal written, then moved in place) interrupted
    after the old one moved away: the new one is put in place on open."""
    path = tmp_path / "s"
    with MemoryStore.open(path, embedder=None) as s:
        s.save("kept across the swap", category="preference")
        s.flush()
    os.replace(path / "journal.bin", path / "journal.bin.new")
    assert contents(path)[0] == ["kept across the swap"]
    assert not (path / "journal.bin.new").exists()


def test_recover_reaches_the_archive_journal_too(tmp_path):
    """The archive keeps its own journal: one deleted there refuses the open as well, and
    ``recover=True`` accepts that loss too (it used to refuse even then)."""
    from maclaw_fast import MemoryConfig
    from maclaw_fast.config import CapacityConfig

    conf = MemoryConfig(capacity=CapacityConfig(store_capacity=5, gc_threshold=4))
    path = tmp_path / "s"
    with MemoryStore.open(path, embedder=None, config=conf) as s:
        for i in range(12):
            s.save(f"note {i} about the ferry", category="preference")
        s.gc()
    s = MemoryStore.open(path, embedder=None, config=conf)
    s.save("after the snapshot", category="preference")
    s.gc()
    s.durability.journal.close()
    s.archive.flush()
    s.durability.lock.release()  # as a kill -9 leaves it: no final snapshot
    (path / "archive" / "journal.bin").unlink()
    with pytest.raises(CorruptStoreError, match="archive.*recover=True"):
        MemoryStore.open(path, embedder=None, config=conf)
    with pytest.warns(RuntimeWarning, match="opened as asked"):
        MemoryStore.open(path, embedder=None, config=conf, recover=True).close()


def test_the_recover_command_accepts_the_loss_and_the_store_opens_again(tmp_path):
    path = crashed_store(tmp_path)
    (path / "journal.bin").unlink()
    env = dict(os.environ, PYTHONWARNINGS="default")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args, "--store",
                               str(path)], capture_output=True, text=True, timeout=300, env=env)

    refused = cli("recall", "ferry", "--embedder", "none")
    assert refused.returncode == 2 and "maclaw-fast recover --store" in refused.stderr
    done = cli("recover")
    assert done.returncode == 0, done.stderr
    assert "may be lost" in done.stderr and "1 memories kept" in done.stdout
    assert contents(path)[0] == ["A: the ferry leaves at nine"]  # the snapshot's, no refusal
