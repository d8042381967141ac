"""The one tokenizer (design §2 as revised by R1), shared by memory, tools, usage tracking, group
keywords and workspace search.

Lower-case; Han runs are segmented by jieba's dictionary (rjieba, the Rust port: ~2 µs per
sentence; search mode by default; no HMM, so a word is cut alike in a query and in a stored
text, :func:`maclaw_fast.text.segments.cut`), stripped, and tokens made only of punctuation,
symbols or whitespace dropped; every other text is split into runs of letters and digits, stop
words are dropped
(:mod:`maclaw_fast.text.stopwords`) and the rest Snowball-stemmed (PyStemmer "english"). The same
tokens are fed to tantivy pre-tokenised, so tantivy's BM25 and ours see identical terms.

:data:`TOKENIZER_VERSION` names the analysis (its rules, stop list and stemmer): anything that
persists tokens records it and rebuilds when it differs.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

from maclaw_fast.text.segments import cut as _cut
from maclaw_fast.text.stopwords import DEFAULT_STOP_WORDS

# Han runs go to jieba; everything else is split into word-character runs. jieba glues ASCII
# words at "." "-" "%" ("cells.the", "il-6", "2.5-fold") and splits Greek from Latin ("nf-κb"
# → "κ", "b"), so letting it see non-Han text cost SciFact nDCG@10 0.654 vs 0.661 (measured).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_SPLIT = re.compile(f"([{_HAN}]+)")  # capturing: the Han runs come back at odd positions
_WORDS = re.compile(r"[^\W_]+")
# ASCII text splits faster by mapping every non-alphanumeric byte to a space in C
# (bytes.translate: 3-4× str.translate's) than by ``re``: [^\W_] is exactly [A-Za-z0-9] there
_ASCII_GAPS = bytes(c if chr(c).isalnum() else 32 for c in range(128)) + bytes(range(128, 256))

_DROP_CATEGORIES = frozenset({"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
                              "Zs", "Zl", "Zp", "Cc", "Cf"})
_RULES = "maclaw-tok-3"  # bump when the splitting rules change (3: Han cut without jieba's HMM)
_MEMO_MAX = 1 << 20  # words remembered per analyzer before the memo starts over


@lru_cache(maxsize=1 << 16)
def _keep(token: str) -> bool:
    return any(unicodedata.category(ch) not in _DROP_CATEGORIES for ch in token)


class _Terms(dict):
    """Word run → its term ('' for a stop word), computed on first sight: a hit is one C-level
    dict lookup (``map(terms.__getitem__, words)``), so stemming costs nothing on known words."""

    __slots__ = ("_lock", "_stem", "_stop")

    def __init__(self, stop: frozenset[str], stemmer) -> None:
        super().__init__()
        self._stop = stop
        self._stem = stemmer.stemWord if stemmer is not None else None
        self._lock = threading.Lock()  # a PyStemmer object is not thread-safe

    def __missing__(self, word: str) -> str:
        if word in self._stop:
            term = ""
        elif self._stem is None:
            term = word
        else:
            with self._lock:
                term = self._stem(word) or word
        if len(self) >= _MEMO_MAX:
            self.clear()
        self[word] = term
        return term


class Analyzer:
    """A tokenizer: the splitting rules above with a stop list and a Snowball stemmer.

    Every index uses :data:`DEFAULT_ANALYZER` (through :func:`tokenize`); another list or no
    stemming makes a different :attr:`version`, which persisted indexes compare.

    Examples
    --------
    >>> a = Analyzer(stop_words={"the"}, stemmer=None)
    >>> a.tokenize("The running DOGS")
    ['running', 'dogs']
    >>> Analyzer().tokenize("The running DOGS") == ['run', 'dog']
    True
    """

    def __init__(self, stop_words=DEFAULT_STOP_WORDS, stemmer: str | None = "english") -> None:
        self.stop_words = frozenset(str(w).lower() for w in stop_words)
        self.stemmer = stemmer
        self._terms = _Terms(self.stop_words, Stemmer.Stemmer(stemmer) if stemmer else None)
        digest = hashlib.sha256("\n".join(sorted(self.stop_words)).encode()).hexdigest()[:12]
        self.version = f"{_RULES}:stop-{digest}:stem-{stemmer or 'none'}"

    def term(self, word: str) -> str:
        """The term of one lower-cased word run ('' when it is a stop word).

        >>> DEFAULT_ANALYZER.term("allergies"), DEFAULT_ANALYZER.term("the")
        ('allergi', '')
        """
        return self._terms[word]

    def tokenize(self, text: str, *, search_mode: bool = True) -> list[str]:
        """Split ``text`` into index terms.

        ``search_mode`` (default) uses jieba's search segmentation, which also emits the shorter
        words inside a long Chinese compound ("查询数据库" → 查询, 数据, 数据库, 查询数据库) so that
        a query and a document segmented differently still share terms.
        """
        if not text:
            return []
        text = text.lower()
        if text.isascii():  # O(1): CPython keeps the flag on the string
            return self._words(_ascii_words(text))
        parts = _HAN_SPLIT.split(text)
        out = self._words(_word_runs(parts[0]))
        for i in range(1, len(parts), 2):
            for raw in _cut(parts[i], search_mode):  # rjieba, imported on the first Han run
                tok = raw.strip()
                if tok and _keep(tok):
                    out.append(tok)
            if parts[i + 1]:
                out.extend(self._words(_word_runs(parts[i + 1])))
        return out

    def _words(self, words: list[str]) -> list[str]:
        """The terms of word runs, stop words left out (C-level map and filter)."""
        return list(filter(None, map(self._terms.__getitem__, words)))

    def ascii_words(self, text: str) -> list[str]:
        """The lower-cased word runs of an ASCII ``text`` before stop words and stemming (what
        an ASCII query splits into)."""
        return _ascii_words(text.lower())


DEFAULT_ANALYZER = Analyzer()
TOKENIZER_VERSION = DEFAULT_ANALYZER.version


def tokenize(text: str, *, search_mode: bool = True) -> list[str]:
    """Split ``text`` into index terms with :data:`DEFAULT_ANALYZER` (see
    :meth:`Analyzer.tokenize`).

    Examples
    --------
    >>> tokenize("Deploy the scripts 部署脚本, v2!")
    ['deploy', 'script', '部署', '脚本', 'v2']
    >>> tokenize("deploy.sh needs IL-6")
    ['deploy', 'sh', 'need', 'il', '6']
    >>> tokenize("what is it?")
    []
    """
    return DEFAULT_ANALYZER.tokenize(text, search_mode=search_mode)


def _word_runs(text: str) -> list[str]:
    """Maximal runs of letters and digits (``_`` and everything else separate them)."""
    if text.isascii():
        return _ascii_words(text)
    return _WORDS.findall(text)


def _ascii_words(text: str) -> list[str]:
    """:func:`_word_runs` of ASCII text."""
    return text.encode().translate(_ASCII_GAPS).decode().split()


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
    """The text an entry is indexed under: ``content + " " + " ".join(tags)`` (design §2)."""
    return content + " " + " ".join(tags)

__all__ = ["DEFAULT_ANALYZER", "TOKENIZER_VERSION", "Analyzer", "analysed_text", "cjk_ratio",
           "tokenize"]
