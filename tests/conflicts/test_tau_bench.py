"""The conflict pass on the candidate rules the heuristic reflector proposes over the tau-bench dev data (real
traces, the real MiniLM; the dict-backed store, as persistence is not under test here)."""

from __future__ import annotations

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.conflicts.scan import read_store, scan
from hindsight_lab.datasets import load
from hindsight_lab.store.memory import InMemoryStore
from hindsight_lab.trace.checks import Check
from support import shared_dataset


@pytest.mark.slow
def test_tau_bench_rules_cluster_and_contradictions_are_found(minilm):
    episodes, _ = load(shared_dataset("tau-bench/gpt-4o-airline.dev.json"))
    mem = MemorySystem(LabConfig(), store=InMemoryStore(), embedder=minilm).open()
    mem.reflect_many(episodes)
    plan = scan(*read_store(mem.store), mem.config_)
    s = plan.summary()
    conflicts = plan.pairs_frame(conflicts_only=True)
    print(f"\ntau-bench dev: {s['records']} rules/candidates, {s['clusters']} clusters, {s['noise']} noise, "
          f"{s['pairs']} pairs compared, {s['conflicts']} contradicting, {s['superseded']} to supersede, "
          f"{s['flagged']} to flag")
    for row in conflicts.head(2).itertuples():
        print(f"  [{row.kind}] {row.rule_a}\n     vs {row.rule_b}\n     -> {row.action or 'flagged'} ({row.reason})")
    assert s["records"] >= 10 and s["clusters"] >= 2
    assert s["conflicts"] >= 1 and s["superseded"] + s["flagged"] >= 1
    # every contradiction is between rules of one task type or guarding one step, and about the order of real
    # airline tools
    for p in (p for p in plan.pairs if p.verdict.conflict):
        a, b = plan.record(p.a), plan.record(p.b)
        step_a, step_b = (Check.of((r.attrs or {}).get("check")) for r in (a, b))
        assert a.task_type == b.task_type or (step_a and step_b and step_a.target == step_b.target)
    assert set(conflicts["kind"]) <= {"order", "negation", "tool", "quantity"}
