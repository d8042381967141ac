"""The memory store: columns, recall, archive, durability.

``MemoryStore`` loads on first use: the CLI imports ``maclaw_fast.commands.memory`` on every run
(a ``route`` too) and must not pay for the store's kernels and their imports.
"""

__all__ = ["MemoryStore"]


def __getattr__(name: str):
    if name == "MemoryStore":
        from maclaw_fast.memory.store import MemoryStore

        globals()["MemoryStore"] = MemoryStore
        return MemoryStore
    raise AttributeError(f"module 'maclaw_fast.memory' has no attribute {name!r}")
