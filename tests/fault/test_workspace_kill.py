"""kill -9 while a workspace index syncs: the persisted index, reopened without a sync, holds
every file version a completed sync returned for (or a later one that was in flight), each
file's chunks are its recorded version's text, and a sync brings it level with the files."""

from __future__ import annotations

import pytest

from tests.fault.harness import workspace_kill_cycles

pytestmark = pytest.mark.timeout(900)


def test_no_acknowledged_file_lost_across_kills_during_sync(tmp_path, scale, fault_stats):
    result = workspace_kill_cycles(tmp_path / "ws", scale["workspace_kills"], seed=5)
    fault_stats["workspace_kill"] = result
    assert result["acknowledged"] >= scale["workspace_kills"]  # the writers did sync
    assert result["problems"] == []


def _version(ws):
    """The version of memory/a.md the persisted index holds (as a reopen without a sync)."""
    from maclaw_fast.workspace import WorkspaceIndex

    with WorkspaceIndex.open(ws, embedder=None, sync=False) as ix:
        hits = ix.search("kettle version", max_results=1).results
        return hits[0].snippet.split("version ")[1].split()[0] if hits else None


@pytest.mark.parametrize("tail", ["unfinished", "damaged"])
def test_a_sync_after_a_bad_journal_tail_is_not_lost(tmp_path, tail):
    """A line cut short by a kill (or damaged) at the journal's end is set aside before the
    next sync appends, so that sync's line is not glued to it and dropped on the next open."""
    import warnings

    from maclaw_fast.workspace import WorkspaceIndex

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = ws / "memory" / "a.md"
    note.write_text("the kettle version 1\n")
    with WorkspaceIndex.open(ws, embedder=None):  # the snapshot
        pass
    note.write_text("the kettle version 2 is blue\n")
    with WorkspaceIndex.open(ws, embedder=None):  # a journal line
        pass
    journal = ws / ".maclaw" / "workspace-journal.jsonl"
    line = journal.read_bytes()
    journal.write_bytes(line + (line[: len(line) // 2] if tail == "unfinished"
                                else b"\x00garbage\n"))
    assert _version(ws) == "2"
    note.write_text("the kettle version 3 is green\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with WorkspaceIndex.open(ws, embedder=None):  # syncs version 3: a journal line
            pass
    assert _version(ws) == "3"
    copies = list(journal.parent.glob("workspace-journal.jsonl.corrupt.*"))
    assert len(copies) == 1 and copies[0].read_bytes() == journal.read_bytes()[0:0] + (
        line[: len(line) // 2] if tail == "unfinished" else b"\x00garbage\n")
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert any("damaged" in m for m in said) == (tail == "damaged")
