"""The time a query asks about: a relative date ("three days ago", "last Saturday",
"yesterday") resolved against the recall's clock, or an explicit one ("10 April 2023",
"April 10, 2023", "May 2023"); recall favours memories saved near it
(``RecallConfig.time_weight``, docs/design.md "Recall")."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

DAY = 86_400.0
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a few": 3, "a couple of": 2}
_MONTH = "|".join(_MONTHS)
_AGO = re.compile(r"\b(\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine"
                  r"|ten)\s+(day|week|month|year)s?\s+ago\b", re.I)
_LAST = re.compile(r"\blast\s+(week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")\b", re.I)
_YESTERDAY = re.compile(r"\byesterday\b", re.I)
_MDY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH}),?\s+(\d{{4}})\b", re.I)
_MY = re.compile(rf"\b({_MONTH})\s+(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b\d{4}\b")  # a year the patterns below read stands alone
# the words as every pattern above holds them ("ago" after a space, "last" before one):
# "quagor" holds "ago" but names no time
_WORDS = re.compile(r"\sago\b|\blast\s|\byesterday\b", re.I)
_RUNS = bytes.maketrans(b"123456789", b"000000000")  # digits as "0": a year reads b"0000"


def query_time(query: str, now: float) -> float:
    """Unix seconds of the first date ``query`` names (relative ones counted back from
    ``now``; a month alone is its 15th), NaN when it names none.

    >>> query_time("what did we fix two days ago", 10 * DAY) / DAY
    8.0
    >>> query_time("the launch on 10 April 2023", 0.0) == datetime(2023, 4, 10,
    ...                                                           tzinfo=timezone.utc).timestamp()
    True
    >>> query_time("what is the deploy key", 0.0)
    nan
    """
    if not may_name_time(query):  # most queries: one cheap test and out
        return math.nan
    m = _AGO.search(query)
    if m:
        n = m.group(1).lower()
        count = float(n) if n.isdigit() else float(_COUNTS.get(n, 1))
        return now - count * _UNIT_DAYS[m.group(2).lower()] * DAY
    m = _LAST.search(query)
    if m:
        what = m.group(1).lower()
        if what in _UNIT_DAYS:
            return now - _UNIT_DAYS[what] * DAY
        weekday = _WEEKDAYS.index("saturday" if what == "weekend" else what)
        today = datetime.fromtimestamp(now, tz=timezone.utc).weekday()
        return now - ((today - weekday) % 7 or 7) * DAY
    if _YESTERDAY.search(query):
        return now - DAY
    for pattern, (y, mo, d) in ((_MDY, (3, 1, 2)), (_DMY, (3, 2, 1))):
        m = pattern.search(query)
        if m:
            return _date(int(m.group(y)), m.group(mo), int(m.group(d)))
    m = _MY.search(query)
    return _date(int(m.group(2)), m.group(1), 15) if m else math.nan


def may_name_time(text: str) -> bool:
    """Whether ``text`` holds a word :func:`query_time` reads ("ago", "last", "yesterday", a
    year) as its patterns hold it; False: it names no time. Queries joined by newlines are
    tested at once: the joined text holds one whenever some query does.

    >>> may_name_time("what is the deploy key"), may_name_time("the key\\nsince 2023")
    (False, True)
    """
    low = text.lower()  # substrings first (cheap); then as the patterns below hold them
    if ("ago" in low or "last" in low or "yesterday" in low) and _WORDS.search(text):
        return True
    # an ASCII text without four digits in a row holds no year: a byte scan, not the regex
    if text.isascii() and b"0000" not in text.encode().translate(_RUNS):
        return False
    return bool(_YEAR.search(text))


def _date(year: int, month: str, day: int) -> float:
    try:
        return datetime(year, _MONTHS.index(month.lower()) + 1, day,
                        tzinfo=timezone.utc).timestamp()
    except ValueError:  # 31 February and the like: no date
        return math.nan
