"""The server's pool of namespaces, in process (a real embedded Chroma store, the hashing embedder)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import ValidationError
from hindsight_lab.server.config import ServerConfig
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


def test_a_held_namespace_makes_callers_busy_after_the_wait_and_others_go_on(tmp_path: Path) -> None:
    import time

    from hindsight_lab.errors import Busy

    cfg = LabConfig().with_params({"store.path": str(tmp_path / "store")})
    pool = MemoryPool(cfg, ServerConfig(lock_wait_s=0.3), embedder=HashingEmbedder(dim=64)).open()
    try:
        with _held(pool):
            t0 = time.monotonic()
            with pytest.raises(Busy, match="namespace 'default' is busy.*server.lock_wait_s"):
                pool.run(None, lambda mem: None)
            assert 0.25 <= time.monotonic() - t0 < 3
            assert pool.run("other", lambda mem: "answered") == "answered"  # another namespace is not held up
    finally:
        pool.close()


@contextmanager
def _held(pool: MemoryPool, first=lambda mem: None):
    """For the block, a worker thread holds the default namespace (after doing ``first`` on it)."""
    import threading

    held, release = threading.Event(), threading.Event()

    def hold(mem):
        first(mem)
        held.set()
        release.wait(10)

    worker = threading.Thread(target=pool.run, args=(None, hold))
    worker.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        worker.join(10)
    assert not worker.is_alive()


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres", "embedded"])
def test_on_postgres_a_search_does_not_wait_behind_a_write(backend, postgres_url, tmp_path: Path) -> None:
    # issue 20, item 3: a namespace's searches run on a memory of their own, which catches up with the writes from
    # the change log; on an embedded Chroma folder (one writer, no change log) they queue behind the write
    import uuid

    from hindsight_lab.errors import Busy

    where = ({"store.url": postgres_url, "store.namespace": "s" + uuid.uuid4().hex[:10]} if backend == "postgres"
             else {"store.path": str(tmp_path / "store")})
    pool = MemoryPool(LabConfig().with_params(where), ServerConfig(lock_wait_s=0.5),
                      embedder=HashingEmbedder(dim=64)).open()
    written = pool.run(None, lambda mem: mem.write("Call verify_identity before issue_refund", confidence=0.8))
    with _held(pool, lambda mem: mem.write("Call lookup_order before cancel_order", confidence=0.8)):
        search = lambda mem: [h.id for h in mem.search("verify_identity before issue_refund").hits]  # noqa: E731
        if backend == "postgres":
            assert written.record.id in pool.run(None, search, search=True)  # while the write holds the namespace
        else:
            with pytest.raises(Busy):
                pool.run(None, search, search=True)
    hits = pool.run(None, lambda mem: [h.record.content for h in mem.search("lookup_order cancel_order").hits],
                    search=True)
    assert "Call lookup_order before cancel_order" in hits  # the search memory caught up with the write
    pool.close()


def test_searches_waiting_for_their_namespace_have_embedded_their_queries_together(tmp_path: Path) -> None:
    # issue 20, item 3: concurrent query embeddings share model passes, and a search embeds its query before it
    # waits for its namespace (the namespace is held here by a write until every query is embedded)
    import threading
    import time

    from hindsight_lab.server.app import _search_tool
    from hindsight_lab.server.limits import Limits

    class SlowModel(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__(dim=64)
            self.passes: list[list[str]] = []

        def embed(self, texts):
            self.passes.append(list(texts))
            time.sleep(0.2)
            return super().embed(texts)

    model = SlowModel()
    settings = ServerConfig(lock_wait_s=30)
    pool = MemoryPool(LabConfig().with_params({"store.path": str(tmp_path / "store")}), settings,
                      embedder=model).open()
    pool.run(None, lambda mem: mem.write("Call verify_identity before issue_refund", confidence=0.8))
    search = _search_tool(pool, Limits(settings))
    queries = [f"refund request number {i}" for i in range(6)]
    answers: dict[str, list[str]] = {}
    model.passes.clear()
    with _held(pool):
        threads = [threading.Thread(target=lambda q=q: answers.__setitem__(q, search(q).hits)) for q in queries]
        for t in threads:
            t.start()
            time.sleep(0.02)
        deadline = time.monotonic() + 10
        while sum(map(len, model.passes)) < len(queries) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not answers  # every search still waits for the namespace ...
        assert sorted(t for p in model.passes for t in p) == sorted(queries)  # ... with its query embedded
        assert len(model.passes) == 2  # in two passes: the first query alone, the five that came meanwhile
    for t in threads:
        t.join(10)
    direct = pool.run(None, lambda mem: [len(mem.search(q).hits) for q in queries])
    assert [len(answers[q]) for q in queries] == direct and all(direct)
    pool.close()
