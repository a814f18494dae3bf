"""Reflection over real recorded tau-bench runs (../shared/datasets), with the real MiniLM on embedded Chroma."""

from __future__ import annotations

import random
import re

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.cli import main
from hindsight_lab.datasets import load
from support import shared_dataset

TAU = "tau-bench/gpt-4o-airline.dev.json"


@pytest.fixture(scope="module")
def episodes():
    eps, _ = load(shared_dataset(TAU), limit_tasks=12)  # whole tasks: 12 tasks × 4 trials
    return eps


def _mem(tmp_path, name, minilm):
    return MemorySystem(LabConfig().with_params({"store.path": str(tmp_path / name)}), embedder=minilm).open()


@pytest.mark.slow
def test_heuristic_rules_name_tools_of_those_episodes(episodes, tmp_path, minilm):
    mem = _mem(tmp_path, "s", minilm)
    outcomes = mem.reflect_many(episodes)
    tools = {t for ep in episodes for t in ep.tool_names()}
    accepted = [o.reflection for o in outcomes if o.reflection is not None]
    assert accepted, mem.reflection_stats()
    for refl in accepted:
        mentioned = {t for t in tools if re.search(rf"\b{t}\b", refl.reusable_rule)}
        identifiers = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", refl.reusable_rule))
        assert mentioned and identifiers <= tools | {"read_only"}, refl.reusable_rule  # no invented tools
        assert refl.counter_examples
    stats = mem.reflection_stats()
    assert 0 < stats["reflections"] < len(episodes)  # selective: neither nothing nor everything
    assert sum(stats["decisions"].values()) == len(episodes)
    assert mem.stats()["candidates"] + mem.stats()["rules"] >= 1
    mem.close()


@pytest.mark.slow
def test_shuffled_ground_truth_labels_change_nothing_in_memory(episodes, tmp_path, minilm):
    labels = [ep.task_type for ep in episodes]
    random.Random(7).shuffle(labels)
    assert labels != [ep.task_type for ep in episodes]
    shuffled = [ep.model_copy(update={"task_type": t}) for ep, t in zip(episodes, labels)]

    def snapshot(eps, name):
        # record ids are random and a tag's few hex digits take 2-4 tokens, so where the token budget cuts can
        # differ between two stores built alike; top_k alone ends the block here, so that only labels could differ
        mem = MemorySystem(LabConfig().with_params({"store.path": str(tmp_path / name),
                                                    "retrieval.token_budget": 100_000}), embedder=minilm).open()
        mem.reflect_many(eps)
        records = sorted((r.kind.value, r.content, r.task_type, r.source_episode_ids, round(r.confidence, 9),
                          r.hit_count, r.counter_examples) for r in mem.records())
        now = eps[-1].started_at
        searches = []
        for ep in eps[::7]:
            res = mem.search(ep.instruction, now=now)
            searches.append([(h.record.source_episode_ids, h.record.kind.value, round(h.scores.total, 9))
                             for h in res.hits])
        mem.close()
        return records, searches

    assert snapshot(episodes, "a") == snapshot(shuffled, "b")


@pytest.mark.slow
def test_cli_reflect_table_and_jsonl(tmp_path, capsys):
    out = tmp_path / "outcomes.jsonl"
    assert main(["reflect", str(shared_dataset(TAU)), "--limit-tasks", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "strategy_failure" in text and "trigger rate" in text
    assert len(out.read_text().splitlines()) == 16


def test_cli_reflect_strict_failure_names_file_line_field(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    good = '{"episode_id": "e%d", "instruction": "x", "steps": [], "outcome": "success"}\n'
    bad.write_text(good % 1 + good % 2 + '{"episode_id": "e3", "instruction": "x", "steps": [], "outcome": "won"}\n')
    assert main(["reflect", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:3" in err and "outcome" in err
    assert main(["reflect", str(bad), "--skip-invalid", "--all"]) == 0
    assert "skipped" in capsys.readouterr().err
