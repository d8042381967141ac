"""Text analysis shared by every index."""

from maclaw_fast.text.stopwords import DEFAULT_STOP_WORDS, ENGLISH_STOP_WORDS, LUCENE_STOP_WORDS
from maclaw_fast.text.tokenizer import (
    DEFAULT_ANALYZER,
    TOKENIZER_VERSION,
    Analyzer,
    analysed_text,
    cjk_ratio,
    tokenize,
)
from maclaw_fast.text.vocabulary import Vocabulary

__all__ = ["DEFAULT_ANALYZER", "DEFAULT_STOP_WORDS", "ENGLISH_STOP_WORDS", "LUCENE_STOP_WORDS",
           "TOKENIZER_VERSION", "Analyzer", "Vocabulary", "analysed_text", "cjk_ratio", "tokenize"]
