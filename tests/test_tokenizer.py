"""The tokenizer's fast paths (ASCII by ``str.translate``, Han runs split out first) give exactly
the tokens of the plain definition: one regex over the text, Han runs to jieba, word runs as they
are (SPEC §2)."""

from __future__ import annotations

import re
import unicodedata

import rjieba
from hypothesis import given, settings
from hypothesis import strategies as st

from maclaw_fast.text.tokenizer import tokenize

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
