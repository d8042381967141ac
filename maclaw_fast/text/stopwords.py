"""English stop word lists for the tokenizer (design R1): one list is the default of every index.

Entries are lower-case word runs as the tokenizer splits them, so a contraction appears as its
pieces ("don't" → "don", "t"): the fragments are listed, not the contraction.

``LUCENE_STOP_WORDS``: the 33 words of Lucene's and Elasticsearch's English analyzer (and of
bm25s). ``ENGLISH_STOP_WORDS``: the Snowball English list (pronouns, auxiliaries, determiners,
prepositions, conjunctions) with the fragments contractions split into. Which one is the default
was measured (``benchmarks/quality_memory.py``, tokenizer variants): see ``DEFAULT_STOP_WORDS``.
"""

from __future__ import annotations

LUCENE_STOP_WORDS = frozenset("""
a an and are as at be but by for if in into is it no not of on or such that the their then there
these they this to was will with
""".split())

ENGLISH_STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these
those am is are was were be been being have has had having do does did doing would should could
ought cannot a an the and but if or because as until while of at by for with about against
between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some
such no nor not only own same so than too very
s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn won wouldn shan shouldn
couldn mustn
""".split())

# measured on SciFact nDCG@10 and on LoCoMo turn R@10 (tuning half) with the Snowball stemmer:
# the results file of benchmarks/quality_memory.py has both lists side by side
DEFAULT_STOP_WORDS = ENGLISH_STOP_WORDS
