"""Fusion weights of the router that depend on the message ([D], RouterConfig)."""

from __future__ import annotations

import numpy as np

from maclaw_fast.config import RouterConfig
from maclaw_fast.text import cjk_ratio


def foreign_query_scale(messages: list[str], embedder, config: RouterConfig) -> np.ndarray:
    """Per-message factor on the cosine weight of the fusion: below 1 for a message mostly in a
    language the embedder was not trained on (``RouterConfig.foreign_query_bm25_weight``), so
    that it fuses as ``w : 1 − w`` (the fused score is min-max normalised after, so only the
    ratio of the two weights counts).

    Examples
    --------
    >>> class En: languages = ("en",)
    >>> cfg = RouterConfig(bm25_weight=0.4, cos_weight=0.6)
    >>> foreign_query_scale(["查询数据库", "query"], En(), cfg).round(3).tolist()
    [0.286, 1.0]
    """
    scale = np.ones(len(messages))
    langs = getattr(embedder, "languages", None)
    w = config.foreign_query_bm25_weight
    if not w or not langs or "zh" in langs:
        return scale
    factor = (config.bm25_weight / w) * (1.0 - w) / config.cos_weight
    for i, m in enumerate(messages):
        if cjk_ratio(m) >= config.foreign_query_min_ratio:
            scale[i] = factor
    return scale
