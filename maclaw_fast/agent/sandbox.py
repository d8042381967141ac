"""Workspace-sandboxed file tools and the opt-in ``bash`` tool of the agent.

Every path is resolved against the sandbox root and refused when it (or, through symlinks, the
file it names) lies outside the root. ``bash`` runs in the root with a timeout and its own
process group, so a timeout kills the whole command tree, not only the shell.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from maclaw_fast.errors import NotFoundError, ValidationError


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Sandbox:
    """File access confined to ``root``.

    Parameters
    ----------
    root : path
        The directory the tools may see; symlinks inside it are followed only while their
        targets stay inside.
    max_read_bytes : int
        ``read_file`` returns at most this many bytes (and says it truncated).
    max_write_bytes : int
        ``write_file`` refuses larger content.
    max_entries : int
        ``list_directory`` lists at most this many entries.

    Examples
    --------
    >>> import tempfile
    >>> sb = Sandbox(tempfile.mkdtemp())
    >>> sb.write_file({"path": "notes/a.txt", "content": "hi"})["bytes"]
    2
    >>> sb.read_file({"path": "notes/a.txt"})["content"]
    'hi'
    >>> sb.read_file({"path": "../etc/passwd"})
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: path '../etc/passwd' is outside the workspace
    """

    def __init__(self, root, *, max_read_bytes: int = 200_000, max_write_bytes: int = 5_000_000,
                 max_entries: int = 500) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise ValidationError(f"sandbox root {root!s} is not a directory")
        self.root = real
        self.max_read_bytes, self.max_write_bytes = max_read_bytes, max_write_bytes
        self.max_entries = max_entries

    def resolve(self, path) -> str:
        """Absolute real path of ``path`` (relative to the root, or absolute inside it).

        Raises :class:`ValidationError` when the path, or the file a symlink leads to, is
        outside the root. A path that does not exist yet is checked through its nearest
        existing parent, so ``write_file`` cannot create files behind a symlinked directory.
        """
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise ValidationError("path must be a non-empty string")
        joined = os.path.normpath(os.path.join(self.root, os.path.expanduser(path.strip())))
        real = os.path.realpath(joined)  # resolves every symlink, existing or dangling
        if not _inside(self.root, joined) or not _inside(self.root, real):
            raise ValidationError(f"path {path!r} is outside the workspace")
        return real

    def rel(self, real: str) -> str:
        """``real`` relative to the root, with forward slashes (how results name files)."""
        return Path(os.path.relpath(real, self.root)).as_posix()

    def read_file(self, args: dict) -> dict:
        """``{path, offset?, max_bytes?}`` → the text (UTF-8, undecodable bytes replaced)."""
        real = self.resolve(args.get("path"))
        if not os.path.isfile(real):
            raise NotFoundError(f"no such file: {args.get('path')}")
        offset = _int_arg(args, "offset", 0, 0)
        limit = min(_int_arg(args, "max_bytes", self.max_read_bytes, 1), self.max_read_bytes)
        size = os.path.getsize(real)
        data = b""
        if offset < size:  # past the end reads nothing (seek itself fails beyond ~2^63)
            with open(real, "rb") as fh:
                fh.seek(offset)
                data = fh.read(limit)
        return {"ok": True, "path": self.rel(real), "size": size, "offset": offset,
                "truncated": offset + len(data) < size,
                "content": data.decode("utf-8", errors="replace")}

    def write_file(self, args: dict) -> dict:
        """``{path, content, append?}``: create or overwrite (parents are created)."""
        content = args.get("content")
        if not isinstance(content, str):
            raise ValidationError("content must be a string")
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ValidationError(f"content is {len(data)} bytes; the limit is "
                                  f"{self.max_write_bytes}")
        real = self.resolve(args.get("path"))
        if os.path.isdir(real):
            raise ValidationError(f"{args.get('path')!r} is a directory")
        os.makedirs(os.path.dirname(real), exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if args.get("append") else os.O_TRUNC)
        # O_NOFOLLOW: a symlink swapped in after resolve() must not redirect the write
        fd = os.open(real, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return {"ok": True, "path": self.rel(real), "bytes": len(data),
                "appended": bool(args.get("append"))}

    def list_directory(self, args: dict) -> dict:
        """``{path?}`` → entries ``{name, type, size}`` sorted by name (directories end in /)."""
        real = self.resolve(args.get("path") or ".")
        if not os.path.isdir(real):
            raise NotFoundError(f"no such directory: {args.get('path') or '.'}")
        entries = []
        with os.scandir(real) as it:
            for de in sorted(it, key=lambda d: d.name):
                if len(entries) >= self.max_entries:
                    break
                kind = ("link" if de.is_symlink() else "dir" if de.is_dir()
                        else "file" if de.is_file() else "other")
                size = de.stat(follow_symlinks=False).st_size if kind == "file" else None
                entries.append({"name": de.name + ("/" if kind == "dir" else ""), "type": kind,
                                "size": size})
        return {"ok": True, "path": self.rel(real), "entries": entries,
                "truncated": len(entries) >= self.max_entries}


def run_bash(command, *, cwd: str, timeout_s: float, max_output: int = 16_000) -> dict:
    """Run ``command`` with ``bash -c`` in ``cwd``; kill its process group after ``timeout_s``.

    Examples
    --------
    >>> run_bash("echo hi", cwd=".", timeout_s=5)["stdout"]
    'hi\\n'
    """
    if not isinstance(command, str) or not command.strip():
        raise ValidationError("command must be a non-empty string")
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    return {"ok": not timed_out and proc.returncode == 0, "exit_code": proc.returncode,
            "timed_out": timed_out,
            "stdout": _cut(out.decode("utf-8", errors="replace"), max_output),
            "stderr": _cut(err.decode("utf-8", errors="replace"), max_output)}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more chars)"


def _int_arg(args: dict, name: str, default: int, low: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{name} must be an integer >= {low}, got {value!r}")
    return value
