"""The tokenizer's fast paths (ASCII by ``str.translate``, Han runs split out first) give exactly
the tokens of the plain definition: one regex over the text, Han runs to jieba, word runs as they
are (SPEC §2)."""

from __future__ import annotations

import random
import re
import unicodedata

import rjieba
from hypothesis import given, settings
from hypothesis import strategies as st
from maclaw_kernels.terms import ascii_query_terms

from maclaw_fast.text.tokenizer import Vocabulary, tokenize

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
RUNS = re.compile(f"([{HAN}]+)|([^\\W{HAN}_]+)")
DROP = {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc",
        "Cf"}


def reference(text: str, search_mode: bool = True) -> list[str]:
    cut = rjieba.cut_for_search if search_mode else rjieba.cut
    out = []
    for han, word in RUNS.findall(text.lower()):
        if word:
            out.append(word)
            continue
        for raw in cut(han):
            tok = raw.strip()
            if tok and any(unicodedata.category(c) not in DROP for c in tok):
                out.append(tok)
    return out


PIECES = ["Deploy", "script", "部署脚本出了问题", "数据库", "naïve", "IL-6", "v2.0", "snake_case",
          "—", "日志", "Ελληνικά", "x²", "١٢٣", "\t", "\x1c", "\u3000", "ⅷ", "Ǆ", "ﬁ", "𝔘", " ",
          "查询数据库", "e.g.", "100%", "\u00a0", "İstanbul"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=12), max_size=30),
       st.sampled_from(["", " ", ".", "_", "部"]), st.booleans())
def test_tokens_equal_the_plain_definition(pieces, sep, search_mode):
    text = sep.join(pieces)
    assert tokenize(text, search_mode=search_mode) == reference(text, search_mode)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_text_equals_the_plain_definition(text):
    assert tokenize(text) == reference(text)


def test_known_cases():
    assert tokenize("") == []
    assert tokenize("snake_case v2.0") == ["snake", "case", "v2", "0"]
    assert tokenize("部署脚本出了什么问题")[:2] == ["部署", "脚本"]
    assert tokenize("naïve café") == ["naïve", "café"]
    assert tokenize("Deploy部署script") == ["deploy", "部署", "script"]


# ------------------------------------------------------------------ words to term ids in a kernel
WORDS = ["deploy", "script", "v2", "0", "a", "zz9", "snake", "case", "部署", "naïve", "e", "g"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
       st.lists(st.text(alphabet="abcdefgxyz0123456789部ï", min_size=1, max_size=6), max_size=60))
def test_kernel_term_ids_equal_tokenize_then_lookup(text, extra):
    """``ascii_query_terms`` over a vocabulary's term arrays gives, for any ASCII text, the ids
    of ``tokenize(text)`` looked up in the vocabulary (-1 unknown), in order."""
    vocab = Vocabulary()
    vocab.ids(WORDS + extra, add=True)
    got = ascii_query_terms(text.encode("ascii"), *vocab.term_arrays())
    assert got.tolist() == [vocab.get(t) for t in tokenize(text)]


def test_term_table_grows_and_keeps_every_id():
    """Tokens added in many steps (the table is rebuilt larger several times, probes collide)
    are each found under their own id; near misses are not."""
    rng = random.Random(3)
    vocab = Vocabulary()
    for step in range(40):
        vocab.ids([f"w{rng.randrange(20000)}" for _ in range(rng.randint(0, 300))], add=True)
        if step % 7 == 0:
            vocab.term_arrays()  # synced part way, as queries between saves do
    words = " ".join(vocab.tokens)
    assert ascii_query_terms(words.encode(), *vocab.term_arrays()).tolist() == list(
        range(len(vocab)))
    missing = " ".join(t + "x" for t in vocab.tokens[:500]) + " W" + " w"
    assert set(ascii_query_terms(missing.encode(), *vocab.term_arrays()).tolist()) == {-1}
