"""Sweep specs are checked before anything runs; samplers and the dev/test split are deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hindsight_lab.config import LabConfig
from hindsight_lab.errors import ConfigError
from hindsight_lab.sweep import SweepSpec, run_sweep, split_queries
from hindsight_lab.sweep.samplers import make_sampler

from support import REPO, shared_dataset


def _spec(tmp_path: Path, **changes) -> dict:
    data = tmp_path / "traces.jsonl"
    data.write_text("", encoding="utf-8")
    spec = {"name": "t", "datasets": [{"path": "traces.jsonl"}], "sampler": "random", "trials": 4,
            "space": {"retrieval.weights.semantic": {"low": 0.0, "high": 1.0}}}
    spec.update(changes)
    return spec


@pytest.mark.parametrize("changes, expected", [
    ({"space": {"retrieval.weights.semantik": {"low": 0, "high": 1}}},
     "unknown config field 'retrieval.weights.semantik'"),
    ({"space": {"retrieval.weights.lexical": {"low": -0.5, "high": 1}}}, "space.retrieval.weights.lexical: value -0.5"),
    ({"space": {}}, "empty search space"),
    ({"space": {"retrieval.weights.lexical": {"values": []}}}, "values is empty"),
    ({"space": {"retrieval.weights.lexical": {"low": 1, "high": 0}}}, "low 1.0 is above high 0.0"),
    ({"objective": {"metric": "ndcg@7x"}}, "objective.metric: unknown metric"),
    ({"datasets": [{"path": "missing.jsonl"}]}, "file not found: missing.jsonl"),
    ({"sampler": "grid"}, "a grid over a range needs step"),
    ({"sampler": "list", "configs": [{"retrieval.top_k": 0}]}, "configs[0]"),
    ({"sampler": "annealing"}, "sampler"),
])
def test_bad_spec_fails_before_any_run(tmp_path: Path, changes: dict, expected: str) -> None:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(_spec(tmp_path, **changes)), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        run_sweep(SweepSpec.from_yaml(spec_file), mlflow=True, tracking_uri=f"sqlite:///{tmp_path / 'ml.db'}")
    assert expected in str(err.value)
    assert not (tmp_path / "ml.db").exists()  # no MLflow store, so no run was created


def test_worked_example_loads() -> None:
    from hindsight_lab.datasets.fetch import fetch

    source = shared_dataset("tau-bench/gpt-4o-airline.dev.json")  # skips without the full-size data (fails in CI)
    with pytest.raises(ConfigError, match="hindsight-lab datasets fetch tau-bench-airline-dev"):
        SweepSpec.from_yaml(REPO / "experiments" / "rerank_weights.yaml")  # named, not fetched yet
    fetch("tau-bench-airline-dev", from_dir=source.parent)
    spec = SweepSpec.from_yaml(REPO / "experiments" / "rerank_weights.yaml")
    assert spec.fields[0] == "retrieval.weights.semantic" and spec.replay_fields == []


def test_sample_spec_loads_on_a_fresh_checkout() -> None:
    spec = SweepSpec.from_yaml(REPO / "experiments" / "rerank_weights_sample.yaml")
    (files,) = [ds.files(spec.folder) for ds in spec.datasets]
    assert [f.name for f in files] == ["gpt-4o-airline.sample.json"]


def test_dataset_sources_one_of_path_paths_name(tmp_path: Path) -> None:
    data = _spec(tmp_path)
    for bad in ({"path": "traces.jsonl", "name": "tau-bench-airline-sample"}, {}):
        with pytest.raises(ConfigError, match="give exactly one of path, paths or name"):
            SweepSpec.from_dict({**data, "datasets": [bad]}, folder=tmp_path)
    several = SweepSpec.from_dict({**data, "datasets": [{"paths": ["traces.jsonl", "traces.jsonl"]}]},
                                  folder=tmp_path)
    assert [p.name for p in several.datasets[0].files(tmp_path)] == ["traces.jsonl", "traces.jsonl"]
    with pytest.raises(ConfigError, match="no registered dataset 'tau-bench-airline'; did you mean"):
        SweepSpec.from_dict({**data, "datasets": [{"name": "tau-bench-airline"}]}, folder=tmp_path)


def test_grid_random_and_tpe_samplers(tmp_path: Path) -> None:
    grid = SweepSpec.from_dict(_spec(tmp_path, sampler="grid", space={
        "retrieval.weights.semantic": {"low": 0.0, "high": 1.0, "step": 0.5},
        "dedup.similarity": {"values": [0.8, 0.9]}}), folder=tmp_path)
    sampler = make_sampler(grid)
    assert len(sampler) == 6  # what a sweep reports as its trial count, whatever the spec's `trials`
    trials = sampler.ask(100)
    assert len(trials) == 6 and {t[1]["retrieval.weights.semantic"] for t in trials} == {0.0, 0.5, 1.0}
    assert grid.replay_fields == ["dedup.similarity"]

    rnd = SweepSpec.from_dict(_spec(tmp_path, space={"retrieval.weights.semantic": {"low": 0.1, "high": 0.2},
                                                     "retrieval.max_triggered": {"low": 0, "high": 3, "int": True}}),
                              folder=tmp_path)
    a, b = make_sampler(rnd).ask(20), make_sampler(rnd).ask(20)
    assert a == b  # seeded
    assert all(0.1 <= p["retrieval.weights.semantic"] <= 0.2 and p["retrieval.max_triggered"] in range(4)
               for _, p in a)

    tpe = make_sampler(SweepSpec.from_dict(_spec(tmp_path, sampler="tpe"), folder=tmp_path))
    asked = tpe.ask(12)
    for number, params in asked:
        tpe.tell(number, params["retrieval.weights.semantic"])
    later = tpe.ask(30)
    assert all(0.0 <= p["retrieval.weights.semantic"] <= 1.0 for _, p in later)
    # the model-based sampler learns: after being told larger is better, it proposes larger values on average
    first = sum(p["retrieval.weights.semantic"] for _, p in asked) / len(asked)
    assert sum(p["retrieval.weights.semantic"] for _, p in later) / len(later) > first


def test_split_is_by_task_and_deterministic() -> None:
    groups = {f"q{i}": f"task{i % 7}" for i in range(40)}
    s1, s2 = split_queries(groups, 0.3, seed=1), split_queries(groups, 0.3, seed=1)
    assert s1 == s2 and sorted(s1["dev"] + s1["test"]) == sorted(groups)
    test_tasks = {groups[q] for q in s1["test"]}
    assert len(test_tasks) == 2 and not test_tasks & {groups[q] for q in s1["dev"]}
    assert split_queries(groups, 0.0, seed=1)["test"] == []


def _selection(name: str) -> tuple[dict, SweepSpec]:
    """A selection spec of ``experiments/`` as written, and as a spec on the committed sample: the registered dev
    replays are fetched apart, so the sample stands in and the check runs anywhere."""
    data = yaml.safe_load((REPO / "experiments" / name).read_text(encoding="utf-8"))
    return data, SweepSpec.from_dict({**data, "datasets": [{"name": "tau-bench-airline-sample"}]},
                                     folder=REPO / "experiments")


def test_default_selection_spec_declares_its_objective_and_valid_candidates() -> None:
    """The default's selection spec (issue 19): every candidate is a valid change of the default it started from
    (``configs/knn-default.yaml``, which the lure selection replaced), that default itself is one of them, and the
    objective weighs the three judging modes alike, fixed in the file."""
    data, spec = _selection("default_selection.yaml")
    assert [d["name"] for d in data["datasets"]] == ["tau-bench-airline-dev", "tau2-telecom-cross-dev",
                                                     "tau2-airline-cross-dev"]
    assert spec.sampler == "list" and {} in spec.configs
    assert spec.objective.build().weights == {"ndcg@5": 1.0, "transfer.ndcg@5": 1.0, "outcome.ndcg@5": 1.0}
    knn = LabConfig.from_yaml(REPO / "experiments" / "configs" / "knn-default.yaml")
    assert spec.base_config() == knn != LabConfig()
    assert (knn.retrieval.classifier.method, knn.retrieval.weights.task_type) == ("knn", 0.2)
    bad = {**data, "datasets": [{"name": "tau-bench-airline-sample"}],
           "configs": [*data["configs"], {"retrieval.weights.confidence": -1}]}
    with pytest.raises(ConfigError, match=rf"configs\[{len(data['configs'])}\]"):
        SweepSpec.from_dict(bad, folder=REPO / "experiments")


def test_default_selection_with_the_live_environment_declares_the_same_candidates_and_a_live_term() -> None:
    """Its twin with the live environment in the objective: the same candidates, datasets and split, the four
    measures of the acceptance alike, the live target's seeds 0-9 for dev and other seeds kept for the end."""
    plain, _ = _selection("default_selection.yaml")
    data, spec = _selection("default_selection_live.yaml")
    for key in ("datasets", "split", "base", "sampler", "configs", "selection", "top_k"):
        assert data[key] == plain[key], key
    assert spec.objective.build().weights == {"ndcg@5": 1.0, "transfer.ndcg@5": 1.0, "outcome.ndcg@5": 1.0,
                                              "live.final_quarter": 1.0}
    assert spec.live is not None and spec.live.seeds == list(range(10)) and spec.live.tasks == 240
    assert spec.live.test_seeds and not set(spec.live.test_seeds) & set(spec.live.seeds)


def test_default_selection_with_thirty_live_seeds_keeps_the_objective_and_reads_no_earlier_held_out_seed() -> None:
    """The selection run again with three times the dev seeds: the datasets, split, objective and folds of
    default_selection_live.yaml; a shorter candidate list that starts with the default; dev seeds 0-9 and 15-34;
    test seeds that neither list nor the earlier held-out seeds 10-14 contain."""
    earlier, _ = _selection("default_selection_live.yaml")
    data, spec = _selection("default_selection_live_30.yaml")
    for key in ("datasets", "split", "base", "sampler", "objective", "selection", "top_k"):
        assert data[key] == earlier[key], key
    assert data["configs"][0] == {} and len(data["configs"]) < len(earlier["configs"])
    assert spec.live is not None and spec.live.seeds == [*range(10), *range(15, 35)] and spec.live.tasks == 240
    assert spec.live.test_seeds and not set(spec.live.test_seeds) & {*spec.live.seeds, *earlier["live"]["test_seeds"]}


def test_default_selection_with_the_lures_keeps_the_live_30_design_and_reads_no_earlier_held_out_seed() -> None:
    """The selection with the lures in the objective: the datasets, split, folds and live dev seeds of
    default_selection_live_30.yaml, its objective plus the lure term at the same weight, the lure target's seeds
    0-4 among the lure dev seeds, and test seeds that no earlier selection read."""
    earlier, _ = _selection("default_selection_live_30.yaml")
    data, spec = _selection("default_selection_lures.yaml")
    for key in ("datasets", "split", "base", "sampler", "selection", "top_k"):
        assert data[key] == earlier[key], key
    assert spec.objective.build().weights == {**earlier["objective"]["metric"], "lures.right_first": 1.0}
    assert data["configs"][0] == {}
    assert spec.live is not None and spec.live.seeds == earlier["live"]["seeds"]
    read = {*range(10, 15), *earlier["live"]["test_seeds"]}  # held-out seeds of the two earlier live selections
    assert spec.live.test_seeds and not set(spec.live.test_seeds) & {*spec.live.seeds, *read}
    assert spec.lures is not None and {0, 1, 2, 3, 4} <= set(spec.lures.seeds) and spec.lures.pairs == 60
    assert spec.lures.test_seeds and not set(spec.lures.test_seeds) & set(spec.lures.seeds)


def test_default_selection_of_recall_changes_starts_from_the_default_and_reads_no_earlier_held_out_seed() -> None:
    """The selection from today's default: the contrast selection's datasets, split, folds, objective (the live
    environment left out) and lure dev seeds; today's default as base and first candidate; held-out lure seeds that
    no earlier selection read."""
    earlier, _ = _selection("default_selection_contrast.yaml")
    lures, _ = _selection("default_selection_lures.yaml")
    data, spec = _selection("default_selection_recall.yaml")
    for key in ("datasets", "split", "sampler", "objective", "selection", "top_k"):
        assert data[key] == earlier[key], key
    assert spec.base_config() == LabConfig() and data["configs"][0] == {}
    assert all(c["retrieval.step_rules"] is True for c in data["configs"][1:3]) and len(data["configs"]) == 4
    assert data["configs"][3] == {"retrieval.type_match": "contains"}
    for candidate in data["configs"]:
        spec.base_config().with_params(candidate)  # raises on an unknown field or a value out of range
    assert spec.live is None and "live.final_quarter" not in spec.objective.build().weights
    assert spec.lures is not None and spec.lures.seeds == earlier["lures"]["seeds"]
    read = {*earlier["lures"]["test_seeds"], *lures["lures"]["test_seeds"]}  # held out by the earlier selections
    assert spec.lures.test_seeds and not set(spec.lures.test_seeds) & {*spec.lures.seeds, *read}
