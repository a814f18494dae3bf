"""Judging, ranking metrics and statistics for replays (DESIGN §6). Pure functions, no I/O; numpy only."""

from __future__ import annotations

from .judging import JudgedEpisode, JudgedList, Judgements, grade, majority_grade
from .ranking import (
    DEFAULT_METRICS,
    HitRate,
    aggregate,
    evaluate,
    evaluate_run,
    fill_at_k,
    hit_at_k,
    hit_rate,
    mrr,
    ndcg_at_k,
    oracle_hit,
    parse_metric,
    precision_at_k,
    r_precision,
    recall_at_k,
)
from .stats import bootstrap_ci, paired_randomization_test

__all__ = [
    "DEFAULT_METRICS", "HitRate", "JudgedEpisode", "JudgedList", "Judgements", "aggregate", "bootstrap_ci",
    "evaluate", "evaluate_run", "fill_at_k", "grade", "hit_at_k", "hit_rate", "majority_grade", "mrr", "ndcg_at_k",
    "oracle_hit", "paired_randomization_test", "parse_metric", "precision_at_k", "r_precision", "recall_at_k",
]
