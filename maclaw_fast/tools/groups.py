"""Keyword group activation (design §12 step 5, R6).

Keywords are matched on the shared tokenizer's tokens (design R1): a keyword fires when its tokens
occur in the message's tokens, in a row. Plurals and inflections fire because both sides are
stemmed ("run the tests", "list my files", "query the databases"), while a keyword inside a
longer word does not ("latest" does not fire "test", "legitimate" not "git"). A keyword with Han
characters also fires as a substring of the message (): Chinese has no spaces, so a message
may segment around a keyword differently than the keyword alone ("开始录制屏幕").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from maclaw_fast.errors import ValidationError
from maclaw_fast.text import tokenize

GroupTable = Sequence[tuple[Sequence[str], Sequence[str]]]


def _has_han(text: str) -> bool:
    return any("\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff" for c in text)


class GroupActivator:
    """Compiled keyword → tags table.

    Examples
    --------
    >>> g = GroupActivator([(("browser", "浏览器"), ("browser", "web"))])
    >>> g.activate("打开浏览器"), g.activate("close the browsers"), g.activate("browserless")
    (('browser', 'web'), ('browser', 'web'), ())
    """

    def __init__(self, table: GroupTable) -> None:
        # first token of a keyword → [(its tokens, entry index)]; entries keep table order
        self._by_first: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        self._substr: list[tuple[str, int]] = []
        self._entry_tags: list[tuple[str, ...]] = []
        for entry in table:
            try:
                keywords, tags = entry
            except (TypeError, ValueError):
                raise ValidationError(f"group entry {entry!r} must be (keywords, tags)") from None
            if isinstance(keywords, str) or isinstance(tags, str):
                raise ValidationError(f"group entry {entry!r}: keywords and tags must be lists")
            e = len(self._entry_tags)
            self._entry_tags.append(tuple(dict.fromkeys(str(t).lower() for t in tags)))
            for kw in keywords:
                kw = str(kw).lower().strip()
                toks = tuple(tokenize(kw))
                if not toks:
                    raise ValidationError(f"group keyword {kw!r} has no tokens (empty, "
                                          "punctuation or stop words only)")
                self._by_first.setdefault(toks[0], []).append((toks, e))
                if _has_han(kw):
                    self._substr.append((kw, e))
        self.tags: tuple[str, ...] = tuple(dict.fromkeys(t for ts in self._entry_tags
                                                         for t in ts))

    def activate(self, message: str, tokens: Sequence[str] | None = None) -> tuple[str, ...]:
        """Activated tags for ``message``, deduplicated, in table order. ``tokens``: the
        message's tokens when the caller already has them (``tokenize(message)``)."""
        if not message:
            return ()
        if tokens is None:
            tokens = tokenize(message)
        fired: set[int] = set()
        by_first = self._by_first
        for i, tok in enumerate(tokens):
            for kw, e in by_first.get(tok, ()):
                if len(kw) == 1 or tuple(tokens[i:i + len(kw)]) == kw:
                    fired.add(e)
        if self._substr:
            low = message.lower()
            fired.update(e for kw, e in self._substr if kw in low)
        if not fired:
            return ()
        return tuple(dict.fromkeys(t for e in sorted(fired) for t in self._entry_tags[e]))

    def activate_many(self, messages: Iterable[str]) -> list[tuple[str, ...]]:
        return [self.activate(m) for m in messages]


def match_skills(tokens: Sequence[str], recommendations: Iterable[dict]) -> list[str]:
    """Skills a message matches (design §12 step 8): a shared token longer than one character, or
    at least two shared tokens, between the message and ``name description`` of the skill.

    Examples
    --------
    >>> match_skills(["生成", "周报"], [{"name": "daily_report", "description": "生成周报和日报"}])
    ['daily_report']
    """
    qset, out = set(tokens), []
    for rec in recommendations:
        shared = qset & set(tokenize(f"{rec.get('name', '')} {rec.get('description', '')}"))
        if len(shared) >= 2 or any(len(x) > 1 for x in shared):
            out.append(str(rec.get("name", "")))
    return out
