"""Live runs kept on disk (``hindsight_lab.sweep.live_runs``): a sweep run again after a stop takes the runs it made
from the store instead of making them again, and a changed config, setting or file never gives a stale figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_lab.config import LabConfig
from hindsight_lab.sweep import SweepSpec
from hindsight_lab.sweep.live import LiveTerm
from hindsight_lab.sweep.live_runs import LiveRunStore, code_fingerprint

TASKS = 24


def _key(**changes) -> str:
    what = {"config": json.dumps(LabConfig().flat(), sort_keys=True, default=str), "seed": 0,
            "systems": ("hindsight",), "tasks": TASKS, "top_k": 10}
    what.update(changes)
    config = what.pop("config")
    return LiveRunStore.key(config, **what)


def test_the_key_names_everything_a_run_depends_on() -> None:
    base = _key()
    assert _key() == base
    other_config = json.dumps(LabConfig().with_params({"retrieval.weights.confidence": 0.2}).flat(), sort_keys=True,
                              default=str)
    changed = [_key(config=other_config), _key(seed=1), _key(systems=("none", "dense", "bm25")), _key(tasks=48),
               _key(top_k=5), _key(mode="lures")]
    assert len({base, *changed}) == 1 + len(changed)
    assert len(code_fingerprint()) == 16


def test_a_summary_is_kept_whole_and_a_torn_file_is_run_again(tmp_path: Path) -> None:
    import numpy as np

    store = LiveRunStore(tmp_path / "live")
    key = _key()
    assert store.get(key) is None
    summary = {"hindsight": {"final_window": np.float64(0.75), "tasks": np.int64(24), "L3_final": 3}}
    store.put(key, summary)
    assert store.get(key) == {"hindsight": {"final_window": 0.75, "tasks": 24, "L3_final": 3}}
    assert [p.name for p in store.folder.iterdir()] == [f"{key}.json"]  # no temporary file left behind
    store.path(key).write_text('{"hindsight": {"final_wi')  # a write cut short by an earlier crash
    assert store.get(key) is None
    store.put(key, {"hindsight": {"final_window": 0.5}})
    assert store.get(key) == {"hindsight": {"final_window": 0.5}}
    with pytest.raises(TypeError, match="JSON cannot keep"):
        store.put(_key(seed=7), {"hindsight": {"final_window": object()}})
    assert store.get(_key(seed=7)) is None and len(list(store.folder.iterdir())) == 1


@pytest.mark.slow
def test_a_sweep_run_again_takes_its_live_runs_from_the_store(tmp_path: Path, minilm, monkeypatch) -> None:
    spec = SweepSpec.from_dict({
        "name": "live", "datasets": [{"name": "tau-bench-airline-sample"}], "split": {"test_fraction": 0.4},
        "sampler": "list", "configs": [{}], "objective": {"metric": {"ndcg@5": 1.0, "live.final_quarter": 1.0}},
        "live": {"seeds": [0, 1], "tasks": TASKS}}, folder=tmp_path)
    store = LiveRunStore(tmp_path / "live")
    cfgs = [LabConfig(), LabConfig().with_params({"retrieval.weights.confidence": 0.2})]
    first = LiveTerm.build(spec.live, spec.objective.build(), embedder=minilm, folds=2, store=store)
    made = first.items(cfgs)
    assert len(list(store.folder.glob("*.json"))) == 4  # 2 configs x 2 seeds, each kept as it was made

    def no_run(*_args, **_kwargs):
        raise AssertionError("a run kept in the store was made again")

    monkeypatch.setattr(LiveTerm, "runner", staticmethod(no_run))
    again = LiveTerm.build(spec.live, spec.objective.build(), embedder=minilm, folds=2, store=store)
    assert again.items(cfgs).tolist() == made.tolist()
    assert again.runs == first.runs
    # a seed not run yet is made (here: refused by the stand-in), the kept ones are not
    with pytest.raises(AssertionError, match="made again"):
        again.values(cfgs[0], "final_quarter", [2])


@pytest.mark.slow
def test_the_sweep_command_keeps_its_live_runs_where_it_is_told(tmp_path: Path, capsys) -> None:
    import yaml

    from hindsight_lab.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "live-cli", "datasets": [{"name": "tau-bench-airline-sample"}], "split": {"test_fraction": 0.4},
        "sampler": "list", "configs": [{}], "objective": {"metric": {"ndcg@5": 1.0, "live.final_quarter": 1.0}},
        "live": {"seeds": [0, 1], "tasks": TASKS}}))
    kept = tmp_path / "runs"
    assert main(["sweep", str(spec), "--no-mlflow", "--no-baselines", "--live-runs", str(kept)]) == 0
    first = capsys.readouterr().out
    assert len(list(kept.glob("*.json"))) == 2  # the one config on each dev seed (no test seeds)
    assert main(["sweep", str(spec), "--no-mlflow", "--no-baselines", "--live-runs", str(kept)]) == 0
    again = capsys.readouterr().out
    def figures(out: str) -> list[str]:
        return [line for line in out.splitlines() if not line.startswith("timing")]

    assert "dev.live.final_quarter" in first and figures(again) == figures(first)  # the same report, runs not made
    with pytest.raises(SystemExit):
        main(["sweep", str(spec), "--live-runs", str(kept), "--no-live-runs"])


@pytest.mark.slow
def test_runs_made_in_workers_are_kept_even_when_another_run_fails(tmp_path: Path, minilm) -> None:
    """Two runs at once: the one whose config cannot load its model fails, the other is kept in the store as soon as
    it is made, so the sweep run again after the fix does not make it again."""
    from hindsight_lab.sweep.live import LiveSpec
    from hindsight_lab.sweep.spec import ObjectiveSpec

    store = LiveRunStore(tmp_path / "live")
    objective = ObjectiveSpec.model_validate({"metric": {"ndcg@5": 1.0, "live.final_quarter": 1.0}}).build()
    live = LiveTerm.build(LiveSpec(seeds=[0, 1], tasks=TASKS, workers=2), objective, embedder=minilm, folds=2,
                          store=store)
    good, bad = LabConfig(), LabConfig().with_params({"embedder.model": "no-such-model"})
    with pytest.raises(Exception, match="no-such-model"):
        live.run_all([bad, good], [0])  # the failing run first: the other is kept all the same
    assert len(list(store.folder.glob("*.json"))) == 1
    assert live.key(good, 0, ("hindsight",)) in live.runs and live.key(bad, 0, ("hindsight",)) not in live.runs
