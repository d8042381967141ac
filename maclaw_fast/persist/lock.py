"""One writer per store: an exclusive, non-blocking ``flock`` on ``<store>/store.lock``."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from maclaw_fast.errors import StoreLockedError

_PID_WIDTH = 12  # wider than any pid: every write covers the one before


class StoreLock:
    """Held from open to close; released by the kernel when the process dies (even SIGKILL)."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = Path(directory) / "store.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLockedError(
                f"{self.path.parent} is already open for writing by another process or handle"
            ) from None
        # the holder's pid, for people; written in place at a fixed width: truncating the
        # file first would wait on the file system's journal behind other stores' fsyncs
        # (measured ~20 ms per open under load)
        os.pwrite(fd, str(os.getpid()).encode().ljust(_PID_WIDTH), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
