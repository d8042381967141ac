"""Text analysis shared by every index."""

from maclaw_fast.text.tokenizer import Vocabulary, analysed_text, cjk_ratio, tokenize

__all__ = ["Vocabulary", "analysed_text", "cjk_ratio", "tokenize"]
