"""Long-running shell sessions for the agent (the design §12 session tools): ``create_session``,
``list_sessions``, ``send_and_observe``, ``get_session_output``, ``get_session_events`` and
``control_session``.

A session is one ``bash`` process started in the sandbox root in its own process group, its
stdout and stderr merged into a bounded buffer by a reader thread. The model starts a command
(a build, a server, a REPL), sends it input and reads what it printed since, and interrupts or
stops it. Sessions run commands, so they exist only where ``bash`` is enabled.
"""

from __future__ import annotations

import atexit
import itertools
import os
import signal
import subprocess
import threading
import time
import weakref

from maclaw_fast.errors import NotFoundError, ValidationError

ACTIONS = ("interrupt", "terminate", "kill")
_SIGNALS = {"interrupt": signal.SIGINT, "terminate": signal.SIGTERM, "kill": signal.SIGKILL}
_ALL: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:  # no shell outlives the process that started it
    for sessions in list(_ALL):
        sessions.close()


class _Session:
    def __init__(self, sid: str, command: str, proc: subprocess.Popen, limit: int) -> None:
        self.id, self.command, self.proc, self.limit = sid, command, proc, limit
        self.started = time.time()
        self.buf = bytearray()
        self.dropped = 0          # bytes cut from the front of buf (offsets stay absolute)
        self.read_to = 0          # absolute offset the model has seen up to
        self.events: list[dict] = [{"event": "started", "at": self.started,
                                    "pid": proc.pid, "command": command}]
        self.cond = threading.Condition()
        self.exit_code: int | None = None
        self.reader = threading.Thread(target=self._read, daemon=True,
                                       name=f"maclaw-session-{sid}")
        self.reader.start()

    def _read(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            with self.cond:
                if not chunk:
                    break
                self.buf += chunk
                if len(self.buf) > self.limit:
                    cut = len(self.buf) - self.limit
                    del self.buf[:cut]
                    self.dropped += cut
                self.cond.notify_all()
        code = self.proc.wait()
        with self.cond:
            self.exit_code = code
            self.events.append({"event": "exited", "at": time.time(), "exit_code": code})
            self.cond.notify_all()

    @property
    def end(self) -> int:
        return self.dropped + len(self.buf)

    def text_since(self, offset: int, max_chars: int) -> tuple[str, bool]:
        start = max(offset, self.dropped) - self.dropped
        data = bytes(self.buf[start:]).decode("utf-8", errors="replace")
        if len(data) > max_chars:
            return "..." + data[-max_chars:], True
        return data, offset < self.dropped

    def info(self) -> dict:
        return {"id": self.id, "command": self.command, "pid": self.proc.pid,
                "running": self.exit_code is None, "exit_code": self.exit_code,
                "started_at": round(self.started, 3), "output_bytes": self.end}


class ShellSessions:
    """The shell sessions of one agent, confined to ``root``.

    Examples
    --------
    >>> import tempfile
    >>> ss = ShellSessions(tempfile.mkdtemp())
    >>> sid = ss.create({"command": "read line; echo got $line"})["id"]
    >>> ss.send_and_observe({"id": sid, "input": "hi", "wait_s": 2})["output"]
    'got hi\\n'
    >>> ss.close()
    """

    def __init__(self, root: str, *, max_sessions: int = 8, max_buffer_bytes: int = 1_000_000,
                 max_output_chars: int = 16_000) -> None:
        if not os.path.isdir(root):
            raise ValidationError(f"session root {root} is not a directory")
        self.root, self.max_sessions = root, max_sessions
        self.max_buffer_bytes, self.max_output_chars = max_buffer_bytes, max_output_chars
        self._sessions: dict[str, _Session] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        _ALL.add(self)

    def _get(self, args: dict) -> _Session:
        sid = args.get("id")
        if not isinstance(sid, str) or not sid:
            raise ValidationError("id must be a session id (see list_sessions)")
        s = self._sessions.get(sid)
        if s is None:
            raise NotFoundError(f"no session {sid!r}; open ones: "
                                f"{', '.join(self._sessions) or 'none'}")
        return s

    def create(self, args: dict) -> dict:
        """``{command}``: start ``bash -c command`` in the root; returns the session id."""
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValidationError("command must be a non-empty string")
        with self._lock:
            running = sum(s.exit_code is None for s in self._sessions.values())
            if running >= self.max_sessions:
                raise ValidationError(f"{running} sessions are running (the limit); stop one "
                                      "with control_session first")
            sid = f"s{next(self._ids)}"
            proc = subprocess.Popen(["bash", "-c", command], cwd=self.root,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_default_interrupts)
            self._sessions[sid] = _Session(sid, command, proc, self.max_buffer_bytes)
        return {"ok": True, **self._sessions[sid].info()}

    def list(self, args: dict | None = None) -> dict:
        """All sessions of this agent, running or finished."""
        return {"ok": True, "sessions": [s.info() for s in list(self._sessions.values())]}

    def send_and_observe(self, args: dict) -> dict:
        """``{id, input?, wait_s?}``: write ``input`` (plus a newline) to the session, then
        return what it prints until it has been quiet for 0.3 s (or ``wait_s`` passed, default
        5, or it exited)."""
        s = self._get(args)
        text = args.get("input")
        if text is not None and not isinstance(text, str):
            raise ValidationError("input must be a string")
        wait = _seconds(args.get("wait_s"), 5.0, 60.0)
        with s.cond:
            start = max(s.read_to, s.end) if text is not None else s.read_to
        if text is not None:
            if s.exit_code is not None or s.proc.stdin is None:
                raise ValidationError(f"session {s.id} has exited (code {s.exit_code})")
            try:
                s.proc.stdin.write((text if text.endswith("\n") else text + "\n").encode())
                s.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise ValidationError(f"session {s.id} does not read input: {exc}") from None
        deadline = time.monotonic() + wait
        with s.cond:
            seen = s.end
            quiet_since = time.monotonic()
            while s.exit_code is None:
                now = time.monotonic()
                if now >= deadline or (s.end > start and now - quiet_since >= 0.3):
                    break
                s.cond.wait(min(0.1, deadline - now))
                if s.end != seen:
                    seen, quiet_since = s.end, time.monotonic()
            out, cut = s.text_since(start, self.max_output_chars)
            s.read_to = s.end
            return {"ok": True, "id": s.id, "output": out, "truncated": cut,
                    "running": s.exit_code is None, "exit_code": s.exit_code}

    def output(self, args: dict) -> dict:
        """``{id, tail_chars?}``: the last output of the session (default all that is kept,
        up to the output limit)."""
        s = self._get(args)
        tail = args.get("tail_chars")
        if tail is not None and (isinstance(tail, bool) or not isinstance(tail, int)
                                 or tail < 1):
            raise ValidationError(f"tail_chars must be an integer >= 1, got {tail!r}")
        with s.cond:
            out, cut = s.text_since(0, min(tail or self.max_output_chars,
                                           self.max_output_chars))
            s.read_to = s.end
            return {"ok": True, **s.info(), "output": out, "truncated": cut}

    def events(self, args: dict) -> dict:
        """``{id}``: what happened to the session (started, signals sent, exited)."""
        s = self._get(args)
        with s.cond:
            return {"ok": True, "id": s.id, "events": list(s.events)}

    def control(self, args: dict) -> dict:
        """``{id, action}``: send interrupt (Ctrl-C), terminate or kill to the session's
        process group."""
        s = self._get(args)
        action = args.get("action")
        if action not in ACTIONS:
            raise ValidationError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        if s.exit_code is None:
            try:
                os.killpg(s.proc.pid, _SIGNALS[action])
            except ProcessLookupError:
                pass
            with s.cond:
                s.events.append({"event": action, "at": time.time()})
                s.cond.wait_for(lambda: s.exit_code is not None, timeout=2.0)
        return {"ok": True, **s.info()}

    def close(self) -> None:
        """Kill every running session (their process groups); idempotent."""
        for s in list(self._sessions.values()):
            if s.exit_code is None:
                try:
                    os.killpg(s.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            s.reader.join(timeout=2.0)
            if s.proc.stdin is not None:
                try:
                    s.proc.stdin.close()
                except OSError:
                    pass
            if s.proc.stdout is not None:
                s.proc.stdout.close()


def _default_interrupts() -> None:
    """In the session's child, before exec: Ctrl-C and Ctrl-\\ back to their default action. A
    process started from a background job (``nohup``, ``cmd &`` in a script) inherits them
    ignored, and an ignored signal stays ignored across exec, so ``interrupt`` would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _seconds(value, default: float, high: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        raise ValidationError(f"wait_s must be a number of seconds in [0, {high:g}], "
                              f"got {value!r}")
    return float(value)
