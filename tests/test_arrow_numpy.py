"""Arrow <-> NumPy through buffers (maclaw_fast.persist.arrow_numpy) against pyarrow's own
conversions, and a fresh process that opens, saves and recalls without importing pandas."""

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from maclaw_fast.persist.arrow_numpy import (arrow_of, column_of, numpy_of, one_array,
                                             strings_of, valid_of)

DTYPES = (np.int8, np.int32, np.int64, np.uint16, np.float32, np.float64, np.bool_)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_and_slices_agree_with_pyarrow(dtype):
    rng = np.random.default_rng(3)
    for n in (0, 1, 9, 17):  # a bitmap shorter than, equal to and past a byte
        a = (rng.random(n) < 0.5) if dtype is np.bool_ else (rng.random(n) * 100).astype(dtype)
        arr = arrow_of(a)
        assert arr.equals(pa.array(a))
        np.testing.assert_array_equal(numpy_of(arr), a)
        for lo in range(min(n, 4)):  # offsets inside the first byte of a bitmap
            part = arr.slice(lo, n - lo - 1 if n - lo > 1 else n - lo)
            np.testing.assert_array_equal(numpy_of(part), part.to_numpy(zero_copy_only=False))


def test_nulls_are_filled_or_refused():
    arr = pa.array([1, None, 3, None, 5, 6, 7, 8, None], pa.int64()).slice(1)
    np.testing.assert_array_equal(numpy_of(arr, fill=-1), [-1, 3, -1, 5, 6, 7, 8, -1])
    np.testing.assert_array_equal(valid_of(arr), arr.is_valid().to_numpy(zero_copy_only=False))
    with pytest.raises(ValueError, match="nulls"):
        numpy_of(arr)
    assert valid_of(pa.array([1.0, 2.0])).all()


def test_refuses_what_it_cannot_convert():
    with pytest.raises(TypeError, match="numbers or booleans"):
        numpy_of(pa.array(["x"]))
    with pytest.raises(ValueError, match="1-D"):
        arrow_of(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="column_of"):
        column_of([{"a": 1}], pa.struct([("a", pa.int64())]))


def test_columns_and_strings_equal_pyarrow():
    cases = [(["a", "", "é漢", "zz"], pa.string()), ([], pa.string()),
             ([1.5, -2.0], pa.float64()), ([3, 4], pa.int64()), ([True, False], pa.bool_()),
             ([["x", "y"], [], ["z"]], pa.list_(pa.string())), ([[], []], pa.list_(pa.string())),
             ([[0.5], [], [1.0, 2.0]], pa.list_(pa.float64()))]
    for values, type_ in cases:
        assert column_of(values, type_).equals(pa.array(values, type_)), (values, type_)
    assert strings_of(("b", "a")).equals(pa.array(["b", "a"], pa.string()))
    with_nulls = ["x", None, "", None, "yz", "a", "b", "c", None]  # a bitmap past one byte
    assert strings_of(with_nulls).equals(pa.array(with_nulls, pa.string()))


def test_one_array_of_chunks():
    chunked = pa.chunked_array([pa.array([1, 2]), pa.array([3])])
    assert one_array(chunked).to_pylist() == [1, 2, 3]
    assert len(one_array(pa.chunked_array([], pa.int64()))) == 0


def test_a_fresh_process_opens_saves_and_recalls_without_pandas(tmp_path):
    pytest.importorskip("pandas")  # only then can pyarrow load it
    code = textwrap.dedent(f"""
        import sys
        import msgspec
        from maclaw_fast import MemoryStore
        from maclaw_fast.config import CapacityConfig, MemoryConfig
        cfg = msgspec.structs.replace(MemoryConfig(), capacity=CapacityConfig(
            store_capacity=20, gc_threshold=3, archive_capacity=20))
        with MemoryStore.open({str(tmp_path)!r}, embedder="hash", config=cfg) as s:
            for i, text in enumerate(("likes green tea", "green tea at noon", "lives in Berlin",
                                      "old note one", "old note two")):
                s.save(text, category="preference", tags=["t"], thread="talk")
            s.delete(s.list()[-1].id)
            assert s.recall_batch_arrow(["tea"]).num_rows > 0  # a free row's id is a null
            s.gc()
        with MemoryStore.open({str(tmp_path)!r}, embedder="hash", config=cfg) as s:
            assert any("tea" in h.entry.content for h in s.recall("green tea"))
            assert s.recall_batch_arrow(["tea", "Berlin"]).num_rows > 0
        for _ in range(2):  # an empty store, made and reopened
            MemoryStore.open({str(tmp_path / "empty")!r}, embedder="hash").close()
        print("pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
