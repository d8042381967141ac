"""The speaker order of recall (``RecallConfig.speaker_weight``): a query that names the speaker
of transcript lines ("Melanie: ...") puts that speaker's lines forward among the hits."""

from __future__ import annotations

import msgspec
import pytest

from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.memory import MemoryStore
from maclaw_fast.text.speakers import SpeakerIndex, line_speaker

LINES = ("Caroline: we camped by the lake and the camping trip was lovely",
         "Melanie: the kids loved the beach in June",
         "Caroline: I camped in the forest with my friends",
         "Melanie: I finished a painting of a sunset")


def _store(weight: float | None = None, **kw) -> MemoryStore:
    rc = RecallConfig(speaker_weight=0.25 if weight is None else weight)
    store = MemoryStore.in_memory(embedder=None, config=MemoryConfig(recall=rc), **kw)
    for line in LINES:
        store.save(line, category="conversation_summary", thread="s1")
    return store


@pytest.mark.parametrize("text, key", [
    ("Melanie: hi", "melanie"), ("Dr. Ana Ruiz: two a day", "dr ana ruiz"),
    ("林遥：我住在上海", "林遥"), ("note: a label", None), ("Deploy failed at 10:30", None),
    ("A very long sentence that goes on: and on", None), ("Melanie", None)])
def test_line_speaker_reads_the_name_before_a_leading_colon(text, key):
    assert line_speaker(text) == key


def test_named_speakers_are_whole_words_or_a_chinese_substring():
    index = SpeakerIndex()
    for row, text in enumerate(["Mel: a", "Melanie: b", "Ana Ruiz: c", "林遥：d", "Melanie: e"]):
        index.add(row, text)
    assert index.rows["melanie"] == {1, 4}
    assert index.named("What did Melanie's kids like?") == ("melanie",)
    assert index.named("ask Ana Ruiz and Mel") == ("ana ruiz", "mel")
    assert index.named("林遥住在哪里") == ("林遥",)
    assert index.named("camelanie") == () and index.named("ana") == ()
    index.discard(3, "林遥：d")
    assert index.named("林遥住在哪里") == () and index.unspaced == set()


def test_a_named_speakers_lines_come_first_and_off_restores_the_plain_order():
    query = "Where has Melanie camped?"
    with _store(0.0) as off, _store() as on:
        plain = off.recall(query, reinforce=False)
        assert plain[0].entry.content.startswith("Caroline:")  # BM25's "camped" decides
        hits = on.recall(query, reinforce=False)
        assert hits[0].entry.content.startswith("Melanie:")
        w = on.config.recall.speaker_weight
        for h in hits:  # the bonus is in the breakdown, as affinity, and in the total
            own = h.entry.content.startswith("Melanie:")
            assert h.breakdown.affinity == pytest.approx(w if own else 0.0)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        # the same ranking one query at a time and in a batch (lists and Arrow)
        batch = on.recall_batch([query, "the beach"], reinforce=False)[0]
        assert [h.entry.id for h in batch] == [h.entry.id for h in hits]
        table = on.recall_batch_arrow([query], reinforce=False)
        assert table.column("id").to_pylist() == [h.entry.id for h in hits]


def test_identity_stays_first_and_writes_keep_the_speaker_index(tmp_path):
    with _store() as store:
        me = store.save("I am Juniper, an assistant", category="self_identity")
        hits = store.recall("what did Melanie paint", reinforce=False)
        assert hits[0].entry.id == me.id and hits[1].entry.content.startswith("Melanie:")
        index = store.table.speakers()
        sunset = store.recall("Melanie sunset painting", reinforce=False)[1].entry
        store.update(sunset.id, content="Caroline: I finished a painting of a sunset")
        store.delete(store.list(keyword="beach")[0].id)
        assert index is store.table.speakers() and "melanie" not in index.rows
        assert len(index.rows["caroline"]) == 3


def test_a_reopened_store_finds_its_speakers_in_the_packed_text(tmp_path):
    cfg = MemoryConfig(recall=RecallConfig(speaker_weight=0.25))
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg) as store:
        for line in LINES:
            store.save(line, category="conversation_summary", thread="s1")
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg) as store:
        assert store.table.is_packed
        hits = store.recall("Where has Melanie camped?", reinforce=False)
        assert hits[0].entry.content.startswith("Melanie:")
        assert {k: len(v) for k, v in store.table.speakers().rows.items()} == {
            "caroline": 2, "melanie": 2}


def test_speaker_weight_is_a_recall_config_field():
    rc = msgspec.convert({"speaker_weight": 0.5}, RecallConfig)
    assert rc.speaker_weight == 0.5 and RecallConfig().speaker_weight == 0.0
