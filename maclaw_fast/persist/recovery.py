"""Opening a snapshot + journal directory after anything (design §8, R8): a crash, a flipped bit,
a truncated or deleted file. Shared by the store and its archive.

Files: ``snapshot.arrow`` (+ ``.prev``), ``journal.bin`` (records since the snapshot) and
``journal.bin.prev`` (records between ``snapshot.arrow.prev`` and ``snapshot.arrow``).

What it guarantees: every record that is intact somewhere is applied; a damaged snapshot or
journal is moved or copied aside as ``<name>.corrupt.<timestamp>`` before anything rewrites it;
every loss or fallback is a note and a ``RuntimeWarning``; a snapshot that is *missing* while
the files around it show it existed is an error (:class:`CorruptStoreError`), never an empty
store opened over the journals.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import msgspec
import pyarrow as pa

from maclaw_fast.errors import CorruptStoreError
from maclaw_fast.persist.journal import (JournalRecord, finish_reset, new_path, prev_path,
                                         scan_journal)
from maclaw_fast.persist.snapshot import aside_name, read_snapshot, snapshot_meta


class Recovered(msgspec.Struct):
    """The state to load: a snapshot table (or None), the journal records to replay over it
    (seq order, each once), where the live journal's intact part ends, and what happened."""

    table: pa.Table | None
    seq: int
    records: list[JournalRecord]
    journal_end: int
    notes: list[str]
    fallback: bool = False  # a newer state than the snapshot was rebuilt: rewrite it twice
    snapshot_id: str = ""  # the loaded snapshot file's identity (persist.snapshot.open_snapshot)


def _warn(notes: list[str], where: Path, note: str) -> None:
    notes.append(note)
    warnings.warn(f"{where}: {note}", RuntimeWarning, stacklevel=4)


def recover(directory: Path, known: dict[str, tuple[str, ...]] | None = None,
            snapshot_name: str = "snapshot.arrow", journal_name: str = "journal.bin",
            accept_loss: bool = False, read_only: bool = False) -> Recovered:
    """Read the newest consistent state of ``directory`` (see the module docstring).
    ``accept_loss``: open with a warning where the journal no longer reaches the snapshot (else
    :class:`CorruptStoreError`). ``read_only``: write nothing (no copies aside, no renames):
    every finding is a warning, and the state read is what the files hold."""
    snap = directory / snapshot_name
    journal = directory / journal_name
    notes: list[str] = []
    live = journal  # the file holding the records after the snapshot
    if read_only:
        accept_loss = True  # a reader reports what it finds and changes nothing
        if not journal.exists() and new_path(journal).is_file():
            live = new_path(journal)  # an interrupted swap: the new journal is the one
    else:
        finish_reset(journal)
    for p in (journal, prev_path(journal)):
        if p.exists() and not p.is_file():
            raise CorruptStoreError(f"{p} is not a regular file; move it away to open the store")
    scans = {}
    for p in (prev_path(journal), live):
        scan = scan_journal(p)
        scans[p] = scan
        if scan.skipped:
            lost = sum(b - a for a, b in scan.skipped)
            if scan.torn:
                kept = ""
                if not read_only:  # what recovery drops is copied first, a torn frame too
                    aside = aside_name(p)
                    shutil.copyfile(p, aside)
                    kept = f"; a copy is in {aside.name}"
                _warn(notes, directory, f"{p.name}: torn tail of {lost} bytes after byte "
                                        f"{scan.skipped[0][0]} (an unfinished write) "
                                        f"dropped{kept}")
            elif read_only:
                _warn(notes, directory, f"{p.name}: {len(scan.skipped)} damaged range(s), "
                                        f"{lost} bytes skipped, {len(scan.records)} intact "
                                        f"records read (read-only: nothing copied)")
            else:
                aside = aside_name(p)
                shutil.copyfile(p, aside)
                _warn(notes, directory, f"{p.name}: {len(scan.skipped)} damaged range(s), "
                                        f"{lost} bytes skipped, {len(scan.records)} intact "
                                        f"records kept; a copy is in {aside.name}")
    had_prev_snapshot = prev_path(snap).exists()
    first_seq = min((r.seq for s in scans.values() for r in s.records), default=None)
    # a first record later than 1 means a snapshot once held the ones before (unless damage
    # took the first records: then the gap is reported below)
    damaged = any(s.skipped for s in scans.values())
    missing = not snap.exists() and (had_prev_snapshot or prev_path(journal).exists()
                                     or (first_seq is not None and first_seq > 1
                                         and not damaged))
    table, snap_notes, source, snapshot_id = read_snapshot(snap, known, move=not read_only)
    for n in snap_notes:
        notes.append(n)  # read_snapshot warned already
    seq = snapshot_meta(table).seq if table is not None else 0
    accepted = _check_journal_reaches(directory, live, table, seq, scans[live], notes,
                                      accept_loss)
    if missing:
        if table is None:
            raise CorruptStoreError(
                f"{snap} is missing (and no {prev_path(snap).name} could replace it) although "
                f"the journals show the store had one: refusing to open what would be a "
                f"partial store. Restore the file, or move the directory aside to start over.")
        _warn(notes, directory, f"{snap.name} is missing; rebuilt from {source} and the "
                                f"journals")
    records: dict[int, JournalRecord] = {}
    for scan in scans.values():
        for r in scan.records:
            if r.seq > seq:
                records.setdefault(r.seq, r)
    ordered = [records[k] for k in sorted(records)]
    expected = seq + 1
    gaps = []
    for r in ordered:
        if r.seq != expected:
            gaps.append((expected, r.seq - 1))
        expected = r.seq + 1
    if gaps:
        _warn(notes, directory, "journal records " + ", ".join(
            f"{a}..{b}" if a != b else str(a) for a, b in gaps[:5]) + " are lost (damaged or "
            "older than every valid snapshot)")
    if table is None and (snap_notes or first_seq not in (None, 1)) and not ordered:
        _warn(notes, directory, "no valid snapshot and no journal to rebuild from: opening empty")
    fallback = (bool(snap_notes) or missing or accepted
                or any(s.skipped for s in scans.values()))
    return Recovered(table, seq, ordered, scans[live].end, notes, fallback and not read_only,
                     snapshot_id)


def _check_journal_reaches(directory: Path, journal: Path, table, seq: int, scan, notes,
                           accept_loss: bool) -> bool:
    """A snapshot whose journal starts with a header (``journal_headed``) is followed by a
    journal holding that header or later records; one that holds neither was deleted, emptied
    or replaced, and what was saved after the snapshot may be gone: refuse to open (or, with
    ``accept_loss``, open loudly)."""
    if table is None or not snapshot_meta(table).journal_headed:
        return False
    newest = max((r.seq for r in scan.records), default=None)
    if newest is not None and newest >= seq:
        return False
    state = ("missing" if not journal.exists() else "empty" if scan.size == 0
             else "damaged" if scan.skipped else "older than the snapshot")
    what = (f"{journal.name} is {state}: anything saved after the snapshot (journal record "
            f"{seq}) may be lost")
    if not accept_loss:
        raise CorruptStoreError(
            f"{directory}: {what}. Restore the file if you have it, or accept the loss: "
            f"maclaw-fast recover --store {directory} (MemoryStore.open(path, recover=True)).")
    _warn(notes, directory, what + "; opened as asked (recover=True)")
    return True


def move_aside(path: Path) -> Path:
    """Rename a damaged file out of the way (``<name>.corrupt.<timestamp>``)."""
    aside = aside_name(path)
    os.replace(path, aside)
    return aside
