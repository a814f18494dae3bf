"""The per-group table of a replay's report: each group's mean under a judging mode, the better baseline of the
group and the reference system's margin over it."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight_lab.replay.report import ReplayReport


def _report(rows: list[tuple[str, str, str, float]]) -> ReplayReport:
    frame = pd.DataFrame(rows, columns=["system", "query_id", "group", "ndcg@5"])
    systems = list(dict.fromkeys(frame["system"]))
    metrics = {"systems": {s: {} for s in systems}, "modes": {"transfer": {"queries": 1, "systems": {}}}}
    return ReplayReport(metrics=metrics, per_episode=frame, run=None, judgements=None,
                        mode_episodes={"transfer": frame.assign(**{"ndcg@5": 1.0 - frame["ndcg@5"]})})


# dense wins group a, bm25 group b; pooled, each baseline's mean is 0.5 and hindsight's 0.7 (+0.2), yet in each
# group hindsight is only 0.1 above the better baseline
ROWS = [("dense", "q1", "a", 0.8), ("dense", "q2", "a", 0.8), ("dense", "q3", "b", 0.2),
        ("bm25", "q1", "a", 0.2), ("bm25", "q2", "a", 0.2), ("bm25", "q3", "b", 0.8),
        ("hindsight", "q1", "a", 0.9), ("hindsight", "q2", "a", 0.9), ("hindsight", "q3", "b", 0.9)]


def test_the_margin_is_taken_over_the_better_baseline_of_each_group() -> None:
    table = _report(ROWS).group_table()
    assert list(table.index) == ["a", "b"]
    assert list(table.columns) == ["dense", "bm25", "hindsight", "best_baseline", "margin"]
    assert table["best_baseline"].tolist() == ["dense", "bm25"]
    assert table["margin"].round(6).tolist() == [0.1, 0.1]
    assert table.loc["a", "hindsight"] == pytest.approx(0.9)  # the group's mean over its queries


def test_another_mode_reads_its_own_per_episode_table() -> None:
    table = _report(ROWS).group_table(mode="transfer")
    assert table["best_baseline"].tolist() == ["bm25", "dense"]  # 1 - score: the winners swap
    assert table["margin"].round(6).tolist() == [-0.7, -0.7]


def test_what_is_not_in_the_replay_is_named() -> None:
    report = _report(ROWS)
    with pytest.raises(ValueError, match="judging mode 'outcome' has no queries"):
        report.group_table(mode="outcome")
    with pytest.raises(ValueError, match=r"no metric 'mrr'.*have: ndcg@5"):
        report.group_table("mrr")
    with pytest.raises(ValueError, match=r"system\(s\) dense\+ok not in this replay"):
        report.group_table(baselines=("dense", "dense+ok"))
