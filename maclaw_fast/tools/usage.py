"""UsageTracker (design §12): rolling window of tool calls and the experience score.

Records are kept columnar in a ring (tool id, up to 5 token ids, timestamp, success) so that one
numba pass scores every tool for a message. The file format is the reference ``tool_usage.json``:
a JSON list of ``{"tool_name", "query_tokens", "success", "timestamp"}`` with RFC 3339 times,
plus ``"tokenizer"``: the analysis that made the tokens (``TOKENIZER_VERSION``); a record without
it, or made by another analysis, has its tokens analysed again on load.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from maclaw_fast.config import RouterConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.text import TOKENIZER_VERSION, Vocabulary, tokenize
from maclaw_kernels.experience import experience_indexed_batch, experience_postings


def _parse_time(value) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise ValidationError(f"bad timestamp {value!r}")
    text = value.strip().replace("Z", "+00:00")
    # Go writes nanoseconds; Python parses at most microseconds
    if "." in text:
        head, rest = text.split(".", 1)
        n = 0
        while n < len(rest) and rest[n].isdigit():
            n += 1
        digits, tz = rest[:n], rest[n:]
        text = f"{head}.{digits[:6].ljust(6, '0')}{tz}"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"bad timestamp {value!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _format_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


class UsageTracker:
    """Rolling window of the latest ``config.usage_window`` tool calls, optionally persisted.

    Parameters
    ----------
    path : ``tool_usage.json`` location, or None to keep the window in memory only.
    config : window size, tokens kept per record, decay and failure weight.
    clock : returns unix seconds; inject a fixed one in tests.
    autosave : save after each :meth:`record` (temp file + rename).

    Examples
    --------
    >>> u = UsageTracker(clock=lambda: 0.0)
    >>> u.record("query_database", "查询 数据库 订单", success=True)
    >>> round(u.experience("query_database", "查询 数据库 订单"), 3)
    1.0
    """

    def __init__(self, path: str | os.PathLike | None = None, *, config: RouterConfig = RouterConfig(),
                 clock=time.time, autosave: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        self.window = int(config.usage_window)
        self.keep_tokens = int(config.usage_query_tokens)
        self.per_tool = int(config.usage_per_tool)
        self.decay = float(config.usage_decay_per_hour)
        self.fail_w = float(config.usage_failure_weight)
        if self.window < 1 or self.keep_tokens < 1:
            raise ValidationError("usage_window and usage_query_tokens must be >= 1")
        self.clock = clock
        self.autosave = autosave
        self.tools = Vocabulary()
        self.vocab = Vocabulary()
        self._lock = threading.RLock()
        w, t = self.window, self.keep_tokens
        self.rec_uid = np.full(w, -1, np.int32)
        self.rec_tok = np.full((w, t), -1, np.int32)
        self.rec_ntok = np.zeros(w, np.int32)
        self.rec_ts = np.zeros(w, np.float64)
        self.rec_ok = np.zeros(w, np.bool_)
        self.rec_tokens: list[list[str] | None] = [None] * w
        self.head = 0
        self.count = 0
        self._post: tuple | None = None  # (version, index arrays), see _postings
        self.version = 0
        if self.path is not None and self.path.is_file():
            self.load()

    def __len__(self) -> int:
        return self.count

    # ------------------------------------------------------------------ records
    def record(self, tool_name: str, query, success: bool = True, *,
               timestamp: float | None = None) -> None:
        """Log one call of ``tool_name`` for ``query`` (text or tokens; the first 5 are kept)."""
        self._append(tool_name, query, success, timestamp)
        if self.autosave and self.path is not None:
            self.save()

    def _append(self, tool_name, query, success, timestamp) -> None:
        if not isinstance(tool_name, str) or not tool_name:
            raise ValidationError("tool_name must be a non-empty string")
        tokens = tokenize(query) if isinstance(query, str) else [str(t) for t in (query or [])]
        tokens = tokens[: self.keep_tokens]
        ts = float(self.clock() if timestamp is None else timestamp)
        with self._lock:
            r = self.head
            uniq = list(dict.fromkeys(tokens))
            ids = self.vocab.ids(uniq, add=True)
            self.rec_uid[r] = self.tools.add(tool_name)
            self.rec_tok[r] = -1
            self.rec_tok[r, : ids.size] = ids
            self.rec_ntok[r] = ids.size
            self.rec_ts[r] = ts
            self.rec_ok[r] = bool(success)
            self.rec_tokens[r] = tokens
            self.head = (r + 1) % self.window
            self.count = min(self.count + 1, self.window)
            self.version += 1

    def records(self) -> list[dict]:
        """The window, oldest first, as ``tool_usage.json`` objects."""
        with self._lock:
            out = []
            for j in range(self.count - 1, -1, -1):
                r = (self.head - 1 - j) % self.window
                out.append({"tool_name": self.tools.tokens[self.rec_uid[r]],
                            "query_tokens": list(self.rec_tokens[r] or []),
                            "success": bool(self.rec_ok[r]),
                            "timestamp": _format_time(float(self.rec_ts[r])),
                            "tokenizer": TOKENIZER_VERSION})
            return out

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike | None = None) -> None:
        """Write the window by temp file + rename (never a half-written file)."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValidationError("no path to save the usage window to")
        data = json.dumps(self.records(), ensure_ascii=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)

    def load(self, path: str | os.PathLike | None = None) -> None:
        """Replace the window with a ``tool_usage.json`` file (the newest records are kept)."""
        source = Path(path) if path is not None else self.path
        try:
            raw = json.loads(Path(source).read_text(encoding="utf-8") or "[]")
        except (OSError, json.JSONDecodeError) as exc:
            raise ValidationError(f"cannot read usage file {source}: {exc}") from None
        if not isinstance(raw, list):
            raise ValidationError(f"usage file {source} must hold a JSON list")
        with self._lock:
            self.head = self.count = 0
            self.version += 1
            for item in raw[-self.window:]:
                if not isinstance(item, dict):
                    raise ValidationError(f"bad usage record {item!r}")
                tokens = item.get("query_tokens") or []
                if item.get("tokenizer") != TOKENIZER_VERSION and isinstance(tokens, list):
                    # written by another analysis (or the reference format, which has no such
                    # key): its words analysed again, so old and new terms never mix
                    tokens = tokenize(" ".join(map(str, tokens)))
                self._append(item.get("tool_name"), tokens, bool(item.get("success")),
                             _parse_time(item.get("timestamp", 0)))

    # ------------------------------------------------------------------ scoring
    def _query(self, query) -> tuple[np.ndarray, int]:
        tokens = tokenize(query) if isinstance(query, str) else list(query or [])
        uniq = dict.fromkeys(tokens)
        get = self.vocab.getter()
        ids = [i for i in (get(t, -1) for t in uniq) if i >= 0]
        return np.array(ids, np.int32), len(uniq)

    def _postings(self) -> tuple:
        """The token → records index of the window (``experience_postings``), rebuilt after the
        window changes: ``(age_slot, seen, post_ptr, post_age)``."""
        if self._post is None or self._post[0] != self.version:
            n_uid = len(self.tools)
            idx = (np.zeros(max(self.count, 1), np.int64), np.zeros(n_uid, np.int64),
                   np.zeros(len(self.vocab) + 1, np.int64),
                   np.zeros(max(self.count * self.keep_tokens, 1), np.int64))
            experience_postings(self.rec_uid, self.rec_tok, self.rec_ntok, self.head, self.count,
                                self.per_tool, n_uid, *idx)
            self._post = (self.version, idx)
        return self._post[1]

    def experience_all(self, query, now: float | None = None) -> np.ndarray:
        """Experience of every known tool (indexed by ``self.tools`` id) for one query."""
        return self.experience_batch([query], now)[0]

    def experience_batch(self, queries: list, now: float | None = None) -> np.ndarray:
        """:meth:`experience_all` for many queries: ``(n_queries, n_tools)``."""
        now = float(self.clock() if now is None else now)
        with self._lock:
            parts = [self._query(q) for q in queries]
            if len(parts) == 1:  # a route's one message: its arrays as they are (~10 µs less)
                q_ids = parts[0][0]
                q_indptr = np.array((0, q_ids.size), np.int64)
            else:
                q_indptr = np.zeros(len(parts) + 1, np.int64)
                q_indptr[1:] = np.cumsum([p[0].size for p in parts])
                q_ids = (np.concatenate([p[0] for p in parts]) if parts
                         else np.zeros(0)).astype(np.int32)
            q_sizes = np.array([p[1] for p in parts], np.int64)
            out = np.empty((len(parts), len(self.tools)), np.float64)
            experience_indexed_batch(*self._postings(), self.rec_uid, self.rec_ntok, self.rec_ts,
                                     self.rec_ok, self.count, q_indptr, q_ids, q_sizes, now,
                                     self.decay, self.fail_w, out)
        return out

    def experience(self, tool_name: str, query, now: float | None = None) -> float:
        """Experience of one tool (design §12): 0 without query tokens or records."""
        uid = self.tools.get(tool_name)
        if uid < 0:
            return 0.0
        return float(self.experience_all(query, now)[uid])
