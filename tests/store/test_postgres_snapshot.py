"""A memory's in-process state saved in its Postgres namespace and read back at open (issue 20: opening a large
store reads the saved state and the changes after it, not every record): the state read back, caught up, is the
state a full rebuild makes; a state saved under another config, newer than the store or not a state of ours is
never used."""

from __future__ import annotations

import logging
import os
import pickle
import uuid

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.datasets import load
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.memory import snapshot
from support import REPO, T0

pytestmark = pytest.mark.postgres

SAMPLE = REPO / "datasets" / "samples" / "tau-bench" / "gpt-4o-airline.sample.json"
QUERIES = ["change my flight to the next day", "cancel reservation and refund", "rebook the morning flight",
           "add a checked bag to my trip", "book a one-way flight from New York to Seattle"]


def _mem(url: str, namespace: str, **params) -> MemorySystem:
    cfg = LabConfig().with_params({"store.url": url, "store.namespace": namespace,
                                   "retrieval.track_retrievals": False, **params})
    return MemorySystem(cfg, embedder=HashingEmbedder(dim=256), clock=lambda: T0).open()


def _fill(mem: MemorySystem, episodes: list) -> None:
    half = len(episodes) // 2
    mem.write_episodes(episodes[:half])
    mem.reflect_many(episodes[half:])
    mem.write("Check the fare class before rebooking.", layer="L3", confidence=0.9,
              counter_examples=["basic economy cannot be changed"], trigger={"any": ["rebook"]})


def _state(mem: MemorySystem) -> dict:
    """Everything a memory rebuilds at open, in a comparable form, and what its searches return."""
    idx, ev = mem.index_, mem._writes.contradictions
    steps = sorted((s.tools, sorted(s.passed), list(s.refusals), sorted(s.retired), s.passes, s.refused_before)
                   for bucket in ev._steps.values() for s in bucket)
    searches = [[(h.id, repr(h.scores), tuple(h.paths)) for h in mem.search(q).hits] for q in QUERIES]
    return {"buckets": dict(idx._bucket_of), "counts": idx.counts, "episodes": dict(idx._episode_ids),
            "types": dict(idx.task_types._of), "triggers": sorted(idx.triggers._rules),
            "lexical": {q: sorted(zip(idx.lexical.top(idx.lexical.scores(q), 50))) for q in QUERIES},
            "classifier": (dict(idx.classifier._by_type), dict(idx.classifier._tools)),
            # (the order of training examples may differ: the probabilities by a rounding error)
            "predicted": [(t, round(p, 9)) for t, p in map(idx.classifier.predict, QUERIES)], "retired": list(idx.retired._ids),
            "checked": mem._writes.checked, "steps": steps, "runs": dict(ev._runs), "refusals": ev.refusals_of,
            "policy": vars(mem._reflection.policy.state), "searches": searches}


@pytest.fixture(scope="module")
def episodes() -> list:
    return load(SAMPLE)[0]


def test_a_saved_state_read_back_is_the_state_a_rebuild_makes(postgres_url, episodes):
    namespace = "s" + uuid.uuid4().hex[:10]
    writer = _mem(postgres_url, namespace)
    _fill(writer, episodes)
    assert writer._writes.checked and writer.stats()["candidates"]  # the reflection left checked candidates
    writer.close()  # saves the state
    restored, rebuilt = _mem(postgres_url, namespace), _mem(postgres_url, namespace, **{"store.snapshot_every": 0})
    assert restored._writes.changes == 0  # nothing read record by record
    assert rebuilt._writes.changes == sum(rebuilt.index_.counts.values()) > 20
    assert _state(restored) == _state(rebuilt)
    restored.close(), rebuilt.close()


def test_a_state_older_than_the_store_is_caught_up_from_the_change_log(postgres_url, episodes):
    namespace = "s" + uuid.uuid4().hex[:10]
    first = _mem(postgres_url, namespace)
    first.write_episodes(episodes[:6])
    first.close()  # the state as of six episodes
    later = _mem(postgres_url, namespace, **{"store.snapshot_every": 0})  # writes, and saves nothing
    later.reflect_many(episodes[6:])
    later.write("Check the fare class before rebooking.", layer="L3", confidence=0.9,
                counter_examples=["basic economy cannot be changed"], trigger={"any": ["rebook"]})
    later.close()
    restored, rebuilt = _mem(postgres_url, namespace), _mem(postgres_url, namespace, **{"store.snapshot_every": 0})
    assert 0 < restored._writes.changes < rebuilt._writes.changes  # only what changed after the saved state
    assert _state(restored) == _state(rebuilt)
    restored.close(), rebuilt.close()


def test_a_memory_saves_its_state_every_so_many_changes(postgres_url, episodes):
    namespace = "s" + uuid.uuid4().hex[:10]
    mem = _mem(postgres_url, namespace, **{"store.snapshot_every": 5})
    fingerprint = snapshot.fingerprint(mem.config_, mem.store.embedding_model_)
    mem.write_episodes(episodes[:3])
    assert mem.store.load_snapshot(fingerprint) is None  # three changes: not yet
    mem.write_episodes(episodes[3:6])
    seq, _ = mem.store.load_snapshot(fingerprint)
    assert seq == mem.store.change_seq()  # saved at the end of the write, stamped with every change in it
    mem.close()


def test_a_state_saved_under_another_config_is_not_read(postgres_url, episodes):
    namespace = "s" + uuid.uuid4().hex[:10]
    mem = _mem(postgres_url, namespace)
    mem.write_episodes(episodes[:6])
    mem.close()
    other = _mem(postgres_url, namespace, **{"retrieval.classifier.max_per_type": 7})
    assert other._writes.changes == 6  # rebuilt from the records
    other.close()


def test_a_state_newer_than_the_store_is_not_read(postgres_url, episodes, caplog):
    namespace = "s" + uuid.uuid4().hex[:10]
    mem = _mem(postgres_url, namespace)
    mem.write_episodes(episodes[:4])
    fingerprint = snapshot.fingerprint(mem.config_, mem.store.embedding_model_)
    mem.close()
    mem = _mem(postgres_url, namespace, **{"store.snapshot_every": 0})
    seq, data = mem.store.load_snapshot(fingerprint)
    mem.store.save_snapshot(fingerprint, seq + 100, data)  # e.g. the database restored from an older backup
    mem.close()
    with caplog.at_level(logging.WARNING, logger="hindsight_lab.memory.snapshot"):
        again = _mem(postgres_url, namespace)
    assert again._writes.changes == 4 and "newer than the store" in caplog.text
    again.close()


class _Run:
    def __reduce__(self):
        return (os.system, ("touch hacked",))


def test_a_saved_state_cannot_run_code(postgres_url, episodes, caplog, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = "s" + uuid.uuid4().hex[:10]
    mem = _mem(postgres_url, namespace)
    mem.write_episodes(episodes[:4])
    fingerprint = snapshot.fingerprint(mem.config_, mem.store.embedding_model_)
    import zlib

    mem.store.save_snapshot(fingerprint, mem.store.change_seq(), zlib.compress(pickle.dumps(_Run())))
    mem.close()
    with caplog.at_level(logging.WARNING, logger="hindsight_lab.memory.snapshot"):
        again = _mem(postgres_url, namespace, **{"store.snapshot_every": 0})  # saves nothing over it at close
        reopened = _mem(postgres_url, namespace)
    assert not (tmp_path / "hacked").exists()
    assert "may not hold posix.system" in caplog.text and reopened._writes.changes == 4  # rebuilt instead
    again.close(), reopened.close()
