"""The per-group table of a replay's report: each group's mean under a judging mode, the better baseline of the
group and the reference system's margin over it."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight_lab.evaluation import Comparison, ModeReport, ReplayMetrics
from hindsight_lab.metrics.modes import MODES
from hindsight_lab.replay.report import ReplayReport


def _report(rows: list[tuple[str, str, str, float]], outcome: bool = False) -> ReplayReport:
    """A report of ``rows`` in ``repeat``, their complement (1 - score) in ``transfer``, and ``rows`` again in
    ``outcome`` when asked."""
    frame = pd.DataFrame(rows, columns=["system", "query_id", "group", "ndcg@5"])
    systems = {s: {} for s in dict.fromkeys(frame["system"])}
    per_mode = {"repeat": frame, "transfer": frame.assign(**{"ndcg@5": 1.0 - frame["ndcg@5"]})}
    if outcome:
        per_mode["outcome"] = frame
    modes = {m: ModeReport(m, queries=frame["query_id"].nunique(), groups=frame["group"].nunique(), systems=systems,
                           rows=tuple(per_mode[m].to_dict("records"))) if m in per_mode else ModeReport(m)
             for m in MODES}
    return ReplayReport(ReplayMetrics({}, Comparison(modes)), run=None, judgements=None)


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


def test_the_cli_line_reads_the_margin_by_group() -> None:
    from hindsight_lab.cli.replay import group_line

    report = _report(ROWS)
    assert group_line(report, "repeat", ("ndcg@5",)) == ("by group, hindsight against the better of dense and bm25 "
                                                         "in each: ndcg@5 mean +0.100 (from +0.100 to +0.100), "
                                                         "ahead in 2, behind in 0 of 2")
    assert "behind in 2 of 2" in group_line(report, "transfer", ("ndcg@5",))
    solo = _report([r for r in ROWS if r[0] != "dense"])
    assert group_line(solo, "repeat", ("ndcg@5",)).startswith("by group, hindsight against bm25 in each:")
    assert group_line(_report([r for r in ROWS if r[0] == "hindsight"]), "repeat") == ""  # no baseline replayed


def test_outcome_margins_count_the_success_only_baselines() -> None:
    from hindsight_lab.cli.replay import group_line

    rows = ROWS + [("dense+ok", "q1", "a", 0.95), ("dense+ok", "q2", "a", 0.95), ("dense+ok", "q3", "b", 0.0)]
    report = _report(rows, outcome=True)
    line = group_line(report, "outcome", ("ndcg@5",))
    assert line.startswith("by group, hindsight against the best of dense, bm25, dense+ok in each:")
    assert "from -0.050 to +0.100), ahead in 1, behind in 1 of 2" in line  # a: 0.9 - 0.95; b: 0.9 - 0.8
    # repeat compares with dense and bm25 only
    assert group_line(report, "repeat", ("ndcg@5",)).endswith("ahead in 2, behind in 0 of 2")
