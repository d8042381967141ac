"""Keyword group activation (SPEC §12 step 5).

A keyword in the lower-cased message activates its tags; tools carrying an activated tag skip
scoring and go straight to the front of the candidates. English (ASCII) keywords match whole words
only ([D]: "test" must not fire on "latest"); other keywords (Chinese) match as substrings, since
Chinese has no spaces to delimit words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from maclaw_fast.errors import ValidationError
from maclaw_fast.text import tokenize

GroupTable = Sequence[tuple[Sequence[str], Sequence[str]]]


class GroupActivator:
    """Compiled keyword → tags table.

    Examples
    --------
    >>> g = GroupActivator([(("browser", "浏览器"), ("browser", "web"))])
    >>> g.activate("打开浏览器"), g.activate("browsers are fun")
    (('browser', 'web'), ())
    """

    def __init__(self, table: GroupTable) -> None:
        self._substr: list[tuple[str, tuple[str, ...]]] = []
        words: dict[str, list[str]] = {}
        for entry in table:
            try:
                keywords, tags = entry
            except (TypeError, ValueError):
                raise ValidationError(f"group entry {entry!r} must be (keywords, tags)") from None
            tags = tuple(str(t).lower() for t in tags)
            for kw in keywords:
                kw = str(kw).lower().strip()
                if not kw:
                    raise ValidationError("empty group keyword")
                if kw.isascii():
                    words.setdefault(kw, []).extend(tags)
                else:
                    self._substr.append((kw, tags))
        self._word_tags = {k: tuple(dict.fromkeys(v)) for k, v in words.items()}
        # one alternation for all English keywords: a single regex scan per message
        alts = "|".join(re.escape(k) for k in sorted(words, key=len, reverse=True))
        self._word_re = re.compile(rf"(?<![a-z0-9_])(?:{alts})(?![a-z0-9_])") if alts else None
        self.tags: tuple[str, ...] = tuple(dict.fromkeys(
            t for e in table for t in (x.lower() for x in e[1])))

    def activate(self, message: str) -> tuple[str, ...]:
        """Activated tags for ``message``, deduplicated (Chinese keywords first, then English)."""
        if not message:
            return ()
        low = message.lower()
        out: dict[str, None] = {}
        for kw, tags in self._substr:
            if kw in low:
                out.update(dict.fromkeys(tags))
        if self._word_re is not None:
            for m in self._word_re.finditer(low):
                out.update(dict.fromkeys(self._word_tags[m.group(0)]))
        return tuple(out)

    def activate_many(self, messages: Iterable[str]) -> list[tuple[str, ...]]:
        return [self.activate(m) for m in messages]


def match_skills(tokens: Sequence[str], recommendations: Iterable[dict]) -> list[str]:
    """Skills a message matches (SPEC §12 step 8): a shared token longer than one character, or
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
