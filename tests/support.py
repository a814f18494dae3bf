"""Constants and small factories shared by the tests (importable: `tests/` is on pytest's pythonpath)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
    import os

    import pytest

    path = SHARED_DATASETS / relative
    if not path.is_file():
        reason = f"dataset {relative} not found under ../shared/datasets (see its README)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path
