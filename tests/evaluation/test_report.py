"""The typed evaluation core: compare() scores every mode alike, metrics.json is versioned and the previous layout
still loads (the replays kept in experiments/results/ are version 1)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from hindsight_lab.evaluation import (SCHEMA_VERSION, Comparison, ModeReport, NoQueriesError, ReplayMetrics, compare,
                                      load_metrics)
from hindsight_lab.metrics import Judgements
from hindsight_lab.metrics.modes import MODES, judge_mode
from hindsight_lab.metrics.judging import JudgedEpisode

from support import REPO

KEPT = REPO / "experiments" / "results"


def _hit(source: str) -> NS:
    return NS(memory_id=f"m-{source}", source_episode_ids=(source,), kind="episode", tokens=10)


def _queries() -> tuple[list[NS], dict[str, Judgements]]:
    """Four runs of two tasks of one type: a failure then a success of t1, a success of t2, a success of t1."""
    eps = [JudgedEpisode("a", "t1", "refund", None, 0, "failure"), JudgedEpisode("b", "t2", "refund", None, 1, "success"),
           JudgedEpisode("c", "t1", "refund", None, 2, "success"), JudgedEpisode("d", "t1", "refund", None, 3, "success")]
    injected = {"good": {"b": [_hit("a")], "c": [_hit("a")], "d": [_hit("c"), _hit("a")]},
                "poor": {"b": [], "c": [_hit("b")], "d": [_hit("b")]}}
    queries = [NS(system=s, query_id=q, order=i, injected=inj, stored=None, latency_s=0.001 * i,
                  at=datetime(2024, 1, 1, i), group=q if q == "b" else "t1")
               for s, per in injected.items() for i, (q, inj) in enumerate(per.items(), 1)]
    return queries, {m: judge_mode(eps, m) for m in MODES}


def test_compare_scores_every_mode_alike_and_tests_against_the_reference() -> None:
    queries, judged = _queries()
    c = compare(queries, judged, systems=["poor", "good"], reference="good", n_resamples=50)
    assert c.judged_modes() == ["repeat", "transfer", "outcome"] and c.absent_modes() == []
    for mode in MODES:
        part = c.mode(mode)
        assert part.queries == len(judged[mode].query_ids) and list(part.systems) == ["poor", "good"]
        assert set(part.tests) == {"poor"} and part.p_value("good", "ndcg@5") is None
        mean, low, high = part.interval("good", "ndcg@5")
        assert low <= mean == part.value("good", "ndcg@5") <= high
        assert len(part.rows) == 2 * part.queries and {r["system"] for r in part.rows} == {"poor", "good"}
    # transfer asks of b (the first run of t2) the earlier refund a: good injected it, poor nothing
    assert c.mode("transfer").value("good", "hit@3") == 1.0 and c.mode("transfer").value("poor", "hit@3") == 0.0
    # outcome asks of d what worked for t1 (c, grade 2): good put it first
    assert c.mode("outcome").value("good", "ndcg@5") > c.mode("outcome").value("poor", "ndcg@5")


def test_a_mode_without_queries_is_na_and_says_so() -> None:
    queries, judged = _queries()
    c = compare(queries, {"repeat": judged["repeat"]}, systems=["poor", "good"], reference="good", n_resamples=20)
    assert c.absent_modes() == ["transfer", "outcome"]
    with pytest.raises(NoQueriesError, match=r"'transfer' has no queries in this replay \(modes with queries: repeat\)"):
        c.mode("transfer")
    with pytest.raises(ValueError, match="unknown judging mode 'repaet'"):
        c.mode("repaet")
    with pytest.raises(ValueError, match="unknown judging mode"):
        compare(queries, {"repeet": judged["repeat"]}, systems=["good"])
    with pytest.raises(KeyError, match="repeat: no metric 'ndgc@5'"):
        c.mode("repeat").value("good", "ndgc@5")


def test_metrics_json_round_trips_and_keeps_repeat_beside_the_others() -> None:
    queries, judged = _queries()
    result = ReplayMetrics({"name": "toy"}, compare(queries, judged, systems=["poor", "good"], reference="good",
                                                     n_resamples=20), timing={"total_s": 1.0})
    data = json.loads(json.dumps(result.to_json()))
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert list(data["modes"]) == list(MODES) and "systems" not in data  # no mode is special
    again = ReplayMetrics.from_json(data)
    assert again.comparison == result.comparison  # rows aside (they go to episodes*.csv)
    assert again.to_json() == data
    with pytest.raises(ValueError, match="schema_version 3 is not one this version reads"):
        ReplayMetrics.from_json({**data, "schema_version": 3})


@pytest.mark.parametrize("name", ["tau-bench-airline-dev", "tau2-telecom-cross-dev", "tau2-airline-cross-dev"])
def test_a_version_1_metrics_json_still_loads(name: str) -> None:
    old = json.loads((KEPT / name / "metrics.json").read_text())
    assert "schema_version" not in old and "systems" in old  # the previous layout, as kept
    result = load_metrics(KEPT / name)
    repeat = result.mode("repeat")
    assert repeat.queries == old["judging"]["queries"] and repeat.groups == old["judging"]["groups"]
    assert repeat.systems == old["systems"] and repeat.p_value("bm25", "ndcg@5") == old["tests"]["bm25"]["ndcg@5"]
    assert list(repeat.interval("hindsight", "ndcg@5")) == old["intervals"]["hindsight"]["ndcg@5"]
    for mode, cell in old["modes"].items():
        assert result.mode(mode).queries == cell["queries"] and result.mode(mode).systems == cell["systems"]
    assert result.comparison.seed == old["judging"]["seed"] and result.dataset == old["dataset"]
    upgraded = result.to_json()
    assert ReplayMetrics.from_json(upgraded).comparison == result.comparison
    assert upgraded["modes"]["repeat"]["systems"] == old["systems"]


def test_a_saved_folder_loads_with_its_rows_so_margins_can_be_read(tmp_path: Path) -> None:
    queries, judged = _queries()
    c = compare(queries, judged, systems=["poor", "good"], reference="good", n_resamples=20)
    (tmp_path / "metrics.json").write_text(json.dumps(ReplayMetrics({}, c).to_json()))
    with pytest.raises(ValueError, match="no per-episode rows"):
        load_metrics(tmp_path).mode("repeat").margins(reference="good", baselines=("poor",))
    c.mode("repeat").frame().to_csv(tmp_path / "episodes.csv", index=False)
    margins = load_metrics(tmp_path).mode("repeat").margins(reference="good", baselines=("poor",))
    assert list(margins.index) == ["t1"] and margins.loc["t1", "margin"] > 0
    (tmp_path / "metrics.json").write_text('{"modes": ')
    with pytest.raises(ValueError, match=r"metrics.json:1: not valid JSON"):
        load_metrics(tmp_path)
    with pytest.raises(FileNotFoundError, match="no metrics.json here"):
        load_metrics(tmp_path / "nowhere")


def test_figures_leave_out_only_wall_clock_times() -> None:
    mode = ModeReport("repeat", 1, 1, {"bm25": {"ndcg@5": 0.5, "latency_p50_ms": 3.0}})
    figures = Comparison({"repeat": mode}).figures()
    assert figures["repeat"]["systems"] == {"bm25": {"ndcg@5": 0.5}}
    assert mode.systems["bm25"]["latency_p50_ms"] == 3.0  # the report itself is untouched


BEFORE = Path(__file__).parent / "before"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tau-bench-airline-sample", "tau2-airline-cross-sample"])
def test_a_replay_scores_as_before_the_typed_core(name: str, minilm) -> None:
    """``before/`` holds the metrics.json (version 1) these sample replays wrote on the commit before the typed
    core (da219f0, the default config, MiniLM): every figure of every mode is the same now, timings aside (the
    per-source figures of transfer and outcome are new). Recapture with ``hindsight-lab replay NAME --no-mlflow
    --out DIR`` on a commit meant to equal it when a change of the default moves the figures on purpose."""
    from hindsight_lab.replay.runner import run_replay

    before = load_metrics(BEFORE / f"{name}.metrics.json").comparison.figures()
    now = run_replay(name, embedder=minilm).comparison.figures()
    for mode in ("transfer", "outcome"):
        now[mode].pop("by_source", None)
    assert now == before
