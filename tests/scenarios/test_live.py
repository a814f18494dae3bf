"""The live environment: the agent's reading of memories in any text form, the environment's rules and chance
events, the rendering of what each system injected, and small live runs on real Chroma with the real MiniLM."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.datasets.synthetic import START, TASK_TYPES, build_episode, draw_entities
from hindsight_lab.scenarios.live import (
    FLIP_TYPE,
    Hint,
    LiveEnv,
    LiveTask,
    Plan,
    injected_text,
    plan_calls,
    read_hints,
    run_live,
)
from hindsight_lab.replay.systems import build_systems
from hindsight_lab.retrieve.inject import render_line
from hindsight_lab.trace.summary import summarise

REFUND = TASK_TYPES["refund"]
RESET = TASK_TYPES["password_reset"]
BOOKING = TASK_TYPES["booking"]


def _summary(tools, outcome="success", error_at=None):
    import random

    ents = draw_entities(random.Random(4))
    ep = build_episode("e1", REFUND, "Refund order 1 for Maria", ents, calls=tools, started_at=START,
                       error_at=error_at, failure_cause="strategy")
    assert ep.outcome == outcome
    return summarise(ep)


# ---------------------------------------------------------------------------------------------------- reading
@pytest.mark.parametrize("text", [
    "- [L3#a1b2c3] For issue_refund+verify_identity tasks, call lookup_order → verify_identity → issue_refund "
    "in this order.",
    "Always call verify_identity before issue_refund.",
    "issue_refund only after verify_identity",
    "verify_identity first, then issue_refund",
    "lookup_order -> verify_identity -> issue_refund worked",
    "- [L2#00aa11] For issue_refund tasks, issue_refund failed (request rejected) when called after lookup_order; "
    "successful similar runs called lookup_order → verify_identity → issue_refund.",
    "x (does not hold when: e9 followed the same order and still failed; another run succeeded with "
    "lookup_order → verify_identity → issue_refund)",
], ids=["l3-rule", "before", "after", "first-then", "ascii-arrows", "failure-rule-alt", "counter-example"])
def test_a_hint_in_any_text_form_is_followed(text):
    plan = plan_calls(REFUND, text, explore=False, order_draw=0.9)
    assert plan.source == "hint" and plan.calls == ("verify_identity", "issue_refund")


def test_a_successful_runs_summary_is_a_hint_and_a_failed_runs_is_not():
    ok = _summary(["verify_identity", "issue_refund"])
    failed = _summary(["issue_refund"], "failure", error_at="issue_refund")
    assert "outcome: success" in ok and "outcome: failure" in failed
    assert plan_calls(REFUND, f"## Similar past tasks\n- [L2#aaaaaa] {ok}", explore=False,
                      order_draw=0.9).calls == ("verify_identity", "issue_refund")
    assert read_hints(failed) == []
    assert plan_calls(REFUND, failed, explore=False, order_draw=0.9) == Plan(("issue_refund",), "default")
    # a lucky success that skipped the prerequisite says nothing about it: the agent keeps its default path
    lucky = _summary(["issue_refund"])
    assert plan_calls(REFUND, lucky, explore=False, order_draw=0.9).source == "default"


@pytest.mark.parametrize("text", [
    "",
    "Refund the customer quickly and politely.",
    "For issue_refund tasks, issue_refund failed (request rejected) when called after lookup_order; check what "
    "issue_refund requires before calling it.",
    "Do not call verify_identity before issue_refund.",
    "For confirm_booking+hold_slot tasks, call search_availability → hold_slot → confirm_booking in this order.",
], ids=["empty", "no-tools", "failure-rule-without-alt", "negated", "other-prerequisite"])
def test_no_hint_means_the_trap(text):
    plan = plan_calls(REFUND, text, explore=False, order_draw=0.9)
    assert plan == Plan(("issue_refund",), "default")


def test_a_prerequisite_learnt_on_one_task_type_transfers_to_another_that_shares_it():
    rule = ("For issue_refund+verify_identity tasks, call lookup_order → verify_identity → issue_refund in this "
            "order.")
    assert plan_calls(RESET, rule, explore=False, order_draw=0.9).calls == ("verify_identity", "reset_password")
    assert plan_calls(RESET, "Identity first: verify_identity before touching money.", explore=False,
                      order_draw=0.9).calls == ("verify_identity", "reset_password")
    # ... but not to a task type with another prerequisite (negative control)
    assert plan_calls(BOOKING, rule, explore=False, order_draw=0.9).source == "default"


def test_the_first_hint_in_reading_order_wins_and_explore_ignores_memory():
    text = "confirm_booking before hold_slot\nhold_slot → confirm_booking"
    assert plan_calls(BOOKING, text, explore=False, order_draw=0.9).calls == ("confirm_booking", "hold_slot")
    assert plan_calls(REFUND, "verify_identity before issue_refund", explore=True, order_draw=0.9) == Plan(
        ("issue_refund", "verify_identity"), "explore")
    assert plan_calls(REFUND, "", explore=True, order_draw=0.1).calls == ("verify_identity", "issue_refund")
    assert read_hints("verify_identity before issue_refund") == [Hint("verify_identity", "issue_refund")]


# ---------------------------------------------------------------------------------------------------- environment
def _task(task_type="refund", index=3, at=START):
    return LiveTask(index, task_type, "Refund order 1 for Maria", draw_entities(__import__("random").Random(1)),
                    at, 0)


def test_environment_decides_success_failure_and_luck():
    env = LiveEnv(n_tasks=10, seed=0, p_lucky=0.0)
    task = _task()
    no_luck = env.draws(3, 0).__class__(False, 0.9, False)
    ep, lucky = env.execute(task, 0, Plan(("issue_refund",), "default"), "x", no_luck)
    assert ep.outcome == "failure" and ep.failure_cause == "strategy" and not lucky
    assert ep.errors() and ep.errors()[0][1] == REFUND.error and ep.tool_names() == ["lookup_order", "issue_refund"]
    ep, lucky = env.execute(task, 0, Plan(("verify_identity", "issue_refund"), "hint"), "y", no_luck)
    assert ep.outcome == "success" and not lucky and not ep.errors()
    ep, lucky = env.execute(task, 0, Plan(("issue_refund",), "default"), "z", no_luck.__class__(False, 0.9, True))
    assert ep.outcome == "success" and lucky and ep.meta["lucky"] is True  # a wrong order that got away with it
    ep, _ = env.execute(task, 2, Plan(("issue_refund",), "default"), "w", no_luck)
    assert ep.instruction != task.instruction and ep.instruction.startswith(task.instruction)  # near-duplicate


def test_policy_flips_only_the_flip_type_and_draws_are_shared_and_seeded():
    env = LiveEnv(n_tasks=100, seed=0)
    changed = env.policy_changed
    assert changed == START + timedelta(days=50 / env.tasks_per_day)
    assert env.required(FLIP_TYPE, changed - timedelta(minutes=1)) == BOOKING.steps
    assert env.required(FLIP_TYPE, changed) == BOOKING.steps[::-1]
    assert env.required("refund", changed) == REFUND.steps
    assert LiveEnv(n_tasks=5, seed=0, policy_change_at=None).required(FLIP_TYPE, changed) == BOOKING.steps
    assert env.draws(7, 1) == LiveEnv(n_tasks=100, seed=0).draws(7, 1) != env.draws(7, 2)
    assert env.tasks() == LiveEnv(n_tasks=100, seed=0).tasks() != LiveEnv(n_tasks=100, seed=1).tasks()
    rates = [LiveEnv(n_tasks=1, seed=0).draws(i, 0) for i in range(2000)]
    assert 0.2 < sum(d.explore for d in rates) / 2000 < 0.3 and 0.07 < sum(d.lucky for d in rates) / 2000 < 0.13


# ---------------------------------------------------------------------------------------------------- rendering
def test_every_system_renders_its_injection_with_the_same_renderer(minilm, tmp_path):
    from hindsight_lab.embed import TokenCounter

    ok = build_episode("ok-1", RESET, "Reset the password on the account of Maria Novak", draw_entities(
        __import__("random").Random(2)), calls=RESET.steps, started_at=START)
    count = TokenCounter.for_embedder(minilm).count
    systems = build_systems(["none", "dense", "bm25", "hindsight"], config=LabConfig(), embedder=minilm, top_k=5,
                            token_budget=600, root=str(tmp_path))
    try:
        for s in systems:
            s.observe(ok, START)
        for s in systems:
            injected = s.recall("Reset the password for Omar Berg's account", START + timedelta(hours=1))
            text = injected_text(s, injected, count)
            if s.name == "none":
                assert text == ""
                continue
            assert "## Similar past tasks" in text and summarise(ok) in text
            assert render_line(next(r for r in (s.mem.records("episode") if s.name == "hindsight" else s.records)
                                    if r.source_episode_ids == ("ok-1",))) in text
            # the same reading whatever the system: the successful run's tool path is the hint
            assert plan_calls(RESET, text, explore=False, order_draw=0.9).calls == RESET.steps
    finally:
        for s in systems:
            s.close()


# ---------------------------------------------------------------------------------------------------- live runs
def _base_outcome(env: LiveEnv, index: int) -> bool:
    """What the agent does with no memory at a task's first attempt, computed from the draws alone."""
    d = env.draws(index, 0)
    right_order = d.explore and d.order < 0.5
    return right_order or d.lucky


def test_small_live_run_none_succeeds_at_the_no_memory_base_rate(minilm):
    report = run_live(["none", "hindsight"], n_tasks=10, seed=3, embedder=minilm)
    env = LiveEnv(n_tasks=10, seed=3)
    base = [_base_outcome(env, i) for i in range(10)]
    assert 0 < sum(base) < 10  # the comparison means something: successes and failures both occur
    assert report.outcomes("none") == base
    assert report.summary()["none"]["success"] == sum(base) / 10
    none_rows = [r for r in report.attempts if r["system"] == "none"]
    assert {r["plan"] for r in none_rows} <= {"default", "explore"} and all(r["injected"] == 0 for r in none_rows)
    # every system saw the same tasks; retries only after failures, within the user's patience
    tasks = {t.index: t for t in env.tasks()}
    for name in ("none", "hindsight"):
        rows = [r for r in report.attempts if r["system"] == name]
        assert sorted({r["task"] for r in rows}) == list(range(10))
        for r in rows:
            assert r["attempt"] <= tasks[r["task"]].patience
            assert r["attempt"] == 0 or not next(x for x in rows if x["task"] == r["task"]
                                                 and x["attempt"] == r["attempt"] - 1)["success"]
    assert {m["system"] for m in report.memory} == {"none", "hindsight"}
    assert set(report.lucky_in_l3) == {"none", "hindsight"} and report.lucky_in_l3["none"] == {}
    lucky = [r["episode_id"] for r in report.attempts if r["lucky"]]
    assert sorted(lucky) == sorted(i for ids in report.lucky_ids.values() for i in ids)
    assert report.success_trend(window=5).shape == (10, 2)
    l3 = report.layer_counts("L3")
    assert list(l3.index) == list(range(10)) and (l3["none"] == 0).all()


def test_no_memory_base_rate_matches_its_expectation():
    """The base rate the memory systems are compared with: explore with the right order, or a lucky wrong one."""
    env = LiveEnv(n_tasks=1, seed=0)
    n = 3000
    rate = sum(_base_outcome(env, i) for i in range(n)) / n
    expected = env.p_explore * 0.5 + (1 - env.p_explore * 0.5) * env.p_lucky
    assert rate == pytest.approx(expected, abs=0.02)


@pytest.mark.slow
def test_later_refusals_retire_only_successes_whose_order_no_longer_works(minilm):
    """After the policy change the old booking order is refused; a lucky wrong order is refused again later. What
    hindsight retires is exactly such successes: orders the environment refuses at the end of the run."""
    report = run_live(["hindsight"], n_tasks=90, seed=0, embedder=minilm, policy_change_at=0.3)
    env = LiveEnv(n_tasks=90, seed=0, policy_change_at=0.3)
    rows = {r["episode_id"]: r for r in report.attempts}
    retired = report.retired["hindsight"]
    assert retired and report.summary()["hindsight"]["retired"] == len(retired)
    end = max(r["at"] for r in rows.values())
    for eid in retired:
        row = rows[eid]
        assert row["success"] and tuple(row["calls"]) != env.required(row["task_type"], end), row
    stale = [e for e in retired if not rows[e]["lucky"]]
    assert stale and all(rows[e]["task_type"] == "booking" and rows[e]["at"] < env.policy_changed for e in stale)


@pytest.mark.slow
def test_live_command_prints_one_row_per_seed_and_system_and_the_mean(tmp_path, capsys):
    from hindsight_lab.cli import main

    out = tmp_path / "live.csv"
    assert main(["live", "--systems", "none,hindsight", "--seeds", "0,1", "--tasks", "12", "--set",
                 "embedder.model=hashing-64", "--out", str(out)]) == 0
    import pandas as pd

    table = pd.read_csv(out)
    assert list(table["system"]) == ["none", "hindsight"] * 3 and list(table["seed"].astype(str)) == [
        "0", "0", "1", "1", "mean", "mean"]
    per_seed = table[table["seed"] != "mean"]
    mean = table[table["seed"] == "mean"].set_index("system")
    for system in ("none", "hindsight"):
        assert mean.loc[system, "success"] == pytest.approx(per_seed[per_seed.system == system]["success"].mean())
    assert "final_quarter" in capsys.readouterr().out
