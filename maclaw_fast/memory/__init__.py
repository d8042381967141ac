"""The memory store: columns, recall, archive, durability."""

from maclaw_fast.memory.store import MemoryStore

__all__ = ["MemoryStore"]
