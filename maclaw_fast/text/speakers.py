"""Speakers of transcript lines and the ones a query names (``RecallConfig.speaker_weight``).

A memory saved as a transcript line, ``"Melanie: we went camping"``, has a speaker: the one to
three words before a leading colon, the first capitalised (or of a script without case, such as
Chinese). A query that names a speaker ("what does Melanie do to relax?") is mostly about what
that speaker said, so recall favours their lines, and the reply to a question that speaker
asked ("Melanie: what got you into pottery?"): that reply is about what the question named
(docs/design.md, "Recall").
"""

from __future__ import annotations

import re

_LINE = re.compile(r"\s*([^\W\d_][\w.'’-]*(?:[ \t][^\W\d_][\w.'’-]*){0,2})[ \t]?(?::\s|：)")
_WORD = re.compile(r"\w+")
MAX_NAME = 40  # characters: a longer "name" before a colon is a sentence, not a speaker


def speaker_key(name: str) -> str:
    """The form names are compared in: lower-case words joined by one space."""
    return " ".join(_WORD.findall(name.lower()))


def line_speaker(text: str) -> str | None:
    """The speaker key of a transcript line, or None.

    >>> line_speaker("Melanie: we went camping last weekend")
    'melanie'
    >>> line_speaker("Dr. Ana Ruiz: take two a day")
    'dr ana ruiz'
    >>> line_speaker("林遥：我住在上海") , line_speaker("note: lowercase is no name")
    ('林遥', None)
    >>> line_speaker("The deploy failed at 10:30 because of a typo") is None
    True
    """
    if not (0 <= text.find(":", 0, MAX_NAME + 2) or "：" in text[:MAX_NAME + 2]):
        return None  # most memories: no colon near the start
    m = _LINE.match(text)
    if m is None or len(m.group(1)) > MAX_NAME:
        return None
    name = m.group(1)
    if name[0].islower() or not name[0].isupper() and name[0].isascii():
        return None  # a lower-case word ("note:", "error:") labels, it does not speak
    return speaker_key(name) or None


def line_asks(text: str) -> bool:
    """Whether a line asks something (a question mark, either width)."""
    return "?" in text or "？" in text


def spoken_text(text: str) -> str:
    """A line without its speaker label (the whole text when it has none).

    >>> spoken_text("Melanie: what got you into pottery?"), spoken_text("no speaker here")
    ('what got you into pottery?', 'no speaker here')
    """
    if line_speaker(text) is None:
        return text
    return text[_LINE.match(text).end():]


def speaks_or_answers(text: str, before: str | None, names) -> bool:
    """Whether a line is spoken by one of ``names`` (speaker keys) or answers a question one
    of them asked in the line ``before`` it.

    >>> ana = {"ana"}
    >>> speaks_or_answers("Ana: hi", None, ana), speaks_or_answers("Bo: yes", "Ana: ok?", ana)
    (True, True)
    >>> speaks_or_answers("Bo: yes", "Ana: ok.", ana), speaks_or_answers("Bo: yes", None, ana)
    (False, False)
    """
    if line_speaker(text) in names:
        return True
    return before is not None and line_asks(before) and line_speaker(before) in names


class SpeakerIndex:
    """The rows of each speaker of a table's transcript lines, kept as rows are written.

    >>> index = SpeakerIndex()
    >>> index.add(0, "Melanie: hi"); index.add(1, "Ana Ruiz: hello"); index.add(2, "no speaker")
    >>> index.named("What did Melanie's kids like?"), index.named("ask ana ruiz")
    (('melanie',), ('ana ruiz',))
    >>> index.discard(0, "Melanie: hi"); index.named("Melanie?"), len(index)
    ((), 1)
    >>> index.add(3, "Ana Ruiz: how are you?"); sorted(index.asks)
    [3]
    """

    __slots__ = ("asks", "cue", "rows", "span", "unspaced")

    def __init__(self) -> None:
        self.rows: dict[str, set[int]] = {}
        self.asks: set[int] = set()  # the rows of speakers' lines that ask something
        self.span = 1  # the most words of a name held (runs of more are never looked up)
        self.unspaced: set[str] = set()  # names of a script without spaces: found as substrings
        self.cue: re.Pattern | None = None  # any name's first word: made again when names change

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, row: int, text: str) -> None:
        key = line_speaker(text)
        if key is None:
            return
        rows = self.rows.get(key)
        if rows is None:
            rows = self.rows[key] = set()
            self.cue = None
            self.span = max(self.span, key.count(" ") + 1)
            if not key.isascii() and " " not in key:
                self.unspaced.add(key)
        rows.add(row)
        if line_asks(text):
            self.asks.add(row)

    def discard(self, row: int, text: str) -> None:
        key = line_speaker(text)
        rows = self.rows.get(key) if key is not None else None
        if rows is not None:
            rows.discard(row)
            self.asks.discard(row)
            if not rows:
                del self.rows[key]
                self.unspaced.discard(key)
                self.cue = None

    def marked(self, names, rows: list[int], before: list[int], replies: bool) -> list[bool]:
        """Whether each of ``rows`` is a line one of ``names`` spoke, or (``replies``) follows
        (``before``: the row before it) a question one of them asked."""
        sets = [self.rows[name] for name in names]
        mine = sets[0] if len(sets) == 1 else set().union(*sets)
        asks = self.asks if replies else ()
        return [r in mine or b in asks and b in mine for r, b in zip(rows, before)]

    def named(self, query: str) -> tuple[str, ...]:
        """The speakers ``query`` names as whole words (of up to three), or holds as a
        substring for a name of a script without spaces (Chinese names are not cut from the
        words around them)."""
        if not self.rows:
            return ()
        low = query.lower()
        if self.cue is None:  # a found name's first word is in the query: most queries stop here
            firsts = "|".join({re.escape(k.split(" ")[0]) for k in self.rows})
            self.cue = re.compile(firsts if self.unspaced or self.span > 1
                                  else rf"\b(?:{firsts})\b")  # one-word names: found whole
        if self.span == 1 and not self.unspaced:
            return tuple(sorted(set(self.cue.findall(low))))
        if not self.cue.search(low):
            return ()
        words = _WORD.findall(low)
        grams = set(words)
        if self.span > 1:
            grams.update(map(" ".join, zip(words, words[1:])))
        if self.span > 2:
            grams.update(map(" ".join, zip(words, words[1:], words[2:])))
        found = grams.intersection(self.rows)
        if self.unspaced and not low.isascii():
            found.update(k for k in self.unspaced if k in low)
        return tuple(sorted(found))
