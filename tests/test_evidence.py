"""Later evidence against stored successes (hindsight_lab.memory.evidence): refusals at a step a success passed retire it."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest

from hindsight_lab import Kind, LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.memory.evidence import Contradictions
from hindsight_lab.store.memory import InMemoryStore
from support import REPO, T0

BOOK = ["search_availability", "hold_slot", "confirm_booking"]


def run(eid: str, instruction: str, tools: list[str], *, refused: str | None = None, hour: int = 0,
        cause: str = "strategy") -> dict[str, Any]:
    """A run that called ``tools`` in order; with ``refused`` it stops with an error at that tool (a failure)."""
    steps: list[dict[str, Any]] = []
    for tool in tools:
        steps.append({"type": "tool_call", "name": tool, "arguments": {}})
        if tool == refused:
            steps.append({"type": "tool_result", "content": "", "error": f"{tool} refused"})
            break
        steps.append({"type": "tool_result", "content": "ok"})
    return {"episode_id": eid, "instruction": instruction, "steps": steps,
            "outcome": "failure" if refused else "success", "failure_cause": cause if refused else None,
            "started_at": (T0 + timedelta(hours=hour)).isoformat()}


def make(**params: Any) -> MemorySystem:
    return MemorySystem(LabConfig().with_params(params), store=InMemoryStore(), embedder=HashingEmbedder(dim=256),
                        clock=lambda: T0)


def active_ids(mem: MemorySystem) -> set[str]:
    return {r.source_episode_ids[0] for r in mem.records(Kind.EPISODE)}


def test_a_run_of_refusals_at_a_passed_step_retires_the_successes_that_passed_it():
    mem = make()
    s1 = mem.write_episode(run("s1", "book a table for two", BOOK, hour=0))
    s2 = mem.write_episode(run("s2", "book a haircut on Monday", BOOK, hour=1))
    other = mem.write_episode(run("r1", "move my booking", ["lookup_booking", "hold_slot", "move_booking"], hour=2))
    mem.write_episode(run("x", "book a court", ["search_availability", "confirm_booking"], refused="confirm_booking",
                          hour=3))  # another order: it never repeated what s1 and s2 did
    refusals = [mem.write_episode(run(f"f{i}", "book a massage", BOOK, refused="hold_slot", hour=4 + i))
                for i in range(2)]
    # two passes and no refusal before: two refusals in a row come by chance with p = (1/4)^2 > 0.05 / 2
    assert {"s1", "s2"} <= active_ids(mem)
    refusals.append(mem.write_episode(run("f2", "book a room", BOOK, refused="hold_slot", hour=6)))
    assert not {"s1", "s2"} & active_ids(mem) and {"r1", "x", "f0", "f1", "f2"} <= active_ids(mem)
    archived = {r.id: r for r in mem.records(archived=True)}
    assert set(archived) == {s1.id, s2.id}
    assert all(r.archived and r.attrs["retired_by"] == [f.id for f in refusals] for r in archived.values())
    hits = mem.search("book a table for two", top_k=10).hits
    assert hits and {h.id for h in hits}.isdisjoint(archived)
    assert mem.get(other.id).archived is False


def test_a_step_that_refused_before_needs_a_longer_run_and_only_refusals_count():
    mem = make()
    mem.write_episode(run("s1", "book a table", BOOK, hour=0))
    mem.write_episode(run("f1", "book a room", BOOK, refused="hold_slot", hour=1))
    mem.write_episode(run("s2", "book a court", BOOK, hour=2))  # passed hold_slot again: the count restarts
    # now 2 passes and 1 refusal before: rate 2/5, so a run needs 0.4^r < 0.05 / 3, r = 5
    mem.write_episode(run("o1", "book a spa", BOOK, refused="hold_slot", hour=3, cause="external"))  # an outage
    mem.write_episode(run("o2", "book a bike", BOOK, refused="search_availability", hour=4))  # read-only step
    no_error = run("o3", "book a boat", BOOK, hour=5)
    no_error["outcome"] = "failure"  # failed without an error step: nothing to locate
    mem.write_episode(no_error)
    for i in range(4):
        mem.write_episode(run(f"g{i}", "book a desk", BOOK, refused="hold_slot", hour=6 + i))
        assert {"s1", "s2"} <= active_ids(mem)
    mem.write_episode(run("g4", "book a car", BOOK, refused="hold_slot", hour=10))
    assert not {"s1", "s2"} & active_ids(mem)


def test_retire_after_zero_keeps_every_success():
    mem = make(**{"episode.retire_contradicted_after": 0})
    mem.write_episode(run("s1", "book a table", BOOK, hour=0))
    for i in range(4):
        mem.write_episode(run(f"f{i}", "book a room", BOOK, refused="hold_slot", hour=i + 1))
    assert "s1" in active_ids(mem) and not mem.records(archived=True)


def test_the_ledger_retires_reinstates_and_forgets():
    led = Contradictions(retire_after=2)

    def retire(*args, **kw):
        return led.observe(*args, **kw).retire

    passes = [f"p{i:02d}" for i in range(16)]
    for pid in passes:  # 16 clean passes: the step is reliable, 2 refusals in a row are news
        assert retire(pid, ("a", "b"), "success", None) == []
    assert retire("f1", ("a", "b"), "failure", 1) == []
    assert retire("f2", ("a", "b"), "failure", 1) == passes
    assert led.refusals_of["p00"] == ("f1", "f2")
    assert led.observe("lucky", ("a", "b"), "success", None).reinstate == passes
    assert led.refusals_of == {}
    led.remove("p00")  # deleted: it is never brought back
    for i in range(3):  # the step refused twice before: 3 refusals in a row are not enough now
        assert retire(f"g{i}", ("a", "b"), "failure", 1) == []
    assert retire("g3", ("a", "b"), "failure", 1) == ["lucky", *passes[1:]]
    assert led.observe("s3", ("a", "b"), "success", None).reinstate == ["lucky", *passes[1:]]
    # a success that answered with an error at a step did not pass it
    assert led.observe("s4", ("x", "y"), "success", None, errors_at=frozenset({1})) == ([], [])
    assert [retire(f"h{i}", ("x", "y"), "failure", 1) for i in range(5)] == [[]] * 5
    assert retire("h5", ("x", "z"), "failure", 0) == []  # refused at x, which s4 passed
    assert retire("h6", ("x",), "failure", 0) == []
    assert retire("h7", ("x", "q"), "failure", 0) == ["s4"]
    assert Contradictions(retire_after=0).observe("f", ("a",), "failure", 0) == ([], [])


def test_a_later_success_at_the_refused_step_brings_the_retired_back():
    mem = make()
    s1 = mem.write_episode(run("s1", "book a table", BOOK, hour=0))
    for i in range(3):
        mem.write_episode(run(f"f{i}", "book a room", BOOK, refused="hold_slot", hour=1 + i))
    assert mem.get(s1.id).archived
    s2 = mem.write_episode(run("s2", "book a court", BOOK, hour=4))  # hold_slot works again
    back = mem.get(s1.id)
    assert not back.archived and "retired_by" not in back.attrs and back.attrs["reinstated_by"] == s2.id
    assert {"s1", "s2"} <= active_ids(mem) and not mem.records(archived=True)


@pytest.mark.parametrize("method", ["knn", "logistic"])
def test_a_retired_success_still_votes_on_the_task_type(method):
    """The refused runs stopped at hold_slot (type ``hold_slot``) and, learning from successes only, do not vote;
    the retired bookings still say how a booking is worded."""
    mem = make(**{"retrieval.classifier.method": method, "retrieval.classifier.learn_from": "successes",
                  "retrieval.classifier.min_votes": 1, "retrieval.classifier.min_share": 0.0})
    for i, text in enumerate(["book a table for two tonight", "book a table for six tonight"]):
        mem.write_episode(run(f"s{i}", text, BOOK, hour=i))
    mem.write_episode(run("r", "refund the damaged blender", ["lookup_order", "issue_refund"], hour=2))
    assert mem.search("book a table for four tonight").task_type == "confirm_booking+hold_slot"
    for i in range(3):
        mem.write_episode(run(f"f{i}", f"book a table for {i + 7} tonight", BOOK, refused="hold_slot", hour=3 + i))
    assert not {"s0", "s1"} & active_ids(mem)
    assert mem.search("book a table for four tonight").task_type == "confirm_booking+hold_slot"


def test_the_evidence_is_rebuilt_when_a_store_is_opened(tmp_path):
    cfg = LabConfig().with_params({"store.path": str(tmp_path / "store"), "retrieval.classifier.min_votes": 1,
                                   "retrieval.classifier.min_share": 0.0,
                                   "retrieval.classifier.learn_from": "successes"})
    emb = HashingEmbedder(dim=256)

    def reopened() -> MemorySystem:
        return MemorySystem(cfg, embedder=emb, clock=lambda: T0)

    with reopened() as mem:
        s = mem.write_episode(run("s", "book a table for two tonight", BOOK, hour=0))
        f1 = mem.write_episode(run("f1", "book a table for three tonight", BOOK, refused="hold_slot", hour=1))
    with reopened() as mem:  # the count so far comes back from the store
        f2 = mem.write_episode(run("f2", "book a table for five tonight", BOOK, refused="hold_slot", hour=2))
        assert not mem.get(s.id).archived
        f3 = mem.write_episode(run("f3", "book a table for nine tonight", BOOK, refused="hold_slot", hour=3))
        assert mem.get(s.id).archived and mem.get(s.id).attrs["retired_by"] == [f1.id, f2.id, f3.id]
    with reopened() as mem:  # still retired, still votes, and still comes back when the step works again
        assert "s" not in active_ids(mem)
        assert mem.search("book a table for four tonight").task_type == "confirm_booking+hold_slot"
        mem.write_episode(run("s2", "book a table for six tonight", BOOK, hour=4))
        assert not mem.get(s.id).archived


def test_the_evidence_is_keyed_again_by_the_hashes_of_the_process_that_reads_it():
    """String hashes differ between processes: steps saved by one are found by another."""
    script = (
        "import pickle, sys\n"
        "from hindsight_lab.memory.evidence import Contradictions\n"
        "c = Contradictions(retire_after=2, significance=0.5)\n"
        "c.observe('s1', ('lookup', 'refund'), 'success', None)\n"
        "c.observe('s2', ('lookup', 'refund'), 'success', None)\n"
        "sys.stdout.buffer.write(pickle.dumps(c))\n")
    saved = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "1", "PYTHONPATH": str(REPO)}).stdout
    restored = pickle.loads(saved)
    verdicts = [restored.observe(f"f{i}", ("lookup", "refund"), "failure", 1) for i in range(4)]
    assert sorted(r for v in verdicts for r in v.retire) == ["s1", "s2"]  # the refusals found the saved step
