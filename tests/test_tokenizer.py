"""The one tokenizer (design R1): its fast paths (ASCII by ``str.translate``, Han runs split out
first, a memo of word terms) give exactly the tokens of the plain definition (one regex over the
text, Han runs to jieba, word runs lower-cased, stop words dropped, Snowball-stemmed), and every
other path (the kernel word table, tantivy's terms, usage tracking) gives the same terms."""

from __future__ import annotations

import json
import re
import unicodedata

import numpy as np
import pytest
import rjieba
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_fast.text import (
    DEFAULT_STOP_WORDS,
    ENGLISH_STOP_WORDS,
    LUCENE_STOP_WORDS,
    TOKENIZER_VERSION,
    Analyzer,
    tokenize,
)

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
RUNS = re.compile(f"([{HAN}]+)|([^\\W{HAN}_]+)")
DROP = {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc",
        "Cf"}
STEMMER = Stemmer.Stemmer("english")


def reference(text: str, search_mode: bool = True, stop=DEFAULT_STOP_WORDS,
              stem: bool = True) -> list[str]:
    cut = rjieba.cut_for_search if search_mode else rjieba.cut
    out = []  # jieba's dictionary alone (hmm=False): a word is cut alike in any sentence
    for han, word in RUNS.findall(text.lower()):
        if word:
            if word not in stop:
                out.append(STEMMER.stemWord(word) if stem else word)
            continue
        for raw in cut(han, False):
            tok = raw.strip()
            if tok and any(unicodedata.category(c) not in DROP for c in tok):
                out.append(tok)
    return out


PIECES = ["Deploy", "script", "部署脚本出了问题", "数据库", "naïve", "IL-6", "v2.0", "snake_case",
          "—", "日志", "Ελληνικά", "x²", "١٢٣", "\t", "\x1c", "\u3000", "ⅷ", "Ǆ", "ﬁ", "𝔘", " ",
          "查询数据库", "e.g.", "100%", "\u00a0", "İstanbul", "The", "running", "databases",
          "ALLERGIC", "peanuts", "don't", "it's", "🥜", "👍🏽", "2024-05-01", "ß", "Straße",
          "généralement", "Ünïcödé", "\u0301", "e\u0301", "ǅungla", "ΣΊΣΥΦΟΣ", "ﬀ", "and"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=12), max_size=30),
       st.sampled_from(["", " ", ".", "_", "部", "🙂"]), st.booleans())
def test_tokens_equal_the_plain_definition(pieces, sep, search_mode):
    text = sep.join(pieces)
    assert tokenize(text, search_mode=search_mode) == reference(text, search_mode)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_text_equals_the_plain_definition(text):
    assert tokenize(text) == reference(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=20),
       st.sampled_from([frozenset(), LUCENE_STOP_WORDS, frozenset({"deploy", "部署"})]),
       st.booleans())
def test_other_analyzers_equal_their_definition(pieces, stop, stem):
    analyzer = Analyzer(stop_words=stop, stemmer="english" if stem else None)
    text = " ".join(pieces)
    assert analyzer.tokenize(text) == reference(text, stop=stop, stem=stem)


def test_known_cases():
    assert tokenize("") == []
    assert tokenize("snake_case v2.0") == ["snake", "case", "v2", "0"]
    assert tokenize("部署脚本出了什么问题")[:2] == ["部署", "脚本"]
    assert tokenize("Deploy部署script") == ["deploy", "部署", "script"]
    # inflections share a term; stop words are gone
    assert tokenize("the tests") == tokenize("test") == ["test"]
    assert tokenize("Databases") == tokenize("database")
    assert tokenize("peanuts") == tokenize("peanut")
    assert tokenize("latest") != tokenize("test")
    assert tokenize("What is it that they were doing?") == []
    assert tokenize("🥜🥜 !!! ...") == []


def test_stop_lists_are_lower_case_word_runs():
    for words in (ENGLISH_STOP_WORDS, LUCENE_STOP_WORDS):
        assert all(w == w.lower() and re.fullmatch(r"[a-z]+", w) for w in words)
    assert LUCENE_STOP_WORDS <= ENGLISH_STOP_WORDS | {"such", "will"}


def test_version_names_the_analysis():
    """A different stop list or stemmer is a different version; the same settings the same."""
    assert Analyzer().version == TOKENIZER_VERSION
    assert Analyzer(stop_words=LUCENE_STOP_WORDS).version != TOKENIZER_VERSION
    assert Analyzer(stemmer=None).version != TOKENIZER_VERSION
    assert Analyzer(stop_words=sorted(DEFAULT_STOP_WORDS)).version == TOKENIZER_VERSION


def test_huge_and_odd_inputs():
    text = ("peanut allergy 🥜, " * 6000)[:100_000]
    toks = tokenize(text)
    assert toks[:2] == ["peanut", "allergi"] and len(toks) == 2 * text.count("🥜") + (
        len(tokenize(text[text.rfind("🥜") + 1:])))
    assert tokenize("\ud800 lone surrogate") == ["lone", "surrog"]


# ------------------------------------------------------------------ every other path
def test_tantivy_terms_equal_the_tokenizer():
    """The tantivy mirror indexes the tokenizer's terms as they are: a term query for each
    stemmed token finds its document, and BM25 of the mirror and of the numba index agree."""
    from maclaw_fast.index.bm25 import Bm25Index

    docs = ["The deployment scripts were failing", "Allergic to peanuts", "数据库 查询 databases",
            "naïve cafés running"]
    index = Bm25Index(tantivy_index=True)
    for i, d in enumerate(docs):
        index.add(i, tokenize(d))
    for q in ("deploying script", "peanut allergy", "database", "running café", "the"):
        toks = tokenize(q)
        dense = index.scores(toks, len(docs))
        mirror = index.tantivy_scores(toks)
        assert sorted(mirror) == dense.nonzero()[0].tolist()
        np.testing.assert_allclose([mirror[k] for k in sorted(mirror)],
                                   dense[sorted(mirror)], rtol=1e-4)
        for t in toks:
            hit = [i for i, d in enumerate(docs) if t in tokenize(d)]
            assert (index.scores([t], len(docs)) > 0).nonzero()[0].tolist() == hit


@pytest.mark.parametrize("query", ["deploying the scripts", "Peanut ALLERGIES!", "the of and",
                                   "部署 scripts", "🥜", ""])
def test_usage_tracking_keeps_the_tokenizer_terms(query, tmp_path):
    """Usage tracking keys its records by the same terms, and a file written by another
    analysis (the reference format names none) is analysed again on load, never mixed."""
    from maclaw_fast.tools.usage import UsageTracker

    path = tmp_path / "tool_usage.json"
    tracker = UsageTracker(path, clock=lambda: 1.7e9)
    tracker.record("deploy_tool", query)
    assert tracker.records()[0]["query_tokens"] == tokenize(query)[: tracker.keep_tokens]
    assert UsageTracker(path).records() == tracker.records()
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw[0]["query_tokens"] = query.split()[:5]  # as an analysis without stemming wrote them
    del raw[0]["tokenizer"]
    path.write_text(json.dumps(raw), encoding="utf-8")
    again = UsageTracker(path).records()[0]["query_tokens"]
    assert again == tokenize(" ".join(query.split()[:5]))[:5]


# ------------------------------------------------------------------ one cut (design R1)
HANZI = "时区林遥住在上海用户哪个的是了我你他她们工作时间日历妈妈杭州每个月来看一次部署脚本数据库查询问题会议"
MIXED = st.lists(st.sampled_from(list(HANZI)) | st.sampled_from(PIECES)
                 | st.text(alphabet=HANZI + "，。、 ", max_size=10), min_size=1, max_size=25)


@pytest.fixture(scope="module")
def bm25_store():
    from maclaw_fast import MemoryStore

    with MemoryStore.in_memory(embedder=None) as store:
        yield store


@settings(max_examples=150, deadline=None)
@given(st.one_of(MIXED.map("".join),  # Chinese and mixed, glued together
                 MIXED.map(" ".join),
                 st.text(alphabet=HANZI, min_size=1, max_size=40),  # Chinese only
                 st.text(alphabet=st.characters(max_codepoint=127), min_size=1, max_size=80)))
def test_query_tokens_equal_document_tokens(bm25_store, text):
    """What a store indexes for a saved text is what the same text asked as a query gives."""
    query = tokenize(text)
    if not query or not text.strip():
        return
    entry = bm25_store.save(text, category="project_knowledge")
    ids, _ = bm25_store.bm25.doc_term_ids([bm25_store.row_of_id(entry.id)])
    assert sorted(bm25_store.bm25.vocab.tokens[i] for i in ids.tolist()) == sorted(query)
    bm25_store.delete(entry.id)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=HANZI + "，", min_size=1, max_size=40))
def test_chinese_tokens_are_dictionary_words_or_characters(text):
    """No token is a word guessed from its neighbours (jieba's HMM glued "林遥住" in one
    sentence and left "时 / 区" apart in another): each is in jieba's dictionary or one
    character, so the same characters are cut alike in a query and in a memory."""
    import rjieba

    for tok in tokenize(text):
        assert len(tok) == 1 or rjieba.has_word(tok), tok


def test_time_zone_and_names_are_cut_alike():
    doc = tokenize("林遥住在上海，时区是 Asia/Shanghai（UTC+8）")
    assert set(tokenize("时区")) <= set(doc)
    assert set(tokenize("用户在哪个时区")) & set(doc) >= {"时", "区"}
    assert "林遥住" not in doc and {"林", "遥", "住"} <= set(doc)
    assert tokenize("林遥") == ["林", "遥"]
