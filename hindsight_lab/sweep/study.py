"""A sweep's trials in one Optuna study that processes on several machines share (:mod:`.storage`).

- **Slots.** A sweep of ``n`` trials has ``n`` slots, numbered as the trials of a sweep in one process are. The
  grid, list and random samplers' trials are known in advance: trial ``k`` is the ``k``-th of the seeded sequence,
  queued once (:meth:`SharedStudy.join`, under the study's lock) with its params and slot as user attributes, so a
  trial's params never depend on which worker asks for it. TPE proposes each new trial when asked (each process
  with a seed of its own, ``spec.seed + worker``, and the constant liar, so two workers do not propose the same
  point); its slot is its number.
- **Asking** (:meth:`SharedStudy.ask`) happens under the study's lock: it takes queued trials first (Optuna's
  queue, oldest first), then, for TPE only, new ones while the finished, running and queued trials are fewer than
  ``n``. So the study never holds more than ``n`` trials that count.
- **A lost worker.** Each asked trial's heartbeat is recorded while it is scored (:mod:`.workers`). A trial not
  heard from for three heartbeats is failed by whoever looks next (:meth:`SharedStudy.fail_stale`) and queued again
  with its params and slot (Optuna's ``RetryHeartbeatStaleTrialCallback``, its ``retry_history`` naming the
  failed trial); a worker that comes back too late finds its trial finished and drops its scores.
- **What counts.** A trial told ``COMPLETE`` (a valid config) or ``PRUNED`` (a config the LabConfig refuses,
  marked ``invalid`` in the table as in one process) holds its row (every figure of the trial table) and the
  objective's per-item dev values (what the choice needs, :mod:`.choose`) as user attributes, a few kB per trial.
  ``FAIL`` is a lost worker's trial (retried) or a scoring error (the worker stops).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
import time
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError, HindsightLabError
from .samplers import make_sampler, suggest
from .spec import SweepSpec
from .storage import claim, open_storage, replace, study_lock

logger = logging.getLogger(__name__)

SPEC, SELECTION, RESULT = "hindsight.spec", "hindsight.selection", "hindsight.result"
SLOT, PARAMS, ROW, ITEMS, ERROR = "hindsight.slot", "hindsight.params", "hindsight.row", "hindsight.items", \
    "hindsight.error"


class StudyError(HindsightLabError):
    """The shared study cannot end as asked (a trial that failed beyond its retries, a scoring error)."""


@dataclass
class Asked:
    """A trial asked from the study: the Optuna trial, its id in the storage, its slot and its params."""

    trial: Any
    trial_id: int
    slot: int
    params: dict[str, Any]


def fingerprint(spec: SweepSpec, base: LabConfig, n_trials: int, dataset_sha256: str) -> dict[str, Any]:
    """What every process of a study must agree on: the spec (less where files and MLflow live), the base
    config's values, the trial count and the datasets' content."""
    what = spec.model_dump(mode="json", exclude={"folder", "mlflow", "datasets", "base"})
    what["datasets"] = [{"format": d.format, "limit": d.limit, "skip_invalid": d.skip_invalid} for d in spec.datasets]
    what["base"] = base.flat()
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {"digest": digest, "trials": n_trials, "sampler": spec.sampler, "dataset_sha256": dataset_sha256}


def planned(spec: SweepSpec, n_trials: int) -> list[dict[str, Any]] | None:
    """Every trial's params in order for the grid, list and random samplers (their seeded sequence); None for TPE."""
    if spec.sampler == "tpe":
        return None
    return [params for _, params in make_sampler(spec).ask(n_trials)]


def owner() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


class SharedStudy:
    """One sweep's study in an RDB storage (module docstring).

    Args:
        url: the storage's SQLAlchemy URL (:func:`~.storage.sqlalchemy_url`).
        name: the study's name (the spec's by default: ``--study``).
        spec, n_trials: the sweep.
        heartbeat: seconds between heartbeats; a trial silent for three is failed and retried.
        max_retry: times a trial is queued again after its worker was lost.
    """

    def __init__(self, url: str, name: str, spec: SweepSpec, n_trials: int, *, heartbeat: int = 10,
                 max_retry: int = 3) -> None:
        self.url, self.name, self.spec, self.n_trials = url, name, spec, n_trials
        self.heartbeat, self.max_retry = heartbeat, max_retry
        self.worker: int | None = None

    def open(self) -> "SharedStudy":
        import optuna

        self.storage = open_storage(self.url, heartbeat=self.heartbeat, max_retry=self.max_retry)
        self.study = optuna.create_study(storage=self.storage, study_name=self.name, load_if_exists=True,
                                         direction=self.spec.objective.direction)
        self.study_id = self.storage.get_study_id_from_name(self.name)
        if self.study.direction.name.lower() != self.spec.objective.direction:
            raise ConfigError(f"--study {self.name}: the study {self.study.direction.name.lower()}s; the spec "
                              f"{self.spec.objective.direction}s (choose another --study)")
        return self

    # ------------------------------------------------------------------ joining
    def join(self, agreed: dict[str, Any]) -> bool:
        """Create the study's trials (the first process) or check that this one runs the same sweep; True for the
        first. Every process calls it before asking."""
        with study_lock(self.storage, self.name):
            held = self.study.user_attrs.get(SPEC)
            if held is not None:
                if held != agreed:
                    diff = sorted(k for k in agreed if held.get(k) != agreed.get(k))
                    raise ConfigError(f"--study {self.name}: the study holds another sweep (its {', '.join(diff)} "
                                      f"differ); run the same spec, data and --trials, or choose another --study")
                return False
            queued = {t.user_attrs.get(SLOT) for t in self.study.get_trials(deepcopy=False)}
            for slot, params in enumerate(planned(self.spec, self.n_trials) or []):
                if slot not in queued:  # a first process stopped part way through queueing them
                    self.study.enqueue_trial({}, user_attrs={SLOT: slot, PARAMS: params})
            self.study.set_user_attr(SPEC, agreed)
            return True

    def register(self) -> int:
        """This process's worker number in the study (0 for the first to register), and its sampler."""
        import optuna

        k = sum(1 for key in self.study.user_attrs if key.startswith("hindsight.worker."))
        while not claim(self.storage, self.study_id, f"hindsight.worker.{k}", {**owner(), "at": time.time()}):
            k += 1
        self.worker = k
        if self.spec.sampler == "tpe":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                sampler = optuna.samplers.TPESampler(seed=self.spec.seed + k, constant_liar=True)
            self.study = optuna.load_study(study_name=self.name, storage=self.storage, sampler=sampler)
        return k

    # ------------------------------------------------------------------ trials
    def states(self) -> dict[str, int]:
        """Trials per state (``COMPLETE``, ``PRUNED``, ``RUNNING``, ``WAITING``, ``FAIL``) and ``done``."""
        out = {s: 0 for s in ("COMPLETE", "PRUNED", "RUNNING", "WAITING", "FAIL")}
        for t in self.study.get_trials(deepcopy=False):
            out[t.state.name] += 1
        out["done"] = out["COMPLETE"] + out["PRUNED"]
        return out

    def fail_stale(self) -> None:
        """Fail the trials whose worker is silent (and queue them again)."""
        import optuna

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)

    def ask(self, most: int) -> tuple[list[Asked], dict[str, int]]:
        """Up to ``most`` trials for this process (none when the others hold the rest), and the states before."""
        with study_lock(self.storage, self.name):
            states = self.states()
            fresh = self.n_trials - states["done"] - states["RUNNING"] - states["WAITING"]
            take = min(most, states["WAITING"] + (max(0, fresh) if self.spec.sampler == "tpe" else 0))
            return [self._ask_one() for _ in range(take)], states

    def _ask_one(self) -> Asked:
        with warnings.catch_warnings():  # "Heartbeat of storage is supposed to be used with Study.optimize"
            warnings.simplefilter("ignore")
            trial = self.study.ask()
        trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, trial.number)
        self.storage.record_heartbeat(trial_id)
        attrs = trial.user_attrs
        if PARAMS in attrs:
            return Asked(trial, trial_id, int(attrs[SLOT]), dict(attrs[PARAMS]))
        params = {name: suggest(trial, name, p) for name, p in self.spec.space.items()}  # TPE
        slot = int(attrs.get(SLOT, trial.number))  # a retried trial keeps its slot (and its params)
        trial.set_user_attr(SLOT, slot)
        trial.set_user_attr(PARAMS, params)
        return Asked(trial, trial_id, slot, params)

    def tell(self, asked: Asked, row: dict[str, Any], items: np.ndarray | None) -> bool:
        """Keep a scored trial's row and items and finish it; False when it was failed meanwhile (dropped)."""
        import optuna

        try:
            asked.trial.set_user_attr(ROW, row)
            asked.trial.set_user_attr(ITEMS, None if items is None else [float(v) for v in items])
            value = row.get("cv.mean")
            if row["status"] == "ok" and value is not None and math.isfinite(value):
                self.study.tell(asked.trial, float(value))
            else:
                self.study.tell(asked.trial, state=optuna.trial.TrialState.PRUNED)
        except (optuna.exceptions.UpdateFinishedTrialError, RuntimeError) as exc:
            logger.warning("trial %d (slot %d) was finished meanwhile (%s); its scores are dropped",
                           asked.trial.number, asked.slot, exc)
            return False
        return True

    def fail(self, asked: Sequence[Asked], error: str) -> None:
        """Finish trials whose scoring raised as ``FAIL`` (not retried: the same scoring would raise again)."""
        import optuna

        for a in asked:
            try:
                a.trial.set_user_attr(ERROR, error[:2000])
                self.study.tell(a.trial, state=optuna.trial.TrialState.FAIL)
            except Exception:  # noqa: BLE001 - failing what can be failed; the error is raised by the caller
                logger.warning("trial %d could not be marked failed", a.trial.number)

    def finished(self) -> list[Any]:
        """The trials that count (``COMPLETE``, ``PRUNED``), by slot.

        Raises:
            StudyError: two of them hold the same slot (never, unless the study was changed by hand).
        """
        import optuna

        states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        trials = sorted(self.study.get_trials(deepcopy=False, states=states), key=lambda t: t.user_attrs[SLOT])
        slots = [t.user_attrs[SLOT] for t in trials]
        if len(set(slots)) < len(slots):
            raise StudyError(f"study {self.name}: a slot was finished twice ({sorted(slots)})")
        return trials

    def stuck(self) -> str | None:
        """Why the study cannot finish (a queued sampler's slot whose trial failed for good: a scoring error, or
        its worker lost more than ``max_retry`` times, and no other trial of the slot is left), else None."""
        trials = self.study.get_trials(deepcopy=False)
        live = {t.user_attrs.get(SLOT) for t in trials
                if t.state.name in ("COMPLETE", "PRUNED", "RUNNING", "WAITING")}
        if self.spec.sampler == "tpe":  # a slot lost for good is proposed afresh
            return None
        for t in trials:
            history = t.system_attrs.get("retry_history", [])
            if t.state.name == "FAIL" and t.user_attrs.get(SLOT) not in live \
                    and (ERROR in t.user_attrs or len(history) + 1 > self.max_retry):
                why = t.user_attrs.get(ERROR) or f"its worker was lost {len(history) + 1} times"
                return f"study {self.name}: trial {t.user_attrs.get(SLOT)} failed and is not retried: {why}"
        return None

    # ------------------------------------------------------------------ the end
    def claim_selection(self) -> bool:
        """Whether this process makes the choice: the first to claim it, or the one that takes over a claim whose
        process (on this host) died before it stored a result."""
        me = {**owner(), "worker": self.worker}
        if claim(self.storage, self.study_id, SELECTION, me):
            return True
        held = self.study.user_attrs.get(SELECTION)
        if held and RESULT not in self.study.user_attrs and held.get("host") == me["host"] \
                and not _alive(int(held.get("pid", 0))):
            return replace(self.storage, self.study_id, SELECTION, held, me)
        return False

    def put_result(self, payload: dict[str, Any]) -> None:
        self.study.set_user_attr(RESULT, payload)

    def result(self) -> dict[str, Any] | None:
        return self.study.user_attrs.get(RESULT)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
