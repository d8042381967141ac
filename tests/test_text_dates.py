"""The time a query names (maclaw_fast/text/dates.py), resolved against the recall's clock."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from maclaw_fast.text.dates import DAY, may_name_time, query_time

# Wednesday 2024-05-15 12:00 UTC
NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc).timestamp()


def at(y, m, d, h=0):
    return datetime(y, m, d, h, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("query, days_back", [
    ("what did we fix 3 days ago", 3), ("a week ago", 7), ("two weeks ago?", 14),
    ("a couple of days ago", 2), ("a few days ago", 3), ("yesterday's standup", 1),
    ("last week", 7), ("Last month", 30.44), ("last year", 365.25),
    ("last Monday", 2), ("last Wednesday", 7), ("last Thursday", 6), ("last weekend", 4),
])
def test_relative_times_count_back_from_the_clock(query, days_back):
    assert query_time(query, NOW) == pytest.approx(NOW - days_back * DAY)


@pytest.mark.parametrize("query, when", [
    ("the launch on 10 April 2023", at(2023, 4, 10)),
    ("the launch on April 10, 2023", at(2023, 4, 10)),
    ("on the 3rd of nothing, March 3rd 2022", at(2022, 3, 3)),
    ("what happened in May 2023", at(2023, 5, 15)),
    ("build w1379 shipped in May 2023", at(2023, 5, 15)),  # a 4-digit run in a word is no year
])
def test_explicit_dates(query, when):
    assert query_time(query, NOW) == when


@pytest.mark.parametrize("query", ["what is the deploy key", "last", "30 February 2023",
                                   "the 2023 roadmap", "部署上周的服务", "", "ticket w1379 in may"])
def test_no_time_is_nan(query):
    assert math.isnan(query_time(query, NOW))


def test_a_batch_is_tested_for_times_in_one_scan():
    """recall_batch joins its queries by newlines: the joined text may name a time whenever
    some query may; a word inside another ("quagor") is none."""
    plain = ["what is the deploy key", "build w1379 shipped", "ag", "o yesterda", "y 202", "3",
             "quagor tricor", "lastly blast", "yesterdays"]
    assert not may_name_time("\n".join(plain))
    assert not any(map(may_name_time, plain))
    for extra in ("two days ago", "LAST week", "in 2023", "2023", "yesterday?"):
        assert may_name_time("\n".join(plain + [extra])) and may_name_time(extra)


@pytest.mark.parametrize("text, named", [
    ("in 2023", True), ("2023-05 report", True), ("x 123 4567", True), ("build w1379", False),
    ("a 20230 b", False), ("1 2 3 4", False), ("w12 w345", False),
    ("in \u0662\u0660\u0662\u0663", True), ("in \uff12\uff10\uff12\uff13", True),  # non-ASCII digits
])
def test_a_year_is_four_digits_standing_alone(text, named):
    """The byte scan for four digits in a row settles ASCII texts; others go to the regex."""
    assert may_name_time(text) is named
