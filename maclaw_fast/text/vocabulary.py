"""Token → dense id, and the table through which the kernel fast path maps query words to ids."""

from __future__ import annotations

from collections import defaultdict
from itertools import islice

import numpy as np

from maclaw_fast.text.tokenizer import DEFAULT_ANALYZER, Analyzer


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

    def __init__(self, analyzer: Analyzer = DEFAULT_ANALYZER) -> None:
        self._ids: dict[str, int] = {}
        self.tokens: list[str] = []
        # a saved vocabulary as "\n" + its words joined by "\n" + "\n", and how many: looked
        # up in place (a few µs a word) until a use needs ``tokens`` and the dict (:meth:`fill`)
        self._joined: str | None = None
        self._count = 0
        self.analyzer = analyzer

    def __getattr__(self, name: str):
        # only reached for an attribute the instance lacks: ``tokens`` and ``_ids`` of a
        # vocabulary filled from joined words, before their first use
        if name in ("tokens", "_ids") and self.__dict__.get("_joined") is not None:
            self._unjoin()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _unjoin(self) -> None:
        joined, self._joined = self._joined, None
        tokens = joined[1:-1].split("\n") if self._count else []
        self.tokens, self._ids = tokens, dict(zip(tokens, range(len(tokens))))

    # ------------------------------------------------------------------ tokens and ids
    def __len__(self) -> int:
        return self._count if self._joined is not None else len(self.tokens)

    def get(self, token: str) -> int:
        return self._get(token, -1)

    def _get(self, token: str, default: int) -> int:
        joined = self._joined
        if joined is None:
            return self._ids.get(token, default)
        if not token or "\n" in token:
            return default
        pos = joined.find(f"\n{token}\n")  # the newlines before it count the words before it
        return default if pos < 0 else joined.count("\n", 0, pos)

    def resident_estimate(self, per_term: int) -> int:
        """Bytes this vocabulary holds, estimated: ``per_term`` per token (its string, dict
        entry and list slot), or the joined string's size while it is kept joined."""
        if self._joined is not None:
            return len(self._joined) + 64
        return len(self.tokens) * per_term

    def getter(self):
        """A ``get(token, default)`` callable for many lookups in a row (``dict.get`` once the
        dict exists)."""
        return self._get if self._joined is not None else self._ids.get

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
        known = len(self.tokens)
        table = defaultdict(None, self._ids)
        table.default_factory = table.__len__  # a new token's id is the count before it
        out = np.fromiter(map(table.__getitem__, tokens), np.int64, len(tokens))
        if len(table) > known:
            self.tokens.extend(islice(table, known, None))
            self._ids = dict(table)
        return out

    def fill(self, tokens: list[str] | str) -> bool:
        """Give an empty vocabulary ``tokens`` as ids ``0..len-1`` in one pass (a saved
        vocabulary coming back); False, changing nothing, if it is not empty or a token repeats.
        ``tokens`` may be one string, the tokens joined by newlines (as saved, from a file whose
        checksum held): lookups then search it in place until something needs the token list,
        so a reopen and its first queries skip making a dict of every token (~0.3 ms for 2,000);
        its tokens must be distinct and hold no newline (not checked).

        >>> v = Vocabulary(); v.fill(["tea", "green"]), v.get("green")
        (True, 1)
        >>> v = Vocabulary(); v.fill("tea\\ngreen"), v.get("green"), len(v), v.get("gre")
        (True, 1, 2, -1)
        """
        if len(self):
            return False
        if isinstance(tokens, str):
            self._count = tokens.count("\n") + 1 if tokens else 0
            if self._count:
                del self.tokens, self._ids  # made from the string on first use
                self._joined = f"\n{tokens}\n"
            return True
        ids = dict(zip(tokens, range(len(tokens))))
        if len(ids) != len(tokens):
            return False
        self._ids, self.tokens = ids, list(tokens)
        return True

    def ids(self, tokens, *, add: bool = False):
        if add:
            return np.fromiter((self.add(t) for t in tokens), dtype=np.int32, count=len(tokens))
        get = self._get
        return np.fromiter((get(t, -1) for t in tokens), dtype=np.int32, count=len(tokens))

