"""Speakers of transcript lines and the ones a query names (``RecallConfig.speaker_weight``).

A memory saved as a transcript line, ``"Melanie: we went camping"``, has a speaker: the one to
three words before a leading colon, the first capitalised (or of a script without case, such as
Chinese). A query that names a speaker ("what does Melanie do to relax?") is mostly about what
that speaker said, so recall favours their lines (docs/design.md, "Recall").
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
    m = _LINE.match(text)
    if m is None or len(m.group(1)) > MAX_NAME:
        return None
    name = m.group(1)
    if name[0].islower() or not name[0].isupper() and name[0].isascii():
        return None  # a lower-case word ("note:", "error:") labels, it does not speak
    return speaker_key(name) or None


def named_speakers(query: str, speakers) -> tuple[str, ...]:
    """The keys of ``speakers`` (a mapping or set of speaker keys) that ``query`` names as
    whole words (of up to three), or holds as a substring for a name without spaces in a
    script without them (Chinese names are not cut from the words around them).

    >>> named_speakers("What did Melanie's kids like?", {"melanie": 1, "caroline": 2})
    ('melanie',)
    >>> named_speakers("林遥住在哪里", {"林遥": 1}), named_speakers("hi", {})
    (('林遥',), ())
    """
    if not speakers:
        return ()
    low = query.lower()
    words = _WORD.findall(low)
    found = []
    for size in (1, 2, 3):
        for i in range(len(words) - size + 1):
            key = " ".join(words[i:i + size])
            if key in speakers and key not in found:
                found.append(key)
    if not low.isascii():
        found += [k for k in speakers if not k.isascii() and " " not in k and k in low
                  and k not in found]
    return tuple(sorted(found))
