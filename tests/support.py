"""Constants and small factories shared by the tests (importable: `tests/` is on pytest's pythonpath)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
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
