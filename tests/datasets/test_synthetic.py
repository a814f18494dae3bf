"""The synthetic scenario generator: determinism, ground truth that means what it says, fixtures that never drift
from the code, replays of the fixtures, and the lexical-lure evaluation on real Chroma with the real MiniLM."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from hindsight_lab.datasets import detect_format, load
from hindsight_lab.datasets.synthetic import (
    FIXTURE_SEED,
    FIXTURE_SIZES,
    SCENARIOS,
    TASK_TYPES,
    fixture_dir,
    generate,
    shared_tokens,
    write_fixtures,
)
from hindsight_lab.scenarios.lures import lure_pairs
from hindsight_lab.replay.runner import run_replay

from support import REPO


def _by_id(eps):
    return {e.episode_id: e for e in eps}


def _roles(eps, role):
    return [e for e in eps if e.meta["role"] == role]


# ---------------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_seed_same_episodes_other_seed_other_episodes(scenario):
    a = generate(scenario, n=3, seed=7)
    assert a == generate(scenario, n=3, seed=7)
    assert [e.instruction for e in a] != [e.instruction for e in generate(scenario, n=3, seed=8)]
    assert len({e.episode_id for e in a}) == len(a)
    assert all(e.started_at is not None and e.task_id and e.task_type in TASK_TYPES for e in a)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_query_has_earlier_relevant_memories_of_its_scenario(scenario):
    eps = generate(scenario, n=3, seed=1)
    order = {e.episode_id: i for i, e in enumerate(eps)}
    queries = _roles(eps, "query")
    assert queries
    for q in queries:
        assert q.relevant_episode_ids, q.episode_id
        assert all(order[r] < order[q.episode_id] for r in q.relevant_episode_ids)
    times = [e.started_at for e in eps]
    assert times == sorted(times)  # replay order is the generator's own clock


def test_unknown_scenario_and_bad_n_are_refused():
    with pytest.raises(ValueError, match="unknown synthetic scenario 'nope'"):
        generate("nope", n=1, seed=0)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        generate("lures", n=0, seed=0)


# ---------------------------------------------------------------------------------------------------- ground truth
def test_lures_share_more_words_with_the_query_than_the_right_memory_and_differ_in_intent():
    pairs = lure_pairs(generate("lures", n=60, seed=0))
    assert len(pairs) == 60
    for p in pairs:
        q, right, lure = p.query.instruction, p.right.instruction, p.lure.instruction
        assert shared_tokens(lure, q) > shared_tokens(right, q), (q, lure, right)
        assert shared_tokens(lure, q) >= 4  # "many surface words": the same customer, order or booking
        assert p.right.task_type == p.query.task_type != p.lure.task_type
        assert TASK_TYPES[p.lure.task_type].context == TASK_TYPES[p.query.task_type].context
        # a paraphrase, not a copy: none of the intent words of the query's usual phrasing
        assert right not in TASK_TYPES[p.query.task_type].canonical
        assert p.right.tool_names() == list(TASK_TYPES[p.query.task_type].tools) or not TASK_TYPES[
            p.query.task_type].steps
        # several background runs per task type of the query's context, so a task-type vote has material
        per_type = Counter(e.task_type for e in p.background)
        assert all(per_type[t] >= 3 for t, tt in TASK_TYPES.items() if tt.context == TASK_TYPES[
            p.query.task_type].context)
        assert set(per_type) == set(TASK_TYPES)
    assert len({(p.query.task_type, p.lure.task_type) for p in pairs}) >= 12  # many kinds of lure


def test_floods_are_near_identical_failed_retries_of_one_task_plus_one_useful_run():
    eps = generate("floods", n=2, seed=3)
    for group in {e.meta["group"] for e in eps}:
        g = [e for e in eps if e.meta["group"] == group]
        retries, [useful], [query] = _roles(g, "retry"), _roles(g, "useful"), _roles(g, "query")
        assert len(retries) == 15 and len({r.task_id for r in retries}) == 1
        assert all(r.outcome == "failure" and r.failure_cause == "strategy" for r in retries)
        words = [len(set(r.instruction.split()) ^ set(retries[0].instruction.split())) for r in retries]
        assert max(words) <= 6  # near-identical: a short retry note at most
        assert useful.outcome == "success" and useful.tool_names()[1:] == list(TASK_TYPES[useful.task_type].steps)
        assert query.task_type == useful.task_type and query.relevant_episode_ids == [useful.episode_id]


def test_lucky_success_used_the_wrong_order_and_the_same_order_fails_when_repeated():
    eps = generate("lucky", n=2, seed=5)
    for group in {e.meta["group"] for e in eps}:
        g = [e for e in eps if e.meta["group"] == group]
        [lucky], repeats, rights = _roles(g, "lucky"), _roles(g, "repeat"), _roles(g, "right")
        steps = list(TASK_TYPES[lucky.task_type].steps)
        assert lucky.outcome == "success" and lucky.meta["lucky"] is True
        assert lucky.tool_names()[1:] != steps  # it skipped the prerequisite
        assert all(r.tool_names() == lucky.tool_names() and r.outcome == "failure" for r in repeats)
        assert all(r.started_at > lucky.started_at for r in repeats)
        assert all(r.tool_names()[1:] == steps and r.outcome == "success" for r in rights)
        [query] = _roles(g, "query")
        assert sorted(query.relevant_episode_ids) == sorted(r.episode_id for r in rights)


def test_policy_flips_at_its_date():
    eps = generate("policy", n=2, seed=2)
    for group in {e.meta["group"] for e in eps}:
        g = [e for e in eps if e.meta["group"] == group and e.meta["role"] != "query"]
        changed = g[0].meta["policy_changed_at"]
        before = [e for e in g if e.started_at.isoformat() < changed]
        after = [e for e in g if e.started_at.isoformat() >= changed]
        old = before[0].tool_names()
        assert all(e.tool_names() == old and e.outcome == "success" for e in before)
        assert {e.outcome for e in after if e.tool_names() == old} == {"failure"}
        new = [e for e in after if e.tool_names() != old]
        assert new and all(e.outcome == "success" and e.tool_names()[1:] == old[1:][::-1] for e in new)
        [query] = [e for e in eps if e.meta["group"] == group and e.meta["role"] == "query"]
        assert sorted(query.relevant_episode_ids) == sorted(e.episode_id for e in new)


def test_strategic_rules_are_short_and_share_few_words_with_the_queries_that_need_them():
    eps = generate("strategic", n=4, seed=0)
    by_id = _by_id(eps)
    for q in _roles(eps, "query"):
        [src] = [by_id[r] for r in q.relevant_episode_ids]
        [rule] = src.reflections()
        assert len(rule.split()) <= 12 and rule == q.meta["rule"]
        assert shared_tokens(rule, q.instruction) <= 1
        assert q.task_type != src.task_type and q.task_type in src.meta["applies_to"]
        prereq = TASK_TYPES[q.task_type].steps[0]
        assert prereq in rule and TASK_TYPES[src.task_type].steps[0] == prereq  # the rule is about the shared trap


# ---------------------------------------------------------------------------------------------------- fixtures
def test_committed_fixtures_equal_regenerated_output(tmp_path):
    written = write_fixtures(tmp_path, seed=FIXTURE_SEED, sizes=FIXTURE_SIZES)
    committed = fixture_dir()
    assert committed == REPO / "datasets" / "synthetic"
    assert set(written) == set(SCENARIOS)
    for scenario, path in written.items():
        mine = committed / path.name
        assert mine.is_file(), f"missing fixture {mine.name}: run python -m hindsight_lab.datasets.synthetic"
        assert mine.read_bytes() == path.read_bytes(), f"{mine.name} drifted from the generator; regenerate it"
    assert sum((committed / p.name).stat().st_size for p in written.values()) < 400_000


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fixtures_load_as_jsonl_and_replay_with_a_non_empty_query_set(scenario, minilm):
    path = fixture_dir() / f"{scenario}.jsonl"
    assert detect_format(path) == "jsonl"
    episodes, stats = load(path)
    assert stats.read == len(episodes) == len(generate(scenario, n=FIXTURE_SIZES[scenario], seed=FIXTURE_SEED))
    systems = ("none", "bm25", "hindsight") if scenario in ("lucky", "policy") else ("none", "bm25")
    report = run_replay(path, format="jsonl", systems=systems, embedder=minilm)
    m = report.mode("repeat")
    queries = {e.episode_id for e in _roles(episodes, "query")}
    assert queries and queries <= set(report.judgements.query_ids)  # (retries of one task are queries too)
    assert m.value("none", "hit@10") == 0.0
    assert not math.isnan(m.value("bm25", "ndcg@5"))


def test_module_entry_regenerates_the_fixtures_and_prints_nothing(tmp_path, monkeypatch, capsys):
    import runpy

    from hindsight_lab.datasets.synthetic import fixtures

    monkeypatch.setattr(fixtures, "fixture_dir", lambda: tmp_path)
    runpy.run_module("hindsight_lab.datasets.synthetic", run_name="__main__")
    assert capsys.readouterr().out == ""
    for scenario in SCENARIOS:
        assert (tmp_path / f"{scenario}.jsonl").read_bytes() == (fixture_dir() / f"{scenario}.jsonl").read_bytes()


# ---------------------------------------------------------------------------------------------------- one vocabulary
# Regression: the planted rules (from conflicts/synthetic.py) and the benchmark corpus (from bench.py) moved into this
# package and draw through its one vocabulary; these digests were taken from the code before the move, so a changed
# word or a reordered draw fails here, not silently in a cached embedding or a conflict benchmark.
def _digest(value) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def test_planted_rules_are_the_draws_they_were_before_the_move():
    from hindsight_lab.datasets.synthetic.rules import planted_rules

    records, planted = planted_rules(40, seed=0)
    rows = [[r.id, r.content, r.task_type, r.created_at.isoformat(), r.attrs] for r in records]
    assert _digest(rows + [planted]) == "606ba69881c60f044324ea36e4e35eba751f9b6e03ed555d90e9adf6f8e692b3"


def test_benchmark_corpus_is_the_draws_it_was_before_the_move():
    from hindsight_lab.datasets.synthetic.corpus import corpus_episode, instructions

    value = [instructions(1, 2000), [corpus_episode(3, j) for j in range(300)]]
    assert _digest(value) == "263eb04c2c84956da7e884cd2fc23dabf70b1f19961ff725a16ddcb3ff6220cb"
    assert instructions(1, 500) == instructions(1, 2000)[:500]  # a smaller store is a prefix of a larger one


def test_every_generator_draws_from_the_one_vocabulary():
    import random

    from hindsight_lab.datasets.synthetic.names import RULE_TOPICS, SUPPORT, WORKPLACE, draw_entities, draw_slots
    from hindsight_lab.datasets.synthetic.rules import planted_rules

    ents = draw_entities(random.Random(5))
    assert ents["first"] in SUPPORT["first"] and ents["product"] in SUPPORT["product"]
    slots = draw_slots(random.Random(5))
    assert slots["name"].split()[0] in WORKPLACE["first"] and slots["vendor"] in WORKPLACE["vendor"]
    assert {r.task_type for r in planted_rules(8, seed=1)[0]} <= set(RULE_TOPICS["task_type"])
    # negative control: the vocabularies stay apart (merging them would change every seeded output)
    assert SUPPORT["first"] != WORKPLACE["first"]
