"""Which files of a workspace are memory (design §14), where they may live, and how old they are.

Indexed: ``MEMORY.md``, ``memory.md``, ``memory/**/*.md`` and configured extra paths (a file, or a
folder walked for ``*.md``). Symlinks are skipped (files and folders alike), hidden folders are not
walked, files are deduplicated by identity (device + inode, so a hard link or a case-folding file
system does not index one file twice), and nothing whose real path leaves the workspace is read.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
import stat
import warnings
from pathlib import Path

import msgspec

from maclaw_fast.errors import ValidationError

ROOT_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
_DATED = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})\.md$")
_EPOCH = _dt.date(1970, 1, 1)
_NS_PER_DAY = 86_400 * 10**9
# files larger than this are skipped with a warning (one 40 MB file took minutes and 1 GB);
# MACLAW_WORKSPACE_MAX_FILE_BYTES or discover(max_bytes=...) changes it
MAX_FILE_BYTES = 8 * 1024 * 1024


def max_file_bytes() -> int:
    """The size bound in force: ``MACLAW_WORKSPACE_MAX_FILE_BYTES`` when set, else the default."""
    raw = os.environ.get("MACLAW_WORKSPACE_MAX_FILE_BYTES", "").strip()
    if not raw:
        return MAX_FILE_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError("MACLAW_WORKSPACE_MAX_FILE_BYTES must be a whole number of "
                              f"bytes, got {raw!r}") from None
    if value < 1:
        raise ValidationError(f"MACLAW_WORKSPACE_MAX_FILE_BYTES must be >= 1, got {value}")
    return value


class FileInfo(msgspec.Struct, frozen=True):
    """One discovered memory file: workspace-relative POSIX path, absolute path and stat data."""

    rel: str
    abs_path: str
    size: int
    mtime_ns: int


def _is_md(name: str) -> bool:
    return name.lower().endswith(".md")


def _utf8(name: str) -> bool:
    """Whether a file name (as the OS decoded it) is valid UTF-8: a name from another encoding
    arrives with surrogate escapes that no index, citation or JSON reply can carry."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_WARNED: set[str] = set()


def _skip_unnamed(rel: str, path: str) -> None:
    """Warn once per process and file about a memory file skipped for its name."""
    shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if path not in _WARNED:
        _WARNED.add(path)
        warnings.warn(f"workspace file {shown} skipped: its name is not valid UTF-8 (rename it "
                      f"to index it)", RuntimeWarning, stacklevel=4)


def _inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def check_extra_paths(root: Path, extra_paths) -> tuple[str, ...]:
    """Validate configured extra paths: each must name a location inside the workspace.

    Returns them as workspace-relative POSIX paths.

    Examples
    --------
    >>> check_extra_paths(Path("/ws"), ["notes", "/ws/docs/a.md"])
    ('notes', 'docs/a.md')
    """
    out = []
    for p in extra_paths:
        if not isinstance(p, str) or not p.strip():
            raise ValidationError(f"extra path must be a non-empty string, got {p!r}")
        full = Path(os.path.normpath(root / p))  # lexical: a missing path is fine, an escape not
        if not _inside(str(root), str(full)):
            raise ValidationError(f"extra path {p!r} is outside the workspace {str(root)!r}")
        out.append(full.relative_to(root).as_posix())
    return tuple(out)


def discover(root: str | os.PathLike, extra_paths=(), *, exclude=(),
             max_bytes: int | None = None) -> list[FileInfo]:
    """List the workspace's memory files, sorted by relative path.

    Parameters
    ----------
    root : the workspace folder (resolved to its real path).
    extra_paths : workspace-relative files or folders to index as well.
    exclude : folders never walked (the index folder).
    max_bytes : larger files are skipped with a warning (default :func:`max_file_bytes`); so is
        a file whose name is not valid UTF-8.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "memory").mkdir()
    >>> _ = (d / "MEMORY.md").write_text("a"); _ = (d / "memory" / "x.md").write_text("b")
    >>> [f.rel for f in discover(d)]
    ['MEMORY.md', 'memory/x.md']
    """
    limit = max_file_bytes() if max_bytes is None else max_bytes
    root_s = os.path.realpath(root)
    prefix = root_s.rstrip(os.sep) + os.sep
    excluded = {os.path.realpath(e) for e in exclude}
    seen: set[tuple[int, int]] = set()
    found: dict[str, FileInfo] = {}

    def add_file(path: str, st=None) -> None:
        try:
            if st is None:
                st = os.lstat(path)
                if not _inside(root_s, os.path.realpath(path)):
                    return
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:  # symlinks, sockets
            return
        seen.add((st.st_dev, st.st_ino))
        # every path here is root_s + os.sep + rel (joined below, never normalised away)
        rel = path[len(prefix):].replace(os.sep, "/")
        if not _utf8(rel):
            _skip_unnamed(rel, path)
            return
        if st.st_size > limit:
            warnings.warn(f"workspace file {rel!r} skipped: {st.st_size} bytes is over the "
                          f"{limit}-byte bound (MACLAW_WORKSPACE_MAX_FILE_BYTES)",
                          RuntimeWarning, stacklevel=2)
            return
        found.setdefault(rel, FileInfo(rel, path, int(st.st_size), int(st.st_mtime_ns)))

    def walk(folder: str) -> None:
        if os.path.realpath(folder) in excluded:
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith("."):
                    walk(entry.path)
            elif _is_md(entry.name):
                # a walk never follows a link, so its entries are inside: no realpath needed
                try:
                    add_file(entry.path, entry.stat(follow_symlinks=False))
                except OSError:
                    continue

    def add_path(path: str) -> None:
        path = os.path.normpath(path)  # an extra path "." or "notes/" must still start with prefix
        if os.path.islink(path) or not _inside(root_s, os.path.realpath(path)):
            return
        if os.path.isdir(path):
            walk(path)
        elif os.path.isfile(path) and _is_md(path):
            add_file(path)

    for name in ROOT_FILES:
        add_path(os.path.join(root_s, name))
    add_path(os.path.join(root_s, MEMORY_DIR))
    for extra in extra_paths:
        add_path(os.path.join(root_s, extra))
    return [found[k] for k in sorted(found)]


def is_memory_path(rel: str, extra_paths=()) -> bool:
    """Whether a workspace-relative POSIX path is one the index covers (by name, not by disk)."""
    if rel in ROOT_FILES:
        return True
    if not _is_md(rel):
        return False
    if rel.startswith(MEMORY_DIR + "/"):
        return True
    return any(rel == e or rel.startswith(e.rstrip("/") + "/") for e in extra_paths)


def resolve_memory_file(root: str | os.PathLike, path: str, extra_paths=()) -> tuple[str, str]:
    """Map a user-given path (relative, or absolute inside the workspace) to ``(rel, abs)``.

    Raises :class:`ValidationError` for a path outside the workspace, a symlink, a file the index
    does not cover, or one that does not exist.

    Examples
    --------
    >>> resolve_memory_file("/tmp", "../etc/passwd")
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: path '../etc/passwd' is outside the workspace
    """
    if not isinstance(path, str) or not path.strip():
        raise ValidationError("path must be a non-empty string")
    if "\x00" in path or not _utf8(path):
        raise ValidationError("path must not contain NUL or text that cannot name a file")
    root_s = os.path.realpath(root)
    full = os.path.normpath(os.path.join(root_s, path.strip()))
    if not _inside(root_s, full) or not _inside(root_s, os.path.realpath(full)):
        raise ValidationError(f"path {path!r} is outside the workspace")
    rel = Path(os.path.relpath(full, root_s)).as_posix()
    if not is_memory_path(rel, extra_paths):
        raise ValidationError(f"path {path!r} is not a memory file (MEMORY.md, memory/**/*.md)")
    if os.path.islink(full) or any(os.path.islink(os.path.join(root_s, *Path(rel).parts[:i]))
                                   for i in range(1, len(Path(rel).parts))):
        raise ValidationError(f"path {path!r} goes through a symlink")
    if not os.path.isfile(full):
        raise ValidationError(f"no such memory file: {rel}")
    return rel, full


def file_timestamp_days(rel: str, mtime_ns: int) -> float:
    """Timestamp used by temporal decay, in days since the Unix epoch; NaN = never decays.

    ``memory/YYYY-MM-DD.md`` → that date's UTC midnight; ``MEMORY.md``, ``memory.md`` and every
    other file under ``memory/`` are evergreen; other (extra) files use their mtime.

    Examples
    --------
    >>> file_timestamp_days("memory/1970-01-11.md", 0)
    10.0
    >>> file_timestamp_days("memory/projects/atlas.md", 0)
    nan
    """
    m = _DATED.match(rel)
    if m:
        try:
            return float((_dt.date(int(m[1]), int(m[2]), int(m[3])) - _EPOCH).days)
        except ValueError:
            return math.nan  # memory/2026-13-40.md is not a date: undated, hence evergreen
    if rel in ROOT_FILES or rel.startswith(MEMORY_DIR + "/"):
        return math.nan
    return mtime_ns / _NS_PER_DAY
