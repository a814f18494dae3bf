"""Running a sweep: trials from the sampler, grouped by the fields that need a replay, scored by the cached
evaluator on the dev and test splits, the best chosen on dev, everything logged to MLflow (DESIGN §7).

Examples:
    >>> from hindsight_lab.sweep import SweepSpec, run_sweep  # doctest: +SKIP
    >>> result = run_sweep(SweepSpec.from_yaml("experiments/rerank_weights.yaml"), trials=50)  # doctest: +SKIP
    >>> result.trials.sort_values("dev.ndcg@5").tail()  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..config import LabConfig, Provenance
from ..errors import ConfigError, NothingToDo
from ..replay.report import EMPTY_QUERY_SET, HEADLINE, METRICS
from .cache import EpisodeData, capture, load_episode_data
from .evaluate import FastEvaluator, is_fast, param_batch
from .samplers import make_sampler
from .spec import SweepSpec

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

SPLITS = ("dev", "test")


def split_queries(groups: Mapping[str, str], test_fraction: float, seed: int) -> dict[str, list[str]]:
    """Queries partitioned by their group (task_id): a seeded shuffle of the sorted groups, the first
    ``round(test_fraction × groups)`` of them (at least one when the fraction is above 0) are test.

    Examples:
        >>> s = split_queries({"a": "t1", "b": "t1", "c": "t2", "d": "t3"}, 0.34, seed=0)
        >>> sorted(s["dev"] + s["test"]), len({"a", "b"} & set(s["test"])) in (0, 2)
        (['a', 'b', 'c', 'd'], True)
    """
    names = sorted(set(groups.values()))
    order = np.random.default_rng(seed).permutation(len(names))
    n_test = max(1, round(test_fraction * len(names))) if test_fraction > 0 and len(names) > 1 else 0
    test_groups = {names[i] for i in order[:n_test]}
    out: dict[str, list[str]] = {"dev": [], "test": []}
    for q, g in groups.items():
        out["test" if g in test_groups else "dev"].append(q)
    return out


@dataclass
class _Dataset:
    data: EpisodeData
    paths: list[Path]
    split: dict[str, list[str]]
    embedder: Any = None
    evaluators: dict[str, FastEvaluator] = field(default_factory=dict)


@dataclass
class SweepResult:
    """A finished sweep: every trial's figures, the choice, and the comparison table.

    Attributes:
        trials: one row per trial: ``number``, ``status`` (ok | invalid), ``error``, ``group``, the swept fields,
            ``dev.<metric>`` and ``test.<metric>`` (means over the split's queries, averaged over datasets).
        best: number of the best trial on dev (None when no trial was valid); ties on the objective go to the
            trial that injects fewer tokens (median on dev), then to the first.
        best_config: its config.
        comparison: rows ``base`` (the spec's base config), ``best`` and the baselines; columns ``dev.<metric>``,
            ``test.<metric>``.
        intervals: ``{base|best: {split: {metric: [mean, low, high]}}}``: bootstrap 95 % intervals (resampling whole
            tasks) of the headline metrics (one dataset; with several, none).
        timing: seconds spent loading, capturing (replays), evaluating, on baselines, and logging to MLflow.
        parent_run_id: the MLflow parent run (None without MLflow).
    """

    spec: SweepSpec
    trials: "pd.DataFrame"
    best: int | None
    best_config: LabConfig | None
    comparison: "pd.DataFrame"
    intervals: dict[str, Any]
    timing: dict[str, float]
    dataset_sha256: str = ""
    parent_run_id: str | None = None
    best_run_id: str | None = None

    @property
    def objective(self) -> str:
        return f"dev.{self.spec.objective.metric}"

    def top(self, n: int = 5) -> "pd.DataFrame":
        """The ``n`` best valid trials, ordered as the choice is made (objective, then fewer tokens, then number)."""
        ok = self.trials[self.trials["status"] == "ok"]
        return ok.sort_values([self.objective, "dev.tokens_median", "number"],
                              ascending=[self.spec.objective.direction == "minimize", True, True],
                              kind="stable").head(n)


def run_sweep(spec: SweepSpec, *, trials: int | None = None, embedder: Any = None, mlflow: bool = True,
              tracking_uri: str | None = None, baselines: bool = True, show_progress: bool = False,
              echo: Callable[[str], None] | None = None) -> SweepResult:
    """Run ``spec`` (``trials`` overrides its count) and return the table; log it to MLflow unless told not to."""
    import pandas as pd

    say = echo or (lambda _msg: None)
    n_trials = trials or spec.trials
    if n_trials < 1:
        raise ConfigError(f"trials: must be at least 1 (got {n_trials})")
    timing = {"load_s": 0.0, "capture_s": 0.0, "eval_s": 0.0, "baselines_s": 0.0, "mlflow_s": 0.0}
    base = spec.base_config()
    t0 = time.perf_counter()
    if embedder is None:
        from ..embed import embedder_for

        embedder = embedder_for(base.embedder)
    datasets = _load(spec, base, embedder)
    timing["load_s"] = time.perf_counter() - t0
    say(f"sweep {spec.name!r}: {n_trials} trials ({spec.sampler}) over {', '.join(spec.fields)}; "
        f"{sum(len(d.split['dev']) for d in datasets)} dev / {sum(len(d.split['test']) for d in datasets)} test "
        f"queries")

    sampler = make_sampler(spec)
    rows: list[dict[str, Any]] = []
    configs: dict[int, LabConfig] = {}
    while len(rows) < n_trials:
        batch = sampler.ask(min(spec.batch_size, n_trials - len(rows)))
        if not batch:
            break  # a grid or list ran out
        scored = _score_batch(spec, base, batch, datasets, timing, show_progress)
        for (number, params), (cfg, row) in zip(batch, scored):
            sampler.tell(number, row.get(f"dev.{spec.objective.metric}") if row["status"] == "ok" else None)
            if cfg is not None:
                configs[number] = cfg
            rows.append(row)
        ok = [r for r in rows if r["status"] == "ok"]
        if ok:
            best_row = _best(ok, spec)
            say(f"  {len(rows)}/{n_trials} trials, best dev {spec.objective.metric} "
                f"{best_row[f'dev.{spec.objective.metric}']:.4f} (trial {best_row['number']})")
    table = pd.DataFrame(rows)
    ok_rows = [r for r in rows if r["status"] == "ok"]
    best = _best(ok_rows, spec)["number"] if ok_rows else None
    best_cfg = configs.get(best) if best is not None else None

    comparison, intervals = _compare(spec, base, best_cfg, datasets, timing, baselines)
    result = SweepResult(spec, table, best, best_cfg, comparison, intervals, timing, dataset_hash(datasets))
    if mlflow:
        t = time.perf_counter()
        log_sweep(result, configs, datasets, tracking_uri=tracking_uri)
        timing["mlflow_s"] = time.perf_counter() - t
    return result


# ---------------------------------------------------------------------- pieces
def _load(spec: SweepSpec, base: LabConfig, embedder: Any) -> list[_Dataset]:
    from ..replay.runner import prefetch
    from ..replay.systems import BASELINE_KEY

    out: list[_Dataset] = []
    for ds in spec.datasets:
        paths = ds.files(spec.folder)
        data = load_episode_data(paths, format=ds.format, limit=ds.limit, skip_invalid=ds.skip_invalid)
        if not data.judgements.query_ids:
            raise NothingToDo(f"{ds.label}: {EMPTY_QUERY_SET}")
        groups = {}
        by_id = {ep.episode_id: ep for ep in data.episodes}
        for q in data.judgements.query_ids:
            groups[q] = by_id[q].task_id or q
        out.append(_Dataset(data, paths, split_queries(groups, spec.split.test_fraction, spec.split.seed)))
    # every text the replays will embed one by one, in batches (an already prefetched embedder keeps its vectors)
    embedder = prefetch(embedder, [ep for d in out for ep in d.data.episodes], [], base, keys=(BASELINE_KEY,))[0]
    for d in out:
        d.embedder = embedder
    return out


def _group_key(params: Mapping[str, Any]) -> str:
    slow = {k: v for k, v in sorted(params.items()) if not is_fast(k)}
    return json.dumps(slow, sort_keys=True, default=str) if slow else "{}"


def _evaluator(d: _Dataset, key: str, cfg: LabConfig, spec: SweepSpec, timing: dict[str, float],
               show_progress: bool) -> FastEvaluator:
    if key not in d.evaluators:
        t = time.perf_counter()
        cache = capture(d.data, cfg, embedder=d.embedder, top_k=spec.top_k, token_budget=spec.token_budget,
                        show_progress=show_progress)
        timing["capture_s"] += time.perf_counter() - t
        d.evaluators[key] = FastEvaluator(cache)
    return d.evaluators[key]


def _score_batch(spec: SweepSpec, base: LabConfig, batch: Sequence[tuple[int, dict[str, Any]]],
                 datasets: Sequence[_Dataset], timing: dict[str, float], show_progress: bool
                 ) -> list[tuple[LabConfig | None, dict[str, Any]]]:
    out: list[tuple[LabConfig | None, dict[str, Any]]] = []
    by_group: dict[str, list[int]] = {}
    for i, (number, params) in enumerate(batch):
        row: dict[str, Any] = {"number": number, "status": "ok", "error": "", "group": _group_key(params), **params}
        try:
            cfg = base.with_params(_budgeted(params, spec))
        except ConfigError as exc:
            row.update(status="invalid", error=str(exc).split(": invalid config: ")[-1])
            out.append((None, row))
            continue
        out.append((cfg, row))
        by_group.setdefault(row["group"], []).append(i)
    for key, idx in by_group.items():
        cfgs = [out[i][0] for i in idx]
        group_cfg = cfgs[0]  # any member: they share every field that needs a replay
        sums: dict[str, list[Any]] = {s: [] for s in SPLITS}
        for d in datasets:
            ev = _evaluator(d, key, group_cfg, spec, timing, show_progress)  # type: ignore[arg-type]
            t = time.perf_counter()
            evaluation = ev.evaluate(param_batch(cfgs))
            for s in SPLITS:
                if d.split[s]:
                    sums[s].append(evaluation.summary(d.split[s]))
            timing["eval_s"] += time.perf_counter() - t
        for s, frames in sums.items():
            if not frames:
                continue
            mean = sum(f.to_numpy() for f in frames) / len(frames)
            cols = list(frames[0].columns)
            for j, i in enumerate(idx):
                out[i][1].update({f"{s}.{c}": float(mean[j, n]) for n, c in enumerate(cols)})
    return out


def _budgeted(params: Mapping[str, Any], spec: SweepSpec) -> dict[str, Any]:
    """The trial's overrides, with the spec's shared top_k and budget (unless swept)."""
    out = {"retrieval.top_k": spec.top_k, **params}
    if spec.token_budget is not None and "retrieval.token_budget" not in params:
        out["retrieval.token_budget"] = spec.token_budget
    return out


def _best(rows: Sequence[Mapping[str, Any]], spec: SweepSpec) -> Mapping[str, Any]:
    """The best row on dev; among equal objectives, the one injecting fewer tokens (median), then the first."""
    key = f"dev.{spec.objective.metric}"
    sign = -1.0 if spec.objective.direction == "maximize" else 1.0
    return min(rows, key=lambda r: (sign * r[key], r.get("dev.tokens_median", 0.0), r["number"]))


def _compare(spec: SweepSpec, base: LabConfig, best: LabConfig | None, datasets: Sequence[_Dataset],
             timing: dict[str, float], baselines: bool) -> tuple["pd.DataFrame", dict[str, Any]]:
    """``base`` and ``best`` from the evaluator, the baselines from a replay; intervals of base and best."""
    import pandas as pd

    from ..metrics import bootstrap_ci

    rows: dict[str, dict[str, float]] = {}
    intervals: dict[str, Any] = {}
    named = {"base": base.with_params(_budgeted({}, spec))}
    if best is not None:
        named["best"] = best
    for name, cfg in named.items():
        per: dict[str, list[Any]] = {s: [] for s in SPLITS}
        for d in datasets:
            key = _group_key({f: v for f, v in cfg.flat().items() if f in spec.replay_fields})
            ev = _evaluator(d, key, cfg, spec, timing, False).evaluate([cfg])
            for s in SPLITS:
                if d.split[s]:
                    per[s].append((ev, d.split[s]))
        row: dict[str, float] = {}
        intervals[name] = {}
        for s, items in per.items():
            if not items:
                continue
            frames = [ev.summary(ids) for ev, ids in items]
            for col in frames[0].columns:
                row[f"{s}.{col}"] = float(np.mean([f.loc[0, col] for f in frames]))
            if len(items) == 1:
                ev, ids = items[0]
                intervals[name][s] = {m: list(bootstrap_ci(ev.per_query(0, m, ids), ev.groups, seed=spec.seed))
                                      for m in HEADLINE}
        rows[name] = row
    if baselines:
        t = time.perf_counter()
        rows.update(_baselines(spec, datasets))
        timing["baselines_s"] = time.perf_counter() - t
    return pd.DataFrame.from_dict(rows, orient="index"), intervals


def _baselines(spec: SweepSpec, datasets: Sequence[_Dataset]) -> dict[str, dict[str, float]]:
    """``none``, ``dense`` and ``bm25`` on the same splits (one replay per dataset)."""
    from ..replay.runner import run_replay

    sums: dict[str, dict[str, list[float]]] = {}
    for d, ds in zip(datasets, spec.datasets):
        report = run_replay(d.paths, format=ds.format, systems=["none", "dense", "bm25"], top_k=spec.top_k,
                            token_budget=spec.token_budget, limit=ds.limit, skip_invalid=ds.skip_invalid,
                            embedder=d.embedder, seed=spec.seed)
        frame = report.per_episode
        for name, part in frame.groupby("system"):
            for s in SPLITS:
                sel = part[part["query_id"].isin(d.split[s])]
                if sel.empty:
                    continue
                for m in METRICS:
                    sums.setdefault(str(name), {}).setdefault(f"{s}.{m}", []).append(float(sel[m].mean()))
                sums[str(name)].setdefault(f"{s}.tokens_median", []).append(float(sel["tokens"].median()))
    return {name: {k: float(np.mean(v)) for k, v in cols.items()} for name, cols in sums.items()}


# ---------------------------------------------------------------------- MLflow
def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def dataset_hash(datasets: Sequence[_Dataset]) -> str:
    shas = [d.data.info["sha256"] for d in datasets]
    return shas[0] if len(shas) == 1 else hashlib.sha256("+".join(shas).encode()).hexdigest()


def log_sweep(result: SweepResult, configs: Mapping[int, LabConfig], datasets: Sequence[_Dataset], *,
              tracking_uri: str | None = None) -> None:
    """One parent run (spec, best figures, trial table, sensitivity plot, best config) and child runs for every
    trial, or for the top N when there are more than ``mlflow.child_runs``."""
    from .. import __version__
    from ..tracking import start_run
    from .report import sensitivity_plot

    spec = result.spec
    m = spec.mlflow
    uri = tracking_uri or m.uri
    sha = result.dataset_sha256
    commit = git_commit()
    tags = {"dataset_sha256": sha, "git_commit": commit, "hindsight_lab.version": __version__}
    ok = result.top(len(result.trials))
    logged = ok if len(result.trials) <= m.child_runs else ok.head(m.top_n)
    with start_run(m.experiment, tracking_uri=uri, run_name=f"sweep {spec.name}", tags={**tags, "kind": "sweep"}
                   ) as parent:
        result.parent_run_id = parent.run_id
        parent.log_params({"sweep.name": spec.name, "sweep.sampler": spec.sampler, "sweep.trials": len(result.trials),
                           "sweep.seed": spec.seed, "sweep.objective": f"{spec.objective.direction} "
                           f"dev.{spec.objective.metric}", "sweep.fields": spec.fields,
                           "sweep.test_fraction": spec.split.test_fraction, "sweep.top_k": spec.top_k,
                           "dataset.sha256": sha, "dataset.names": [d.data.info["name"] for d in datasets]})
        best_run_id = None
        for _, row in logged.iterrows():
            number = int(row["number"])
            with start_run(m.experiment, tracking_uri=uri, run_name=f"trial {number}", parent_run_id=parent.run_id,
                           tags={**tags, "kind": "trial", "trial": number}) as child:
                cfg = configs[number]
                child.log_params(cfg.flat())
                child.log_metrics({k: float(v) for k, v in row.items()
                                   if isinstance(k, str) and k.split(".")[0] in SPLITS and _finite(v)})
                child.log_text(cfg.to_yaml(only_behaviour=True), "config.yaml")
                if number == result.best:
                    best_run_id = child.run_id
        result.best_run_id = best_run_id or parent.run_id
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            result.trials.to_csv(folder / "trials.csv", index=False)
            result.comparison.to_csv(folder / "comparison.csv")
            (folder / "intervals.json").write_text(json.dumps(result.intervals, indent=2), encoding="utf-8")
            (folder / "spec.yaml").write_text(_spec_yaml(spec), encoding="utf-8")
            sensitivity_plot(result.trials, spec.fields, result.objective, best=result.best,
                             title=f"sweep {spec.name}", path=folder / "sensitivity.png")
            for name in ("trials.csv", "comparison.csv", "intervals.json", "spec.yaml", "sensitivity.png"):
                parent.log_artifact(folder / name)
            if result.best_config is not None:
                exported = with_provenance(result)
                parent.log_text(exported.to_yaml(only_behaviour=True), "best-config.yaml")
        if result.best is not None:
            parent.log_metrics({f"best.{k}": v for k, v in result.comparison.loc["best"].items() if _finite(v)})
        parent.log_metrics({f"base.{k}": v for k, v in result.comparison.loc["base"].items() if _finite(v)})
        parent.log_metrics({f"timing.{k}": v for k, v in result.timing.items()})


def with_provenance(result: SweepResult) -> LabConfig:
    """The best config with its provenance: run id, dataset hash, dev and test headline metrics, version."""
    from .. import __version__

    assert result.best_config is not None
    best = result.comparison.loc["best"]
    metrics = {k: float(best[k]) for k in best.index
               if k.split(".", 1)[-1] in (*HEADLINE, "tokens_median") and _finite(best[k])}
    prov = Provenance(run_id=result.best_run_id, dataset_sha256=result.dataset_sha256 or None, metrics=metrics,
                      package_version=__version__)
    return result.best_config.model_copy(update={"provenance": prov})


def _finite(v: Any) -> bool:
    try:
        return bool(np.isfinite(float(v)))
    except (TypeError, ValueError):
        return False


def _spec_yaml(spec: SweepSpec) -> str:
    import yaml

    return yaml.safe_dump(spec.model_dump(mode="json", exclude={"folder"}), sort_keys=False)
