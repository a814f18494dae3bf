"""The trials of a sweep: the datasets loaded once and split into dev and test queries by task, one cached evaluator
per group of trials that share every field needing a replay, and each batch of trials scored on dev — the dev means
of every metric, and the objective per query of dev (its :class:`Design`), folded by task for the cross-validated
choice (:mod:`.select`). The test split is not scored here: it is scored once, at the end, for the configs compared
(:mod:`.compare`)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError, NothingToDo
from ..replay.report import EMPTY_QUERY_SET
from .cache import EpisodeData, ReplayCache, capture, load_episode_data
from .evaluate import FastEvaluator, is_fast, param_batch
from .seeded import SeededTerm
from .select import Objective, cv_scores, mean_se, task_folds
from .spec import SEEDED_TERMS, SweepSpec


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
class Design:
    """The objective on one dataset's dev split, as weighted per-query items: item ``i`` is query ``query_ids[i]``
    of judging mode ``modes[i]`` scored on metric ``metrics[i]``, its task ``groups[i]`` in fold ``folds[i]``, and
    its fold's objective is ``sum(weights[i] * value[i])`` over its items (each metric's mean over the fold's
    queries of its mode, times the metric's weight)."""

    modes: list[str]
    metrics: list[str]
    query_ids: list[str]
    groups: np.ndarray
    folds: np.ndarray
    weights: np.ndarray

    @classmethod
    def build(cls, data: EpisodeData, dev: Sequence[str], objective: Objective, folds: int, seed: int) -> "Design":
        dev_set = set(dev)
        task = {e.episode_id: e.task_id or e.episode_id for e in data.episodes}
        parts = []
        for mode, metric, w in objective.terms:
            if mode in SEEDED_TERMS:  # not a replay's: a seeded term has items of its own (:mod:`.seeded`)
                continue
            qs = [q for q in data.mode(mode).query_ids if q in dev_set]
            parts.append((mode, metric, w, qs))
        tasks = sorted({task[q] for *_, qs in parts for q in qs})
        if len(tasks) < 2:
            raise NothingToDo(f"the objective's dev queries come from {len(tasks)} task(s): cross-validation by task "
                              f"needs two or more")
        folds = min(folds, len(tasks))  # a small dev split: one task per fold
        fold_of = dict(zip(tasks, task_folds(tasks, folds, seed)))
        modes, metrics, qids, weights = [], [], [], []
        for mode, metric, w, qs in parts:
            n = np.bincount([fold_of[task[q]] for q in qs], minlength=folds)
            for q in qs:
                modes.append(mode), metrics.append(metric), qids.append(q)
                weights.append(w / n[fold_of[task[q]]])
        groups = np.array([task[q] for q in qids])
        return cls(modes, metrics, qids, groups, np.array([fold_of[g] for g in groups]), np.array(weights))

    def values(self, evaluations: Mapping[str, Any]) -> np.ndarray:
        """``(N, C)`` the items' values from each judging mode's :class:`~.evaluate.Evaluation` of ``C`` configs."""
        pos = {mode: {q: i for i, q in enumerate(ev.query_ids)} for mode, ev in evaluations.items()}
        return np.array([evaluations[mode].values[pos[mode][qid], :, evaluations[mode].metrics.index(metric)]
                         for mode, metric, qid in zip(self.modes, self.metrics, self.query_ids)])


@dataclass
class SweepData:
    """One dataset of a sweep: its episodes, files and query split, the (prefetched) embedder, the objective's
    dev design, and one cached evaluator per replay group (:func:`group_key`) and judging mode."""

    data: EpisodeData
    paths: list[Path]
    split: dict[str, list[str]]
    embedder: Any = None
    evaluators: dict[tuple[str, str], FastEvaluator] = field(default_factory=dict)
    caches: dict[str, ReplayCache] = field(default_factory=dict)
    design: Design | None = None
    files: Any = None
    """Where the replay caches are shared with other processes (:class:`~.replay_files.ReplayFiles`), if anywhere."""


def load_datasets(spec: SweepSpec, base: LabConfig, embedder: Any) -> list[SweepData]:
    """Every dataset of the spec with its dev/test split, sharing one embedder that holds, embedded ahead, every
    text the replays will embed.

    Raises:
        NothingToDo: a dataset with an empty query set.
    """
    from ..replay.runner import prefetch
    from ..replay.systems import BASELINE_KEY

    out: list[SweepData] = []
    for ds in spec.datasets:
        paths = ds.files(spec.folder)
        data = load_episode_data(paths, format=ds.format, limit=ds.limit, skip_invalid=ds.skip_invalid)
        if not data.judgements.query_ids:
            raise NothingToDo(f"{ds.label}: {EMPTY_QUERY_SET}")
        by_id = {ep.episode_id: ep for ep in data.episodes}
        asked = dict.fromkeys(q for mode in ("repeat", *data.modes) for q in data.mode(mode).query_ids)
        groups = {q: by_id[q].task_id or q for q in asked}  # every judging mode's queries, split by task
        split = split_queries(groups, spec.split.test_fraction, spec.split.seed)
        design = Design.build(data, split["dev"], spec.objective.build(), spec.selection.folds, spec.seed)
        out.append(SweepData(data, paths, split, design=design))
    # every text the replays will embed one by one, in batches (an already prefetched embedder keeps its vectors)
    embedder = prefetch(embedder, [ep for d in out for ep in d.data.episodes], [], base, keys=(BASELINE_KEY,))[0]
    for d in out:
        d.embedder = embedder
    return out


def dataset_hash(datasets: Sequence[SweepData]) -> str:
    """The sha256 of the one dataset, or of all of theirs joined."""
    shas = [d.data.info["sha256"] for d in datasets]
    return shas[0] if len(shas) == 1 else hashlib.sha256("+".join(shas).encode()).hexdigest()


def group_key(params: Mapping[str, Any]) -> str:
    """The trials that share this key share every field that needs a replay, hence one cached evaluator."""
    slow = {k: v for k, v in sorted(params.items()) if not is_fast(k)}
    return json.dumps(slow, sort_keys=True, default=str) if slow else "{}"


def evaluator(d: SweepData, key: str, cfg: LabConfig, spec: SweepSpec, timing: dict[str, float],
              show_progress: bool, mode: str = "repeat") -> FastEvaluator:
    """The dataset's evaluator of a replay group and judging mode, capturing the group's replay (with ``cfg``) the
    first time."""
    if key not in d.caches:
        t = time.perf_counter()

        def make() -> ReplayCache:
            return capture(d.data, cfg, embedder=d.embedder, top_k=spec.top_k, token_budget=spec.token_budget,
                           show_progress=show_progress)

        if d.files is None:
            d.caches[key] = make()
        else:  # shared with the other processes of the sweep: captured by the first that needs it
            name = d.embedder.name() if hasattr(d.embedder, "name") else type(d.embedder).__name__
            d.caches[key] = d.files.get(d.files.key(d.data.info["sha256"], cfg, top_k=spec.top_k,
                                                    token_budget=spec.token_budget, embedder=name), make)
        timing["capture_s"] += time.perf_counter() - t
    if (key, mode) not in d.evaluators:
        d.evaluators[(key, mode)] = FastEvaluator(d.caches[key], mode=mode)
    return d.evaluators[(key, mode)]


@dataclass
class Scored:
    """A batch's scores: each trial's config (None when invalid) and row (the dev means of every metric, averaged
    over the datasets, and ``cv.mean``, ``cv.se``, ``cv.fold<k>`` of the objective), and the objective's dev items
    of every valid trial (``(N, C)``, the datasets' designs one after the other; columns in batch order)."""

    configs: list[LabConfig | None]
    rows: list[dict[str, Any]]
    items: dict[int, np.ndarray]


def score_batch(spec: SweepSpec, base: LabConfig, batch: Sequence[tuple[int, dict[str, Any]]],
                datasets: Sequence[SweepData], timing: dict[str, float], show_progress: bool,
                seeded: Sequence[SeededTerm] = ()) -> Scored:
    """Score a batch of trials on dev, every trial of a replay group evaluated in one batch; with ``seeded`` terms
    (the live environment, the lures), each trial also runs each on its dev seeds (their items follow the
    replays')."""
    configs: list[LabConfig | None] = []
    rows: list[dict[str, Any]] = []
    by_group: dict[str, list[int]] = {}
    for i, (number, params) in enumerate(batch):
        row: dict[str, Any] = {"number": number, "status": "ok", "error": "", "group": group_key(params), **params}
        try:
            cfg: LabConfig | None = base.with_params(budgeted(params, spec))
        except ConfigError as exc:
            row.update(status="invalid", error=str(exc).split(": invalid config: ")[-1])
            cfg = None
        configs.append(cfg)
        rows.append(row)
        if cfg is not None:
            by_group.setdefault(row["group"], []).append(i)
    items: dict[int, np.ndarray] = {}
    for key, idx in by_group.items():
        cfgs = [configs[i] for i in idx]
        means, values = _score_group(spec, key, cfgs, datasets, timing, show_progress)  # type: ignore[arg-type]
        for term in seeded:
            if term.terms:
                t = time.perf_counter()
                values = np.concatenate([values, term.items(cfgs)], axis=0)
                timing[f"{term.MODE}_s"] = timing.get(f"{term.MODE}_s", 0.0) + time.perf_counter() - t
        for j, i in enumerate(idx):
            rows[i].update(means[j])
            for term in seeded:
                rows[i].update({f"dev.{term.MODE}.{m}": float(term.values(cfgs[j], m, term.seeds).mean())
                                for m, _ in term.terms})
            items[batch[i][0]] = values[:, j]
    folds, weights = joint_design(datasets, seeded)
    for i, (number, _) in enumerate(batch):
        if number in items:
            rows[i].update(cv_columns(items[number], folds, weights, spec.objective.direction))
    return Scored(configs, rows, items)


def _score_group(spec: SweepSpec, key: str, cfgs: Sequence[LabConfig], datasets: Sequence[SweepData],
                 timing: dict[str, float], show_progress: bool) -> tuple[list[dict[str, float]], np.ndarray]:
    """One replay group's configs: their dev means (averaged over datasets) and their objective items."""
    group_cfg = cfgs[0]  # any member: they share every field that needs a replay
    frames, parts = [], []
    for d in datasets:
        assert d.design is not None
        evals = {}
        for mode in dict.fromkeys(["repeat", *d.design.modes]):
            ev = evaluator(d, key, group_cfg, spec, timing, show_progress, mode)
            t = time.perf_counter()
            evals[mode] = ev.evaluate(param_batch(cfgs))
            timing["eval_s"] += time.perf_counter() - t
        if d.split["dev"]:
            frames.append(evals["repeat"].summary(d.split["dev"]))
        parts.append(d.design.values(evals))
    mean = sum(f.to_numpy() for f in frames) / len(frames) if frames else None
    cols = list(frames[0].columns) if frames else []
    means = [{f"dev.{c}": float(mean[j, n]) for n, c in enumerate(cols)} if mean is not None else {}
             for j in range(len(cfgs))]
    return means, np.concatenate(parts, axis=0)


def joint_design(datasets: Sequence[SweepData], seeded: Sequence[SeededTerm] = ()
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The folds and weights of every dataset's objective items together: a fold is the union of the datasets'
    folds of that number, each dataset's share of its score ``1 / datasets``; then each seeded term's items, if any
    (their weights are not shared with the datasets: a seeded term adds to the replays' mean)."""
    folds = [d.design.folds for d in datasets]  # type: ignore[union-attr]
    weights = [d.design.weights / len(datasets) for d in datasets]  # type: ignore[union-attr]
    for term in seeded:
        if term.terms:
            folds.append(term.item_folds)
            weights.append(term.item_weights)
    return np.concatenate(folds), np.concatenate(weights)


def joint_groups(datasets: Sequence[SweepData], seeded: Sequence[SeededTerm] = ()) -> np.ndarray:
    """Every objective item's task, named by its dataset too (tasks of two datasets never meet); a seeded term's
    item's group is its seed, named by its term (``live:3``, ``lures:3``)."""
    parts = [np.array([f"{i}:{g}" for g in d.design.groups]) for i, d in enumerate(datasets)]  # type: ignore
    parts += [term.item_groups for term in seeded if term.terms]
    return np.concatenate(parts)


def cv_columns(values: np.ndarray, folds: np.ndarray, weights: np.ndarray, direction: str) -> dict[str, float]:
    """``cv.mean``, ``cv.se`` and ``cv.fold<k>`` of one config's objective (in its declared direction)."""
    scores = cv_scores(values[:, None], folds, weights)[0]
    mean, se = mean_se(scores[None, :])
    return {"cv.mean": float(mean[0]), "cv.se": float(se[0]), **{f"cv.fold{k}": float(v) for k, v in enumerate(scores)}}


def budgeted(params: Mapping[str, Any], spec: SweepSpec) -> dict[str, Any]:
    """The trial's overrides, with the spec's shared top_k and budget (unless swept)."""
    out = {"retrieval.top_k": spec.top_k, **params}
    if spec.token_budget is not None and "retrieval.token_budget" not in params:
        out["retrieval.token_budget"] = spec.token_budget
    return out


def best_trial(rows: Sequence[Mapping[str, Any]], spec: SweepSpec) -> Mapping[str, Any]:
    """The best row by its cross-validated objective; among equal ones, the one injecting fewer tokens (median on
    dev), then the first."""
    sign = -1.0 if spec.objective.direction == "maximize" else 1.0
    return min(rows, key=lambda r: (sign * r["cv.mean"], r.get("dev.tokens_median", 0.0), r["number"]))
