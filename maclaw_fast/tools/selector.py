"""Coding-agent selector (design §12): recommend claude / codex / gemini / cursor / opencode /
iflow / kilo for a task, from profiles shipped in ``data/selector_profiles.json``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from maclaw_fast.errors import ValidationError
from maclaw_fast.index import Bm25Index
from maclaw_fast.text import tokenize

PROFILES_PATH = Path(__file__).resolve().parents[2] / "data" / "selector_profiles.json"
FALLBACK = "claude"
INSTALLED_BONUS = 2.0


class AgentProfile(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    base_score: float
    languages: list[str] = []
    frameworks: list[str] = []
    task_types: list[str] = []
    description: str = ""

    def text(self) -> str:
        return " ".join([self.name, self.description, *self.languages, *self.frameworks,
                         *self.task_types])


class Selection(msgspec.Struct, frozen=True, kw_only=True):
    """The winner and every profile's total (``base + bm25 + 2.0 if installed``)."""

    name: str
    scores: dict[str, float]


class Selector:
    """Pick the coding agent for a task.

    Examples
    --------
    >>> sel = Selector()
    >>> sel.recommend("", installed=[]).name
    'claude'
    """

    def __init__(self, profiles: Iterable[AgentProfile] | str | os.PathLike | None = None) -> None:
        if profiles is None or isinstance(profiles, (str, os.PathLike)):
            path = Path(profiles) if profiles is not None else PROFILES_PATH
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                profiles = msgspec.convert(raw, list[AgentProfile])
            except (OSError, json.JSONDecodeError, msgspec.ValidationError) as exc:
                raise ValidationError(f"cannot read selector profiles {path}: {exc}") from None
        self.profiles = list(profiles)
        self._bm25 = Bm25Index(tantivy_index=False)
        for i, p in enumerate(self.profiles):
            self._bm25.add(i, tokenize(p.text()))

    def recommend(self, task: str, installed: Iterable[str] = ()) -> Selection:
        """Highest ``base + BM25(task, profile) + 2.0·installed`` wins; earlier profiles win
        ties; ``claude`` when there are no profiles."""
        if not self.profiles:
            return Selection(name=FALLBACK, scores={})
        inst = {s.lower() for s in installed}
        bm = self._bm25.scores(tokenize(task or ""), len(self.profiles))
        scores = {p.name: float(p.base_score + bm[i] + (INSTALLED_BONUS if p.name in inst else 0))
                  for i, p in enumerate(self.profiles)}
        best = max(range(len(self.profiles)), key=lambda i: (scores[self.profiles[i].name], -i))
        return Selection(name=self.profiles[best].name, scores=scores)
