"""Constants and small factories shared by the tests (importable: `tests/` is on pytest's pythonpath)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def episode(eid: str, instruction: str, tools: list[str], outcome: str = "success", task_id: str | None = None,
            **extra: Any) -> dict[str, Any]:
    """A trace-format episode that called ``tools`` in order."""
    steps = [{"type": "tool_call", "name": t, "arguments": {}} for t in tools]
    return {"episode_id": eid, "instruction": instruction, "steps": steps, "outcome": outcome,
            "task_id": task_id, **extra}


def shared_dataset(relative: str) -> Path:
    """A file of ../shared/datasets; skips the test when it is absent, fails under CI (CI=true)."""
    import pytest

    path = SHARED_DATASETS / relative
    if not path.is_file():
        reason = f"dataset {relative} not found under ../shared/datasets (see its README)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a ``hindsight-lab`` subprocess: this one's, with this checkout first on PYTHONPATH (so the
    subprocess imports the code under test whatever its current folder), plus ``extra``."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def journal_units(journal: Path) -> int:
    """Completed units in a replay journal (its complete lines, less the header)."""
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return 0
    return max(0, data.count(b"\n") - 1)


def kill_midway(command: Sequence[str], journal: Path, units: int, *, env: dict[str, str] | None = None,
                cwd: Path | None = None, timeout: float = 300.0) -> tuple[int, str]:
    """Run a replay command in a subprocess and SIGKILL it once its journal holds ``units`` completed units; return
    the units it held then and what it wrote to stderr. Fails when the replay ends or stalls before."""
    proc = subprocess.Popen(list(command), env=env or cli_env(), cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while journal_units(journal) < units:
            if proc.poll() is not None:
                raise AssertionError(f"the replay ended before it could be killed: {proc.stderr.read()[-2000:]!r}")
            if time.monotonic() > deadline:
                raise AssertionError("the replay journaled nothing in time")
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return journal_units(journal), err


def check_pair_scores(label: str, sc: dict, floor: dict, target: dict) -> None:
    """Print a labelled pair set's precision, recall and table by kind (``scores`` of
    :mod:`hindsight_lab.conflicts.pairs`), then assert the measured ``floor``."""
    print(f"\n{label}: precision {sc['precision']:.3f} recall {sc['recall']:.3f} "
          f"(target {target['precision']} / {target['recall']})")
    print("| kind | label | n | correct |\n|---|---|---|---|")
    for key, v in sc["by_kind"].items():
        verdict, kind = key.split(":")
        print(f"| {kind} | {verdict} | {v['n']} | {v['correct']} |")
    assert sc["precision"] >= floor["precision"], sc
    assert sc["recall"] >= floor["recall"], sc


# ------------------------------------------------------------------ synthetic traces (replay and rule statistics)
_TOOLS = {
    "refund": ["lookup_order", "check_policy", "issue_refund"],
    "booking": ["search_flights", "check_seat", "book_flight"],
    "cancel": ["lookup_booking", "check_fare_rules", "cancel_booking"],
    "address": ["lookup_user", "verify_identity", "update_address"],
    "baggage": ["lookup_booking", "check_allowance", "add_bag"],
}
_ASKS = {"refund": "refund my order for the broken {x}", "booking": "book a flight to {x} next week",
         "cancel": "cancel my reservation to {x}", "address": "change my shipping address to {x} street",
         "baggage": "add a checked bag to my trip to {x}"}
_PLACES = ["Paris", "Berlin", "Tokyo", "Denver", "Austin", "Lima", "Oslo", "Rome", "Cairo", "Seoul"]


def write_traces(path: Path, n_tasks: int, trials: int, seed: int = 0) -> Path:
    """A JSONL trace file: ``n_tasks`` tasks of five task types, each tried ``trials`` times (trial by trial), with
    strategy failures (tools skipped or reversed) that trigger reflection, one hour apart."""
    rng = random.Random(seed)
    t0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
    tasks = []
    for t in range(n_tasks):
        kind = list(_TOOLS)[t % len(_TOOLS)]
        tasks.append((f"task-{t:03d}", kind, _ASKS[kind].format(x=f"{rng.choice(_PLACES)} {t}")))
    with path.open("w", encoding="utf-8") as fh:
        for trial in range(trials):
            for i, (task_id, kind, ask) in enumerate(tasks):
                ok = rng.random() < 0.6
                tools = list(_TOOLS[kind]) if ok else (_TOOLS[kind][::-1] if rng.random() < 0.5 else _TOOLS[kind][1:])
                steps: list[dict] = [{"type": "message", "role": "user", "content": ask}]
                for name in tools:
                    steps += [{"type": "tool_call", "name": name, "arguments": {"q": ask[:20]}, "id": None},
                              {"type": "tool_result", "id": None, "content": "ok" if ok else "denied",
                               "error": None if ok else f"{name} refused"}]
                fh.write(json.dumps({
                    "episode_id": f"{task_id}-t{trial}", "task_id": task_id, "task_type": kind, "domain": "airline",
                    "started_at": (t0 + timedelta(hours=trial * n_tasks + i)).isoformat(), "instruction": ask,
                    "steps": steps, "outcome": "success" if ok else "failure",
                    "failure_cause": None if ok else "strategy"}) + "\n")
    return path
