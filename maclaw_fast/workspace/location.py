"""Where the command line keeps a workspace's index: outside the workspace.

A workspace is the user's own folder (often a git checkout); an index written into it shows up
in ``git status``, in backups and in the agent's file tools. The command line keeps it under
``$MACLAW_HOME/workspaces/`` (default ``~/.maclaw_fast/workspaces/``), one folder per workspace
named after the folder and a hash of its absolute path. An index made earlier inside the
workspace (``WORKSPACE/.maclaw``) is still used where it exists, so nothing is rebuilt.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

LEGACY_DIR = ".maclaw"  # the in-workspace location: WorkspaceIndex.open's own default


def maclaw_home() -> Path:
    """``$MACLAW_HOME``, else ``~/.maclaw_fast`` (read at call time)."""
    return Path(os.environ.get("MACLAW_HOME") or Path.home() / ".maclaw_fast")


def default_index_dir(workspace: str | os.PathLike) -> Path:
    """The index folder of ``workspace`` (see the module docstring).

    Examples
    --------
    >>> import tempfile
    >>> ws = tempfile.mkdtemp()
    >>> d = default_index_dir(ws)
    >>> d.parent.name, d.name.startswith(Path(ws).name + "-"), ws in str(d)
    ('workspaces', True, False)
    """
    root = Path(workspace).expanduser().resolve()
    legacy = root / LEGACY_DIR
    if legacy.is_dir():
        return legacy
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return maclaw_home() / "workspaces" / f"{root.name or 'root'}-{digest}"
