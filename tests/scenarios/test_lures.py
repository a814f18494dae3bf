"""The lexical-lure evaluation: verdicts per injected list, the summary, and a measured run on real Chroma with the
real MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.datasets.synthetic import generate
from hindsight_lab.scenarios.lures import LureReport, classify_injected, evaluate_lures, lure_pairs
from hindsight_lab.replay.systems import Injected


def test_classify_injected_names_what_ranked_first():
    pair = lure_pairs(generate("lures", n=1, seed=0))[0]
    types = {e.episode_id: e.task_type for e in (*pair.memories, pair.query)}
    same = next(e for e in pair.background if e.task_type == pair.query.task_type)
    other = next(e for e in pair.background if e.task_type != pair.query.task_type)

    def inj(*items):
        return [Injected(f"m{i}", kind, srcs, 10) for i, (kind, srcs) in enumerate(items)]

    right, lure = (pair.right.episode_id,), (pair.lure.episode_id,)
    c = classify_injected(inj(("episode", right), ("episode", lure)), pair, types)
    assert (c["first"], c["top1"], c["right_rank"], c["lure_rank"]) == ("right", "right", 1, 2)
    c = classify_injected(inj(("rule", (same.episode_id, pair.right.episode_id)), ("episode", lure)), pair, types)
    assert (c["first"], c["top1"], c["top1_kind"]) == ("lure", "same_type", "rule")
    # a rule that merely cites the right memory among others is not the right memory itself
    c = classify_injected(inj(("candidate", (other.episode_id, pair.right.episode_id, pair.lure.episode_id))),
                          pair, types)
    assert (c["first"], c["top1"]) == ("neither", "other_type")
    assert classify_injected([], pair, types)["top1"] == "empty"
    c = classify_injected(inj(("episode", (same.episode_id,)), ("episode", right)), pair, types)
    assert (c["first"], c["top1"], c["right_rank"], c["lure_rank"]) == ("right", "same_type", 2, None)
    # intent: a stored episode of the query's type before the lure counts, one of another type does not
    c = classify_injected(inj(("episode", (same.episode_id,)), ("episode", lure)), pair, types)
    assert (c["first"], c["intent_first"]) == ("lure", "intent")
    c = classify_injected(inj(("episode", (other.episode_id,)), ("episode", lure), ("episode", right)), pair, types)
    assert (c["first"], c["intent_first"]) == ("lure", "lure")


def test_lure_summary_counts_only_pairs_where_bm25_was_lured():
    rows = [("p1", "bm25", "lure", "lure"), ("p1", "hindsight", "right", "right"),
            ("p2", "bm25", "lure", "same_type"), ("p2", "hindsight", "lure", "lure"),
            ("p3", "bm25", "right", "right"), ("p3", "hindsight", "right", "same_type")]
    report = LureReport([{"pair": p, "system": s, "first": f, "top1": t} for p, s, f, t in rows])
    s = report.summary()
    assert s["pairs"] == 3 and s["bm25_lure_first"] == 2 and s["bm25_lure_top1"] == 1
    assert s["hindsight_right_first"] == 0.5 and s["hindsight_lure_first"] == 0.5
    assert s["hindsight_top1_right"] == 1.0 and s["hindsight_right_first_all_pairs"] == pytest.approx(2 / 3)


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lure_minilm(minilm):
    """The session's MiniLM behind one cache of vectors for this module's evaluations: they replay the same
    generated pairs under several configs, and a vector depends only on its text."""
    from hindsight_lab.embed import PrefetchedEmbedder

    return PrefetchedEmbedder(minilm, [])


@pytest.mark.slow
def test_lure_evaluation_on_more_than_fifty_pairs(lure_minilm):
    """The article's lexical-lure case on real Chroma with the real MiniLM, one fresh store per pair, with the
    earlier default (``experiments/configs/knn-default.yaml``), with ``experiments/configs/lure-resistant.yaml`` and
    with today's default.

    Measured when written (seed 0, 52 pairs): bm25 is lured on 52/52. With the ``knn`` default hindsight injects the
    right memory first on 0/52: its task-type vote mostly abstains (the nearest instructions by MiniLM are the
    lure's and its neighbours'), and even with the task type given, its weights (semantic 0.5 + lexical 0.2
    against task_type 0.2) keep the lure first. The lure-resistant config (the embedding classifier, which also
    knows each task type by its tools' words, answering from a probability of 0.3, and task_type 0.6) injects it
    first on 46/52, today's default (that, learnt from successes, with intent and instance-blind typing) on 47/52.
    The assertions leave a margin below those figures; the project's target is 90 % (README)."""
    pairs = lure_pairs(generate("lures", n=52, seed=0))
    resistant = LabConfig.from_yaml(REPO / "experiments" / "configs" / "lure-resistant.yaml")
    summaries = {}
    # 52 fresh Chroma stores per config, in memory
    knn = LabConfig.from_yaml(REPO / "experiments" / "configs" / "knn-default.yaml")
    for name, cfg in (("knn-default", knn), ("lure-resistant", resistant), ("default", LabConfig())):
        report = evaluate_lures(pairs, embedder=lure_minilm, config=cfg)
        s = summaries[name] = report.summary()
        assert s["pairs"] == 52 and s["bm25_lure_first"] >= 50
        lured = [r["pair"] for r in report.rows if r["system"] == "bm25" and r["first"] == "lure"]
        hs = report.first("hindsight")
        assert s["hindsight_right_first"] == sum(hs[p] == "right" for p in lured) / len(lured)
        assert 0.0 <= s["hindsight_right_first"] + s["hindsight_lure_first"] <= 1.0
        for r in report.rows:  # ranks agree with the verdicts
            if r["first"] == "right":
                assert r["right_rank"] is not None and (r["lure_rank"] is None or r["right_rank"] < r["lure_rank"])
            if r["first"] == "lure":
                assert r["lure_rank"] is not None and (r["right_rank"] is None or r["lure_rank"] < r["right_rank"])
    assert summaries["knn-default"]["hindsight_right_first"] <= 0.1
    assert summaries["lure-resistant"]["hindsight_right_first"] >= 0.8
    assert summaries["default"]["hindsight_right_first"] >= 0.85
    print(f"\nlure evaluation: {summaries}")


@pytest.mark.slow
def test_instance_blind_typing_puts_the_right_memory_first_on_more_lures(lure_minilm):
    """``lure-resistant-instance-blind.yaml`` is ``lure-resistant-no-conflict.yaml`` with the query typed without
    the stored requests about its instance that ask for something else (the lure, among them).

    Measured when written (seed 0, 60 pairs, bm25 lured on all): the right memory first on 48/60 without, 53/60
    with (README, "Lexical lures"); the assertion leaves one pair of margin."""
    pairs = lure_pairs(generate("lures", n=60, seed=0))
    right_first = {}
    for name in ("lure-resistant-no-conflict", "lure-resistant-instance-blind"):
        cfg = LabConfig.from_yaml(REPO / "experiments" / "configs" / f"{name}.yaml")
        right_first[name] = evaluate_lures(pairs, embedder=lure_minilm, config=cfg).summary()["hindsight_right_first"]
    assert LabConfig.from_yaml(REPO / "experiments" / "configs" / "lure-resistant-instance-blind.yaml").with_params(
        {"retrieval.classifier.instance_blind": False}) == LabConfig.from_yaml(
        REPO / "experiments" / "configs" / "lure-resistant-no-conflict.yaml")  # the one field apart
    assert right_first["lure-resistant-instance-blind"] >= right_first["lure-resistant-no-conflict"] + 3 / 60
    assert right_first["lure-resistant-instance-blind"] >= 52 / 60
    print(f"\nright memory first: {right_first}")


def test_lures_command_prints_one_row_per_seed_and_system_and_the_mean(tmp_path, capsys):
    from hindsight_lab.cli import main

    out = tmp_path / "lures.csv"
    assert main(["lures", "--systems", "dense,hindsight", "--seeds", "0,1", "--pairs", "3", "--set",
                 "embedder.model=hashing-64", "--out", str(out)]) == 0
    import pandas as pd

    table = pd.read_csv(out)
    assert list(table["system"]) == ["dense", "hindsight"] * 3
    assert list(table["seed"].astype(str)) == ["0", "0", "1", "1", "mean", "mean"]
    per_seed = table[table["seed"] != "mean"]
    assert (per_seed["pairs"] == 3).all() and (per_seed["lured"] <= 3).all()
    shares = per_seed[["right_first", "lure_first"]].dropna()
    assert ((shares >= 0) & (shares <= 1)).all().all() and (shares.sum(axis=1) <= 1 + 1e-9).all()
    mean = table[table["seed"] == "mean"].set_index("system")
    for system in ("dense", "hindsight"):
        assert mean.loc[system, "pairs"] == 3
        assert mean.loc[system, "right_first_all_pairs"] == pytest.approx(
            per_seed[per_seed.system == system]["right_first_all_pairs"].mean())
    assert "right_first" in capsys.readouterr().out
