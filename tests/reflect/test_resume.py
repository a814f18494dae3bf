"""`reflect` is idempotent: a run killed anywhere and run again on the same store ends in the same store as one that
was never interrupted (record ids aside).

Regression test (issue 16): `hindsight-lab reflect <tau-bench dev> --store S` killed midway, then run again, ended
with 6 (or 4) candidates instead of 17, because the episodes already written counted as earlier failures
("repeat_failure" 81 instead of 66)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.datasets import load
from hindsight_lab.datasets.registry import resolve

from support import shared_dataset

_ID_ATTRS = ("superseded_by", "supersedes", "conflicts_with", "merged_into", "retired_by", "reinstated_by")


def snapshot(store: Path, embedder: Any = None) -> list[str]:
    """Every record of every bucket, ids aside, as sorted JSON lines."""
    cfg = LabConfig().with_params({"store.path": str(store), "store.read_only": True})
    with MemorySystem(cfg, embedder=embedder) as mem:
        rows = []
        for rec in mem.records() + mem.records(archived=True):
            attrs = {k: v for k, v in (rec.attrs or {}).items() if k not in _ID_ATTRS}
            rows.append(json.dumps({
                "kind": rec.kind.value, "layer": rec.layer.value, "content": rec.content, "key": rec.key,
                "task_type": rec.task_type, "confidence": round(rec.confidence, 9), "hit_count": rec.hit_count,
                "outcome": rec.outcome, "task_id": rec.task_id, "sources": sorted(rec.source_episode_ids),
                "counter_examples": sorted(rec.counter_examples), "archived": rec.archived,
                "created_at": str(rec.created_at), "last_confirmed_at": str(rec.last_confirmed_at), "attrs": attrs},
                sort_keys=True, default=str))
    return sorted(rows)


def _reflect(store: Path, episodes: list, minilm: Any, **patches: Any) -> None:
    cfg = LabConfig().with_params({"store.path": str(store)})
    mem = MemorySystem(cfg, embedder=minilm).open()
    try:
        for name, fn in patches.items():  # "a.b": attribute b of mem.a
            *owner_path, attr = name.split(".")
            owner = mem
            for part in owner_path:
                owner = getattr(owner, part)
            setattr(owner, attr, fn(mem, getattr(owner, attr)))
        mem.reflect_many(episodes)
    finally:
        mem.close()


class Crash(Exception):
    pass


def _after(n: int):
    """A patch whose wrapped method raises on its n-th call (a process dying there)."""
    def patch(mem: Any, method: Any) -> Any:
        calls = {"n": 0}

        def wrapped(*args: Any, **kw: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == n:
                raise Crash(f"killed at call {n}")
            return method(*args, **kw)
        return wrapped
    return patch


@pytest.fixture(scope="module")
def sample() -> list:
    return load(resolve("tau-bench-airline-sample")[0])[0]


@pytest.fixture(scope="module")
def uninterrupted(sample, minilm, tmp_path_factory) -> list[str]:
    store = tmp_path_factory.mktemp("whole") / "store"
    _reflect(store, sample, minilm)
    rows = snapshot(store, minilm)
    assert sum('"kind": "candidate"' in r for r in rows) >= 2  # the sample does reflect
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("where, patch", [
    ("while writing the episode records", {"_writes.episode_records": _after(7)}),
    ("before the first candidate", {"write": _after(1)}),
    ("between two candidates", {"write": _after(2)}),
])
def test_a_killed_run_run_again_ends_as_an_uninterrupted_one(where, patch, sample, minilm, uninterrupted,
                                                             tmp_path) -> None:
    store = tmp_path / "store"
    with pytest.raises(Crash):
        _reflect(store, sample, minilm, **patch)
    assert snapshot(store, minilm) != uninterrupted  # it did stop partway
    _reflect(store, sample, minilm)
    assert snapshot(store, minilm) == uninterrupted, where
    _reflect(store, sample, minilm)  # and a third run changes nothing
    assert snapshot(store, minilm) == uninterrupted


def test_a_candidate_written_before_the_kill_is_not_written_twice(sample, minilm, uninterrupted, tmp_path) -> None:
    # The window between a candidate's write and its episode's "done" mark: run again, the candidate must not be
    # confirmed a second time by the same episode.
    def crash_after_write(mem: Any, method: Any) -> Any:
        def wrapped(*args: Any, **kw: Any) -> Any:
            result = method(*args, **kw)
            raise Crash("killed right after a candidate write")
        return wrapped

    store = tmp_path / "store"
    with pytest.raises(Crash):
        _reflect(store, sample, minilm, write=crash_after_write)
    _reflect(store, sample, minilm)
    assert snapshot(store, minilm) == uninterrupted


@pytest.mark.slow
def test_sigkill_at_several_points_of_a_real_reflect_run(tmp_path, minilm) -> None:
    data = shared_dataset("tau-bench/gpt-4o-airline.dev.json")
    cmd = [sys.executable, "-m", "hindsight_lab.cli", "reflect", str(data), "--limit-tasks", "15", "--store"]
    whole = tmp_path / "whole"
    started = time.monotonic()
    subprocess.run([*cmd, str(whole)], check=True, capture_output=True, timeout=600)
    duration = time.monotonic() - started
    expected = snapshot(whole, minilm)
    for k, share in enumerate((0.45, 0.7, 0.9)):
        store = tmp_path / f"killed-{k}"
        proc = subprocess.Popen([*cmd, str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=duration * share)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        subprocess.run([*cmd, str(store)], check=True, capture_output=True, timeout=600)
        assert snapshot(store, minilm) == expected, f"killed at {share:.0%} of the run"


# ------------------------------------------------------------------ SIGKILL at a chosen step (issue 49)
# Regression test: the timed kills above land wherever the clock says; these land inside a named step of the window
# where `reflect` writes candidate rules (hindsight_lab.crashpoints), in a process of their own, with SIGKILL.
_ARMED_REFLECT = """
import sys
from hindsight_lab import crashpoints
from hindsight_lab.cli import main
point, after, *argv = sys.argv[1:]
if point != "-":
    crashpoints.arm(point, after=int(after))
sys.exit(main(argv))
"""


def _promoting_traces(path: Path) -> Path:
    """Two successes, then three failures of different tasks with one lesson: created, merged, merged and promoted
    (every crash point is reached: tests/reflect/test_pipeline.py builds the same history)."""
    from datetime import timedelta

    from support import T0

    def ep(eid: str, tools: list[str], outcome: str = "success", error_at: int | None = None, hours: int = 0):
        steps: list[dict] = []
        for i, tool in enumerate(tools):
            steps.append({"type": "tool_call", "name": tool, "arguments": {"order": f"A-{eid}"}})
            steps.append({"type": "tool_result", "content": "ok" if i != error_at else "",
                          "error": "order already shipped" if i == error_at else None})
        return {"episode_id": eid, "task_id": eid, "instruction": f"Please cancel order {eid}", "steps": steps,
                "outcome": outcome, "failure_cause": "strategy" if outcome == "failure" else None,
                "started_at": (T0 + timedelta(hours=hours)).isoformat()}

    rows = [ep(f"s{i}", ["get_order", "cancel_order"], hours=i) for i in range(2)]
    rows += [ep(f"f{i}", ["cancel_order"], "failure", 0, hours=10 + 24 * 8 * i) for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _armed_reflect(point: str, after: int, traces: Path, store: Path) -> subprocess.CompletedProcess:
    argv = ["reflect", str(traces), "--store", str(store), "--set", "embedder.model=hashing-256",
            "--set", "promotion.verify=false"]
    return subprocess.run([sys.executable, "-c", _ARMED_REFLECT, point, str(after), *argv], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_sigkill_at_each_step_of_the_candidate_writes_then_a_rerun_ends_as_an_uninterrupted_run(tmp_path) -> None:
    from hindsight_lab.crashpoints import POINTS
    from hindsight_lab.embed import HashingEmbedder

    emb = HashingEmbedder(dim=256)
    traces = _promoting_traces(tmp_path / "promoting.jsonl")
    whole = tmp_path / "whole"
    done = _armed_reflect("-", 1, traces, whole)
    assert done.returncode == 0, done.stderr
    assert "promotions 1" in done.stdout  # the history does reach the promotion step
    expected = snapshot(whole, emb)
    cases = [("reflect.episode_written", 4), ("reflect.candidate_written", 1), ("reflect.candidate_merged", 1),
             ("reflect.candidate_merged", 2), ("reflect.rule_promoted", 1), ("reflect.episode_settled", 2)]
    assert {p for p, _ in cases} == set(POINTS)
    for point, after in cases:
        store = tmp_path / f"{point}-{after}"
        killed = _armed_reflect(point, after, traces, store)
        assert killed.returncode == -signal.SIGKILL, (point, after, killed.stderr[-2000:])
        assert snapshot(store, emb) != expected, f"{point} #{after}: the kill came after the last write"
        again = _armed_reflect("-", 1, traces, store)
        assert again.returncode == 0, again.stderr
        assert snapshot(store, emb) == expected, f"killed at {point} #{after}, then run again"
