"""The Store protocol, checked on every implementation: the dict-backed store, Chroma (an embedded folder, and in
memory as replays keep it) and Postgres (the session's embedded PostgreSQL 18, and 16, the compose image's
version)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from hindsight_lab.errors import EmbeddingModelMismatch, StoreError
from hindsight_lab.protocols import Store
from hindsight_lab.store.chroma import ChromaStore
from hindsight_lab.store.memory import InMemoryStore
from hindsight_lab.store.postgres import PostgresStore
from hindsight_lab.types import Kind, MemoryRecord, Trigger
from support import T0


def _chroma(request):
    store = ChromaStore.in_memory("c" + uuid.uuid4().hex[:8])
    request.addfinalizer(store.drop)
    return store


def _chroma_folder(request):
    store = ChromaStore(namespace="c" + uuid.uuid4().hex[:8], path=str(request.getfixturevalue("tmp_path")))
    request.addfinalizer(store.close)
    return store


def _postgres(url_fixture):
    def make(request):
        store = PostgresStore(request.getfixturevalue(url_fixture), namespace="c" + uuid.uuid4().hex[:8])
        request.addfinalizer(store.close)
        return store
    return make


STORES = {"memory": lambda request: InMemoryStore(), "chroma": _chroma, "chroma-folder": _chroma_folder,
          "postgres": _postgres("postgres_url"),
          "postgres-16": _postgres("postgres16_url")}


@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.postgres) if name.startswith("postgres") else name
                        for name in sorted(STORES)])
def store(request):
    s = STORES[request.param](request)
    assert isinstance(s, Store)
    s.open("model-a")
    return s


def _vecs(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _rec(i: int, **kw) -> MemoryRecord:
    return MemoryRecord(id=f"rule-{i:012d}", kind=Kind.CANDIDATE, content=f"rule number {i}", created_at=T0, **kw)


def test_round_trip_of_every_field(store):
    rec = _rec(1, task_type="refund", domain="air", confidence=0.75, counter_examples=("a", "b"), hit_count=3,
               trigger=Trigger(any=("refund",), task_types=("billing",)), source_episode_ids=("e1", "e2"),
               last_confirmed_at=T0, ups=1, downs=1, feedback_notes=("down: no",), embedding_model="model-a",
               debug_trace=({"event": "retrieved", "rank": 1},))
    store.upsert("candidate", [rec], _vecs(1))
    (got, emb), = store.get("candidate", [rec.id])
    assert got == rec and emb == pytest.approx(_vecs(1)[0], abs=1e-6)
    assert list(store.scan("candidate")) == [rec]


def test_query_is_nearest_first_with_cosine_similarity(store):
    vecs = _vecs(20)
    store.upsert("episode", [_rec(i) for i in range(20)], vecs)
    hits = store.query("episode", vecs[7], 3)
    assert hits[0][0].id == _rec(7).id and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    exact = np.argsort(-(vecs @ vecs[7]))[:3]
    assert [h[0].id for h in hits] == [_rec(int(i)).id for i in exact]
    assert [h[1] for h in hits] == pytest.approx(sorted((vecs @ vecs[7])[exact], reverse=True), abs=1e-5)
    assert store.count("episode") == 20 and store.count("rule") == 0


def test_update_keeps_vector_delete_and_get_order(store):
    vecs = _vecs(3)
    store.upsert("rule", [_rec(i) for i in range(3)], vecs)
    store.update("rule", [_rec(1, confidence=0.9, hit_count=5)])
    (got, emb), = store.get("rule", [_rec(1).id])
    assert (got.confidence, got.hit_count) == (0.9, 5) and emb == pytest.approx(vecs[1], abs=1e-6)
    assert [r.id for r, _ in store.get("rule", [_rec(2).id, "missing", _rec(0).id])] == [_rec(2).id, _rec(0).id]
    store.delete("rule", [_rec(0).id])
    assert store.count("rule") == 2 and store.get("rule", [_rec(0).id]) == []


def test_model_guard_and_rebuild(store):
    store.upsert("candidate", [_rec(1)], _vecs(1))
    store.close()
    with pytest.raises(EmbeddingModelMismatch, match="model-a"):
        store.open("model-b")
    store.open("model-b", verify=False)
    store.rebuild("candidate", [_rec(1)], _vecs(1, dim=4), "model-b")
    assert store.query("candidate", _vecs(1, dim=4)[0], 1)[0][0].id == _rec(1).id
    store.close()
    store.open("model-b")  # rebuilt buckets carry the new model; empty ones were never bound


def test_closed_store_refuses():
    s = InMemoryStore()
    with pytest.raises(StoreError, match="not open"):
        s.count("episode")


def test_in_memory_chroma_stores_keep_apart_and_leave_nothing_when_dropped() -> None:
    """Replays keep each hindsight store in memory (one Chroma client per process): two stores open at once see only
    their own records, and a dropped store's collections are gone."""
    a, b = ChromaStore.in_memory("a" + uuid.uuid4().hex[:8]), ChromaStore.in_memory("b" + uuid.uuid4().hex[:8])
    for s in (a, b):
        s.open("model-a")
    a.upsert("candidate", [_rec(1), _rec(2)], _vecs(2))
    b.upsert("candidate", [_rec(3)], _vecs(1, seed=1))
    assert (a.count("candidate"), b.count("candidate")) == (2, 1)
    assert [r.id for r, _ in a.get("candidate", [_rec(3).id])] == []
    names = {c.name for c in a.client.list_collections()}
    assert {a.collection_name(bucket) for bucket in ("candidate", "episode", "rule", "archive")} <= names
    a.close()
    a.open("model-a")  # closed is not dropped: it opens again with its records
    assert a.count("candidate") == 2
    a.drop()
    left = {c.name for c in b.client.list_collections()}
    assert not any(name.startswith(a.namespace) for name in left)
    assert b.count("candidate") == 1
    b.drop()
    assert not any(c.name.startswith(b.namespace) for c in a.client.list_collections())


def test_chroma_collections_take_the_sync_threshold_and_a_writable_open_updates_it(tmp_path) -> None:
    """``store.hnsw.sync_threshold`` is set on new collections; a writable store that opens them with another value
    changes it (Chroma lets this one HNSW setting change), a read-only one leaves it; the records stay."""
    from hindsight_lab.config import LabConfig

    def threshold(s: ChromaStore) -> int:
        return s.collections_["episode"].configuration_json["hnsw"]["sync_threshold"]

    ns = "c" + uuid.uuid4().hex[:8]
    assert ChromaStore(namespace=ns).sync_threshold == LabConfig().store.hnsw.sync_threshold == 100
    s = ChromaStore(namespace=ns, path=str(tmp_path), sync_threshold=50)
    s.open("model-a")
    s.upsert("episode", [_rec(1)], _vecs(1))
    assert threshold(s) == 50
    s.close()
    for value, read_only, expected in ((70, False, 70), (30, True, 70)):
        s = ChromaStore(namespace=ns, path=str(tmp_path), sync_threshold=value, read_only=read_only)
        s.open("model-a")
        assert (threshold(s), s.count("episode")) == (expected, 1)
        s.close()
