"""KnowledgeExtractor (design §10): durable knowledge from a finished conversation."""

from __future__ import annotations

import json
import threading
import time

import msgspec

from maclaw_fast.config import MaintenanceConfig
from maclaw_fast.errors import LLMError, ValidationError
from maclaw_fast.llm import chat_json
from maclaw_fast.maintenance import prompts
from maclaw_fast.maintenance.promote import pick_category
from maclaw_fast.memory import metadata

LAST_STARTED = "extractor/last_started"  # store.meta key: clock seconds of the last start

ASSISTANT_SIGNALS = ("已保存到记忆", "saved to memory", "记住了", "已记录")
TOOL_SIGNALS = ("memory:save", "memory_save", "save_memory", "memory:update")


class ExtractReport(msgspec.Struct, kw_only=True):
    """What one extraction did; ``skipped`` says why it did not run, ``error`` why the LLM
    failed (the cooldown still applies then)."""

    skipped: str = ""
    error: str = ""
    precompressed: bool = False
    saved: int = 0
    saved_ids: list[str] = []
    duplicates: int = 0
    rejected: int = 0


def message_text(message: dict) -> str:
    """The text of a message: a string, or the text parts of a content list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content
                        if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def has_save_signal(messages: list[dict], window: int = 10) -> bool:
    """True when, within the last ``window`` messages, the agent already saved to memory: an
    assistant message says so, or a tool message (or an assistant tool call) is a memory save.

    Examples
    --------
    >>> has_save_signal([{"role": "assistant", "content": "OK, Saved to memory."}])
    True
    >>> has_save_signal([{"role": "user", "content": "saved to memory?"}])
    False
    """
    for m in messages[-window:] if window > 0 else []:
        role = m.get("role")
        text = message_text(m).lower()
        if role == "assistant":
            if any(s in text for s in ASSISTANT_SIGNALS):
                return True
            calls = json.dumps(m.get("tool_calls") or [], ensure_ascii=False).lower()
            if any(s in calls for s in TOOL_SIGNALS):
                return True
        elif role == "tool" and any(s in text for s in TOOL_SIGNALS):
            return True
    return False


def _check_messages(messages) -> list[dict]:
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ValidationError("messages must be a list of {'role', 'content'} objects")
    for i, m in enumerate(messages):
        if not isinstance(m.get("role"), str):
            raise ValidationError(f"messages[{i}] has no role")
    return messages


def is_duplicate(text: str, existing: list[str], min_len: int = 20) -> bool:
    """Exact or substring duplicate (lower-cased, trimmed) of one of ``existing`` (already
    normalised); containment counts when the shorter side has ≥ ``min_len`` characters.

    Examples
    --------
    >>> is_duplicate("Use pnpm, not npm, in this repo", ["always use pnpm, not npm, in this repo"])
    True
    """
    norm = text.strip().lower()
    for e in existing:
        if e == norm:
            return True
        short, long_ = (norm, e) if len(norm) <= len(e) else (e, norm)
        if len(short) >= min_len and short in long_:
            return True
    return False


class KnowledgeExtractor:
    """Extract knowledge after a conversation, at most once per cooldown, never twice at once.

    Parameters
    ----------
    store : MemoryStore
    llm : LLMClient, optional
        Without one every call is skipped.
    config : MaintenanceConfig
    clock : callable
        Seconds for the cooldown (default ``time.time``).

    The cooldown's start is kept in the store (``extractor/last_started``), so it holds for
    every extractor over that store, across restarts.

    Examples
    --------
    >>> from maclaw_fast.memory import MemoryStore
    >>> ex = KnowledgeExtractor(MemoryStore.in_memory(embedder=None))
    >>> ex.extract([{"role": "user", "content": "the API lives in api/"}]).skipped
    'no LLM configured'
    """

    def __init__(self, store, llm=None, config: MaintenanceConfig = MaintenanceConfig(), *,
                 clock=time.time) -> None:
        if not isinstance(config, MaintenanceConfig):
            raise ValidationError("config must be a MaintenanceConfig")
        self.store = store
        self.llm = llm
        self.config = config
        self.clock = clock
        self._last_started: float | None = None  # for a store that keeps no named values
        self._busy = threading.Lock()

    @property
    def last_started(self) -> float | None:
        """Clock seconds when the last extraction started (None when never)."""
        if metadata.can_persist(self.store):
            return metadata.get_float(self.store, LAST_STARTED)
        return self._last_started

    @last_started.setter
    def last_started(self, value: float | None) -> None:
        if value is not None and metadata.can_persist(self.store):
            metadata.set_float(self.store, LAST_STARTED, float(value))
        else:
            self._last_started = value

    def cooldown_left(self) -> float:
        """Seconds until the next extraction may run (0 when it may run now)."""
        last = self.last_started
        if last is None:
            return 0.0
        cooldown = self.config.extract_cooldown_s
        # min(): a start stamped in the future (the clock was set back) waits one cooldown
        return min(cooldown, max(0.0, cooldown - (self.clock() - last)))

    def extract(self, messages: list[dict], *, project: str | None = None) -> ExtractReport:
        """Extract and save knowledge from ``messages`` (OpenAI-style dicts).

        Skipped without an LLM, while another extraction runs, during the cooldown (set when
        an extraction starts), and when the agent already saved to memory within the last
        ``extract_signal_window`` messages. Conversations of more than
        ``extract_compress_over`` user/assistant messages are condensed by the LLM first.
        Items are saved as project_knowledge or instruction tagged ``[extracted]`` (plus
        ``project`` when given); exact and substring duplicates of stored entries are skipped.
        """
        messages = _check_messages(messages)
        if project is not None and (not isinstance(project, str) or not project.strip()):
            raise ValidationError("project must be a non-empty string or None")
        if self.llm is None:
            return ExtractReport(skipped="no LLM configured")
        if not self._busy.acquire(blocking=False):
            return ExtractReport(skipped="another extraction is running")
        try:
            left = self.cooldown_left()
            if left > 0:
                return ExtractReport(skipped=f"cooldown: {left:.0f} s left")
            if has_save_signal(messages, self.config.extract_signal_window):
                return ExtractReport(skipped="the conversation already saved to memory")
            self.last_started = self.clock()
            return self._run(messages, project)
        finally:
            self._busy.release()

    def _run(self, messages: list[dict], project: str | None) -> ExtractReport:
        cfg = self.config
        report = ExtractReport()
        convo = [{"role": m["role"], "content": message_text(m).strip()} for m in messages
                 if m["role"] in ("user", "assistant") and message_text(m).strip()]
        if not convo:
            report.skipped = "no user or assistant messages"
            return report
        try:
            if len(convo) > cfg.extract_compress_over:
                text = prompts.plain_reply(
                    self.llm.complete(prompts.precompress_messages(convo)).text)
                if not text:
                    raise LLMError("empty summary of the conversation")
                report.precompressed = True
            else:
                text = prompts.transcript(convo)
            reply = chat_json(self.llm, prompts.extract_messages(text), expect=list)
        except LLMError as exc:
            report.error = str(exc)
            return report
        with self.store.lock:
            existing = [e.content.strip().lower() for e in self.store.entries()]
        tags = ["extracted"] + ([project.strip()] if project else [])
        for item in reply:
            content = item.get("content") if isinstance(item, dict) else None
            if (report.saved >= cfg.extract_max_items or not isinstance(content, str)
                    or not content.strip()):
                report.rejected += 1
                continue
            if is_duplicate(content, existing, cfg.dedup_min_substring):
                report.duplicates += 1
                continue
            cat = pick_category(item.get("category", "project_knowledge"), ("instruction",),
                                "project_knowledge")
            entry = self.store.save(content.strip(), category=cat, tags=tags)
            existing.append(entry.content.strip().lower())
            report.saved += 1
            report.saved_ids.append(entry.id)
        return report
