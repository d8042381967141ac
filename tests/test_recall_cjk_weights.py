"""A Chinese or mixed query fuses BM25 and the cosine with ``RecallConfig.cjk_bm25_weight``
(jieba's word-level BM25 is the weaker signal there); an English query keeps the English
weights, in one recall and in a batch that holds both."""

from __future__ import annotations

import msgspec
import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.errors import ValidationError

NOTES = ["部署脚本 deploy.sh 在 staging 失败：缺少 AWS_REGION", "林遥住在上海，时区是 Asia/Shanghai",
         "部署完成后通知林遥", "Lin prefers green tea in the afternoon",
         "the deploy script failed on staging", "green tea or coffee after lunch"]
QUERIES = ["部署脚本为什么失败", "林遥的时区", "green tea afternoon", "deploy script staging"]


def _scores(recall: RecallConfig, batch: bool = False) -> list[list[tuple[str, float]]]:
    with MemoryStore.in_memory(embedder="hash", config=MemoryConfig(recall=recall),
                               clock=lambda: 1.7e9) as store:
        for text in NOTES:
            store.save(text, category="project_knowledge")
        found = (store.recall_batch(QUERIES, reinforce=False) if batch else
                 [store.recall(q, reinforce=False) for q in QUERIES])
        return [[(h.entry.content, round(h.score, 9)) for h in hits] for hits in found]


def test_a_chinese_query_fuses_with_its_own_weights():
    base = RecallConfig(bm25_weight=0.49, cos_weight=0.51)
    zh = _scores(msgspec.structs.replace(base, cjk_bm25_weight=0.3))
    same = _scores(msgspec.structs.replace(base, cjk_bm25_weight=0.0))
    as_english = _scores(msgspec.structs.replace(base, bm25_weight=0.3, cos_weight=0.7,
                                         cjk_bm25_weight=0.0))
    assert zh[:2] == as_english[:2] != same[:2]  # the Chinese queries: 0.3 / 0.7
    assert zh[2:] == same[2:] != as_english[2:]  # the English ones: 0.49 / 0.51
    assert _scores(msgspec.structs.replace(base, cjk_bm25_weight=0.3), batch=True) == zh


def test_cjk_bm25_weight_is_checked():
    with pytest.raises(ValidationError):
        RecallConfig(cjk_bm25_weight=1.5)
    assert RecallConfig().cjk_bm25_weight == 0.4
