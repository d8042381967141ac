"""Fusion on the model's cosine scale (the default ``cos_norm="floor_best"``, design R3) and
revival on weak cues (R9): a tiny cosine gap stays tiny, so a rare exact match and a fresh
episode keep their weight; a Chinese query is scaled by the model's floor for Chinese."""

from __future__ import annotations

import numpy as np
import pytest

from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.errors import EmbeddingError
from maclaw_fast.memory import MemoryStore
from maclaw_fast.memory.lifecycle import decay
from maclaw_fast.embedding.base import cosine_floor, cosine_reach
from maclaw_kernels.recall_assemble import cos_ends, norm_cos, norm_cos_rows
from tests.maint_helpers import H, Clock

DAY = 24 * H


def embedder(name: str):
    """The hashing embedder, or MiniLM (the default English model) when its package is here."""
    if name == "hash":
        return "hash"
    from maclaw_fast.embedding import resolve_embedder

    try:
        return resolve_embedder(name)
    except EmbeddingError as exc:
        pytest.skip(f"{name} unavailable: {exc}")


@pytest.mark.parametrize("floor", [0.0, 0.71])
def test_floor_mode_maps_the_models_cosines_from_its_floor_without_stretching_gaps(floor):
    # mode 2: (c - floor) / (1 - floor), 0 below the floor; never the candidates' range
    for c in (-0.3, floor - 0.01, floor, floor + 0.05, 0.9, 1.0):
        assert norm_cos(np.float32(c), 2, floor, 1.0) == pytest.approx(
            max((np.float32(c) - floor) / (1.0 - floor), 0.0), abs=1e-6)
    gap = norm_cos(floor + 0.15, 2, floor, 1.0) - norm_cos(floor + 0.1, 2, floor, 1.0)
    assert gap == pytest.approx(0.05 / (1.0 - floor))
    # min-max (mode 1) over candidates 0.50..0.55 turns the same gap into a full unit
    assert norm_cos(0.55, 1, 0.50, 0.55) - norm_cos(0.50, 1, 0.50, 0.55) == pytest.approx(1.0)


def test_floor_to_best_keeps_gaps_small_and_a_strong_best_at_one():
    """Mode 4: from the floor to the best candidate's cosine, that at least floor + spread ·
    (1 − floor): a best of 0.9 maps to 1, a weak best (0.3 over floor 0) to 0.3 / 0.6."""
    cos = np.array([0.9, 0.8, 0.5, -0.2], np.float32)
    yes = np.ones(4, np.bool_)
    lo, hi = cos_ends(cos, yes, 4, 0.0, 0.6)
    assert (lo, hi) == (0.0, pytest.approx(0.9))
    assert norm_cos(cos[0], 4, lo, hi) == pytest.approx(1.0)
    assert norm_cos(cos[1], 4, lo, hi) - norm_cos(cos[2], 4, lo, hi) == pytest.approx(0.3 / 0.9)
    assert norm_cos(cos[3], 4, lo, hi) == 0.0
    weak = np.array([0.3, 0.25], np.float32)
    lo, hi = cos_ends(weak, np.ones(2, np.bool_), 4, 0.0, 0.6)
    assert hi == pytest.approx(0.6)  # not stretched: 0.05 apart stays 0.05 / 0.6
    assert norm_cos(weak[0], 4, lo, hi) - norm_cos(weak[1], 4, lo, hi) == pytest.approx(
        0.05 / 0.6, rel=1e-5)
    lo, hi = cos_ends(weak, np.ones(2, np.bool_), 3, 0.0, 0.6)  # spread: from the worst
    assert (lo, hi) == (pytest.approx(0.25), pytest.approx(0.85))
    assert cos_ends(weak, np.ones(2, np.bool_), 2, 0.7, 0.6) == (0.7, 1.0)


@pytest.mark.parametrize("mode", range(5))
def test_the_row_loops_give_norm_cos_bits(mode):
    """fuse maps every row at once (one loop per case, on vector registers): the same bits as
    the per-row mapping, for each mode, with a range, a tie and no candidate."""
    cos = np.array([-0.3, -0.0, 0.0, 0.2, 0.31, 0.5, 0.9, 1.0], np.float32)
    for lo, hi in ((0.1, 0.9), (0.5, 0.5), (0.2, 1.0), (np.inf, -np.inf)):
        out = np.full(cos.shape[0], np.nan)
        norm_cos_rows(cos, mode, lo, hi, out)
        assert out.tobytes() == np.array([norm_cos(c, mode, lo, hi) for c in cos]).tobytes()


FLOOR = MemoryConfig()  # the default: floor to the best candidate


def test_the_default_scale_is_floor_to_best_and_the_others_are_options():
    assert (RecallConfig().cos_norm, RecallConfig().cos_spread) == ("floor_best", 0.6)
    for mode in ("minmax", "floor", "spread", "raw"):
        assert RecallConfig(cos_norm=mode).cos_norm == mode


@pytest.fixture(scope="module", params=["hash", "minilm"])
def billing(request):
    """180 daily summaries of one topic, a decay pass after each day (the old ones dormant)."""
    clock = Clock()
    store = MemoryStore.in_memory(embedder=embedder(request.param), clock=clock, config=FLOOR)
    days = []
    for n in range(180):
        days.append(store.save(f"Day {n}: worked on ticket {n} about the billing dashboard",
                               category="conversation_summary").id)
        clock.t += DAY
        decay(store)
    yield store, days
    store.close()


@pytest.mark.parametrize("query", ["billing", "what did I work on about billing recently"])
def test_a_weak_cue_ranks_fresh_episodes_first_and_old_ones_stay_faded(billing, query):
    """Design R9: a word every episode holds cues none of them; the newest days lead."""
    store, days = billing
    assert sum(store.get(i).status == "dormant" for i in days) > 100
    top = store.recall(query, reinforce=False)[:10]
    assert len(top) == 10
    assert sum(h.reason == "revived" for h in top) <= 2
    first = {days.index(h.entry.id) for h in top[:5]}
    if store.embedder.fingerprint.startswith("hash"):  # no semantics: its cosines are noise
        assert first <= set(range(173, 180))
    else:
        assert first == set(range(175, 180))


def test_a_strong_specific_cue_still_revives_an_old_episode(billing):
    store, days = billing
    hits = store.recall("ticket 12 on day 12", reinforce=False)
    assert days[12] in [h.entry.id for h in hits[:3]]
    assert next(h.reason for h in hits if h.entry.id == days[12]) == "revived"


FILLERS = ["customer {i} asked about the refund of an invoice they were charged twice for",
           "customer {i} asked about the refund status of an invoice from last month",
           "customer {i} asked about the refund of invoice INV-{n} and when it would arrive"]
SHAPES = [("INV-20931 was settled by bank wire on Tuesday", "INV-20931"),
          ("invoice 20931 was settled by bank wire on Tuesday", "20931"),
          ("ACME-20931 was settled by bank wire on Tuesday", "ACME-20931"),
          ("INV20931 was settled by bank wire on Tuesday", "INV20931")]
QUERIES = ["refund status of invoice {id}", "what is the refund status of {id}?",
           "was {id} refunded", "{id} refund"]


@pytest.mark.parametrize("name", ["hash", "minilm"])
@pytest.mark.parametrize("filler", FILLERS)
def test_a_rare_identifier_outranks_memories_only_about_the_query(name, filler):
    """One memory holds the identifier, 40 are about refunds of invoices: the identifier's
    memory is in the top 3 for each wording and each identifier shape."""
    emb = embedder(name)
    rng = np.random.default_rng(0)
    for text, ident in SHAPES:
        clock = Clock()
        with MemoryStore.in_memory(embedder=emb, clock=clock, config=FLOOR) as store:
            for i in range(40):
                store.save(filler.format(i=i, n=rng.integers(10000, 99999)),
                           category="project_knowledge")
                clock.t += H
            target = store.save(text, category="project_knowledge").id
            clock.t += H
            for q in QUERIES:
                top = [h.entry.id for h in store.recall(q.format(id=ident), reinforce=False)[:3]]
                assert target in top, (q.format(id=ident), text)


class TwoFloors:
    """Vectors given by the caller; unrelated texts sit higher in Chinese than in English."""

    dim, fingerprint = 2, "two-floors"
    cosine_floor, cosine_floor_cjk = 0.2, 0.6

    def embed(self, texts):
        return np.tile(np.array([1.0, 0.0], np.float32), (len(texts), 1))


def test_a_chinese_query_is_scaled_by_the_models_floor_for_chinese():
    """Two memories at cosine 0.9 and 0.7 of the query, nothing else apart: their scores differ by
    w_rel · cos_w · 0.2 / (0.9 − f), f the floor of the query's language (0.2 English, 0.6
    Chinese: cosine_floor_cjk)."""
    emb = TwoFloors()
    assert cosine_floor(emb, "which time zone") == 0.2
    assert cosine_floor(emb, "用户在哪个时区") == cosine_floor(emb, "用户 time zone") == 0.6
    clock = Clock()
    with MemoryStore.in_memory(embedder=emb, clock=clock) as store:
        ids = _two_notes(store, 0.9, 0.7)
        rc = store.config.recall
        q = np.array([1.0, 0.0], np.float32)
        for query, floor in (("xyzzy plugh", 0.2), ("用户在哪个时区", 0.6)):
            hits = {h.entry.id: h.score for h in store.recall(query, query_vector=q,
                                                                  reinforce=False)}
            want = rc.weight_relevance * _cos_weight(rc, query) * 0.2 / (0.9 - floor)
            assert hits[ids[0]] - hits[ids[1]] == pytest.approx(want, rel=1e-5), query


def _cos_weight(rc, query: str) -> float:
    """The cosine's weight for ``query``: a Chinese one fuses BM25 at ``cjk_bm25_weight``."""
    return rc.cos_weight if query.isascii() else rc.bm25_weight + rc.cos_weight - \
        rc.cjk_bm25_weight


def _two_notes(store, first: float, second: float) -> list[str]:
    """Two notes whose 2-d unit vectors have cosines ``first`` and ``second`` with (1, 0)."""
    return [store.save(text, category="project_knowledge",
                       vector=np.array([c, np.sqrt(1 - c * c)], np.float32)).id
            for text, c in (("first note", first), ("second note", second))]


class ShortReach(TwoFloors):
    """And a Chinese query's best match reaches half as high on the floor-mapped scale."""

    cosine_reach_cjk = 0.5


def test_a_chinese_querys_least_range_shrinks_by_the_models_reach():
    """Memories at cosine 0.7 and 0.65, f 0.6 for Chinese: floor_best's hi is at least
    f + cos_spread · reach · (1 − f), 0.72 with reach 0.5 (0.84 without one), so the 0.05 gap
    weighs 0.05 / 0.12; an English query (f 0.2, reach 1) keeps hi = max(0.7, 0.68)."""
    emb = ShortReach()
    assert cosine_reach(emb, "which time zone") == cosine_reach(TwoFloors(), "时区") == 1.0
    assert cosine_reach(emb, "用户在哪个时区") == 0.5
    with MemoryStore.in_memory(embedder=emb, clock=Clock()) as store:
        ids = _two_notes(store, 0.7, 0.65)
        rc = store.config.recall
        q = np.array([1.0, 0.0], np.float32)
        for query, span in (("xyzzy plugh", 0.5), ("用户在哪个时区", 0.12)):
            for hits in (store.recall(query, query_vector=q, reinforce=False),
                         store.recall_batch([query, "x"], query_vectors=np.stack([q, q]),
                                            reinforce=False)[0]):
                score = {h.entry.id: h.score for h in hits}
                want = rc.weight_relevance * _cos_weight(rc, query) * 0.05 / span
                assert score[ids[0]] - score[ids[1]] == pytest.approx(want, rel=1e-4), query
    with pytest.raises(EmbeddingError):
        cosine_reach(type("Bad", (TwoFloors,), {"cosine_reach_cjk": 1.5})(), "时区")


def test_a_batch_scales_each_query_by_its_own_languages_floor():
    """recall_batch over English and Chinese queries (in three shares across threads) gives each
    the scores recall gives it."""
    emb = TwoFloors()
    with MemoryStore.in_memory(embedder=emb, clock=Clock(),
                               config=MemoryConfig(batch_threads=3)) as store:
        for text, c in (("first note", 0.9), ("second note", 0.7), ("third note", 0.3)):
            store.save(text, category="project_knowledge",
                       vector=np.array([c, np.sqrt(1 - c * c)], np.float32))
        queries = ["xyzzy plugh", "用户在哪个时区", "第二 note"] * 8
        qv = np.tile(np.array([1.0, 0.0], np.float32), (len(queries), 1))
        batch = store.recall_batch(queries, query_vectors=qv, reinforce=False)
        for q, v, hits in zip(queries, qv, batch):
            one = store.recall(q, query_vector=v, reinforce=False)
            assert [(h.entry.id, round(h.score, 9)) for h in hits] == [
                (h.entry.id, round(h.score, 9)) for h in one]
        assert batch[0][0].score - batch[0][1].score != pytest.approx(
            batch[1][0].score - batch[1][1].score)  # the two floors differ


def test_a_query_naming_a_time_favours_memories_saved_then():
    """"two days ago" ranks the note saved two days before the recall first among notes that
    match alike, with ``time_weight`` × exp(−|Δ| / scale) shown in the affinity; a query naming
    no time leaves the order to recency."""
    clock = Clock(1.7e9)
    store = MemoryStore.in_memory(embedder="hash", clock=clock)
    saved = {}
    for days in (6, 4, 2, 1):
        clock.t = 1.7e9 - days * DAY
        saved[days] = store.save(f"worked on the billing dashboard, day marker {days}",
                                 category="project")
    clock.t = 1.7e9
    hits = store.recall("what did I work on two days ago", reinforce=False)
    assert hits[0].entry.id == saved[2].id
    rc = RecallConfig()
    assert hits[0].breakdown.affinity == pytest.approx(rc.time_weight)
    by_id = {h.entry.id: h for h in hits}
    assert by_id[saved[6].id].breakdown.affinity == pytest.approx(
        rc.time_weight * np.exp(-4 / rc.time_scale_days))
    plain = store.recall("what did I work on", reinforce=False)
    assert plain[0].entry.id == saved[1].id and plain[0].breakdown.affinity == 0.0
    batch = store.recall_batch(["what did I work on two days ago", "what did I work on"],
                               reinforce=False)
    assert [h.entry.id for h in batch[0]] == [h.entry.id for h in hits]
    assert [h.entry.id for h in batch[1]] == [h.entry.id for h in plain]
