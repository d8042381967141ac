"""One exception hierarchy. Validation raises these, never ``assert``."""

from __future__ import annotations


class MaclawError(Exception):
    """Base of every error maclaw_fast raises on purpose."""


class ValidationError(MaclawError, ValueError):
    """Bad input at the API boundary; nothing was changed."""


class NotFoundError(MaclawError, KeyError):
    """An id that the store does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class DuplicateError(ValidationError):
    """Content that duplicates another entry."""


class StoreLockedError(MaclawError):
    """Another process holds the store open for writing."""


class StoreClosedError(MaclawError):
    """The store was closed."""


class CorruptStoreError(MaclawError):
    """A snapshot or journal could not be read and no valid fallback exists."""


class EmbeddingError(MaclawError):
    """The embedder failed or returned vectors of the wrong shape."""


class LLMError(MaclawError):
    """The LLM call failed (network, protocol, status, timeout or unparseable reply)."""


class ReadOnlyStoreError(MaclawError):
    """A write to a store opened with ``read_only=True``."""
