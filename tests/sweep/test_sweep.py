"""A small sweep end to end: grouped replays, MLflow parent and child runs, selection, export, and `mlflow ui`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from support import SHARED_DATASETS, shared_dataset

from hindsight_lab.cli import main
from hindsight_lab.config import LabConfig
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.sweep import SweepSpec, run_sweep
from hindsight_lab.tracking import client

TAU = "tau-bench/gpt-4o-airline.dev.json"
LIMIT = 6


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, minilm):
    shared_dataset(TAU)
    folder = tmp_path_factory.mktemp("sweep")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    spec = SweepSpec.from_dict({
        "name": "small", "datasets": [{"path": str(SHARED_DATASETS / TAU), "format": "tau-bench", "limit": LIMIT}],
        "split": {"test_fraction": 0.34, "seed": 0}, "sampler": "random", "trials": 12, "batch_size": 5, "seed": 3,
        "space": {"retrieval.weights.semantic": {"low": 0.0, "high": 1.0},
                  "retrieval.weights.lexical": {"low": 0.0, "high": 1.0},
                  "dedup.similarity": {"values": [0.8, 0.95]}},
        "mlflow": {"uri": uri, "experiment": "sweep-test", "child_runs": 5, "top_n": 3}}, folder=folder)
    result = run_sweep(spec, embedder=minilm)
    return spec, result, uri, folder


@pytest.mark.slow
def test_trials_grouped_scored_cross_validated_and_chosen(swept, minilm) -> None:
    spec, result, _, _ = swept
    table = result.trials
    assert len(table) == 12 and set(table["status"]) == {"ok"}
    assert table["group"].nunique() == 2  # one cached replay per dedup.similarity value
    assert not [c for c in table if c.startswith("test.")]  # the test split is not scored per trial
    folds = [c for c in table if c.startswith("cv.fold")]
    assert len(folds) == result.selection["folds"] >= 2
    assert (table["cv.mean"] - table[folds].mean(axis=1)).abs().max() < 1e-12 and (table["cv.se"] >= 0).all()
    best = table.loc[table["cv.mean"].idxmax()]
    assert int(best["number"]) == result.best
    assert result.best_config.retrieval.weights.semantic == pytest.approx(best["retrieval.weights.semantic"])
    sel = result.selection
    assert sel["candidates"] == 13 and sel["chosen"] in ("base", *table["number"])  # the base is a candidate
    assert sel["chosen_gain"] >= 0 and sel["optimism"] > 0 and 0 < sel["p_value"] <= 1
    assert (sel["chosen"] == "base") == (result.chosen is None)
    expected = {"base", "none", "dense", "bm25"} | ({"chosen"} if result.chosen is not None else set())
    assert expected <= set(result.comparison.index) and "test.ndcg@5" in result.comparison
    assert result.comparison.loc["none", "dev.hit@5"] == 0.0
    assert set(result.intervals["base"]) == {"dev", "test"}
    mean, lo, hi = result.intervals["base"]["dev"]["ndcg@5"]
    assert mean == pytest.approx(result.comparison.loc["base", "dev.ndcg@5"]) and lo <= mean <= hi
    # a trial of the second group equals a full replay of its config on the dev queries
    row = table[table["dedup.similarity"] == 0.95].iloc[0]
    cfg = LabConfig().with_params({k: row[k] for k in spec.fields})
    full = run_replay(shared_dataset(TAU), systems=["hindsight"], config=cfg, limit=LIMIT, embedder=minilm)
    per = full.per_episode.set_index("query_id")["ndcg@5"]
    dev = per[per.index.isin(_split(result, "dev"))].mean()
    assert row["dev.ndcg@5"] == pytest.approx(dev, abs=1e-12)


def _split(result, name: str) -> list[str]:
    from hindsight_lab.sweep.cache import load_episode_data
    from hindsight_lab.sweep.run import split_queries

    data = load_episode_data(shared_dataset(TAU), limit=LIMIT)
    eps = {e.episode_id: e for e in data.episodes}
    asked = dict.fromkeys(q for mode in ("repeat", *data.modes) for q in data.mode(mode).query_ids)
    groups = {q: eps[q].task_id or q for q in asked}  # every mode's queries are split by task
    return split_queries(groups, result.spec.split.test_fraction, result.spec.split.seed)[name]


@pytest.mark.slow
def test_mlflow_parent_children_artifacts(swept, tmp_path: Path) -> None:
    _, result, uri, _ = swept
    c = client(uri)
    parent = c.get_run(result.parent_run_id)
    assert parent.data.tags["kind"] == "sweep" and len(parent.data.tags["git_commit"]) >= 7
    arts = {a.path for a in c.list_artifacts(result.parent_run_id)}
    assert {"trials.csv", "sensitivity.png", "best-config.yaml", "comparison.csv", "spec.yaml"} <= arts
    children = c.search_runs([parent.info.experiment_id],
                             filter_string=f"tags.mlflow.parentRunId = '{result.parent_run_id}'")
    assert len(children) == 3  # 12 trials > child_runs 5: only the top 3
    top3 = set(result.top(3)["number"].astype(str))
    assert {r.data.tags["trial"] for r in children} == top3
    child = next(r for r in children if r.info.run_id == result.best_run_id)
    assert child.data.params["retrieval.weights.semantic"] == str(result.best_config.retrieval.weights.semantic)
    assert child.data.tags["dataset_sha256"] == result.dataset_sha256
    row = result.trials.set_index("number").loc[result.best]
    assert child.data.metrics["dev.ndcg_at_5"] == pytest.approx(row["dev.ndcg@5"])
    assert child.data.metrics["cv.mean"] == pytest.approx(row["cv.mean"]) and "cv.se" in child.data.metrics
    assert "cv.fold0" in child.data.metrics  # mlflow ui shows each trial's fold means and standard error
    assert "selection.optimism" in parent.data.metrics and "selection.json" in arts

    out = tmp_path / "tuned.yaml"
    assert main(["export", "--run-id", result.parent_run_id, "--mlflow-uri", uri, "-o", str(out)]) == 0
    text = out.read_text()
    loaded = LabConfig.from_yaml(out)
    assert loaded.provenance.run_id == (result.chosen_run_id or result.parent_run_id)
    assert loaded.provenance.dataset_sha256 and "cv.optimism" in loaded.provenance.metrics
    assert loaded.retrieval.weights == result.chosen_config.retrieval.weights  # the chosen config, not the argmax
    assert "store" not in yaml.safe_load(text) and str(Path.home()) not in text and "/tmp" not in text


def test_export_refuses_machine_paths(tmp_path: Path) -> None:
    cfg_file = tmp_path / "c.yaml"
    LabConfig().with_params({"embedder.model": str(tmp_path / "model")}).to_yaml(cfg_file)
    assert main(["export", "--config", str(cfg_file), "-o", str(tmp_path / "out.yaml")]) == 2
    assert not (tmp_path / "out.yaml").exists()
    LabConfig().to_yaml(cfg_file)
    assert main(["export", "--config", str(cfg_file), "-o", str(tmp_path / "out.yaml")]) == 0
    assert LabConfig.from_yaml(tmp_path / "out.yaml").provenance.package_version


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_mlflow_ui_serves_the_sweep(swept) -> None:
    _, result, uri, folder = swept
    port = _free_port()
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    proc = subprocess.Popen([str(mlflow_bin), "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port",
                             str(port), "--workers", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=folder)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError("mlflow ui did not come up") from None
                time.sleep(0.5)
        exp = client(uri).get_experiment_by_name("sweep-test").experiment_id
        req = urllib.request.Request(f"{base}/api/2.0/mlflow/runs/search", method="POST",
                                     data=json.dumps({"experiment_ids": [exp], "max_results": 100}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            runs = json.load(r)["runs"]
        ids = {run["info"]["run_id"] for run in runs}
        assert result.parent_run_id in ids and result.best_run_id in ids and len(ids) == 4
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_a_list_of_configs_that_each_set_other_fields_is_chosen_among(tmp_path: Path, minilm) -> None:
    """The ``list`` sampler (how the default config is chosen): each trial sets its own fields, the others keep
    the base config's values; the selection compares them all with the base, on the committed sample."""
    spec = SweepSpec.from_dict({
        "name": "list", "datasets": [{"name": "tau-bench-airline-sample"}], "split": {"test_fraction": 0.4},
        "sampler": "list", "trials": 100, "objective": {"metric": {"ndcg@5": 1.0, "outcome.ndcg@5": 1.0}},
        "configs": [{}, {"retrieval.weights.confidence": 0.2}, {"retrieval.min_relative_score": 0.7}]},
        folder=tmp_path)
    result = run_sweep(spec, embedder=minilm, mlflow=False)
    table = result.trials
    assert len(table) == 3 and set(table["status"]) == {"ok"}  # no more trials than listed
    assert result.selection["candidates"] == 4 and result.selection["chosen"] in ("base", 0, 1, 2)
    # the listed default scores exactly as the base config it leaves unchanged
    assert table.loc[table["number"] == 0, "cv.mean"].item() == pytest.approx(result.selection["base_cv"])
    # the declared objective on the test split, once: each mode's mean over its test queries, as a replay gives it
    from hindsight_lab.datasets.registry import resolve
    from hindsight_lab.sweep.cache import load_episode_data
    from hindsight_lab.sweep.run import split_queries

    (path,) = resolve("tau-bench-airline-sample")
    data = load_episode_data(path)
    eps = {e.episode_id: e for e in data.episodes}
    asked = dict.fromkeys(q for mode in ("repeat", *data.modes) for q in data.mode(mode).query_ids)
    test = set(split_queries({q: eps[q].task_id or q for q in asked}, 0.4, 0)["test"])
    full = run_replay(path, systems=["hindsight"], config=LabConfig().with_params({"retrieval.top_k": 10}),
                      embedder=minilm)
    expected = sum(frame[frame["query_id"].isin(test)]["ndcg@5"].mean()
                   for frame in (full.per_episode, full.mode_episodes["outcome"]))
    assert result.comparison.loc["base", "test.objective"] == pytest.approx(expected, abs=1e-12)
    dense = run_replay(path, systems=["dense"], top_k=10, embedder=minilm)  # a baseline's, from its replay
    expected = sum(frame[frame["query_id"].isin(test)]["ndcg@5"].mean()
                   for frame in (dense.per_episode, dense.mode_episodes["outcome"]))
    assert result.comparison.loc["dense", "test.objective"] == pytest.approx(expected, abs=1e-12)
