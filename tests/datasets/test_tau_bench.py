"""The tau-bench adapter: hand-built runs for the mapping rules, then the real airline development split."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_lab.datasets import detect_format, load, load_episodes, read_tau_bench, write_jsonl
from hindsight_lab.datasets.tau_bench import START, STATE_CHANGING, gold_task_type, is_state_changing
from hindsight_lab.errors import ConfigError, TraceFormatError
from hindsight_lab.trace import MessageStep, ToolCallStep, ToolResultStep

from support import SHARED_DATASETS, shared_dataset

AIRLINE = SHARED_DATASETS / "tau-bench" / "gpt-4o-airline.dev.json"
POLICY = "# Airline Agent Policy\n\nThe current time is 2024-05-15 15:00:00 EST."


def _run(task_id: int, trial: int, reward: float = 1.0, *, actions: list[str] | None = None,
         traj: list[dict[str, Any]] | None = None, reward_info: Any = "scored") -> dict[str, Any]:
    """One tau-bench run shaped like historical_trajectories/*.json."""
    if traj is None:
        traj = [
            {"role": "system", "content": POLICY},
            {"role": "user", "content": f"Hi, please cancel reservation R{task_id}."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": f"c{task_id}", "type": "function",
                 "function": {"name": "cancel_reservation", "arguments": json.dumps({"reservation_id": "R1"})}}]},
            {"role": "tool", "tool_call_id": f"c{task_id}", "name": "cancel_reservation", "content": '{"ok": 1}'},
            {"role": "assistant", "content": "Your reservation is cancelled."},
            {"role": "user", "content": "Thanks! ###STOP###"},
        ]
    names = actions if actions is not None else ["get_reservation_details", "cancel_reservation"]
    info = {"task": {"user_id": "u", "instruction": f"HIDDEN goal of task {task_id}",
                     "actions": [{"name": n, "kwargs": {}} for n in names], "outputs": []},
            "source": "user", "user_cost": 0.0,
            "reward_info": {"reward": reward, "info": {}, "actions": []} if reward_info == "scored" else reward_info}
    return {"task_id": task_id, "reward": reward, "info": info, "traj": traj, "trial": trial}


def _write(tmp_path: Path, runs: list[Any], name: str = "gpt-4o-airline.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(runs), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- mapping rules
def test_order_ids_and_synthetic_clock(tmp_path):
    # the file lists runs task-major; episodes come out trial-major, then by numeric task_id (10 after 2)
    runs = [_run(t, r, reward=float(r == 1)) for t in (10, 2) for r in (1, 0)]
    eps = read_tau_bench(_write(tmp_path, runs))
    assert [e.episode_id for e in eps] == ["tau-airline-t2-r0", "tau-airline-t10-r0", "tau-airline-t2-r1",
                                          "tau-airline-t10-r1"]
    assert [e.started_at for e in eps] == [START + timedelta(hours=i) for i in range(4)]
    assert [e.outcome for e in eps] == ["failure", "failure", "success", "success"]
    assert [e.task_id for e in eps] == ["2", "10", "2", "10"]
    assert eps[0].meta == {"trial": 0, "source": "tau-bench", "step_limit": False}
    assert {e.domain for e in eps} == {"airline"} and eps[0].failure_cause is None


def test_instruction_is_the_first_user_message_never_the_hidden_goal(tmp_path):
    ep = read_tau_bench(_write(tmp_path, [_run(0, 0)]))[0]
    assert ep.instruction == "Hi, please cancel reservation R0."
    assert "HIDDEN" not in ep.model_dump_json()  # the simulated user's goal reaches nothing
    assert not any(isinstance(s, MessageStep) and s.role == "system" for s in ep.steps)
    assert POLICY not in ep.model_dump_json()


def test_steps_tool_calls_results_and_final_answer(tmp_path):
    ep = read_tau_bench(_write(tmp_path, [_run(0, 0)]))[0]
    kinds = [(s.type, getattr(s, "role", None)) for s in ep.steps]
    # the assistant turn that only calls a tool (content "") gives no message step
    assert kinds == [("message", "user"), ("tool_call", None), ("tool_result", None), ("message", "assistant"),
                     ("message", "user")]
    call, result = ep.steps[1], ep.steps[2]
    assert isinstance(call, ToolCallStep) and call.arguments == {"reservation_id": "R1"} and call.id == "c0"
    assert isinstance(result, ToolResultStep) and result.id == "c0" and result.error is None
    assert ep.final_answer == "Your reservation is cancelled."
    assert ep.task_type == "cancel_reservation" and ep.reward == 1.0


def test_tool_errors_unparsable_arguments_and_step_limit(tmp_path):
    traj = [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": "Book me a flight."},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "book_reservation", "arguments": "{not json"}},
            {"id": "b", "type": "function", "function": {"name": "think", "arguments": "[1, 2]"}}]},
        {"role": "tool", "tool_call_id": "a", "name": "book_reservation",
         "content": "Error: payment amount does not add up, total price is 1203, but paid 833"},
        {"role": "tool", "tool_call_id": "b", "name": "think", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "fly_now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "name": "fly_now", "content": "Unknown action fly_now"},
        {"role": "user", "content": "The error message says what?"},  # "error" inside text is not an error
    ]
    ep = read_tau_bench(_write(tmp_path, [_run(0, 0, 0.0, traj=traj, reward_info=None)]))[0]
    calls = ep.tool_calls()
    assert [c.arguments for c in calls] == [{"_raw": "{not json"}, {"_raw": "[1, 2]"}, {}]
    assert ep.errors() == [(4, "Error: payment amount does not add up, total price is 1203, but paid 833"),
                           (7, "Unknown action fly_now")]
    assert ep.steps[5].error is None  # an empty result is not an error
    assert ep.meta["step_limit"] is True and ep.outcome == "failure" and ep.final_answer == "Let me check."


def test_task_type_is_the_set_of_state_changing_gold_actions():
    assert gold_task_type(["get_user_details", "update_reservation_flights", "book_reservation",
                           "update_reservation_flights"], "airline") == "book_reservation+update_reservation_flights"
    assert gold_task_type(["get_user_details", "calculate", "transfer_to_human_agents"], "airline") == "read_only"
    assert gold_task_type([], "airline") == "read_only"
    assert gold_task_type(["find_user_id_by_email", "return_delivered_order_items"], "retail") == \
        "return_delivered_order_items"
    # fallback for an unknown domain: read-only verbs by prefix, everything else changes state
    assert gold_task_type(["get_bill", "search_plans", "change_plan", "think"], None) == "change_plan"
    assert not is_state_changing("transfer_to_human_agents", "telecom")
    assert is_state_changing("send_certificate", "airline")  # a send_ verb is not a read


def test_limit_tasks_keeps_whole_tasks(tmp_path):
    runs = [_run(t, r) for r in range(3) for t in (4, 0, 7, 1)]
    path = _write(tmp_path, runs)
    eps = read_tau_bench(path, limit_tasks=2)
    assert [e.episode_id for e in eps] == [f"tau-airline-t{t}-r{r}" for r in range(3) for t in (0, 1)]
    assert read_tau_bench(path, limit_tasks=0) == []
    assert len(read_tau_bench(path, limit_tasks=99)) == 12
    with pytest.raises(ConfigError, match=r"limit_tasks: expected a non-negative integer"):
        read_tau_bench(path, limit_tasks=-1)


def test_domain_from_data_then_file_name_then_argument(tmp_path):
    plain = _write(tmp_path, [_run(0, 0)], name="runs.json")
    assert read_tau_bench(plain)[0].domain is None
    assert read_tau_bench(plain)[0].episode_id == "tau-t0-r0"
    assert read_tau_bench(plain, domain="retail")[0].episode_id == "tau-retail-t0-r0"
    named = _write(tmp_path, [_run(0, 0)], name="gpt-4o-retail.json")
    assert read_tau_bench(named)[0].domain == "retail"
    with pytest.raises(ConfigError, match=r"domain='airline' contradicts .*'retail' \(in the file name\)"):
        read_tau_bench(named, domain="airline")
    stated = _write(tmp_path, [{**_run(0, 0), "domain": "telecom"}], name="gpt-4o-retail-2.json")
    assert read_tau_bench(stated)[0].domain == "telecom"  # the data wins over the file name


@pytest.mark.parametrize("runs,match", [
    ({"task_id": 0}, r"expected a JSON list of tau-bench runs, got dict"),
    ([_run(0, 0), "oops"], r"item 1: expected an object"),
    ([{**_run(0, 0), "trial": "zero"}],
     r"item 0 \(task_id 0, trial 'zero'\): expected int, got str \(field 'trial'\)"),
    ([_run(0, 0), _run(0, 0)], r"item 1 .*duplicate run: item 0 has the same task_id and trial"),
    ([{k: v for k, v in _run(0, 0).items() if k != "traj"}],
     r"missing required field \(field 'traj'\)"),
    ([_run(0, 0, traj=[{"role": "system", "content": POLICY}])], r"no user message: .*\(field 'traj'\)"),
    ([_run(0, 0, traj=[{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}])],
     r"unknown role 'robot' .*\(field 'traj\.1\.role'\)"),
    ([_run(0, 0, traj=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "",
                                                          "tool_calls": [{"id": "x", "function": {}}]}])],
     r"missing required field \(field 'traj\.1\.tool_calls\.0\.function\.name'\)"),
], ids=["not_a_list", "item_not_object", "trial_wrong_type", "duplicate_run", "no_traj", "no_user_message",
        "unknown_role", "tool_call_without_name"])
def test_malformed_tau_bench_files_name_the_item_and_field(tmp_path, runs, match):
    with pytest.raises(TraceFormatError, match=match) as info:
        read_tau_bench(_write(tmp_path, runs))
    assert "gpt-4o-airline.json" in str(info.value)


def test_truncated_and_non_utf8_files(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps([_run(0, 0)])[:-20])
    with pytest.raises(TraceFormatError, match=r"cut\.json:1: invalid JSON"):
        read_tau_bench(path)
    path.write_bytes(b'[{"task_id": 0, "traj": "caf\xe9"}]')
    with pytest.raises(TraceFormatError, match=r"cut\.json: not UTF-8"):
        read_tau_bench(path)


def test_detect_format_and_load_dispatch(tmp_path):
    path = _write(tmp_path, [_run(0, 0), _run(1, 0)])
    assert detect_format(path) == "tau-bench"
    eps, stats = load(path, limit_tasks=1)
    assert stats is None and [e.episode_id for e in eps] == ["tau-airline-t0-r0"]
    assert load(path, format="tau_bench")[0] == read_tau_bench(path)
    other = _write(tmp_path, [{"question": "q", "answer": "a"}], name="qa.json")
    assert detect_format(other) is None
    with pytest.raises(TraceFormatError, match=r"qa\.json: no format recognised it; read as tau-bench, the "
                       r"likeliest \(a JSON list\): item 0 .*missing required field.*'task_id'"):
        load(other)
    # a first item larger than the first sniffed megabyte is still recognised
    big = _write(tmp_path, [_run(0, 0, traj=[{"role": "user", "content": "x" * 3_000_000}])], name="big.json")
    assert detect_format(big) == "tau-bench"


# ---------------------------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def airline() -> tuple[list[Any], list[Any]]:
    """(raw runs, episodes) of ../shared/datasets/tau-bench/gpt-4o-airline.dev.json."""
    shared_dataset("tau-bench/gpt-4o-airline.dev.json")
    raw = json.loads(AIRLINE.read_text(encoding="utf-8"))
    return raw, read_tau_bench(AIRLINE)


def _raw_by_id(raw: list[Any]) -> dict[str, Any]:
    return {f"tau-airline-t{r['task_id']}-r{r['trial']}": r for r in raw}


def test_airline_counts_order_and_domain(airline):
    raw, eps = airline
    assert len(eps) == 120 and sum(e.outcome == "success" for e in eps) == 36
    assert Counter(e.meta["trial"] for e in eps) == {0: 30, 1: 30, 2: 30, 3: 30}
    keys = [(e.meta["trial"], int(e.task_id)) for e in eps]
    assert keys == sorted(keys) and len(set(keys)) == 120
    assert [e.started_at for e in eps] == sorted(e.started_at for e in eps)
    assert {e.domain for e in eps} == {"airline"} and detect_format(AIRLINE) == "tau-bench"
    assert all((e.outcome == "success") == (e.reward == 1.0) for e in eps)


def test_airline_instruction_is_what_the_agent_sees(airline):
    raw, eps = airline
    by_id = _raw_by_id(raw)
    for ep in eps:
        run = by_id[ep.episode_id]
        first_user = next(m["content"] for m in run["traj"] if m["role"] == "user")
        assert ep.instruction == first_user
        assert ep.instruction != run["info"]["task"]["instruction"]
        assert run["info"]["task"]["instruction"] not in ep.model_dump_json()
        assert not any(isinstance(s, MessageStep) and s.role == "system" for s in ep.steps)
        assert "# Airline Agent Policy" not in ep.model_dump_json()


def test_airline_tool_calls_are_parsed(airline):
    raw, eps = airline
    calls = [c for e in eps for c in e.tool_calls()]
    assert len(calls) == sum(len(m.get("tool_calls") or []) for r in raw for m in r["traj"]) == 810
    assert all(isinstance(c.arguments, dict) and "_raw" not in c.arguments for c in calls)
    results = [s for e in eps for s in e.steps if isinstance(s, ToolResultStep)]
    assert len(results) == 810 and {s.id for s in results} == {c.id for c in calls}
    errors = [s.error for s in results if s.error]
    assert len(errors) == 67 and all(x.startswith("Error: ") for x in errors)
    assert not any(isinstance(s, MessageStep) and not s.content.strip() for e in eps for s in e.steps)


def test_airline_task_types_are_state_changing_tool_sets(airline):
    raw, eps = airline
    by_id = _raw_by_id(raw)
    for ep in eps:
        assert ep.task_type == "read_only" or set(ep.task_type.split("+")) <= STATE_CHANGING["airline"]
        gold = {a["name"] for a in by_id[ep.episode_id]["info"]["task"]["actions"]}
        assert set(ep.task_type.split("+")) == (gold & STATE_CHANGING["airline"] or {"read_only"})
    types = Counter(e.task_type for e in eps)
    assert types["read_only"] == 32 and types["update_reservation_flights"] == 20
    # all trials of a task share its task_type
    assert all(len({e.task_type for e in eps if e.task_id == t}) == 1 for t in {e.task_id for e in eps})


def test_airline_step_limit_episodes_are_flagged(airline):
    # ../shared/datasets/README.md says 5; this development split (tasks 0-29) holds 3 of them
    raw, eps = airline
    flagged = sorted(e.episode_id for e in eps if e.meta["step_limit"])
    assert flagged == sorted(i for i, r in _raw_by_id(raw).items() if r["info"]["reward_info"] is None)
    assert flagged == ["tau-airline-t2-r1", "tau-airline-t9-r2", "tau-airline-t9-r3"]
    assert all(e.outcome == "failure" for e in eps if e.meta["step_limit"])


def test_airline_limit_tasks(airline):
    eps = read_tau_bench(AIRLINE, limit_tasks=3)
    assert len(eps) == 12
    assert [(e.meta["trial"], e.task_id) for e in eps] == [(r, str(t)) for r in range(4) for t in range(3)]
    full = {e.episode_id: e for e in airline[1]}
    assert all(e.model_copy(update={"started_at": None}) == full[e.episode_id].model_copy(
        update={"started_at": None}) for e in eps)


def test_airline_round_trips_through_jsonl(airline, tmp_path):
    eps = airline[1]
    write_jsonl(eps, tmp_path / "airline.jsonl")
    back, stats = load_episodes(tmp_path / "airline.jsonl")
    assert back == eps and stats.read == 120 and stats.skipped == 0
    write_jsonl(back, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "airline.jsonl").read_bytes()
