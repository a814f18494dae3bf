"""A sweep shared through Optuna's RDB storage (``--storage``, ``--workers``): the same trials and the same exported
config whatever the number of workers, a worker killed mid-trial replaced by a rerun of its trials, one choice and
one MLflow parent run at the end, a second command joining the study."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

from hindsight_lab.cli import main
from hindsight_lab.errors import ConfigError
from hindsight_lab.tracking.export import export_config
from hindsight_lab.sweep import SweepSpec, run_sweep
from hindsight_lab.sweep import workers
from hindsight_lab.sweep.run import with_provenance
from hindsight_lab.sweep.shared import StudyOptions
from hindsight_lab.sweep.storage import claim, open_storage, public, replace, sqlalchemy_url
from hindsight_lab.sweep.study import PARAMS, ROW, SELECTION, RESULT, SLOT, planned
from hindsight_lab.tracking import client

SPACE = {"retrieval.weights.semantic": {"low": 0.0, "high": 1.0},
         "retrieval.weights.lexical": {"low": 0.0, "high": 1.0},
         "retrieval.min_relative_score": {"values": [0.0, 0.7]}}


def _spec(folder: Path, name: str, **changes) -> SweepSpec:
    """The committed tau-bench sample with the hashing embedder (fast); the base config's redundancy weight at 1.0
    makes it poor, so a trial beats it by more than luck (trial 6 of the seeded random draws) and the exported
    config is a trial's, not the base's (a comparison of two base configs would prove nothing)."""
    data = {"name": name, "datasets": [{"name": "tau-bench-airline-sample"}], "split": {"test_fraction": 0.4},
            "base": {"set": {"embedder.model": "hashing-256", "retrieval.weights.redundancy": 1.0}},
            "sampler": "random", "trials": 12, "batch_size": 4, "seed": 0, "space": SPACE,
            "mlflow": {"uri": f"sqlite:///{folder / 'mlflow.db'}", "experiment": name}}
    data.update(changes)
    return SweepSpec.from_dict(data, folder=folder)


def _figures(result) -> list[tuple]:
    cols = ["number", *SPACE, "cv.mean", "cv.se", "dev.ndcg@5", "dev.tokens_median"]
    return [tuple(r) for r in result.trials[cols].itertuples(index=False)]


def _exported(result, path: Path) -> str:
    export_config(with_provenance(result), path)
    return path.read_text()


def _study(url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=open_storage(sqlalchemy_url(url, workers=2, folder=Path(".")),
                                                                  heartbeat=1, max_retry=3))


# ---------------------------------------------------------------------- storage URLs, claims: no server needed
def test_storage_urls_and_the_refusals(tmp_path: Path) -> None:
    assert sqlalchemy_url("postgresql://hl@db:5432/s", workers=2, folder=tmp_path) == "postgresql+psycopg://hl@db:5432/s"
    assert sqlalchemy_url("postgres://db/s", workers=2, folder=tmp_path) == "postgresql+psycopg://db/s"
    assert sqlalchemy_url("sqlite:///x.db", workers=1, folder=tmp_path) == "sqlite:///x.db"
    with pytest.raises(ConfigError, match="--storage: SQLite holds a study for one process only"):
        sqlalchemy_url("sqlite:///x.db", workers=2, folder=tmp_path)
    with pytest.raises(ConfigError, match="--storage: expected a postgresql:// URL"):
        sqlalchemy_url("mysql://db/s", workers=2, folder=tmp_path)
    assert "s3cret" not in public("postgresql+psycopg://hl:s3cret@db:5432/s") and "db:5432" in public(
        "postgresql+psycopg://hl:s3cret@db:5432/s")


def test_sqlite_with_several_workers_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "datasets": [{"name": "tau-bench-airline-sample"}],
                                    "sampler": "random", "space": SPACE}))
    code = main(["sweep", str(path), "--storage", f"sqlite:///{tmp_path / 's.db'}", "--workers", "2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--storage" in err and "--workers 2" in err
    assert not (tmp_path / "s.db").exists()  # refused before the study or anything else was made


def test_a_claim_is_won_once_and_replaced_only_when_unchanged(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat=1, max_retry=1)
    study = optuna.create_study(storage=storage, study_name="c")
    sid = storage.get_study_id_from_name("c")
    assert claim(storage, sid, "k", {"pid": 1}) and not claim(storage, sid, "k", {"pid": 2})
    assert study.user_attrs["k"] == {"pid": 1}
    assert not replace(storage, sid, "k", {"pid": 3}, {"pid": 4})  # negative control: not what it holds
    assert replace(storage, sid, "k", {"pid": 1}, {"pid": 4}) and study.user_attrs["k"] == {"pid": 4}


# ---------------------------------------------------------------------- the same sweep whatever the workers
@pytest.mark.slow
@pytest.mark.postgres
def test_seeded_random_gives_the_same_trials_and_config_for_any_workers(tmp_path: Path, postgres_url: str,
                                                                        capsys) -> None:
    spec = _spec(tmp_path, "same-" + uuid.uuid4().hex[:6])
    alone = run_sweep(spec, mlflow=False, baselines=False)  # one process, no storage: the reference
    assert alone.chosen == 6  # a trial, not the base (see _spec)
    one = run_sweep(spec, mlflow=False, baselines=False, study=StudyOptions(storage=postgres_url, name=spec.name + "-1",
                                                                           heartbeat=1))
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec.model_dump(mode="json", exclude={"folder"}), sort_keys=False))
    out = tmp_path / "two.yaml"
    # --workers 2 without --storage: the embedded PostgreSQL under $HINDSIGHT_LAB_HOME/sweeps/<name>/pg
    assert main(["sweep", str(spec_file), "--workers", "2", "--heartbeat", "1", "--no-mlflow", "--no-baselines",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 processes here" in printed and f"trial {alone.chosen}" in printed
    assert _figures(one) == _figures(alone)
    assert one.selection == alone.selection
    reference = _exported(alone, tmp_path / "alone.yaml")
    assert _exported(one, tmp_path / "one.yaml") == reference == out.read_text()

    # the same command again joins the finished study: no new trial, the choice read back, not made again
    again = run_sweep(spec, mlflow=False, baselines=False, study=StudyOptions(storage=postgres_url,
                                                                             name=spec.name + "-1", heartbeat=1))
    assert again.study["told_here"] == 0 and again.selection == one.selection
    assert _figures(again) == _figures(one) and _exported(again, tmp_path / "again.yaml") == reference
    with pytest.raises(ConfigError, match="holds another sweep"):  # negative control: another trial count
        run_sweep(spec, trials=5, mlflow=False, study=StudyOptions(storage=postgres_url, name=spec.name + "-1"))


# ---------------------------------------------------------------------- a worker killed mid-trial
@pytest.mark.slow
@pytest.mark.postgres
def test_a_worker_killed_mid_trial_is_rerun_and_the_sweep_chosen_once(tmp_path: Path, postgres_url: str) -> None:
    spec = _spec(tmp_path, "kill-" + uuid.uuid4().hex[:6])
    spec = spec.model_copy(update={"mlflow": spec.mlflow.model_copy(update={"child_runs": 4, "top_n": 3})})
    said: list[str] = []

    def hold_until_the_worker_asked() -> None:
        """This process waits, its first batch asked, until the started worker has asked one too: the worker is
        then sure to hold trials when it dies (a chosen point, not a race)."""
        study = _study(postgres_url, spec.name)
        deadline = time.monotonic() + 120
        while len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))) <= 3:
            assert time.monotonic() < deadline, "the started worker never asked a trial"
            time.sleep(0.1)

    workers.arm("sweep.asked", action=hold_until_the_worker_asked)
    try:
        result = run_sweep(spec, baselines=False, echo=said.append,
                           study=StudyOptions(storage=postgres_url, workers=2, heartbeat=1,
                                              arms={0: (("sweep.scored", 1),)}))  # worker 1 dies once it scored
    finally:
        workers.disarm()
    trials = _study(postgres_url, spec.name).get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    failed = [t for t in trials if t.state == optuna.trial.TrialState.FAIL]
    assert len(complete) == 12 and len(failed) == 3  # the killed worker's batch of 3, failed by the heartbeat
    assert sorted(t.user_attrs[SLOT] for t in complete) == list(range(12))  # each slot once
    draws = planned(spec, 12)
    assert all(t.user_attrs[PARAMS] == draws[t.user_attrs[SLOT]] for t in complete)  # trial k is the k-th draw
    retried = {t.system_attrs["retry_history"][0]: t for t in complete if "retry_history" in t.system_attrs}
    assert sorted(retried) == sorted(t.number for t in failed)  # each killed trial rerun once
    assert all(retried[t.number].user_attrs[SLOT] == t.user_attrs[SLOT] for t in failed)
    assert all(ROW not in t.user_attrs for t in failed)  # killed after scoring, before anything was kept
    labels = {t.user_attrs[ROW]["worker"] for t in complete}
    assert labels == {result.study["worker"]}  # every trial that counts was scored by the survivor
    assert any("was killed by signal 9" in line for line in said) and result.study["retried"] == 3

    # the choice ran once, on all 12 trials; the same figures as one process without storage
    attrs = _study(postgres_url, spec.name).user_attrs
    assert SELECTION in attrs and attrs[RESULT]["parent_run_id"] == result.parent_run_id
    assert result.selection["candidates"] == 13
    alone = run_sweep(spec, mlflow=False, baselines=False)
    assert _figures(result) == _figures(alone) and result.chosen == alone.chosen

    # one MLflow parent run holds every trial: all 12 in its trials.csv, the top 3 (and the chosen) as child runs
    c = client(spec.mlflow.uri)
    exp = c.get_experiment_by_name(spec.name).experiment_id
    parents = c.search_runs([exp], filter_string="tags.kind = 'sweep'")
    assert [p.info.run_id for p in parents] == [result.parent_run_id]
    table = pd.read_csv(c.download_artifacts(result.parent_run_id, "trials.csv", str(tmp_path)))
    assert sorted(table["number"]) == list(range(12))
    children = c.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{result.parent_run_id}'")
    expected = set(result.top(3)["number"]) | ({result.chosen} if result.chosen is not None else set())
    assert sorted(int(r.data.tags["trial"]) for r in children) == sorted(expected)
    assert {r.data.tags["worker"] for r in children} == labels
    assert parents[0].data.params["study.retried"] == "3"


# ---------------------------------------------------------------------- TPE
@pytest.mark.slow
@pytest.mark.postgres
def test_tpe_with_two_workers_scores_within_the_luck_bar_of_one(tmp_path: Path, postgres_url: str) -> None:
    spec = _spec(tmp_path, "tpe-" + uuid.uuid4().hex[:6], sampler="tpe", trials=16)
    one = run_sweep(spec, mlflow=False, baselines=False,
                    study=StudyOptions(storage=postgres_url, name=spec.name + "-1", heartbeat=1))
    two = run_sweep(spec, mlflow=False, baselines=False,
                    study=StudyOptions(storage=postgres_url, name=spec.name + "-2", workers=2, heartbeat=1))
    for result in (one, two):
        assert len(result.trials) == 16 and result.trials["number"].is_unique
        params = [tuple(r) for r in result.trials[list(SPACE)].itertuples(index=False)]
        assert len(set(params)) == len(params)  # per-worker seeds: no point proposed twice
    assert abs(two.selection["chosen_cv"] - one.selection["chosen_cv"]) <= one.selection["luck_bar"]
