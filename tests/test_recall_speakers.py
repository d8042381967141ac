"""The speaker order of recall (``RecallConfig.speaker_weight``): a query that names the speaker
of transcript lines ("Melanie: ...") puts that speaker's lines forward among the hits, with the
replies to that speaker's questions, while the best other hits keep their place; archived hits
gain the same bonus before they are merged."""

from __future__ import annotations

import msgspec
import pytest

from maclaw_fast.config import MemoryConfig, RecallConfig
from maclaw_fast.errors import ValidationError
from maclaw_fast.memory import MemoryStore
from maclaw_fast.text.speakers import SpeakerIndex, line_speaker

LINES = ("Caroline: we camped by the lake and the camping trip was lovely",
         "Melanie: the kids loved the beach in June",
         "Caroline: I camped in the forest with my friends",
         "Melanie: I finished a painting of a sunset")


def _store(weight: float | None = None, lines=LINES, **recall) -> MemoryStore:
    recall.setdefault("speaker_keep", 0)  # the bare rule; the kept hits have their own test
    rc = RecallConfig(speaker_weight=0.25 if weight is None else weight, **recall)
    store = MemoryStore.in_memory(embedder=None, config=MemoryConfig(recall=rc))
    for line in lines:
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
    index.add(5, "Bo: hi")  # a name added after a lookup is found (the first-word cue is new)
    assert index.named("what did Bo say") == ("bo",) and index.named("a plain query") == ()
    index.discard(5, "Bo: hi")
    assert index.named("what did Bo say") == ()


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
    cfg = MemoryConfig(recall=RecallConfig(speaker_weight=0.25, speaker_keep=0))
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg) as store:
        for line in LINES:
            store.save(line, category="conversation_summary", thread="s1")
    with MemoryStore.open(tmp_path / "s", embedder=None, config=cfg) as store:
        assert store.table.is_packed
        hits = store.recall("Where has Melanie camped?", reinforce=False)
        assert hits[0].entry.content.startswith("Melanie:")
        assert {k: len(v) for k, v in store.table.speakers().rows.items()} == {
            "caroline": 2, "melanie": 2}


def test_the_speaker_order_is_on_by_default_and_its_knobs_are_config_fields():
    rc = msgspec.convert({"speaker_weight": 0.5, "speaker_keep": 1}, RecallConfig)
    assert rc.speaker_weight == 0.5 and rc.speaker_keep == 1
    default = RecallConfig()
    assert (default.speaker_weight, default.speaker_keep) == (0.2, 1) and default.speaker_replies
    with pytest.raises(ValidationError):
        RecallConfig(speaker_keep=-1)


TALK = ("Melanie: what got you into pottery?",
        "Caroline: my aunt taught me when I was ten",
        "Melanie: I went hiking with the kids",
        "Caroline: pottery calms me down",
        "Melanie: the kids love the lake")


def test_the_reply_to_a_named_speakers_question_gains_the_bonus():
    """A question built from a reply names the one who asked ("What got Melanie into
    pottery?"): the reply gains as the asker's own lines do; with speaker_replies off it does
    not, and a reply to a statement never does."""
    query = "what got Melanie into pottery"
    for replies in (True, False):
        with _store(lines=TALK, speaker_replies=replies) as store:
            w = store.config.recall.speaker_weight
            gained = {h.entry.content: h.breakdown.affinity
                      for h in store.recall(query, reinforce=False)}
            assert gained[TALK[0]] == pytest.approx(w)
            assert gained.get(TALK[1], 0.0) == pytest.approx(w if replies else 0.0)
            assert gained.get(TALK[3], 0.0) == 0.0  # after a statement of hers


def test_the_best_other_hits_keep_their_place():
    """A query that names the wrong speaker (Caroline's line asked about as Melanie's): with
    speaker_keep k, the k best hits of the other speaker rank no lower than without the speaker
    order; with 0 the named speaker's lines pass them."""
    lines = ["Caroline: I ran a charity race for mental health last Saturday"] + [
        f"Melanie: a note about my {w} and the race day" for w in
        ("garden", "kids", "painting", "camping", "pottery", "dog")]
    query = "what did Melanie run the charity race for"
    with _store(0.0, lines=lines) as off:
        plain = [h.entry.content for h in off.recall(query, reinforce=False)]
    assert plain[0] == lines[0]  # the content match decides without the bonus
    for keep, rank in ((0, len(lines) - 1), (1, 0), (2, 0)):
        with _store(1.0, lines=lines, speaker_keep=keep) as store:
            hits = store.recall(query, reinforce=False)
            assert [h.entry.content for h in hits].index(lines[0]) == rank
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_archived_lines_gain_the_bonus_before_the_merge():
    """Archived hits are merged with the store's by score: a named speaker's archived line and
    the archived reply to its question gain the bonus the store's lines gain, so the merge
    ranks them as if they were still in the store."""
    query = "what did Melanie take away from the book Becoming Nicole"
    scores = {}
    for weight in (0.0, 0.25):
        notes = [f"Caroline: note {i} about the weather" for i in range(8)]
        store = _store(weight, lines=notes + ["Melanie: the kids love the lake"])
        with store:
            q = store.save("Melanie: what did you take away from the book Becoming Nicole?",
                           category="conversation_summary", thread="s1")
            a = store.save("Caroline: it taught me self-acceptance",
                           category="conversation_summary", thread="s1")
            store.save("Caroline: then we talked about hiking", category="conversation_summary",
                       thread="s1")
            store.archive_rows([store.row_of_id(q.id), store.row_of_id(a.id)])
            hits = store.recall(query, reinforce=False)
            got = {h.entry.id: h for h in hits}
            assert got[q.id].reason == "archived" and got[a.id].reason == "archived"
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            for h in (got[q.id], got[a.id]):
                assert h.breakdown.affinity == pytest.approx(weight)
                assert h.score == pytest.approx(h.breakdown.total)
            scores[weight] = (got[q.id].score, got[a.id].score)
    rel = RecallConfig().weight_relevance
    assert scores[0.25] == pytest.approx(tuple(s + 0.25 * rel for s in scores[0.0]))


def test_named_finds_exactly_the_whole_word_names_a_query_holds():
    """The one-word names' regex gives what matching the query's words against the names
    gives (a name of non-ASCII letters is found as a substring, as a Chinese one is), on random
    queries with prefixes, apostrophes, underscores and accents."""
    import random
    import re

    from maclaw_fast.text.speakers import SpeakerIndex

    rnd = random.Random(7)
    pool = ["Ana", "Anabel", "Melanie", "Éric", "Bo", "Ma"]  # Éric: the general path
    for _ in range(400):
        index = SpeakerIndex()
        for row, name in enumerate(rnd.sample(pool, rnd.randint(1, len(pool)))):
            index.add(row, f"{name}: hi")
        query = "".join(rnd.choice(["ana", "anabel", "melanie", "éric", "bo", "ma", "s", "_",
                                    "'", "’", " ", "9", "?", "É"])
                        for _ in range(rnd.randint(0, 12)))
        low = query.lower()
        want = set(re.findall(r"\w+", low)) & set(index.rows)
        want |= {k for k in index.rows if not k.isascii() and k in low}  # no-space script
        assert index.named(query) == tuple(sorted(want)), query
