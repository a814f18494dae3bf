"""The tau2-bench adapter: hand-built files for the mapping rules, the five real dev files, and a canary file that
proves nothing of the tasks (the hidden user brief, the gold) reaches episodes, memory or a replay report."""

from __future__ import annotations

import copy
import dataclasses
import json
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.datasets import detect_format, load, load_episodes, read_tau2_bench, read_tau_bench, write_jsonl
from hindsight_lab.datasets.tau2_bench import gold_task_type, qualified_task_id
from hindsight_lab.errors import ConfigError, TraceFormatError
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.trace import MessageStep, ToolCallStep, ToolResultStep

from support import shared_dataset

# file → (runs, successes, tool calls by requestor, tool results with error true, distinct gold task types,
#         tasks of type read_only), as counted once by hand from the raw JSON
DEV = {
    "telecom_gpt-4.1.json": (40, 18, {"assistant": 207, "user": 482}, 0, 28, 12),
    "telecom_sft-gpt-4.1.json": (40, 30, {"assistant": 656, "user": 420}, 10, 28, 12),
    "telecom_gpt-4o.json": (20, 14, {"assistant": 90, "user": 125}, 1, 15, 2),
    "airline_gpt-4.1.json": (20, 10, {"assistant": 148}, 1, 8, 6),
    "airline_sft-gpt-4.1.json": (20, 13, {"assistant": 147}, 1, 8, 6),
}


# ---------------------------------------------------------------------------------------------- hand-built files
def _messages(n: int) -> list[dict[str, Any]]:
    """A telecom-like conversation: greeting, the user's phone check, the request, calls by both sides."""
    return [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, "turn_idx": 0,
         "usage": None},
        {"role": "user", "content": None, "turn_idx": 1, "usage": {"prompt_tokens": 900, "completion_tokens": 9},
         "tool_calls": [{"id": f"u{n}", "name": "check_status_bar", "arguments": {}, "requestor": "user"}]},
        {"role": "tool", "id": f"u{n}", "requestor": "user", "error": False, "content": "Status: No Service"},
        {"role": "user", "content": f"My mobile data does not work ({n}).", "turn_idx": 3},
        {"role": "assistant", "content": "", "turn_idx": 4, "usage": {"prompt_tokens": 100, "completion_tokens": 5},
         "tool_calls": [{"id": f"a{n}", "name": "get_customer_by_phone", "arguments": {"phone_number": "555"},
                         "requestor": "assistant"}]},
        {"role": "tool", "id": f"a{n}", "requestor": "assistant", "error": False, "content": '{"customer_id": 1}'},
        {"role": "assistant", "content": "Please turn mobile data on.", "turn_idx": 6,
         "usage": {"prompt_tokens": 120, "completion_tokens": 7}},
        {"role": "user", "content": "", "turn_idx": 7,
         "tool_calls": [{"id": f"t{n}", "name": "toggle_data", "arguments": "on"}]},
        {"role": "tool", "id": f"t{n}", "requestor": "user", "error": True, "content": "Error: SIM missing"},
        {"role": "assistant", "content": "Your line is fixed.", "turn_idx": 9},
    ]


def _sim(n: int, task_id: str, start: str | None = "2025-08-01T10:00:00", reward: float | None = 1.0,
         **extra: Any) -> dict[str, Any]:
    sim = {"id": f"sim-{n}", "task_id": task_id, "trial": 0, "seed": 7, "start_time": start,
           "end_time": start, "duration": 1.5, "termination_reason": "user_stop", "agent_cost": 0.01,
           "user_cost": 0.02, "reward_info": None if reward is None else {"reward": reward, "db_check": None},
           "messages": _messages(n)}
    return {**sim, **extra}


def _task(task_id: str, actions: list[tuple[str, str]]) -> dict[str, Any]:
    return {"id": task_id, "description": {"purpose": "HIDDEN purpose"}, "ticket": "HIDDEN ticket",
            "initial_state": None, "user_scenario": {"instructions": {"reason_for_call": "HIDDEN brief"}},
            "evaluation_criteria": {"actions": [{"action_id": f"{n}_{i}", "name": n, "requestor": r, "arguments": {}}
                                                for i, (n, r) in enumerate(actions)]}}


def _file(sims: list[Any], tasks: list[Any] | None = None) -> dict[str, Any]:
    tasks = [_task("t1", [("toggle_data", "user"), ("get_customer_by_phone", "assistant")])] if tasks is None \
        else tasks
    return {"timestamp": "2025-08-01T10:00:00",
            "info": {"agent_info": {"llm": "agent-llm"}, "user_info": {"llm": "user-llm"},
                     "environment_info": {"domain_name": "telecom", "policy": "HIDDEN policy"}},
            "tasks": tasks, "simulations": sims}


def _write(tmp_path: Path, data: Any, name: str = "telecom_tiny.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_steps_instruction_actors_and_errors(tmp_path):
    ep = read_tau2_bench(_write(tmp_path, _file([_sim(0, "t1")])))[0]
    kinds = [(s.type, getattr(s, "role", None) or getattr(s, "actor", None)) for s in ep.steps]
    # the tool-only user and assistant turns (no text) give no message step; the instruction's message is a step
    assert kinds == [("message", "assistant"), ("tool_call", "user"), ("tool_result", None), ("message", "user"),
                     ("tool_call", "assistant"), ("tool_result", None), ("message", "assistant"),
                     ("tool_call", "user"), ("tool_result", None), ("message", "assistant")]
    assert ep.instruction == "My mobile data does not work (0)."  # the first user message with text
    calls = ep.tool_calls()
    assert [(c.name, c.id, c.actor) for c in calls] == [("check_status_bar", "u0", "user"),
                                                        ("get_customer_by_phone", "a0", "assistant"),
                                                        ("toggle_data", "t0", "user")]  # no requestor: the role
    assert calls[1].arguments == {"phone_number": "555"} and calls[2].arguments == {"_raw": "on"}
    assert ep.errors() == [(8, "Error: SIM missing")]
    assert isinstance(ep.steps[2], ToolResultStep) and ep.steps[2].error is None and ep.steps[2].id == "u0"
    assert ep.final_answer == "Your line is fixed." and ep.outcome == "success" and ep.reward == 1.0
    assert (ep.episode_id, ep.task_id, ep.domain, ep.task_type) == ("tau2-telecom_tiny-000",
                                                                    qualified_task_id("telecom", "t1"),
                                                                    "telecom", "toggle_data")
    assert ep.meta == {"source": "tau2-bench", "source_file": "telecom_tiny.json", "agent": "agent-llm",
                       "user_model": "user-llm", "trial": 0, "simulation_id": "sim-0",
                       "termination_reason": "user_stop", "seed": 7, "duration": 1.5, "agent_cost": 0.01,
                       "usage": {"prompt_tokens": 220, "completion_tokens": 12}}  # the assistant's usage only
    assert "HIDDEN" not in ep.model_dump_json()


def test_equal_start_times_keep_file_order_without_a_clock(tmp_path):
    sims = [_sim(n, t) for n, t in enumerate(["t2", "t1", "t2"])]
    eps = read_tau2_bench(_write(tmp_path, _file(sims, [_task("t1", []), _task("t2", [])])))
    assert [e.episode_id for e in eps] == ["tau2-telecom_tiny-000", "tau2-telecom_tiny-001", "tau2-telecom_tiny-002"]
    assert [e.started_at for e in eps] == [None, None, None]


def test_start_times_order_episodes_ties_in_file_order(tmp_path):
    starts = ["2025-08-01T10:00:02", "2025-08-01T10:00:01", "2025-08-01T12:00:01+02:00", "2025-08-01T10:00:00Z"]
    sims = [_sim(n, f"t{n}", start=s) for n, s in enumerate(starts)]
    path = _write(tmp_path, _file(sims, []))
    eps = read_tau2_bench(path)
    assert [e.episode_id[-1] for e in eps] == ["3", "1", "2", "0"]  # 10:00:01 UTC twice: file order
    assert eps[0].started_at == datetime(2025, 8, 1, 10, 0, tzinfo=timezone.utc)  # naive taken as UTC
    assert eps[1].started_at == eps[2].started_at
    assert [e.task_type for e in eps] == [None] * 4  # tasks[] holds none of these task_ids
    assert [e.episode_id[-1] for e in read_tau2_bench(path, limit_tasks=2)] == ["3", "1"]


def test_missing_optional_fields(tmp_path):
    bare = {k: v for k, v in _sim(0, "t1", reward=None).items() if k not in ("seed", "duration", "agent_cost",
                                                                              "start_time", "end_time")}
    bare["messages"] = [{k: v for k, v in m.items() if k not in ("usage", "turn_idx")} for m in bare["messages"]]
    other = _sim(1, "t1", start="2025-08-01T11:00:00", reward=0.5)
    eps = read_tau2_bench(_write(tmp_path, _file([other, bare])))
    assert [e.started_at for e in eps] == [None, None]  # one simulation without start_time: file order
    ep = eps[1]
    assert ep.meta == {"source": "tau2-bench", "source_file": "telecom_tiny.json", "agent": "agent-llm",
                       "user_model": "user-llm", "trial": 0, "simulation_id": "sim-0",
                       "termination_reason": "user_stop"}
    assert (ep.outcome, ep.reward) == ("failure", None)
    assert (eps[0].outcome, eps[0].reward) == ("failure", 0.5)


def test_gold_task_type_rule():
    task = _task("x", [("get_customer_by_phone", "assistant"), ("toggle_data", "user"), ("refuel_data", "assistant"),
                       ("toggle_data", "user"), ("check_status_bar", "user"), ("find_user_id", "assistant"),
                       ("search_direct_flight", "assistant"), ("list_all_airports", "assistant"),
                       ("calculate", "assistant"), ("think", "assistant"), ("transfer_to_human_agents", "assistant"),
                       ("send_certificate", "assistant")])
    assert gold_task_type(task) == "refuel_data+send_certificate+toggle_data"
    assert gold_task_type(_task("x", [("transfer_to_human_agents", "assistant"), ("get_bill", "user")])) \
        == "read_only"
    assert gold_task_type(_task("x", [])) == "read_only"
    assert gold_task_type({"id": "x", "evaluation_criteria": None}) == "read_only"
    assert gold_task_type({"id": "x"}) == "read_only"


def test_limit_tasks_keeps_all_trials(tmp_path):
    sims = [_sim(n, t, start=f"2025-08-01T10:00:0{n}", trial=n // 3) for n, t in enumerate(["b", "a", "c"] * 2)]
    path = _write(tmp_path, _file(sims, []))
    expected = [qualified_task_id("telecom", "b"), qualified_task_id("telecom", "a")] * 2
    assert [e.task_id for e in read_tau2_bench(path, limit_tasks=2)] == expected
    assert read_tau2_bench(path, limit_tasks=0) == []
    assert len(read_tau2_bench(path, limit_tasks=9)) == 6
    with pytest.raises(ConfigError, match=r"limit_tasks: expected a non-negative integer"):
        read_tau2_bench(path, limit_tasks=-1)


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


def _nameless_call() -> dict[str, Any]:
    sim = _sim(0, "t1")
    sim["messages"][4]["tool_calls"][0].pop("name")
    return sim


@pytest.mark.parametrize("data,match", [
    ([_sim(0, "t1")], r"expected a tau2-bench JSON object \{info, tasks, simulations\}, got list"),
    ({"info": {}, "tasks": []}, r"missing required field simulations"),
    (_file([_without(_sim(0, "t1"), "messages")]),
     r"simulation 0: missing required field \(field 'simulations\.0\.messages'\)"),
    (_file([_sim(0, "t1"), _nameless_call()]),
     r"simulation 1: missing required field \(field 'simulations\.1\.messages\.4\.tool_calls\.0\.name'\)"),
    (_file([_sim(0, "t1", messages=[{"role": "assistant", "content": "Hi!"}, {"role": "system", "content": "x"}])]),
     r"unknown role 'system' .*\(field 'simulations\.0\.messages\.1\.role'\)"),
    (_file([_sim(0, "t1", messages=[{"role": "assistant", "content": "Hi!"}])]),
     r"no user message with text.*\(field 'simulations\.0\.messages'\)"),
    (_file([_sim(0, "t1", start="yesterday")]),
     r"not an ISO-8601 timestamp: 'yesterday' .*'simulations\.0\.start_time'"),
    (_file([_sim(0, "t1", trial="0")]), r"expected int, got str \(field 'simulations\.0\.trial'\)"),
    (_file([_sim(0, "t1", reward_info={"db_check": None})]),
     r"missing required field \(field 'simulations\.0\.reward_info\.reward'\)"),
    (_file([_sim(0, "t1")], [{"id": "t1", "evaluation_criteria": {"actions": [{"requestor": "user"}]}}]),
     r"task 0: missing required field \(field 'tasks\.0\.evaluation_criteria\.actions\.0\.name'\)"),
    (_file(["oops"]), r"simulation 0: expected a simulation object, got str \(field 'simulations\.0'\)"),
    ({**_file([]), "info": {"agent_info": {"llm": "a"}}},
     r"missing required field \(field 'info\.environment_info'\)"),
], ids=["not_an_object", "no_simulations", "simulation_without_messages", "tool_call_without_name", "unknown_role",
        "no_user_text", "bad_start_time", "trial_wrong_type", "reward_missing", "gold_action_without_name",
        "simulation_not_object", "no_domain"])
def test_malformed_files_name_the_file_and_field(tmp_path, data, match):
    with pytest.raises(TraceFormatError, match=match) as info:
        read_tau2_bench(_write(tmp_path, data))
    assert "telecom_tiny.json" in str(info.value)


def test_truncated_file(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(_file([_sim(0, "t1")]))[:-20])
    with pytest.raises(TraceFormatError, match=r"cut\.json:1: invalid JSON"):
        read_tau2_bench(path)
    assert detect_format(path) is None


def test_detect_format_and_load(tmp_path):
    path = _write(tmp_path, _file([_sim(0, "t1"), _sim(1, "t2", start="2025-08-01T10:00:01")]))
    assert detect_format(path) == "tau2-bench"
    eps, stats = load(path, limit_tasks=1)
    assert stats is None and [e.episode_id for e in eps] == ["tau2-telecom_tiny-000"]
    assert load(path, format="tau2_bench")[0] == read_tau2_bench(path)
    assert detect_format(_write(tmp_path, {"simulations": []}, name="half.json")) is None
    # issue 49: the likeliest format's own error, not a bare "cannot tell the trace format"
    with pytest.raises(TraceFormatError, match=r"half\.json: no format recognised it; read as tau2-bench, the "
                       r"likeliest \(a JSON object\): .*missing required field tasks"):
        load(tmp_path / "half.json")


def test_round_trips_through_jsonl_with_actors(tmp_path):
    eps = read_tau2_bench(_write(tmp_path, _file([_sim(0, "t1")])))
    write_jsonl(eps, tmp_path / "a.jsonl")
    back, _ = load_episodes(tmp_path / "a.jsonl")
    assert back == eps and '"actor":"user"' in (tmp_path / "a.jsonl").read_text()
    write_jsonl(back, tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_tool_calls_without_actor_write_no_actor_field(tmp_path):
    step = ToolCallStep(name="refund", arguments={"order": 1})
    assert step.actor is None
    write_jsonl([{"episode_id": "e", "instruction": "x", "steps": [step], "outcome": "success"}],
                tmp_path / "e.jsonl")
    assert "actor" not in (tmp_path / "e.jsonl").read_text()


# ---------------------------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def dev() -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """file name → (raw JSON, episodes) of the five ../shared/datasets/tau2-bench files."""
    out = {}
    for name in DEV:
        path = shared_dataset(f"tau2-bench/{name}")
        out[name] = (json.loads(path.read_text(encoding="utf-8")), read_tau2_bench(path))
    return out


@pytest.mark.parametrize("name", list(DEV))
def test_dev_counts_equal_the_raw_json(dev, name):
    raw, eps = dev[name]
    runs, successes, by_actor, n_errors, n_types, n_read_only = DEV[name]
    sims = raw["simulations"]
    assert len(eps) == len(sims) == runs
    assert sum(e.outcome == "success" for e in eps) == successes == sum(
        (s["reward_info"] or {}).get("reward") == 1.0 for s in sims)
    raw_calls = Counter(c["requestor"] for s in sims for m in s["messages"] for c in m.get("tool_calls") or [])
    assert Counter(c.actor for e in eps for c in e.tool_calls()) == raw_calls == by_actor
    raw_errors = sum(m["role"] == "tool" and m["error"] for s in sims for m in s["messages"])
    assert sum(len(e.errors()) for e in eps) == raw_errors == n_errors
    assert sum(isinstance(s, ToolResultStep) for e in eps for s in e.steps) == sum(
        m["role"] == "tool" for s in sims for m in s["messages"])
    types = Counter(gold_task_type(t) for t in raw["tasks"])
    assert (len(types), types["read_only"]) == (n_types, n_read_only)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DEV))
def test_dev_mapping(dev, name):
    raw, eps = dev[name]
    domain = raw["info"]["environment_info"]["domain_name"]
    sims = {f"tau2-{Path(name).stem}-{i:03d}": s for i, s in enumerate(raw["simulations"])}
    tasks = {t["id"]: t for t in raw["tasks"]}
    for ep in eps:
        sim = sims[ep.episode_id]
        assert ep.instruction == next(m["content"] for m in sim["messages"] if m["role"] == "user" and m["content"])
        assert isinstance(ep.steps[0], MessageStep) and ep.steps[0].role == "assistant"  # the greeting
        assert ep.task_id == qualified_task_id(domain, sim["task_id"]) and ep.domain == domain
        if domain == "telecom":  # the raw id spells out the task's faults: it stays out (airline ids are numbers)
            assert sim["task_id"] not in ep.model_dump_json()
        assert ep.task_type == gold_task_type(tasks[sim["task_id"]])
        assert ep.meta["agent"] == raw["info"]["agent_info"]["llm"] and ep.meta["simulation_id"] == sim["id"]
        assert ep.started_at == datetime.fromisoformat(sim["start_time"]).replace(tzinfo=timezone.utc)
        assert ep.meta["usage"]["prompt_tokens"] == sum((m.get("usage") or {}).get("prompt_tokens", 0)
                                                        for m in sim["messages"] if m["role"] == "assistant")
    started = [e.started_at for e in eps]
    assert all(a < b for a, b in zip(started, started[1:]))
    assert detect_format(shared_dataset(f"tau2-bench/{name}")) == "tau2-bench"
    assert load(shared_dataset(f"tau2-bench/{name}"))[0] == eps


def test_dev_task_ids_across_files(dev):
    ids = {name: {e.task_id for e in eps} for name, (_, eps) in dev.items()}
    assert ids["telecom_gpt-4.1.json"] == ids["telecom_sft-gpt-4.1.json"] and len(ids["telecom_gpt-4.1.json"]) == 40
    assert ids["airline_gpt-4.1.json"] == ids["airline_sft-gpt-4.1.json"] and len(ids["airline_gpt-4.1.json"]) == 20
    assert not ids["telecom_gpt-4o.json"] & ids["telecom_gpt-4.1.json"]  # 20 other tasks
    assert all(t.startswith(("tau2-bench:telecom:", "tau2-bench:airline:")) for s in ids.values() for t in s)
    episode_ids = [e.episode_id for _, eps in dev.values() for e in eps]
    assert len(set(episode_ids)) == len(episode_ids) == 140


def test_dev_task_ids_never_meet_tau_bench():
    tau2 = read_tau2_bench(shared_dataset("tau2-bench/airline_gpt-4.1.json"))
    tau = read_tau_bench(shared_dataset("tau-bench/gpt-4o-airline.dev.json"))
    raw = {str(s["task_id"]) for s in json.loads(shared_dataset("tau2-bench/airline_gpt-4.1.json").read_text())[
        "simulations"]}
    assert raw & {e.task_id for e in tau}  # the raw ids do overlap
    assert not {e.task_id for e in tau2} & {e.task_id for e in tau}


def test_dev_limit_tasks(dev):
    path = shared_dataset("tau2-bench/telecom_gpt-4.1.json")
    eps = read_tau2_bench(path, limit_tasks=5)
    assert eps == dev["telecom_gpt-4.1.json"][1][:5]


# ---------------------------------------------------------------------------------------------- canary
def _plant(value: Any, mark: str) -> Any:
    """``value`` with ``mark`` appended to every string in it and added as a key to every object."""
    if isinstance(value, str):
        return f"{value} {mark}"
    if isinstance(value, list):
        return [_plant(v, mark) for v in value]
    if isinstance(value, dict):
        return {**{k: _plant(v, mark) for k, v in value.items()}, "canary": mark}
    return mark if value is None else value


def _canary_file(tmp_path: Path, secret: str, id_mark: str) -> Path:
    """A copy of telecom_gpt-4o.json with ``secret`` in everything hidden from the agent (every task field, the
    reward breakdown, the user simulator's guidelines, the policy) and every task id replaced by an ``id_mark`` id.

    Every simulation is also repeated as trial 1, a day later: the file has one trial per task, so a replay of it
    alone would have no query with an earlier episode of its task (and refuses an empty query set).
    """
    data = json.loads(shared_dataset("tau2-bench/telecom_gpt-4o.json").read_text(encoding="utf-8"))
    new_ids = {t["id"]: f"{id_mark}-{k}" for k, t in enumerate(data["tasks"])}
    for task in data["tasks"]:
        actions = task["evaluation_criteria"]["actions"]
        for key in ("ticket", "description", "initial_state", "user_scenario", "evaluation_criteria"):
            task[key] = _plant(task[key], secret)
        task["evaluation_criteria"]["actions"] = [
            {**_plant(a, secret), "name": a["name"], "requestor": a["requestor"]} for a in actions]
        task["id"] = new_ids[task["id"]]
    for sim in data["simulations"]:
        sim["task_id"] = new_ids[sim["task_id"]]
        sim["reward_info"] = _plant(sim["reward_info"], secret)
    data["simulations"] += [{**copy.deepcopy(sim), "trial": 1, "id": f"{sim['id']}-again",
                             "start_time": (datetime.fromisoformat(sim["start_time"]) + timedelta(days=1)).isoformat()}
                            for sim in data["simulations"]]
    info = data["info"]
    info["environment_info"]["policy"] = _plant(info["environment_info"]["policy"], secret)
    info["user_info"]["global_simulation_guidelines"] = _plant(info["user_info"]["global_simulation_guidelines"],
                                                               secret)
    return _write(tmp_path, data, name="telecom_gpt-4o.json")


def _dump(value: Any) -> str:
    """JSON text of a record, dict or row, every field included."""
    if dataclasses.is_dataclass(value):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return json.dumps(value, default=str, ensure_ascii=False)


@pytest.mark.slow
def test_canary_nothing_of_the_tasks_reaches_episodes_memory_or_report(tmp_path, hashing):
    secret, id_mark = f"CANARY-ticket-{uuid.uuid4().hex}", f"CANARY-id-{uuid.uuid4().hex}"
    path = _canary_file(tmp_path, secret, id_mark)
    assert path.read_text(encoding="utf-8").count(secret) > 1000 and id_mark in path.read_text(encoding="utf-8")
    eps = read_tau2_bench(path)
    assert len(eps) == 40 and all(e.task_id.startswith("tau2-bench:telecom:") for e in eps)
    assert Counter(e.task_type for e in eps[:20]) == Counter(gold_task_type(t) for t in json.loads(
        shared_dataset("tau2-bench/telecom_gpt-4o.json").read_text(encoding="utf-8"))["tasks"])
    for ep in eps:
        assert secret not in ep.model_dump_json()
        assert id_mark not in ep.model_dump_json()

    mem = MemorySystem(LabConfig().with_params({"store.path": str(tmp_path / "store")}), embedder=hashing).open()
    try:
        mem.reflect_many(eps)
        records = mem.records() + mem.records(archived=True)
        stats = json.dumps([mem.stats(), mem.reflection_stats()], default=str)
    finally:
        mem.close()
    assert {r.kind.value for r in records} >= {"episode"} and len(records) >= 40
    for rec in records:
        assert secret not in _dump(rec) and id_mark not in _dump(rec)
    assert secret not in stats and id_mark not in stats

    report = run_replay(path, systems=["dense", "bm25", "hindsight"], embedder=hashing)
    assert report.metrics["dataset"]["format"] == "tau2-bench" and report.metrics["dataset"]["n_episodes"] == 40
    task_ids = {e.task_id for e in eps}
    for row in report.per_episode.to_dict(orient="records"):
        assert row["group"] in task_ids  # a query's group is its task_id
        assert secret not in _dump(row) and id_mark not in _dump(row)
    metrics = json.dumps(report.metrics, default=str)
    assert secret not in metrics and id_mark not in metrics
