"""Several files, one history: a cross-agent replay on one forward clock, task ids shared within a dataset family
and domain, the source of each episode kept and broken down in the report, one dataset hash over every file — and
exactly the metrics of one concatenated JSONL file of the same episodes."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import pytest

from hindsight_lab.cli import main
from hindsight_lab.datasets import write_jsonl
from hindsight_lab.datasets.combine import SPACING, START, load_history
from hindsight_lab.datasets.registry import resolve
from hindsight_lab.errors import ConfigError
from hindsight_lab.replay.runner import run_replay

from support import episode, shared_dataset

TELECOM = resolve("tau2-telecom-cross-sample")
AIRLINE = resolve("tau2-airline-cross-sample")
TAU_BENCH = resolve("tau-bench-airline-sample")


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_one_forward_clock_across_files(tmp_path: Path) -> None:
    episodes, info = load_history(TELECOM)
    first, second = (info["files"][0]["episodes"], info["files"][1]["episodes"])
    times = [e.started_at for e in episodes]
    assert first == second == 5 and all(b >= a for a, b in zip(times, times[1:]))
    # the second file was recorded earlier than the first (15:09 against 16:23): shifted to start one step after
    assert times[first] == times[first - 1] + SPACING
    own = [e.started_at for e in load_history(TELECOM[1])[0]]
    assert [t - times[first] for t in times[first:]] == [t - own[0] for t in own]  # its own spacing kept

    # no times, or all equal, or going back: a fixed step per episode
    same = _jsonl(tmp_path / "same.jsonl", [episode(f"s{i}", "x", ["a"], started_at="2025-01-01T00:00:00+00:00")
                                            for i in range(3)])
    back = _jsonl(tmp_path / "back.jsonl", [episode("b0", "x", ["a"], started_at="2025-01-02T00:00:00+00:00"),
                                            episode("b1", "x", ["a"], started_at="2025-01-01T00:00:00+00:00")])
    eps, _ = load_history([same, back])
    assert [e.started_at for e in eps] == [START + i * SPACING for i in range(5)]


def test_task_ids_meet_within_a_family_and_domain_only(tmp_path: Path) -> None:
    episodes, _ = load_history([*AIRLINE, *TAU_BENCH])
    by_source: dict[str, set[str]] = {}
    for e in episodes:
        by_source.setdefault(e.meta["source_file"], set()).add(e.task_id)
    *agents, tau = (by_source[p.name] for p in (*AIRLINE, *TAU_BENCH))
    gpt = agents[0]
    assert len(agents) == 6 and all(a == gpt for a in agents) and len(gpt) == 5  # the six agents ran the same tasks
    assert not gpt & tau and all(t.startswith("tau-bench:airline:") for t in tau)
    raw = {str(t["task_id"]) for t in json.loads(TAU_BENCH[0].read_text())}
    assert {t.rsplit(":", 1)[1] for t in tau} == raw

    a = _jsonl(tmp_path / "a.jsonl", [episode("e1", "refund", ["refund"], task_id="t1")])
    b = _jsonl(tmp_path / "b.jsonl", [episode("e1", "refund", ["refund"], task_id="t1")])
    eps, _ = load_history([a, b])
    assert [e.episode_id for e in eps] == ["a/e1", "b/e1"] and eps[0].task_id == eps[1].task_id == "jsonl:-:t1"
    twice, _ = load_history([a, a])
    assert [e.episode_id for e in twice] == ["a#1/e1", "a#2/e1"]
    assert [e.meta["source_file"] for e in twice] == ["a.jsonl#1", "a.jsonl#2"]


def test_dataset_hash_covers_every_file_and_the_order(tmp_path: Path) -> None:
    _, ab = load_history(TELECOM)
    _, ba = load_history(TELECOM[::-1])
    copy = tmp_path / TELECOM[1].name
    copy.write_bytes(TELECOM[1].read_bytes().replace(b'"reward": 1.0', b'"reward": 0.0', 1))
    _, changed = load_history([TELECOM[0], copy])
    assert len({ab["sha256"], ba["sha256"], changed["sha256"]}) == 3
    assert [f["name"] for f in ab["files"]] == [p.name for p in TELECOM]
    assert load_history(TELECOM[0])[1]["sha256"] == ab["files"][0]["sha256"]  # one file: its own hash


@pytest.mark.slow
def test_several_files_replay_as_one_concatenated_jsonl(tmp_path: Path, minilm) -> None:
    report = run_replay(TELECOM, embedder=minilm)
    episodes, _ = load_history(TELECOM)
    concatenated = tmp_path / "telecom-cross.jsonl"
    write_jsonl(episodes, concatenated)
    again = run_replay(concatenated, embedder=minilm)
    assert report.comparison.figures() == again.comparison.figures()
    ds = report.result.dataset
    assert ds["format"] == "tau2-bench" and len(ds["files"]) == 2 and ds["n_episodes"] == 10
    assert report.mode("repeat").queries == 5  # the second agent's runs of the tasks the first one ran


@pytest.mark.slow
def test_report_breaks_metrics_down_by_source(minilm) -> None:
    report = run_replay([*TELECOM, *AIRLINE], systems=["none", "bm25"], embedder=minilm)
    by = report.mode("repeat").by_source
    assert list(by) == [p.name for p in (*TELECOM, *AIRLINE)]
    assert by[TELECOM[0].name]["bm25"] == {"queries": 0}  # the first agent's runs have no earlier run
    for name in (TELECOM[1].name, AIRLINE[1].name):
        cell = by[name]["bm25"]
        assert cell["queries"] == 5 and 0.0 <= cell["ndcg@5"] <= 1.0 and not math.isnan(cell["hit@5"])
        frame = report.per_episode
        assert math.isclose(frame[(frame.system == "bm25") & (frame.source == name)]["ndcg@5"].mean(),
                            cell["ndcg@5"])
    table = report.source_table()
    assert table.index.names == ["source", "system"] and table.loc[(AIRLINE[1].name, "none"), "queries"] == 5


@pytest.mark.slow
def test_cli_replays_names_and_files_as_one_history(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "tau2-airline-cross-sample", "--systems", "none,bm25", "--no-mlflow"]) == 0
    out = capsys.readouterr().out
    # six files of the same 5 tasks: every file after the first is 5 queries
    assert f"{' + '.join(p.stem for p in AIRLINE)} (tau2-bench): 30 episodes, 25 queries" in out
    assert AIRLINE[0].stem == "airline_gpt-4.1.sample" and AIRLINE[-1].stem == "airline_claude-opus-4-6.sample"
    assert "by source (queries of each file):" in out and "airline_sft-gpt-4.1.sample.json" in out


def test_conversations_cannot_join_a_history() -> None:
    with pytest.raises(ConfigError, match="LoCoMo is a conversation dataset"):
        load_history([*resolve("locomo-sample"), TAU_BENCH[0]])


@pytest.mark.slow
def test_dev_cross_agent_pair_replays(minilm) -> None:
    pair = [shared_dataset("tau2-bench/telecom_gpt-4.1.json"), shared_dataset("tau2-bench/telecom_sft-gpt-4.1.json")]
    report = run_replay(pair, systems=["none", "bm25"], embedder=minilm, limit=8)
    assert report.mode("repeat").queries == 8 and report.result.dataset["n_episodes"] == 16
    episodes, _ = load_history(pair, limit_tasks=8)
    assert episodes[8].started_at - episodes[7].started_at >= timedelta(hours=1)  # the second file comes after
