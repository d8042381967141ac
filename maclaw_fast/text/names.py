"""The names and quoted phrases of a query: words a memory about the same person, place or
project repeats verbatim, so recall rewards the memories that hold them
(``RecallConfig.names_weight``, docs/design.md "Recall")."""

from __future__ import annotations

import re

from maclaw_fast.text.tokenizer import tokenize

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_CAPITALISED = re.compile(r"(?<![\w'-])[A-Z][\w'-]*")
# capitalised words that open or shape a sentence rather than name something
_NOT_NAMES = frozenset((
    "what when where who whom whose which why how did does do is was were are has have had would "
    "could can should will in on after before the a an i if and or of to for at by with from as "
    "according besides apart other both between during since").split())


def query_names(query: str) -> list[str]:
    """The tokens of ``query``'s names (capitalised words after its first word, question and
    function words aside) and of its quoted phrases, each once, first seen first.

    >>> query_names('What did Caroline say about "pottery class" in Oslo?')  # stemmed
    ['potteri', 'class', 'carolin', 'oslo']
    >>> query_names("what did she say")
    []
    """
    if query == query.lower() and '"' not in query and "“" not in query:
        return []  # no capital and no quote: no name (most queries stop here)
    parts = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(query)]
    first = _WORD.search(query)  # the opening word is capitalised as any sentence's
    for word in _CAPITALISED.findall(query, first.end() if first else 0):
        base = word[:-2] if word.endswith("'s") else word
        if base.lower() not in _NOT_NAMES:
            parts.append(base)
    return list(dict.fromkeys(tok for part in parts for tok in tokenize(part)))
