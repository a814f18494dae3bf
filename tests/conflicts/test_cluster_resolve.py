"""Clustering and pairing (hand-made vectors), resolution and merge rules (hand-made records)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

from hindsight_lab.config import ConflictsConfig, LabConfig
from hindsight_lab.conflicts.cluster import candidate_pairs, cluster_embeddings
from hindsight_lab.conflicts.resolve import decide, later_hits, strength, survivor
from hindsight_lab.conflicts.scan import scan
from hindsight_lab.types import Kind, MemoryRecord
from support import T0


def _unit(deg: float, z: float = 0.0) -> list[float]:
    r = np.radians(deg)
    v = np.array([np.cos(r), np.sin(r), z])
    return list(v / np.linalg.norm(v))


@pytest.fixture
def points() -> np.ndarray:
    # two tight groups of three, and a loner at 45°: closest to group B (20–22°) but in no group
    return np.array([_unit(0), _unit(1), _unit(2), _unit(20), _unit(21), _unit(22), _unit(45)], dtype=np.float32)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_hdbscan_finds_the_groups_and_labels_the_loner_noise(points, metric):
    labels = cluster_embeddings(points, metric=metric)
    assert labels[0] == labels[1] == labels[2] != labels[3] == labels[4] == labels[5]
    assert labels[6] == -1


def test_noise_is_still_paired_with_its_nearest_neighbours(points):
    labels = cluster_embeddings(points)
    pairs = {(p.i, p.j): p for p in candidate_pairs(points, labels, neighbours=1, min_similarity=0.5)}
    loner = [p for p in pairs.values() if 6 in (p.i, p.j)]
    assert [(p.i, p.j, p.source) for p in loner] == [(5, 6, "noise")]  # 22° is nearest to 45°
    assert pairs[(0, 1)].source == "cluster" and not any(p.i < 3 <= p.j for p in pairs.values() if p.j != 6)
    # negative control: without the neighbour check the loner escapes every comparison
    without = candidate_pairs(points, labels, neighbours=0, min_similarity=0.5)
    assert not any(6 in (p.i, p.j) for p in without)


def test_pairs_respect_min_similarity_and_groups(points):
    labels = cluster_embeddings(points)
    assert not candidate_pairs(points, labels, neighbours=3, min_similarity=0.9999)
    groups = np.array([0, 1, 0, 2, 2, 2, 0])  # row 1 is another task type than rows 0 and 2
    pairs = {(p.i, p.j) for p in candidate_pairs(points, labels, neighbours=3, min_similarity=0.5, groups=groups)}
    assert (0, 2) in pairs and (0, 1) not in pairs and (1, 2) not in pairs
    # rows 0 and 1 guard the same step: compared whatever their task types; row 2 guards another
    steps = np.array([5, 5, 7, -1, -1, -1, -1])
    stepped = {(p.i, p.j) for p in candidate_pairs(points, labels, neighbours=3, min_similarity=0.5, groups=groups,
                                                   steps=steps)}
    assert (0, 1) in stepped and (1, 2) not in stepped and (0, 2) in stepped


def test_too_few_rules_are_all_noise():
    assert cluster_embeddings(np.ones((1, 3))).tolist() == [-1]
    assert candidate_pairs(np.ones((1, 3)), np.array([-1])) == []


def _rule(rid: str, conf: float, hits: int = 1, day: int = 0, kind: Kind = Kind.RULE, **kw) -> MemoryRecord:
    return MemoryRecord(rid, kind, kw.pop("content", rid), confidence=conf, hit_count=hits,
                        created_at=T0 + timedelta(days=day), last_confirmed_at=T0 + timedelta(days=day), **kw)


def test_strength_and_later_hits():
    assert strength(_rule("a", 0.8, hits=3)) == pytest.approx(0.8 * 3 / 4)
    assert strength(_rule("a", 0.8, hits=3), 0.0) == pytest.approx(0.8)
    assert strength(_rule("a", 0.8, hits=3), 1.0, against=2) == pytest.approx(0.8 * 3 / 6)
    old, new = _rule("old", 0.7, day=0), _rule("new", 0.7, hits=4, day=5)
    assert later_hits(new, old) == 4 and later_hits(old, new) == 0


def test_decide_supersedes_only_a_clearly_stronger_newer_rule():
    cfg = ConflictsConfig()
    assert decide(_rule("old", 0.6), _rule("new", 0.9, hits=3, day=5), cfg) == ("supersede", "old", "new")
    # as strong but not newer (same day): flag
    assert decide(_rule("a", 0.6), _rule("b", 0.9, hits=3), cfg)[0] == "flag"
    # newer but weaker than a well-confirmed rule: flag, never supersede the old one
    assert decide(_rule("old", 0.9, hits=6), _rule("new", 0.7, day=5), cfg)[0] == "flag"
    # the newer rule must also be newer by more than min_newer_days
    late = ConflictsConfig(min_newer_days=10)
    assert decide(_rule("old", 0.6), _rule("new", 0.9, hits=3, day=5), late)[0] == "flag"


def test_merge_unions_provenance_and_keeps_the_later_confirmation():
    a = _rule("a", 0.8, hits=2, day=1, source_episode_ids=("e1", "e2"), counter_examples=("x",))
    b = _rule("b", 0.5, hits=1, day=4, source_episode_ids=("e2", "e3"), counter_examples=("y",), kind=Kind.CANDIDATE)
    assert survivor([b, a]).id == "a"  # an L3 rule first
    m = a.merged_with(b)  # maintenance: the one merge rule, confirming nothing
    assert m.hit_count == 3 and m.confidence == pytest.approx((0.8 * 2 + 0.5) / 3)
    assert m.source_episode_ids == ("e1", "e2", "e3") and m.counter_examples == ("x", "y")
    assert m.last_confirmed_at == T0 + timedelta(days=4) and m.id == "a"
    # a write confirms: its time becomes last_confirmed_at and decay starts again
    aged = replace(a, decay_steps=2)
    assert aged.merged_with(b).decay_steps == 2
    confirmed = aged.merged_with(b, confirmed_at=T0 + timedelta(days=9))
    assert confirmed.last_confirmed_at == T0 + timedelta(days=9) and confirmed.decay_steps == 0


def test_scan_plans_merges_supersessions_and_flags():
    recs = [_rule("r-old", 0.6, content="Call lookup_order before issue_refund."),
            _rule("r-new", 0.9, hits=4, day=5, content="Call issue_refund first, then lookup_order."),
            _rule("r-dup", 0.7, day=1, kind=Kind.CANDIDATE, content="Call lookup_order before issue_refund, always."),
            _rule("r-other", 0.7, content="Escalate angry customers to a human agent.")]
    emb = np.array([_unit(0), _unit(3), _unit(1), _unit(80)], dtype=np.float32)
    plan = scan(recs, ["rule", "rule", "candidate", "rule"], emb, LabConfig())
    assert [(m.record.id, m.losers) for m in plan.merges] == [("r-old", ("r-dup",))]
    assert plan.merges[0].record.hit_count == 2 and plan.merges[0].record.attrs["merged_from"] == ["r-dup"]
    # the merged old rule (2 hits) still loses to the newer rule confirmed 4 times
    assert [(s.old, s.new, s.verdict.kind) for s in plan.supersessions] == [("r-old", "r-new", "order")]
    assert plan.flags == []
    assert set(plan.pairs_frame(conflicts_only=True)["action"]) >= {"r-old superseded by r-new"}
    assert plan.summary()["superseded"] == 1 and plan.clusters_frame()["size"].sum() == 4
    # negative control: with merging off nothing is merged, and the candidate contradicts the new rule too
    off = scan(recs, ["rule", "rule", "candidate", "rule"], emb,
               LabConfig().with_params({"conflicts.merge_duplicates": False}))
    assert off.merges == [] and {s.old for s in off.supersessions} == {"r-old", "r-dup"}
