"""The committed fixtures ``datasets/synthetic/<scenario>.jsonl`` of the project checkout, and how they are written.

Regenerate them with ``python -m hindsight_lab.datasets.synthetic``; a test fails when a committed file differs
from the generator's output by one byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .scenarios import generate

FIXTURE_SIZES: dict[str, int] = {"lures": 4, "floods": 2, "lucky": 3, "policy": 2, "strategic": 3}
"""``n`` of each committed fixture ``datasets/synthetic/<scenario>.jsonl`` (seed :data:`FIXTURE_SEED`)."""

FIXTURE_SEED = 0


def fixture_dir() -> Path:
    """``datasets/synthetic`` of the project checkout."""
    return Path(__file__).resolve().parents[3] / "datasets" / "synthetic"


def write_fixtures(folder: str | Path | None = None, *, seed: int = FIXTURE_SEED,
                   sizes: Mapping[str, int] = FIXTURE_SIZES) -> dict[str, Path]:
    """Write ``<scenario>.jsonl`` for every scenario in ``sizes`` (with :func:`~hindsight_lab.datasets.jsonl.
    write_jsonl`).

    Regenerating with the same seed and sizes gives byte-identical files.

    Examples:
        >>> paths = write_fixtures("/tmp/synthetic-fixtures")  # doctest: +SKIP
    """
    from ..jsonl import write_jsonl

    folder = Path(folder) if folder is not None else fixture_dir()
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for scenario, n in sizes.items():
        out[scenario] = folder / f"{scenario}.jsonl"
        write_jsonl(generate(scenario, n=n, seed=seed), out[scenario])
    return out
