"""Judging hand-labelled rule pairs and scoring the judge: precision, recall and F1 of the conflict class, recall
by kind. A pairs file is read by :func:`hindsight_lab.datasets.conflict_pairs.load_pairs`.

Examples:
    >>> from hindsight_lab.conflicts.detect import OfflineDetector
    >>> pairs = [LabelledPair("p1", None, "Call A_x before b_y.", "Call b_y first, then A_x.", True, "order"),
    ...          LabelledPair("p2", None, "Call A_x before b_y.", "Log the call of A_x.", False, "related")]
    >>> judged = judge_pairs(pairs, OfflineDetector())
    >>> scores(judged)["precision"], scores(judged)["recall"]
    (1.0, 1.0)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .detect import Verdict

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """One labelled pair."""

    id: str
    task_type: str | None
    rule_a: str
    rule_b: str
    conflict: bool
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class JudgedPair:
    """A labelled pair with the judge's verdict."""

    pair: LabelledPair
    verdict: Verdict

    def as_row(self) -> dict[str, Any]:
        p, v = self.pair, self.verdict
        return {"id": p.id, "task_type": p.task_type, "label": p.conflict, "label_kind": p.kind,
                "predicted": v.conflict, "predicted_kind": v.kind, "correct": p.conflict == v.conflict,
                "reason": v.reason, "source": v.source, "rule_a": p.rule_a, "rule_b": p.rule_b}


def judge_pairs(pairs: Sequence[LabelledPair], judge: Any) -> list[JudgedPair]:
    """The judge's verdict on every pair (``judge.judge(a, b, task_type)``)."""
    return [JudgedPair(p, judge.judge(p.rule_a, p.rule_b, p.task_type)) for p in pairs]


def scores(judged: Sequence[JudgedPair]) -> dict[str, Any]:
    """Precision, recall and F1 of the conflict class, the confusion counts, and recall per labelled kind.

    ``precision = tp / (tp + fp)``, ``recall = tp / (tp + fn)``; 0 when undefined.
    """
    tp = sum(j.pair.conflict and j.verdict.conflict for j in judged)
    fp = sum(not j.pair.conflict and j.verdict.conflict for j in judged)
    fn = sum(j.pair.conflict and not j.verdict.conflict for j in judged)
    tn = len(judged) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    by_kind: dict[str, dict[str, int]] = {}
    for j in judged:
        k = by_kind.setdefault(f"{'conflict' if j.pair.conflict else 'compatible'}:{j.pair.kind or '-'}",
                               {"n": 0, "correct": 0})
        k["n"] += 1
        k["correct"] += j.pair.conflict == j.verdict.conflict
    return {"n": len(judged), "precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn,
            "tn": tn, "by_kind": dict(sorted(by_kind.items()))}


def write_predictions(judged: Sequence[JudgedPair], path: str | Path) -> Path:
    """One JSON line per pair: the labels, the verdict, its reason and source."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for j in judged:
            fh.write(json.dumps(j.as_row(), ensure_ascii=False) + "\n")
    return path


def frame(judged: Sequence[JudgedPair]) -> "pd.DataFrame":
    import pandas as pd

    return pd.DataFrame([j.as_row() for j in judged])
