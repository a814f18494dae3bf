"""Several processes writing one Postgres namespace (issue 20, item 2): the change log keeps every process's recall
index (keywords, task types, triggers, the classifier) in step with the database, and logical writes (a dedup
check and the merge or insert it decides) are serialised by the namespace's write lock across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import StoreError
from hindsight_lab.memory.changes import ChangeFeed
from hindsight_lab.store.postgres import PostgresStore
from hindsight_lab.types import Bucket, Kind, MemoryRecord
from support import REPO, T0

pytestmark = pytest.mark.postgres

_WORKER = textwrap.dedent("""
    import json, sys, time
    from hindsight_lab import LabConfig, MemorySystem
    from hindsight_lab.embed import HashingEmbedder
    url, namespace, mode, tag = sys.argv[1:5]
    cfg = LabConfig().with_params({"store.url": url, "store.namespace": namespace, "store.timeout_s": 30})
    mem = MemorySystem(cfg, embedder=HashingEmbedder(dim=256)).open()
    print("ready", flush=True)
    go = float(sys.stdin.readline())
    time.sleep(max(0.0, go - time.time()))
    out = []
    if mode == "duplicate":  # the same candidate, again and again
        for i in range(8):
            res = mem.write("Call lookup_order before issue_refund; shipped orders are refused.", confidence=0.8,
                            counter_examples=["digital goods are never shipped"], task_type="refund",
                            source_episode_ids=[f"{tag}-{i}"])
            out.append([res.action, res.promoted])
    elif mode == "episode":
        rec = mem.write_episode({"episode_id": tag, "task_id": tag, "instruction":
                                 "Rebook passenger zanzibarquux on the morning flight", "outcome": "success",
                                 "steps": [{"type": "tool_call", "name": "update_reservation_flights",
                                            "arguments": {}}]})
        rule = mem.write("Check the fare class before rebooking.", layer="L3", confidence=0.9,
                         counter_examples=["basic economy cannot be changed"],
                         trigger={"any": ["zanzibarquux"]})
        out = [rec.id, rule.record.id, rec.task_type]
    elif mode == "hold":  # hold the write lock until told
        with mem.store.exclusive():
            print("holding", flush=True)
            sys.stdin.readline()
    print(json.dumps(out), flush=True)
    mem.close()
""")


def _worker(url: str, namespace: str, mode: str, tag: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, url, namespace, mode, tag], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _holding(url: str, namespace: str) -> subprocess.Popen:
    """Another process, holding the namespace's write lock until it reads a line."""
    holder = _worker(url, namespace, "hold", "h")
    holder.stdin.write(f"{time.time()}\n"), holder.stdin.flush()
    assert holder.stdout.readline().strip() == "holding"
    return holder


def _mem(url: str, namespace: str, **params) -> MemorySystem:
    cfg = LabConfig().with_params({"store.url": url, "store.namespace": namespace, **params})
    return MemorySystem(cfg, embedder=HashingEmbedder(dim=256)).open()


def _ns() -> str:
    return "w" + uuid.uuid4().hex[:10]


def test_the_change_log_numbers_changes_in_commit_order(postgres_url):
    a, b = (PostgresStore(postgres_url, namespace=_ns()) for _ in range(2))
    b.namespace = a.namespace
    a.open("m"), b.open("m")
    start = b.change_seq()
    recs = [MemoryRecord(id=f"c{i}", kind=Kind.CANDIDATE, content=f"rule {i}", created_at=T0) for i in range(3)]
    a.upsert(Bucket.CANDIDATE, recs, HashingEmbedder(dim=8).embed([r.content for r in recs]))
    a.update(Bucket.CANDIDATE, recs[:1])
    a.delete(Bucket.CANDIDATE, ["c2"])
    seq, changes = b.changes_since(start)
    assert seq == start + 3 and dict(changes) == {"c0": Bucket.CANDIDATE, "c1": Bucket.CANDIDATE, "c2": None}
    assert b.changes_since(seq) == (seq, [])  # nothing new: one read of the counter
    assert a.changes_since(start) == (seq, [])  # the writer's own changes, which its memory applied already
    # a move (upsert to the archive, then delete from the candidates) ends in the archive, not deleted
    pairs = a.get(Bucket.CANDIDATE, ["c1"])
    a.upsert(Bucket.ARCHIVE, [pairs[0][0]], pairs[0][1][None, :])
    a.delete(Bucket.CANDIDATE, ["c1"])
    assert dict(b.changes_since(seq)[1]) == {"c1": Bucket.ARCHIVE}
    a.close(), b.close()


def test_a_write_through_another_process_is_recalled_by_every_path_at_once(postgres_url):
    namespace = _ns()
    mem = _mem(postgres_url, namespace)  # opened before the other process writes anything
    assert mem.stats()["episodes"] == 0
    proc = _worker(postgres_url, namespace, "episode", "ep-remote")
    proc.stdin.write(f"{time.time()}\n"), proc.stdin.flush()
    episode_id, rule_id, task_type = json.loads(proc.stdout.readline())
    assert proc.wait(timeout=60) == 0
    res = mem.search("zanzibarquux needs another flight")
    paths = {h.id: set(h.paths) for h in res.hits}
    assert "keyword" in paths[episode_id]  # the BM25 index knows the other process's episode
    assert "trigger" in paths[rule_id]  # and its rule's trigger
    assert mem.stats()["task_types"].get(task_type) == 1  # and the task-type index its task type
    mem.close()


def test_without_catching_up_the_other_process_writes_are_missed(postgres_url, monkeypatch):
    # negative control for the test above: the same writes, the change log not read
    monkeypatch.setattr(ChangeFeed, "catch_up", lambda self, *a, **k: 0)
    namespace = _ns()
    mem = _mem(postgres_url, namespace)
    proc = _worker(postgres_url, namespace, "episode", "ep-remote")
    proc.stdin.write(f"{time.time()}\n"), proc.stdin.flush()
    episode_id, rule_id, _ = json.loads(proc.stdout.readline())
    assert proc.wait(timeout=60) == 0
    res = mem.search("zanzibarquux needs another flight")
    assert all("keyword" not in h.paths and "trigger" not in h.paths for h in res.hits)
    mem.close()


@pytest.mark.slow
def test_concurrent_duplicates_through_two_processes_end_in_one_record(postgres_url):
    namespace = _ns()
    procs = [_worker(postgres_url, namespace, "duplicate", tag) for tag in ("a", "b")]
    go = time.time() + 1.0  # both start writing at the same moment
    for p in procs:
        p.stdin.write(f"{go}\n"), p.stdin.flush()
    actions = [a for p in procs for a in json.loads(p.stdout.readline())]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    mem = _mem(postgres_url, namespace)
    found = mem.records("candidate") + mem.records("rule")
    assert len(found) == 1, [(r.id, r.kind, r.hit_count) for r in found]
    assert found[0].hit_count == 16 and len(found[0].source_episode_ids) == 16
    assert sum(created == "created" for created, _ in actions) == 1
    assert sum(promoted for _, promoted in actions) == (1 if found[0].kind is Kind.RULE else 0)
    mem.close()


def test_a_write_waits_for_the_lock_and_names_its_holder_when_it_times_out(postgres_url):
    namespace = _ns()
    holder = _holding(postgres_url, namespace)
    mem = _mem(postgres_url, namespace, **{"store.timeout_s": 1.0})
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreError, match=rf"namespace {namespace!r} .*write lock was held by hindsight_lab "
                                             rf"writer pid {holder.pid} .*over 1 s"):
            mem.write("A rule that must wait.", confidence=0.8)
        assert time.monotonic() - t0 < 5
        assert list(mem.search("anything at all").hits) == []  # a search takes no lock
    finally:
        holder.stdin.write("\n"), holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
    assert mem.write("A rule that must wait.", confidence=0.8).action == "created"  # the lock is free again
    mem.close()


def test_a_killed_holder_gives_the_lock_back(postgres_url):
    namespace = _ns()
    holder = _holding(postgres_url, namespace)
    holder.kill(), holder.wait()
    mem = _mem(postgres_url, namespace, **{"store.timeout_s": 10.0})
    assert mem.write("Written after the holder died.", confidence=0.8).action == "created"
    mem.close()


@pytest.mark.slow
def test_a_replay_on_postgres_scores_as_on_chroma(postgres_url, minilm):
    # issue 20's acceptance: the keyword, task-type and trigger paths served from the refreshed in-process indexes,
    # and exact search on a small store, give the Chroma replay's figures exactly (timings aside)
    from hindsight_lab.datasets.registry import resolve
    from hindsight_lab.replay.runner import run_replay

    sample = resolve("tau-bench-airline-sample")
    runs = {name: run_replay(sample, systems=["dense", "bm25", "hindsight"], embedder=minilm, config=cfg).result
            for name, cfg in (("chroma", LabConfig()),
                              ("postgres", LabConfig().with_params({"store.url": postgres_url})))}
    assert runs["postgres"].comparison.figures() == runs["chroma"].comparison.figures()  # every figure, timings aside
    assert runs["postgres"].lift == runs["chroma"].lift
    assert runs["postgres"].mode("repeat").value("hindsight", "ndcg@5") > 0
