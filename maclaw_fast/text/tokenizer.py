"""The one tokenizer (SPEC §2), shared by memory, tools, usage tracking and workspace search.

Lower-case, segment with jieba (rjieba, the Rust port: ~2 µs per sentence), strip, and drop tokens
made only of punctuation, symbols or whitespace. No stop words, no stemming. The same tokens are
fed to tantivy pre-tokenised, so tantivy's BM25 and ours see identical terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from functools import lru_cache
from itertools import islice

import rjieba

# Han runs go to jieba; everything else is split into word-character runs. jieba glues ASCII
# words at "." "-" "%" ("cells.the", "il-6", "2.5-fold") and splits Greek from Latin ("nf-κb"
# → "κ", "b"), so letting it see non-Han text cost SciFact nDCG@10 0.654 vs 0.661 (measured).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_SPLIT = re.compile(f"([{_HAN}]+)")  # capturing: the Han runs come back at odd positions
_HAS_HAN = re.compile(f"[{_HAN}]")
_WORDS = re.compile(r"[^\W_]+")
# ASCII text splits ~3× faster by mapping every non-alphanumeric character to a space in C
# (str.translate's one-byte path) than by ``re``: [^\W_] is exactly [A-Za-z0-9] there
_ASCII_GAPS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})

_DROP_CATEGORIES = frozenset({"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
                              "Zs", "Zl", "Zp", "Cc", "Cf"})


@lru_cache(maxsize=1 << 16)
def _keep(token: str) -> bool:
    return any(unicodedata.category(ch) not in _DROP_CATEGORIES for ch in token)


def tokenize(text: str, *, search_mode: bool = True) -> list[str]:
    """Split ``text`` into index terms.

    ``search_mode`` (default) uses jieba's search segmentation, which also emits the shorter words
    inside a long Chinese compound ("查询数据库" → 查询, 数据, 数据库, 查询数据库) so that a query and
    a document segmented differently still share terms.

    Examples
    --------
    >>> tokenize("Deploy script 部署脚本, v2!")
    ['deploy', 'script', '部署', '脚本', 'v2']
    >>> tokenize("deploy.sh needs IL-6")
    ['deploy', 'sh', 'needs', 'il', '6']
    """
    if not text:
        return []
    text = text.lower()
    if text.isascii():  # O(1): CPython keeps the flag on the string
        return _ascii_words(text)
    parts = _HAN_SPLIT.split(text)
    out = _word_runs(parts[0])
    cut = rjieba.cut_for_search if search_mode else rjieba.cut
    for i in range(1, len(parts), 2):
        for raw in cut(parts[i]):
            tok = raw.strip()
            if tok and _keep(tok):
                out.append(tok)
        if parts[i + 1]:
            out.extend(_word_runs(parts[i + 1]))
    return out


def _word_runs(text: str) -> list[str]:
    """Maximal runs of letters and digits (``_`` and everything else separate them)."""
    if text.isascii():
        return _ascii_words(text)
    return _WORDS.findall(text)


def _ascii_words(text: str) -> list[str]:
    """:func:`_word_runs` of ASCII text. A short text of words and spaces alone (most queries)
    splits as it is: ``str.translate`` looks every character up in its table (~0.8 µs a query),
    and a document is rarely free of punctuation (the check would only copy it)."""
    if len(text) <= 256 and text.replace(" ", "").isalnum():
        return text.split()
    return text.translate(_ASCII_GAPS).split()


def cjk_ratio(text: str) -> float:
    """Share of CJK ideographs among the non-space characters of ``text`` (0 for empty).

    Examples
    --------
    >>> round(cjk_ratio("部署 deploy"), 2)
    0.25
    """
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    return sum("\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff" for c in chars) / len(chars)


def analysed_text(content: str, tags: list[str] | tuple[str, ...]) -> str:
    """The text an entry is indexed under: ``content + " " + " ".join(tags)`` (SPEC §2)."""
    return content + " " + " ".join(tags)


class Vocabulary:
    """Token → dense int id, grown on demand; ids are never reused, so arrays keyed by id stay valid.

    Examples
    --------
    >>> v = Vocabulary()
    >>> v.ids(["a", "b", "a"], add=True).tolist()
    [0, 1, 0]
    >>> v.ids(["zzz"]).tolist()
    [-1]
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self.tokens: list[str] = []
        self._term_table = None

    def term_arrays(self):
        """(bytes, offsets, hash table) of every token, for ``maclaw_kernels.terms``
        (:class:`~maclaw_fast.text.term_table.TermTable`, brought up to date here)."""
        if self._term_table is None:
            from maclaw_fast.text.term_table import TermTable

            self._term_table = TermTable()
        return self._term_table.arrays(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def get(self, token: str) -> int:
        return self._ids.get(token, -1)

    @property
    def ids_dict(self) -> dict[str, int]:
        """The token → id mapping itself (read-only use: bulk lookups)."""
        return self._ids

    def add(self, token: str) -> int:
        tid = self._ids.get(token)
        if tid is None:
            tid = len(self.tokens)
            self._ids[token] = tid
            self.tokens.append(token)
        return tid

    def add_all(self, tokens: list[str]):
        """Ids of ``tokens`` as an int64 array, adding the new ones in first-seen order (the same
        ids as :meth:`add` one by one) in one C-level pass.

        Examples
        --------
        >>> v = Vocabulary(); _ = v.add("b")
        >>> v.add_all(["a", "b", "a", "c"]).tolist(), v.tokens
        ([1, 0, 1, 2], ['b', 'a', 'c'])
        """
        import numpy as np

        known = len(self.tokens)
        table = defaultdict(None, self._ids)
        table.default_factory = table.__len__  # a new token's id is the count before it
        out = np.fromiter(map(table.__getitem__, tokens), np.int64, len(tokens))
        if len(table) > known:
            self.tokens.extend(islice(table, known, None))
            self._ids = dict(table)
        return out

    def ids(self, tokens, *, add: bool = False):
        import numpy as np

        if add:
            return np.fromiter((self.add(t) for t in tokens), dtype=np.int32, count=len(tokens))
        get = self._ids.get
        return np.fromiter((get(t, -1) for t in tokens), dtype=np.int32, count=len(tokens))
