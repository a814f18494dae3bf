"""`replay --explain`: each query's candidates, terms, injected ranks and grades, as a replay of the config has them."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.cli import main
from hindsight_lab.config import LabConfig
from hindsight_lab.errors import ConfigError
from hindsight_lab.metrics.modes import judge_mode
from hindsight_lab.retrieve.rerank import TERMS
from hindsight_lab.sweep.explain import TERM_COLUMNS, explain_queries
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.sweep.cache import load_episode_data

HASHING = {"embedder.model": "hashing-256"}


@pytest.fixture
def history(traces):
    path = traces(10, 3, seed=4)
    return path, load_episode_data(path).episodes


@pytest.mark.slow
def test_the_ranks_are_what_a_replay_injects_and_the_grades_are_the_judging_modes(history) -> None:
    path, episodes = history
    cfg = LabConfig().with_params(HASHING)
    report = run_replay(path, systems=["hindsight"], config=cfg)
    injected = {q.query_id: [i.memory_id for i in q.injected] for q in report.run.queries}
    repeat, transfer = judge_mode(episodes, "repeat"), judge_mode(episodes, "transfer")
    asked = [repeat.query_ids[0], repeat.query_ids[-1], *transfer.query_ids[:1]]
    tables = explain_queries(path, asked, config=cfg)
    assert [t.query_id for t in tables] == asked
    for table in tables:
        frame = table.frame
        ranked = frame.dropna(subset=["rank"])
        assert ranked["rank"].tolist() == list(range(1, len(ranked) + 1))
        assert ranked["id"].tolist() == injected[table.query_id]
        # the score is the config's weighted sum of the terms shown
        w = cfg.retrieval.weights
        weights = np.array([getattr(w, t) for t in TERMS])
        assert np.allclose(frame[list(TERM_COLUMNS)].to_numpy() @ weights, frame["score"].to_numpy())
        # the not injected rows follow by score
        rest = frame[frame["rank"].isna()]["score"].tolist()
        assert rest == sorted(rest, reverse=True)
        # each mode the query belongs to has a grade column: an episode's is its source's grade in that mode
        assert "repeat" in table.modes or "transfer" in table.modes
        runs = frame[frame["kind"] == "episode"]
        for mode in table.modes:
            grades = judge_mode(episodes, mode).grades(table.query_id)
            assert runs[mode].tolist() == [grades.get(src, 0) for src in runs["source"]]
        assert frame[list(table.modes)].to_numpy().max() == 2  # something relevant was among the candidates
    assert "transfer" in tables[-1].modes


def test_an_unknown_id_or_one_no_mode_asks_is_named(history) -> None:
    path, episodes = history
    cfg = LabConfig().with_params(HASHING)
    with pytest.raises(ConfigError, match="'task-999-t0' is no episode"):
        explain_queries(path, ["task-999-t0"], config=cfg)
    first = episodes[0].episode_id  # nothing ran before it
    with pytest.raises(ConfigError, match=f"'{first}' is a query of no judging mode"):
        explain_queries(path, [first], config=cfg)


@pytest.mark.slow
def test_the_cli_prints_one_table_per_query(history, capsys) -> None:
    path, episodes = history
    qid = judge_mode(episodes, "repeat").query_ids[0]
    assert main(["replay", str(path), "--explain", qid, "--set", "embedder.model=hashing-256"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{qid}: ") and "judged as: repeat" in out
    assert "task_type_match" in out and "score" in out
