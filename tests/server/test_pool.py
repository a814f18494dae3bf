"""The server's pool of namespaces, in process (a real embedded Chroma store, the hashing embedder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import ValidationError
from hindsight_lab.server.pool import MemoryPool


@pytest.fixture
def pool(tmp_path: Path):
    pool = MemoryPool(LabConfig().with_params({"store.path": str(tmp_path / "store")}),
                      embedder=HashingEmbedder(dim=64)).open()
    yield pool
    pool.close()


def test_an_empty_namespace_is_refused_not_read_as_the_default(pool: MemoryPool) -> None:
    # Regression (issue 16): namespace "" silently meant the default one.
    pool.run(None, lambda mem: mem.write("Call verify_identity before issue_refund", confidence=0.8))
    with pytest.raises(ValidationError, match="namespace: '' is not a namespace"):
        pool.run("", lambda mem: mem.stats())
    assert pool.run(None, lambda mem: mem.stats()["candidates"]) == 1
    assert pool.namespaces() == [pool.default_namespace]
