"""`hindsight-lab fit` end to end on the committed samples, with a real MLflow store: the folds, the luck bar, the
left-out replays (real replays beside the baselines), the exported config, and the lure pairs scored from the cache
exactly as `hindsight-lab lures` replays them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml

from hindsight_lab import LabConfig
from hindsight_lab.cli import main
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.fit import load_spec, run_fit
from hindsight_lab.fit.lures import lure_cache
from hindsight_lab.sweep.evaluate import FastEvaluator

pytestmark = pytest.mark.slow


def _spec(tmp_path: Path, **extra) -> Path:
    LabConfig().with_params({"embedder.model": "hashing-256"}).to_yaml(tmp_path / "base.yaml")
    spec = {"name": "t", "datasets": ["tau-bench-airline-sample", "tau2-airline-cross-sample"], "folds": 2,
            "base": "base.yaml", "baselines": ["dense", "bm25", "dense+ok", "bm25+ok"], **extra}
    path = tmp_path / "fit.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_fit_cross_validates_leaves_each_dataset_out_and_logs_every_fold(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_fit(load_spec(_spec(tmp_path, lures={"seeds": [0], "pairs": 6})), tracking_uri=uri)
    assert result.chosen in ("fitted", "base")
    assert (result.chosen == "fitted") == (result.cv["gain"] > result.cv["luck_bar"])  # the rule, as stated
    assert result.config == (result.fitted if result.chosen == "fitted" else result.base)
    assert len(result.folds) == 2 and all(r["queries"] > 0 for r in result.folds)
    assert {r["dataset"] for r in result.left_out} == {"tau-bench-airline-sample", "tau2-airline-cross-sample"}
    row = next(r for r in result.left_out if r["dataset"] == "tau2-airline-cross-sample" and r["mode"] == "repeat")
    assert row["best_baseline"] in ("dense", "bm25") and row["queries"] == 25
    assert row["margin"] == pytest.approx(row["hindsight"] - row["best"])
    con = sqlite3.connect(tmp_path / "mlflow.db")
    names = sorted(r[0] for r in con.execute("SELECT name FROM runs"))
    assert names == ["fit t", "fold 0", "fold 1", "left out tau-bench-airline-sample",
                     "left out tau2-airline-cross-sample"]
    fold_metrics = {k for (k,) in con.execute("SELECT DISTINCT key FROM metrics WHERE key LIKE 'cv.ndcg%'")}
    assert fold_metrics == {"cv.ndcg_at_5.base", "cv.ndcg_at_5.fitted"}


def test_the_cli_exports_a_config_that_replay_loads(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(_spec(tmp_path)), "--no-left-out", "--no-mlflow", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2-fold by task" in printed and f"config written to {out}" in printed
    cfg = LabConfig.from_yaml(out)
    assert cfg.provenance is not None and "cv.gain" in cfg.provenance.metrics
    if "exporting the base config unchanged" in printed:  # says so, and exports the base
        assert cfg.retrieval.weights == LabConfig().retrieval.weights
    assert main(["replay", "tau-bench-airline-sample", "--limit", "2", "--config", str(out), "--no-mlflow",
                 "--systems", "bm25,hindsight"]) == 0


def test_lure_pairs_from_the_cache_inject_what_the_lure_replay_injects() -> None:
    from hindsight_lab.datasets.synthetic import generate
    from hindsight_lab.scenarios.lures import evaluate_lures, lure_pairs

    emb = HashingEmbedder(dim=256)
    cfg = LabConfig().with_params({"embedder.model": "hashing-256"})
    cache = lure_cache([3], pairs=5, embedder=emb, config=cfg)
    ev = FastEvaluator(cache)
    lists = {q.query_id.removeprefix("s3-"): [q.items[i][1][0].removeprefix("s3-") for i in ev.inject(q, _one(cfg))[0]
                                             if i >= 0] for q in cache.queries}
    report = evaluate_lures(lure_pairs(generate("lures", n=5, seed=3)), embedder=emb, systems=["hindsight"],
                            config=cfg)
    assert len(lists) == 5
    for row in report.rows:  # the same first of right and lure as the real replay of each pair
        pair_lists = [v for k, v in lists.items() if k.startswith(row["pair"])]
        assert len(pair_lists) == 1
        ids = pair_lists[0]
        right, lure = f"{row['pair']}-right", f"{row['pair']}-lure"
        first = next((("right" if i == right else "lure") for i in ids if i in (right, lure)), "neither")
        assert first == row["first"], row
    values = ev.evaluate([cfg]).values[:, 0, 0]
    assert np.all((values >= 0) & (values <= 1))


def _one(cfg):
    from hindsight_lab.sweep.evaluate import param_batch

    return param_batch([cfg])
