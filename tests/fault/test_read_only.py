"""A read-only open reads a store's snapshot and journal as they are while another process
holds it: no lock, no file written, every write refused before it changes anything."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.errors import ReadOnlyStoreError, StoreLockedError


def _files(path):
    return {p.name: p.stat().st_mtime_ns for p in path.iterdir()}


def test_read_only_beside_a_writer(tmp_path):
    path = tmp_path / "s"
    with MemoryStore.open(path, embedder=None) as writer:
        writer.save("tea in the morning", category="preference")
        writer.flush()
        writer.save("juice at night", category="preference")  # in the journal only
        with pytest.raises(StoreLockedError):
            MemoryStore.open(path, embedder=None)
        before = _files(path)
        with MemoryStore.open(path, embedder=None, read_only=True) as reader:
            assert sorted(e.content for e in reader.entries()) == ["juice at night",
                                                                     "tea in the morning"]
            hits = reader.recall("tea")  # reinforce is off on a read-only store
            assert hits[0].entry.content == "tea in the morning"
            for write in (lambda: reader.save("x", category="preference"),
                          lambda: reader.set_meta("k", "v"), reader.gc, reader.decay,
                          lambda: reader.delete(hits[0].entry.id), reader.flush,
                          lambda: reader.reinforce(hits)):
                with pytest.raises(ReadOnlyStoreError):
                    write()
            assert len(reader) == 2
        assert _files(path) == before
        assert [e.access_count for e in writer.entries()] == [1, 1]


def test_stats_and_export_work_while_a_server_holds_the_store(tmp_path):
    path = tmp_path / "s"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom maclaw_fast import MemoryStore\n"
         "s = MemoryStore.open(sys.argv[1], embedder=None)\n"
         "s.save('held by another process', category='preference')\n"
         "print('ready', flush=True)\ntime.sleep(60)\n", str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        env = dict(os.environ, MACLAW_QUIET_COMPILE="1")
        for args in (["stats", "--store", str(path)],
                     ["export", str(tmp_path / "out.json"), "--store", str(path)],
                     ["recall", "another process", "--store", str(path), "--read-only",
                      "--embedder", "none"]):
            proc = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args],
                                  capture_output=True, text=True, env=env, timeout=300)
            assert proc.returncode == 0, (args, proc.stderr)
        assert "held by another process" in (tmp_path / "out.json").read_text()
    finally:
        holder.kill()
        holder.wait()
