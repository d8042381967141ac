"""The facades' named stores (mem0 ``Memory``, Ray ``ShardedMemory``): under a directory they go
through a StorePool, so only ``max_open`` stay open and a closed one reopens with its memories."""

from __future__ import annotations

import pytest

from maclaw_fast.compat.stores import LocalStores
from maclaw_fast.errors import ValidationError


def test_stores_under_a_directory_stay_within_max_open_and_reopen_equal(tmp_path):
    stores = LocalStores(tmp_path, embedder="hash", max_open=2)
    names = [f"user-{i}" for i in range(6)]
    for name in names:
        with stores.store(name) as s:
            s.save(f"{name} likes green tea", category="preference")
        assert len(stores.open_names()) <= 2
    assert stores.names() == sorted(names)
    for name in names:  # most were closed by the pool: each reopens with its own memory
        with stores.store(name) as s:
            assert [e.content for e in s.entries()] == [f"{name} likes green tea"]
    stores.close()


def test_in_process_stores_stay_open_and_names_are_checked():
    stores = LocalStores(None, embedder="hash")
    for i in range(3):
        with stores.store(f"a{i}") as s:
            s.save("x", category="preference")
    assert stores.open_names() == ["a0", "a1", "a2"]
    with pytest.raises(ValidationError):
        with stores.store("../escape"):
            pass
    stores.close()
