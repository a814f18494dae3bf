"""The workers of a shared sweep: each asks trials from the study (:class:`~.study.SharedStudy`), scores them from
its cached replays (:func:`~.trials.score_batch`), keeps their rows in the study and tells them, until the study
holds every trial; while a batch is scored a thread records its trials' heartbeats.

:func:`work` is the loop, run by the command's own process and by the ``N - 1`` processes it starts
(:func:`start_workers`, ``multiprocessing``'s spawn context: each builds its own embedder and datasets, and reads the
replay caches the first of them captured, :mod:`.replay_files`). :func:`worker_main` is a started process's entry.

Fault injection, for tests: the loop calls :func:`hindsight_lab.crashpoints.reached` at ``sweep.asked`` and
``sweep.scored`` (a started worker arms what its :class:`Job` names), so a test can SIGKILL a worker mid-trial.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..crashpoints import arm, disarm, reached  # noqa: F401  (disarm: tests disarm here what they armed)
from .live_runs import LiveRunStore
from .pipeline import Setup, prepare
from .replay_files import ReplayFiles
from .spec import SweepSpec
from .study import Asked, SharedStudy, StudyError
from .trials import score_batch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """What a started worker needs (it is pickled to the new process): the sweep, the study, where the live runs
    and the replay caches are kept, how many trials it asks at once, and the crash points it arms (tests)."""

    spec: SweepSpec
    trials: int
    url: str
    study: str
    heartbeat: int
    max_retry: int
    batch: int
    live_runs: str | None = None
    replays: str | None = None
    arms: tuple[tuple[str, int], ...] = ()


@dataclass
class Worked:
    """What :func:`work` did: the trials this process told, and its label in the trial table (``host:pid/k``)."""

    label: str
    told: int = 0
    slots: list[int] = field(default_factory=list)


class Heartbeat:
    """A thread that records the heartbeat of the trials being scored, every ``interval`` seconds."""

    def __init__(self, study: SharedStudy, interval: float) -> None:
        self.study, self.interval = study, interval
        self._ids: list[int] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sweep-heartbeat", daemon=True)

    def watch(self, asked: Sequence[Asked]) -> None:
        with self._lock:
            self._ids = [a.trial_id for a in asked]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                ids = list(self._ids)
            for trial_id in ids:
                try:
                    self.study.storage.record_heartbeat(trial_id)
                except Exception as exc:  # noqa: BLE001 - a missed beat; the next one may pass
                    logger.warning("heartbeat of trial id %d not recorded: %s", trial_id, exc)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)


def work(study: SharedStudy, setup: Setup, *, batch: int, poll_s: float = 0.5,
         on_batch: Callable[[Worked], None] | None = None) -> Worked:
    """Ask, score, keep and tell trials until the study holds all of them (module docstring).

    Raises:
        StudyError: the study cannot finish (a trial failed for good).
    """
    import socket

    done = Worked(f"{socket.gethostname()}:{os.getpid()}/{study.worker}")
    with Heartbeat(study, study.heartbeat) as heart:
        while True:
            study.fail_stale()
            asked, states = study.ask(batch)
            if not asked:
                if states["done"] >= study.n_trials:
                    return done
                if not states["RUNNING"] and not states["WAITING"] and (why := study.stuck()):
                    raise StudyError(why)
                time.sleep(poll_s)  # the other workers hold the rest; one of theirs may fail and come back
                continue
            heart.watch(asked)
            reached("sweep.asked")
            try:
                scored = score_batch(setup.spec, setup.base, [(a.slot, a.params) for a in asked], setup.datasets,
                                     setup.timing, setup.show_progress, setup.seeded)
            except BaseException as exc:
                study.fail(asked, f"{type(exc).__name__}: {exc}")
                raise
            reached("sweep.scored")
            for a, row in zip(asked, scored.rows):
                if study.tell(a, {**row, "worker": done.label}, scored.items.get(a.slot)):
                    done.told += 1
                    done.slots.append(a.slot)
            heart.watch([])
            if on_batch is not None:
                on_batch(done)


def worker_setup(job: Job, embedder: Any = None, show_progress: bool = False) -> Setup:
    """A process's setup for ``job``: its datasets, sharing the replay caches of the study's folder."""
    store = LiveRunStore(job.live_runs) if job.live_runs else None
    setup = prepare(job.spec, embedder=embedder, live_runs=store, show_progress=show_progress)
    if job.replays:
        for d in setup.datasets:
            d.files = ReplayFiles(job.replays)
    return setup


def worker_main(job: Job) -> None:
    """A started worker: arm its crash points, load, open the study, work until the study holds every trial."""
    for point, after in job.arms:
        arm(point, after=after)
    try:
        setup = worker_setup(job)
        study = SharedStudy(job.url, job.study, job.spec, job.trials, heartbeat=job.heartbeat,
                            max_retry=job.max_retry).open()
        study.register()
        work(study, setup, batch=job.batch)
    except BaseException:
        logger.error("sweep worker %d failed:\n%s", os.getpid(), traceback.format_exc())
        raise


def start_workers(job: Job, n: int, arms: dict[int, tuple[tuple[str, int], ...]] | None = None) -> list[Any]:
    """``n`` worker processes (spawn), worker ``i`` arming ``arms[i]`` (tests)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    procs = []
    for i in range(n):
        job_i = Job(**{**job.__dict__, "arms": tuple((arms or {}).get(i, ()))})
        proc = ctx.Process(target=worker_main, args=(job_i,), name=f"sweep-worker-{i + 1}", daemon=False)
        proc.start()
        procs.append(proc)
    return procs


def stop_workers(procs: Sequence[Any], wait_s: float) -> list[str]:
    """Wait up to ``wait_s`` for the workers to end by themselves (the study is complete), then terminate the
    others (they were still loading: nothing of theirs is in the study); how each ended, in words."""
    deadline = time.monotonic() + wait_s
    notes = []
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=10)
            notes.append(f"{proc.name} (pid {proc.pid}) stopped: the study was complete")
        elif proc.exitcode and proc.exitcode < 0:
            notes.append(f"{proc.name} (pid {proc.pid}) was killed by signal {-proc.exitcode}")
        elif proc.exitcode:
            notes.append(f"{proc.name} (pid {proc.pid}) failed (exit code {proc.exitcode})")
    return notes
