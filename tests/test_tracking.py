"""MLflow tracking on a real sqlite store in tmp_path: the default store's URI, runs, and a replay as a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.tracking import default_tracking_uri, log_replay, metric_key, replay_metrics, start_run
from support import episode


def test_default_store_is_a_sqlite_db_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_LAB_HOME", str(tmp_path / "home"))
    uri = default_tracking_uri()
    assert uri == f"sqlite:///{(tmp_path / 'home' / 'mlflow.db').as_posix()}" and uri.startswith("sqlite:////")
    monkeypatch.delenv("HINDSIGHT_LAB_HOME")
    assert default_tracking_uri() == f"sqlite:///{(Path.home() / '.hindsight_lab' / 'mlflow.db').as_posix()}"
    assert not (tmp_path / "home").exists()  # computing the URI creates nothing


@pytest.mark.slow
def test_mlflow_tracking_uri_is_honoured_by_replay(tmp_path, monkeypatch, capsys):
    # Regression (issue 16): MLFLOW_TRACKING_URI was ignored by replay and sweep.
    from hindsight_lab.cli import main
    from hindsight_lab.tracking import client

    uri = f"sqlite:///{(tmp_path / 'theirs.db').as_posix()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert default_tracking_uri() == uri
    assert main(["replay", "tau2-airline-cross-sample", "--systems", "none,bm25"]) == 0
    assert f"at {uri}" in capsys.readouterr().out
    runs = client(uri).search_runs([client(uri).get_experiment_by_name("hindsight-replay").experiment_id])
    assert len(runs) == 1 and runs[0].data.params["dataset.format"] == "tau2-bench"
    assert not (tmp_path / "hindsight-home" / "mlflow.db").exists()  # the project's default store is untouched


def test_metric_keys_are_mlflow_safe():
    assert metric_key("hindsight.ndcg@5") == "hindsight.ndcg_at_5"
    assert metric_key("my config!.hit@3") == "my config_.hit_at_3"
    assert metric_key("/../x") == "__/x"


def _tiny_replay(tmp_path: Path):
    from hindsight_lab.replay.runner import run_replay

    rows = [episode(f"e{i}", f"refund order number {i % 3} for the customer", ["lookup_order", "issue_refund"],
                    outcome="success" if i % 2 else "failure", task_id=f"t{i % 3}", failure_cause=None if i % 2
                    else "strategy") for i in range(8)]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = LabConfig().with_params({"embedder.model": "hashing-64", "retrieval.weights.semantic": 0.35})
    return run_replay(path, systems=["none", "bm25", "hindsight"], config=cfg), cfg


@pytest.mark.slow
def test_a_replay_is_one_mlflow_run_with_params_metrics_and_artifacts(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    report, cfg = _tiny_replay(tmp_path)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    uri = f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}"
    run_id = log_replay(report, config=cfg, tracking_uri=uri)

    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    assert run.info.status == "FINISHED"
    params, metrics = run.data.params, run.data.metrics
    assert params["dataset.sha256"] == report.result.dataset["sha256"] and len(params["dataset.sha256"]) == 64
    assert params["retrieval.weights.semantic"] == "0.35"  # a config field
    assert params["retrieval.top_k"] == "10" and params["replay.top_k"] == "10"  # the config as the replay ran it
    assert params["replay.systems"] == "none,bm25,hindsight"
    repeat = report.mode("repeat")  # logged without a prefix, as runs always were
    for name, values in repeat.systems.items():
        for m in ("ndcg@5", "hit@3", "recall@10", "mrr", "queries"):
            assert metrics[f"{name}.{metric_key(m)}"] == pytest.approx(values[m])
    assert metrics["hindsight.ndcg_at_5"] == pytest.approx(repeat.value("hindsight", "ndcg@5"))
    low, high = repeat.interval("bm25", "ndcg@5")[1:]
    assert (metrics["bm25.ndcg_at_5.ci_low"], metrics["bm25.ndcg_at_5.ci_high"]) == pytest.approx((low, high))
    assert metrics["bm25.ndcg_at_5.p_vs_hindsight"] == pytest.approx(repeat.p_value("bm25", "ndcg@5"))
    assert replay_metrics(report.metrics).keys() == metrics.keys()

    artifacts = {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(run_id)}
    assert {"metrics.json", "episodes.csv", "config.yaml", "hits_over_time.png", "memory.png", "tokens.png",
            "success.png"} <= artifacts
    assert run.info.artifact_uri.startswith((tmp_path / "store" / "mlartifacts").as_uri())
    assert list(Path.cwd().iterdir()) == []  # nothing (./mlruns, ./mlflow.db) in the current folder


@pytest.mark.slow
def test_a_failing_block_marks_the_run_failed_and_children_name_their_parent(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{(tmp_path / 'mlflow.db').as_posix()}"
    with start_run("sweep", tracking_uri=uri, run_name="parent") as parent:
        with start_run("sweep", tracking_uri=uri, parent_run_id=parent.run_id) as child:
            child.log_params({"retrieval.weights": (0.2, 0.3), "note": "x" * 7000})
            child.log_metrics({"dev.ndcg@5": 0.5})
    with pytest.raises(RuntimeError):
        with start_run("sweep", tracking_uri=uri) as failed:
            raise RuntimeError("boom")
    client = MlflowClient(tracking_uri=uri)
    got = client.get_run(child.run_id)
    assert got.data.tags["mlflow.parentRunId"] == parent.run_id and got.data.metrics["dev.ndcg_at_5"] == 0.5
    assert got.data.params["retrieval.weights"] == "[0.2, 0.3]" and len(got.data.params["note"]) == 6000
    assert client.get_run(failed.run_id).info.status == "FAILED"
    assert client.get_run(parent.run_id).info.status == "FINISHED"
