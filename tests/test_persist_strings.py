"""A reopen's string-column checks: codes of allowed values, distinct non-empty ids, and a
clear error (never a wrong code) for a value outside the allowed set."""

import pyarrow as pa
import pytest

from maclaw_fast.errors import CorruptStoreError
from maclaw_fast.persist.strings import distinct_nonempty, value_codes


def test_value_codes_of_sliced_and_chunked_columns():
    arr = pa.array(["x", "status", "active", "", "status"])[1:]  # an offset into the buffers
    assert value_codes(arr, ("", "active", "status")).tolist() == [2, 1, 0, 2]
    chunked = pa.chunked_array([["b"], ["a", "b"]])
    assert value_codes(chunked, ("a", "b")).tolist() == [1, 0, 1]
    assert value_codes(pa.array([], pa.string()), ("a",)).tolist() == []


@pytest.mark.parametrize("values", [["a", "c"], ["a", None], ["A"]])
def test_value_codes_rejects_unknown_or_missing_values(values):
    with pytest.raises(CorruptStoreError, match="'category'"):
        value_codes(pa.array(values, pa.string()), ("a", "b"), "category")


@pytest.mark.parametrize("ids, ok", [
    (["a", "b", "ab"], True), ([], True), (["a", "b", "a"], False), (["a", "", "b"], False),
    (["ab", "a", "b"], True)])
def test_distinct_nonempty(ids, ok):
    assert distinct_nonempty(pa.array(ids, pa.string())) is ok
    assert distinct_nonempty(pa.chunked_array([pa.array(ids, pa.string())])) is ok
