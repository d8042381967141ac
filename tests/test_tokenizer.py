"""The one tokenizer (design R1): its fast paths (ASCII by ``str.translate``, Han runs split out
first, a memo of word terms) give exactly the tokens of the plain definition (one regex over the
text, Han runs to jieba, word runs lower-cased, stop words dropped, Snowball-stemmed), and every
other path (the kernel word table, tantivy's terms, usage tracking) gives the same terms."""

from __future__ import annotations

import json
import random
import re
import unicodedata

import numpy as np
import pytest
import rjieba
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st
from maclaw_kernels.terms import ascii_query_terms

from maclaw_fast.text import (
    DEFAULT_STOP_WORDS,
    ENGLISH_STOP_WORDS,
    LUCENE_STOP_WORDS,
    TOKENIZER_VERSION,
    Analyzer,
    Vocabulary,
    tokenize,
)
from maclaw_fast.text.term_table import WordTable

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
RUNS = re.compile(f"([{HAN}]+)|([^\\W{HAN}_]+)")
DROP = {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc",
        "Cf"}
STEMMER = Stemmer.Stemmer("english")


def reference(text: str, search_mode: bool = True, stop=DEFAULT_STOP_WORDS,
              stem: bool = True) -> list[str]:
    cut = rjieba.cut_for_search if search_mode else rjieba.cut
    out = []
    for han, word in RUNS.findall(text.lower()):
        if word:
            if word not in stop:
                out.append(STEMMER.stemWord(word) if stem else word)
            continue
        for raw in cut(han):
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


# ------------------------------------------------------------------ the kernel word table
VOCAB_TEXT = ("deploy deploying script scripts v2 0 zz9 snake case 部署 naïve e g running "
              "database peanut allergic allergy")


def fast_path(vocab: Vocabulary, text: str) -> list[int] | None:
    ids, known = ascii_query_terms(text.encode("ascii"), *vocab.term_arrays())
    return ids.tolist() if known else None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
       st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
       st.lists(st.text(alphabet="abcdefgxyz0123456789部ï", min_size=1, max_size=6), max_size=60))
def test_kernel_term_ids_equal_tokenize_then_lookup(text, learned, extra):
    """``ascii_query_terms`` over a vocabulary's word table either reports the query unknown or
    gives exactly the ids of ``tokenize(text)`` in the vocabulary (-1 for a term it lacks);
    once the vocabulary has learned a query, that query is known, and stays exact when the
    vocabulary later gains terms its words were waiting for."""
    vocab = Vocabulary()
    vocab.ids(tokenize(VOCAB_TEXT), add=True)
    vocab.learn(learned)
    expected = [vocab.get(t) for t in tokenize(text)]
    got = fast_path(vocab, text)
    assert got is None or got == expected
    vocab.learn(text)
    assert fast_path(vocab, text) == expected
    more = [t for e in extra for t in tokenize(e)] + tokenize(learned)[::2] + tokenize(text)[1::3]
    if len(more) % 2:
        vocab.add_all(more)
    else:
        vocab.ids(more, add=True)
    got = fast_path(vocab, text)
    assert got == [vocab.get(t) for t in tokenize(text)]
    got = fast_path(vocab, learned)
    assert got is None or got == [vocab.get(t) for t in tokenize(learned)]


def test_word_table_grows_and_keeps_every_id():
    """Words learned in many steps (the table is rebuilt larger several times, probes collide)
    are each found with their own term id; near misses are not."""
    rng = random.Random(3)
    vocab = Vocabulary()
    learned: list[str] = []
    for step in range(40):
        words = [f"w{rng.randrange(20000)}" for _ in range(rng.randint(0, 300))]
        vocab.ids(words, add=True)
        vocab.learn(" ".join(words))
        learned += words
        if step % 7 == 0:
            assert fast_path(vocab, " ".join(learned[-50:])) == [vocab.get(w) for w in
                                                                 learned[-50:]]
    words = " ".join(vocab.tokens)
    assert fast_path(vocab, words) == list(range(len(vocab)))
    for near in ("w1x", "W", "w", "x" + vocab.tokens[0]):
        assert fast_path(vocab, near) is None


def test_word_table_marks_stop_words_and_keeps_unlearned_words_unknown():
    table = WordTable()
    table.append(["deploy", "the", "deploying"], [4, -2, 4])
    ids, known = ascii_query_terms(b"THE deploying, the DEPLOY", *table.arrays)
    assert known and ids.tolist() == [4, 4]
    assert not ascii_query_terms(b"deploy it", *table.arrays)[1]
    assert ascii_query_terms(b"  ...  ", *table.arrays)[1]  # no words: nothing to look up
    vocab = Vocabulary()
    vocab.learn("the cats")  # "cat" is no term of the vocabulary yet: -1 until it is added
    assert fast_path(vocab, "the") == [] and fast_path(vocab, "cats") == [-1]
    assert fast_path(vocab, "cat") is None  # never seen as a query word
    vocab.add("dog")
    vocab.add_all(["cat", "dog"])
    assert fast_path(vocab, "The CATS") == [1]


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
