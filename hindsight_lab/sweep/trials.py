"""The trials of a sweep: the datasets loaded once and split into dev and test queries by task, one cached evaluator
per group of trials that share every field needing a replay, each batch of trials scored on both splits, and the
choice of the best trial on dev."""

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
from .cache import EpisodeData, capture, load_episode_data
from .evaluate import FastEvaluator, is_fast, param_batch
from .result import SPLITS
from .spec import SweepSpec


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
class SweepData:
    """One dataset of a sweep: its episodes, files and query split, the (prefetched) embedder, and one cached
    evaluator per replay group (:func:`group_key`)."""

    data: EpisodeData
    paths: list[Path]
    split: dict[str, list[str]]
    embedder: Any = None
    evaluators: dict[str, FastEvaluator] = field(default_factory=dict)


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
        groups = {}
        by_id = {ep.episode_id: ep for ep in data.episodes}
        for q in data.judgements.query_ids:
            groups[q] = by_id[q].task_id or q
        out.append(SweepData(data, paths, split_queries(groups, spec.split.test_fraction, spec.split.seed)))
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
              show_progress: bool) -> FastEvaluator:
    """The dataset's evaluator of a replay group, capturing its replay (with ``cfg``) the first time."""
    if key not in d.evaluators:
        t = time.perf_counter()
        cache = capture(d.data, cfg, embedder=d.embedder, top_k=spec.top_k, token_budget=spec.token_budget,
                        show_progress=show_progress)
        timing["capture_s"] += time.perf_counter() - t
        d.evaluators[key] = FastEvaluator(cache)
    return d.evaluators[key]


def score_batch(spec: SweepSpec, base: LabConfig, batch: Sequence[tuple[int, dict[str, Any]]],
                datasets: Sequence[SweepData], timing: dict[str, float], show_progress: bool
                ) -> list[tuple[LabConfig | None, dict[str, Any]]]:
    """Each trial's config (None when invalid) and row: its split means averaged over the datasets, every trial of
    a replay group evaluated in one batch."""
    out: list[tuple[LabConfig | None, dict[str, Any]]] = []
    by_group: dict[str, list[int]] = {}
    for i, (number, params) in enumerate(batch):
        row: dict[str, Any] = {"number": number, "status": "ok", "error": "", "group": group_key(params), **params}
        try:
            cfg = base.with_params(budgeted(params, spec))
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
            ev = evaluator(d, key, group_cfg, spec, timing, show_progress)  # type: ignore[arg-type]
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


def budgeted(params: Mapping[str, Any], spec: SweepSpec) -> dict[str, Any]:
    """The trial's overrides, with the spec's shared top_k and budget (unless swept)."""
    out = {"retrieval.top_k": spec.top_k, **params}
    if spec.token_budget is not None and "retrieval.token_budget" not in params:
        out["retrieval.token_budget"] = spec.token_budget
    return out


def best_trial(rows: Sequence[Mapping[str, Any]], spec: SweepSpec) -> Mapping[str, Any]:
    """The best row on dev; among equal objectives, the one injecting fewer tokens (median), then the first."""
    key = f"dev.{spec.objective.metric}"
    sign = -1.0 if spec.objective.direction == "maximize" else 1.0
    return min(rows, key=lambda r: (sign * r[key], r.get("dev.tokens_median", 0.0), r["number"]))
