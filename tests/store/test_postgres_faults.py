"""Faults of a Postgres store under a running memory (issue 20): the database stopped and started again, and a
writer killed in the middle of its writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import StoreError
from conftest import start_pgserver, stop_pgserver
from support import REPO

pytestmark = pytest.mark.postgres


def _mem(url: str, namespace: str = "faults") -> MemorySystem:
    cfg = LabConfig().with_params({"store.url": url, "store.namespace": namespace, "store.timeout_s": 3,
                                   "store.retries": 1})
    return MemorySystem(cfg, embedder=HashingEmbedder(dim=64)).open()


@pytest.mark.slow
def test_a_restarted_database_gives_clear_errors_then_service_resumes(tmp_path: Path) -> None:
    proc, url = start_pgserver(tmp_path / "data")
    mem = _mem(url)
    try:
        first = mem.write("Call verify_identity before issue_refund", confidence=0.8)
        stop_pgserver(proc)
        t0 = time.monotonic()
        with pytest.raises(StoreError, match=r"store postgresql://.*(unreachable|cannot|failed|no connection)"):
            mem.write("Call lookup_order before cancel_order", confidence=0.8)
        with pytest.raises(StoreError, match=r"store postgresql://"):
            mem.search("verify identity before a refund")
        assert time.monotonic() - t0 < 30  # bounded by store.timeout_s and its retries, not hung
        proc, again = start_pgserver(tmp_path / "data")  # the same folder: the same data, the same socket
        assert again == url
        # the same memory, not reopened, goes on once its pool has reconnected (the pool retries its connections
        # with a backoff, so the first call may still time out; the service is back within seconds)
        deadline, second = time.monotonic() + 30, None
        while second is None:
            try:
                second = mem.write("Call lookup_order before cancel_order", confidence=0.8)
            except StoreError as exc:
                assert time.monotonic() < deadline, f"the service did not resume within 30 s: {exc}"
                time.sleep(0.5)
        found = {h.id for h in mem.search("verify_identity issue_refund lookup_order cancel_order").hits}
        assert {first.record.id, second.record.id} <= found
    finally:
        mem.close()
        stop_pgserver(proc)


_WRITER = textwrap.dedent("""
    import sys
    from hindsight_lab import LabConfig, MemorySystem
    from hindsight_lab.embed import HashingEmbedder
    cfg = LabConfig().with_params({"store.url": sys.argv[1], "store.namespace": "killed"})
    mem = MemorySystem(cfg, embedder=HashingEmbedder(dim=64)).open()
    for i in range(100000):
        mem.write_episodes([{"episode_id": f"ep-{i}-{j}", "instruction": f"task {i} part {j} of the batch",
                             "outcome": "success", "steps": []} for j in range(20)])
        print(i, flush=True)
""")


def test_a_writer_killed_mid_write_leaves_no_half_written_batch(postgres_url) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, postgres_url], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        for _ in range(3):  # a few batches are in
            assert proc.stdout.readline().strip()
        time.sleep(0.05)  # and the next one on its way
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    mem = _mem(postgres_url, "killed")
    ids = [r.source_episode_ids[0] for r in mem.records("episode")]
    batches: dict[str, int] = {}
    for i in ids:
        batch = i.split("-")[1]
        batches[batch] = batches.get(batch, 0) + 1
    assert len(batches) >= 3 and set(batches.values()) == {20}, batches  # each batch whole or not at all
    seq, changes = mem.store.changes_since(0)
    assert {i for i, _ in changes} == {r.id for r in mem.records("episode")}  # the change log says the same
    # the killed writer's lock went with its session: this process writes at once
    assert mem.write("Written after the kill.", confidence=0.8).action == "created"
    mem.close()
