"""Replays of the real dev datasets (limited by whole tasks or conversations), judging fairness, and the CLI."""

from __future__ import annotations

import json
import math

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.cli import main
from hindsight_lab.errors import NothingToDo
from hindsight_lab.metrics import Judgements
from hindsight_lab.replay.engine import run_episodes
from hindsight_lab.replay.report import HEADLINE, judge
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.replay.systems import build_systems
from support import shared_dataset

DATASETS = [("tau-bench/gpt-4o-airline.dev.json", 6), ("reflexion-hotpotqa/100_questions_7_trials.dev.txt", 20),
            ("locomo/locomo10.dev.json", 1)]


@pytest.mark.slow
@pytest.mark.parametrize("relative, limit", DATASETS, ids=["tau-bench", "reflexion", "locomo"])
def test_real_dataset_replays_with_every_system(relative, limit, minilm, tmp_path):
    report = run_replay(shared_dataset(relative), limit=limit, embedder=minilm)
    m = report.mode("repeat")
    assert m.queries > 0
    assert set(m.systems) == {"none", "dense", "bm25", "dense+ok", "bm25+ok", "hindsight"}
    for name, values in m.systems.items():
        for metric in ("ndcg@5", "hit@3", "hit@5", "recall@10", "ndcg@3", "ndcg@10", "hit@10", "recall@3"):
            assert not math.isnan(values[metric]) and 0.0 <= values[metric] <= 1.0, (name, metric)
    assert m.value("none", "hit@5") == 0.0 and m.value("dense", "hit@10") > 0.0
    assert m.value("hindsight", "hit@10") > 0.0
    for name in ("dense", "bm25", "hindsight"):
        low, high = m.interval(name, "ndcg@5")[1:]
        assert low <= m.value(name, "ndcg@5") <= high
    assert set(m.tests) == {"none", "dense", "bm25", "dense+ok", "bm25+ok"}
    out = report.save(tmp_path / "report")
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["schema_version"] == 2 and saved["modes"]["repeat"]["queries"] == m.queries
    assert saved["dataset"]["sha256"] == report.result.dataset["sha256"] and len(saved["dataset"]["sha256"]) == 64
    assert {p.name for p in out.glob("*.png")} == {"hits_over_time.png", "memory.png", "tokens.png", "success.png"}
    assert len(report.per_episode) == 6 * m.queries


@pytest.mark.slow
def test_judging_is_system_independent(minilm, tmp_path):
    from hindsight_lab.datasets import load

    episodes, _ = load(shared_dataset("tau-bench/gpt-4o-airline.dev.json"), limit_tasks=5)
    judgements = Judgements.from_episodes(episodes)
    systems = build_systems(["none", "dense", "bm25", "hindsight"], config=LabConfig(), embedder=minilm, top_k=10,
                            token_budget=600, root=str(tmp_path))
    run = run_episodes(episodes, systems, query_ids=set(judgements.query_ids))
    for s in systems:
        s.close()
    per_system = {}
    for rec in run.queries:
        per_system.setdefault(rec.system, []).append(rec.query_id)
    # the same query set for every system, and the same ideal list per query whatever any system stored
    assert all(sorted(q) == sorted(judgements.query_ids) for q in per_system.values())
    report = judge(run, judgements, {"name": "tau"})
    ideal = {q: judgements.ideal(q, 10) for q in judgements.query_ids}
    assert {q: report.judgements.ideal(q, 10) for q in judgements.query_ids} == ideal
    queries = {n: v["queries"] for n, v in report.mode("repeat").systems.items()}
    assert len(set(queries.values())) == 1
    # an episode is never recalled for its own query (no leakage): every injected source is earlier
    order = {ep.episode_id: i for i, ep in enumerate(episodes)}
    for rec in run.queries:
        for inj in rec.injected:
            assert all(order[s] < order[rec.query_id] for s in inj.source_episode_ids), (rec.system, inj)


def test_empty_query_set_fails(tmp_path):
    bad = tmp_path / "one.jsonl"
    bad.write_text('{"episode_id": "e1", "task_id": "t", "instruction": "x", "steps": [], "outcome": "success"}\n')
    with pytest.raises(NothingToDo, match="empty query set"):
        run_replay(bad, systems=["none"], embedder=None, config=LabConfig().with_params(
            {"embedder.model": "hashing-64"}))


@pytest.mark.slow
def test_cli_replay_prints_the_table_writes_the_report_and_logs_to_mlflow(tmp_path, capsys, _own_home):
    from mlflow.tracking import MlflowClient

    from hindsight_lab.tracking import default_tracking_uri

    out = tmp_path / "rep"
    code = main(["replay", str(shared_dataset("tau-bench/gpt-4o-airline.dev.json")), "--limit", "3",
                 "--systems", "none,bm25,hindsight", "--out", str(out), "--set", "embedder.model=hashing-256"])
    assert code == 0
    text = capsys.readouterr().out
    for token in ("ndcg@5", "bm25", "hindsight", "trigger rate", "queries", "MLflow run"):
        assert token in text
    assert "by group, hindsight against bm25 in each: ndcg@5 mean" in text  # no dense replayed
    saved = json.loads((out / "metrics.json").read_text())
    assert set(HEADLINE) <= set(saved["modes"]["repeat"]["systems"]["bm25"])
    # MLflow is on by default, in the default store under the home folder (a temporary one in these tests)
    assert (_own_home / "mlflow.db").is_file() and default_tracking_uri().endswith("/hindsight-home/mlflow.db")
    client = MlflowClient(tracking_uri=default_tracking_uri())
    [run] = client.search_runs([client.get_experiment_by_name("hindsight-replay").experiment_id])
    assert run.data.params["dataset.sha256"] == saved["dataset"]["sha256"]
    assert run.data.metrics["bm25.hit_at_3"] == saved["modes"]["repeat"]["systems"]["bm25"]["hit@3"]


@pytest.mark.slow
def test_a_replay_keeps_its_stores_in_memory_unless_given_a_folder(minilm, tmp_path):
    """Without ``workdir`` each hindsight store lives in memory and is deleted when the replay ends; with one, the
    stores are Chroma folders left there to inspect. The figures are the same either way."""
    from hindsight_lab.store.chroma import make_client

    client = make_client(in_memory=True)
    before = {c.name for c in client.list_collections()}
    in_memory = run_replay("tau-bench-airline-sample", systems=["hindsight"], embedder=minilm)
    assert {c.name for c in client.list_collections()} == before  # nothing left behind
    home = tmp_path / "hindsight-home"  # the test's own home: only the cache of vectors was written there
    assert [p for p in tmp_path.iterdir() if p != home] == []
    assert {p.relative_to(home).parts[0] for p in home.rglob("*")} <= {"cache"}
    on_disk = run_replay("tau-bench-airline-sample", systems=["hindsight"], embedder=minilm, workdir=tmp_path)
    folders = [p for p in tmp_path.iterdir() if p.is_dir() and p != home]
    assert len(folders) == 1 and folders[0].name.startswith("hindsight-") and any(folders[0].iterdir())

    def figures(report):
        return {name: {k: v for k, v in values.items() if "latency" not in k}
                for name, values in report.mode("repeat").systems.items()}

    assert figures(on_disk) == figures(in_memory) and figures(in_memory)["hindsight"]["hit@10"] > 0
