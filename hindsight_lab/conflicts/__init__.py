"""Conflicting rules (article §7.2): cluster L3 rules and L2 candidates with HDBSCAN, find contradictions within
clusters and among nearest neighbours, and resolve them — supersede a clearly stronger, newer rule's rival, flag
close pairs so both are recalled and shown as conflicting. :meth:`MemorySystem.maintain` runs the pass.

- ``text``, ``claims``: reading a rule's orderings, tools, negations and quantities; ``detect``: the offline
  detector; ``llm``: the optional LiteLLM judge.
- ``cluster``: HDBSCAN and the pairs to compare; ``resolve``: strength, supersede or flag, merging duplicates;
  ``scan``: one pass as a plan; ``apply``: the plan applied to a memory; ``inject``: flagged rivals at recall time.
- ``pairs``: judging labelled pairs; ``synthetic``: planted contradictions. The commands live in
  :mod:`hindsight_lab.cli.conflicts`, the bench in :mod:`hindsight_lab.bench.conflicts`, the picture in
  :mod:`hindsight_lab.report.conflicts`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"OfflineDetector": "detect", "Verdict": "detect", "LabelledPair": "pairs", "judge_pairs": "pairs",
            "load_pairs": "pairs", "scores": "pairs", "ConflictPlan": "scan", "make_judge": "scan",
            "read_store": "scan", "scan": "scan"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Lazy exports: ``memory.py`` imports ``conflicts.inject`` on every ``import hindsight_lab``."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
