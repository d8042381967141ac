"""The on-disk embedding cache: Arrow round trip, files written by pyarrow's own builders, and
a CLI route that never imports pandas (pyarrow pulls it in from some of its converters)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from maclaw_fast.embedding import HashEmbedder, embed_checked
from maclaw_fast.embedding.cache import DiskEmbeddingCache, text_key


def test_round_trip_keeps_every_key_and_vector_exactly(tmp_path):
    emb = HashEmbedder(dim=16)
    texts = [f"text {i} é 中文" * (i % 5 + 1) for i in range(300)]
    c = DiskEmbeddingCache(tmp_path / "v.arrow", emb)
    want = c.embed(texts)
    c.save()
    again = DiskEmbeddingCache(tmp_path / "v.arrow", emb)
    assert again.size == 300
    got = again.embed(texts)
    assert again.embedded == 0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, embed_checked(emb, texts))


def test_an_empty_cache_saves_and_reads_back_empty(tmp_path):
    emb = HashEmbedder(dim=8)
    c = DiskEmbeddingCache(tmp_path / "v.arrow", emb)
    c.save()
    assert DiskEmbeddingCache(tmp_path / "v.arrow", emb).size == 0


def _write_with_pyarrow_builders(path, keys, mat, fingerprint, batch_rows):
    """A cache file written the plain pyarrow way, in several record batches, one of them a
    slice (non-zero offsets): what the reader must accept."""
    dim = mat.shape[1]
    table = pa.table({"key": pa.array(keys, pa.string()),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1)), dim)},
                     metadata={"fingerprint": fingerprint, "dim": str(dim)})
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as w:
        for start in range(0, len(keys), batch_rows):
            w.write_batch(table.slice(start, batch_rows).to_batches()[0])


@pytest.mark.parametrize("batch_rows", [7, 50, 1000])
def test_reads_files_written_by_pyarrow_in_sliced_batches(tmp_path, batch_rows):
    emb = HashEmbedder(dim=12)
    texts = [f"row {i}" for i in range(50)]
    keys = [text_key(t) for t in texts]
    mat = np.random.default_rng(1).standard_normal((50, 12)).astype(np.float32)
    _write_with_pyarrow_builders(tmp_path / "v.arrow", keys, mat, emb.fingerprint, batch_rows)
    c = DiskEmbeddingCache(tmp_path / "v.arrow", emb)
    np.testing.assert_array_equal(c.embed(texts), mat)
    assert c.embedded == 0


def test_a_file_of_another_model_or_dimension_is_ignored(tmp_path):
    emb = HashEmbedder(dim=12)
    mat = np.ones((3, 12), np.float32)
    _write_with_pyarrow_builders(tmp_path / "v.arrow", ["a", "b", "c"], mat, "other-model", 10)
    assert DiskEmbeddingCache(tmp_path / "v.arrow", emb).size == 0
    _write_with_pyarrow_builders(tmp_path / "w.arrow", ["a"], np.ones((1, 4), np.float32),
                                 emb.fingerprint, 10)
    assert DiskEmbeddingCache(tmp_path / "w.arrow", emb).size == 0


def test_a_truncated_file_reads_as_empty(tmp_path):
    emb = HashEmbedder(dim=8)
    c = DiskEmbeddingCache(tmp_path / "v.arrow", emb)
    c.embed(["a", "b"])
    c.save()
    data = (tmp_path / "v.arrow").read_bytes()
    (tmp_path / "v.arrow").write_bytes(data[: len(data) // 2])
    assert DiskEmbeddingCache(tmp_path / "v.arrow", emb).size == 0


def test_route_on_the_command_line_does_not_import_pandas(tmp_path):
    pytest.importorskip("pandas")  # only meaningful where pandas is installed
    # registered first, the check runs last among the exit handlers: after the caches' saves
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('HEAVY', sorted({'pandas', 'rjieba', 'tantivy', "
            "'onnxruntime'} & set(sys.modules))))\n"
            "sys.argv = ['maclaw-fast', 'route', 'list my files', '--embedder', 'minilm']\n"
            "from maclaw_fast.cli import run\nrun()\n")
    env = {**os.environ, "MACLAW_CACHE_DIR": str(tmp_path)}
    heavy = []
    for _ in range(2):  # the first run writes the caches, the second reads them
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "tools" in out.stdout
        heavy.append(out.stdout.split("HEAVY ")[1].splitlines()[0])
    # the first run embeds the catalog (onnxruntime) and cuts its Chinese text (rjieba); the
    # second has its vectors and cuts from the caches and needs neither, nor ever pandas or
    # tantivy (the BM25 index of record, unused by routing)
    assert heavy == ["['onnxruntime', 'rjieba']", "[]"]
