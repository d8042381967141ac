"""The maintenance pipeline (design §10): Backup → GC → Decay → Compress → Promote → Reflect,
on demand (:meth:`Maintenance.run_once`) or every 6 h in a background thread.

 The backup is taken first, before GC and decay change anything, so that every run has a
restore point from before it started (design §10 lists it as the first step of Compress; GC and
decay ran before it and were not covered).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.errors import MaclawError, StoreClosedError, ValidationError
from maclaw_fast.maintenance.compress import CompressReport, compress
from maclaw_fast.maintenance.promote import PromoteReport, promote
from maclaw_fast.maintenance.records import save_record
from maclaw_fast.maintenance.reflect import ReflectReport, reflect
from maclaw_fast.memory.lifecycle import DecayReport, decay, gc
from maclaw_fast.records import GcReport

log = logging.getLogger("maclaw_fast.maintenance")
BACKUP_PREFIX = "memories_"


class BackupReport(msgspec.Struct, kw_only=True):
    """Where the pre-run backup went (``error`` set when it could not be written)."""

    path: str = ""
    entries: int = 0
    pruned: int = 0
    skipped: str = ""
    error: str = ""


class MaintenanceReport(msgspec.Struct, kw_only=True):
    """What one maintenance run did, step by step.

    ``errors`` lists steps that raised (the run went on with the next step);
    ``breaker_failures`` is the count of consecutive failed compress runs after this one.
    """

    started_at: float
    duration_ms: float = 0.0
    scheduled: bool = False
    backup: BackupReport = msgspec.field(default_factory=BackupReport)
    gc: GcReport = msgspec.field(default_factory=GcReport)
    decay: DecayReport = msgspec.field(default_factory=DecayReport)
    compress: CompressReport = msgspec.field(default_factory=CompressReport)
    promote: PromoteReport = msgspec.field(default_factory=PromoteReport)
    reflect: ReflectReport = msgspec.field(default_factory=ReflectReport)
    breaker_failures: int = 0
    errors: list[str] = []


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)  # msgspec writes it as RFC 3339 "…Z"


def backup_name(now: float) -> str:
    """``memories_<YYYYmmdd_HHMMSS>.json`` (UTC).

    Examples
    --------
    >>> backup_name(0.0)
    'memories_19700101_000000.json'
    """
    stamp = datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y%m%d_%H%M%S")
    return f"{BACKUP_PREFIX}{stamp}.json"


def list_backups(directory: str | os.PathLike) -> list[Path]:
    """Backup files in ``directory``, oldest first (names sort by time)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob(f"{BACKUP_PREFIX}*.json") if p.is_file())


def write_backup(store, directory: str | os.PathLike, *, now: float | None = None,
                 keep: int = 20, vectors: bool = False) -> BackupReport:
    """Write every entry to ``directory/memories_<time>.json`` (the reference ``memories.json``
    format, atomically) and delete all but the newest ``keep`` backups.

    Vectors are left out unless asked for: importing a file re-embeds its entries anyway, and
    writing 384 floats per entry as JSON costs ~50× the rest.

    Examples
    --------
    >>> import tempfile
    >>> from maclaw_fast.memory import MemoryStore
    >>> s = MemoryStore.in_memory(embedder=None)
    >>> _ = s.save("likes tea", category="preference")
    >>> write_backup(s, tempfile.mkdtemp(), now=0.0).entries
    1
    """
    now = float(store.clock()) if now is None else float(now)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / backup_name(now)
    n = 2
    while path.exists():  # two runs in one second
        path = d / f"{backup_name(now)[:-5]}_{n}.json"
        n += 1
    with store.lock:
        store.check_writable()
        rows = []
        for e in store.entries():
            vec = store.vector(e.id) if vectors else None
            rows.append({
                "id": e.id, "content": e.content, "category": e.category,
                "tags": list(e.tags), "created_at": _utc(e.created_at),
                "updated_at": _utc(e.updated_at), "access_count": e.access_count,
                "embedding": None if vec is None else [float(x) for x in vec],
                "related_ids": list(e.related_ids),
                "related_strengths": list(e.related_strengths), "strength": e.strength,
                "status": e.status, "scope": e.scope, "pinned": e.pinned,
                "compact_form": e.compact_form,
            })
    data = msgspec.json.format(msgspec.json.encode(rows), indent=2)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    old = list_backups(d)[:-keep] if keep > 0 else []
    for p in old:
        p.unlink(missing_ok=True)
    return BackupReport(path=str(path), entries=len(rows), pruned=len(old))


class Maintenance:
    """Keeps a memory store healthy: backup, GC, decay, compress, promote, reflect.

    Parameters
    ----------
    store : MemoryStore
    llm : LLMClient, optional
        Without one the LLM steps (merge, compression, compact forms, promote, reflect) are
        skipped; backup, GC, decay and exact dedup always run.
    config : MaintenanceConfig
    clock : callable, optional
        Unix seconds; the store's clock by default.
    backup_dir : path, optional
        Defaults to ``<store>/backups``; an in-memory store without one takes no backups.
    reflect : bool
        False leaves the reflect step out (``FeaturesConfig.reflect``).

    Every run leaves its record in the store (see :func:`~maclaw_fast.maintenance.records.
    last_maintenance`), which also sets when the next scheduled run is due.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> store = MemoryStore.in_memory(embedder=None)
    >>> _ = store.save("Run tests with pytest -x", category="instruction")
    >>> _ = store.save("run tests with pytest -x", category="instruction")
    >>> report = Maintenance(store).run_once()
    >>> report.compress.deduplicated, report.promote.skipped
    (1, 'no LLM configured')
    """

    def __init__(self, store, llm=None, config: MaintenanceConfig = MaintenanceConfig(), *,
                 clock=None, backup_dir: str | os.PathLike | None = None,
                 reflect: bool = True) -> None:
        from maclaw_fast.memory.store import MemoryStore

        if not isinstance(store, MemoryStore):
            raise ValidationError("Maintenance needs a MemoryStore")
        if not isinstance(config, MaintenanceConfig):
            raise ValidationError("config must be a MaintenanceConfig")
        if llm is not None and not callable(getattr(llm, "complete", None)):
            raise ValidationError("llm must be an LLMClient (an object with .complete)")
        if clock is not None and not callable(clock):
            raise ValidationError("clock must be callable")
        self.store = store
        self.llm = llm
        self.config = config
        self.clock = clock or store.clock
        if backup_dir is not None:
            self.backup_dir: Path | None = Path(backup_dir)
        else:
            self.backup_dir = store.path / "backups" if store.path is not None else None
        self.reflect = bool(reflect)
        self.failures = 0  # consecutive failed compress runs (the circuit breaker)
        self.last_report: MaintenanceReport | None = None
        self._run_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def breaker_open(self) -> bool:
        """True after ``breaker_failures`` consecutive failed compress runs."""
        return self.failures >= self.config.breaker_failures

    def backup(self, now: float | None = None) -> BackupReport:
        """Write a backup now (see :func:`write_backup`)."""
        if self.backup_dir is None:
            return BackupReport(skipped="in-memory store without backup_dir")
        try:
            return write_backup(self.store, self.backup_dir,
                                now=float(self.clock()) if now is None else now,
                                keep=self.config.backups_kept,
                                vectors=self.config.backup_vectors)
        except OSError as exc:
            log.warning("maintenance backup failed: %s", exc)
            return BackupReport(error=f"{type(exc).__name__}: {exc}")

    def _compress(self, backup: BackupReport, scheduled: bool) -> CompressReport:
        cfg = self.config
        if self.breaker_open:
            if not scheduled:
                return CompressReport(skipped=f"circuit breaker open after {self.failures} "
                                              "failed runs; waits for the next scheduled cycle")
            self.failures = 0  # the next scheduled cycle tries again
        if backup.error:
            self.failures += 1
            return CompressReport(skipped=f"backup failed: {backup.error}")
        report = compress(self.store, self.llm, cfg)
        self.failures = self.failures + 1 if report.llm_errors else 0
        return report

    def run_once(self, *, scheduled: bool = False) -> MaintenanceReport:
        """Run every step once and report what each did.

        ``scheduled`` marks a run of the background timer: only such a run closes an open
        circuit breaker. Runs never overlap (a second caller waits).
        """
        with self._run_lock:
            t0 = time.perf_counter()
            now = float(self.clock())
            report = MaintenanceReport(started_at=now, scheduled=scheduled)
            report.backup = self.backup(now)
            steps = (
                ("gc", lambda: gc(self.store, now=now)),
                ("decay", lambda: decay(self.store, now=now)),
                ("compress", lambda: self._compress(report.backup, scheduled)),
                ("promote", lambda: promote(self.store, self.llm, self.config)),
                ("reflect", lambda: reflect(self.store, self.llm, self.config, now=now)
                 if self.reflect else ReflectReport(skipped="reflect is off")),
            )
            for name, step in steps:
                try:
                    setattr(report, name, step())
                except StoreClosedError:
                    raise
                except MaclawError as exc:  # one broken step must not stop the others
                    log.warning("maintenance step %s failed: %s", name, exc)
                    report.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            report.breaker_failures = self.failures
            report.duration_ms = (time.perf_counter() - t0) * 1e3
            self.last_report = report
            try:
                save_record(self.store, report)
            except StoreClosedError:
                raise
            except MaclawError as exc:  # the run itself went fine
                log.warning("maintenance record not saved: %s", exc)
            return report

    # ------------------------------------------------------------------ background
    def start(self, *, run_now: bool = False) -> None:
        """Run :meth:`run_once` every ``interval_h`` hours in a daemon thread."""
        if self._thread is not None and self._thread.is_alive():
            return
        if not self.config.interval_h > 0:
            raise ValidationError("interval_h must be > 0 to run in the background")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(run_now,), daemon=True,
                                        name="maclaw-maintenance")
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop the background thread (waits for a run in progress, up to ``timeout``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self, run_now: bool) -> None:
        interval = self.config.interval_h * 3600.0
        if run_now and not self._tick():
            return
        while not self._stop.wait(interval):
            if not self._tick():
                return

    def _tick(self) -> bool:
        try:
            self.run_once(scheduled=True)
        except StoreClosedError:
            return False
        except Exception:  # a background thread has nobody to raise to
            log.exception("scheduled maintenance run failed")
        return True
