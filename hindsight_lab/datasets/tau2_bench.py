"""tau2-bench simulation files (``--format tau2-bench``) → episodes of the trace format (DESIGN §5).

The input is one JSON object ``{timestamp, info, tasks, simulations}``: ``simulations[]`` are the runs ``{id,
task_id, trial, start_time, termination_reason, reward_info, messages, …}``, ``tasks[]`` the tasks with their hidden
user brief and gold (``user_scenario``, ``ticket``, ``evaluation_criteria``…). Each simulation becomes one
:class:`~hindsight_lab.trace.Episode`:

* order: by ``start_time`` (ISO-8601, naive taken as UTC), ties in file order, when every simulation has one and
  they are not all equal; ``started_at`` is then that time. Else file order and ``started_at`` None (the replay
  engine spaces such episodes one hour apart). ``limit_tasks`` keeps the simulations of the first N distinct
  task_ids in that order (all their trials).
* ``instruction``: the first user message with text — what the agent sees of the request (the first message is the
  agent's greeting). Nothing of ``tasks[]`` reaches an episode but the derived ``task_type``.
* steps: assistant / user text → message steps (a message without text gives none; the instruction's message is
  a step too); every ``tool_calls`` entry → a tool_call step with its ``arguments`` dict (anything else kept as
  ``{"_raw": text}``), its ``id`` and ``actor``: its ``requestor``, else the message's role. In telecom the user
  calls tools too (``toggle_data``, ``reboot_device``…), so ``actor`` tells the agent's calls from the user's.
  ``role: "tool"`` → tool_result steps with their ``id``; one with ``error: true`` also carries its text (or
  ``"error"`` when it has none) as its ``error``.
* ``outcome``: success iff ``reward_info.reward == 1.0``, else failure (a null ``reward_info``: failure, reward
  None); ``reward`` kept; ``failure_cause`` unknown (None); ``final_answer``: the last assistant text.
* ``task_id``: ``tau2-bench:<domain>:<hash>``, the hash :func:`~hindsight_lab.datasets.splits.id_hash` of the
  task's id: ids meet only those of the same family and domain (tau2 airline ``13`` is not tau-bench's ``13``),
  and the raw id never reaches an episode — telecom ids spell out the planted faults and the persona
  (``[mobile_data_issue]airplane_mode_on|…[PERSONA:Easy]``), which a reflector shown the task id would read.
  ``domain``: ``info.environment_info.domain_name``. ``episode_id``:
  ``tau2-<file stem>-<simulation index, 3 digits>``.
* ``task_type`` (ground truth, for judging only): :func:`gold_task_type` of the simulation's task; None when
  ``tasks[]`` holds no task of its task_id.
* ``meta``: ``{"source": "tau2-bench", "source_file", "agent": info.agent_info.llm, "user_model":
  info.user_info.llm, "trial", "simulation_id", "termination_reason"}``, plus ``seed``, ``duration``,
  ``agent_cost`` when present and ``usage`` (``prompt_tokens`` and ``completion_tokens`` summed over the assistant
  messages) when any assistant message reports it.

Examples:
    >>> eps = read_tau2_bench("../shared/datasets/tau2-bench/telecom_gpt-4o.json", limit_tasks=2)  # doctest: +SKIP
    >>> len(eps), eps[0].episode_id, eps[0].task_id  # doctest: +SKIP
    (2, 'tau2-telecom_gpt-4o-000', 'tau2-bench:telecom:5635a82e638f418a')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping


from ..errors import TraceFormatError
from ..trace import Episode
from ..jsonio.limits import DEFAULT_LIMITS, ReadLimits
from ..jsonio.reading import Fields, check_limit, read_json
from .splits import id_hash

READ_ONLY_PREFIXES = ("get_", "find_", "search_", "list_", "check_", "calculate", "think",
                      "transfer_to_human_agents")
"""A gold action whose name starts with one of these only reads or talks; one rule for every domain."""

_ACTORS = ("assistant", "user")


def qualified_task_id(domain: str, task_id: str) -> str:
    """The episode's task_id: family, domain and a hash of the raw id (which may describe the task's answer).

    Examples:
        >>> qualified_task_id("airline", "13")
        'tau2-bench:airline:3fdba35f04dc8c46'
    """
    return f"tau2-bench:{domain}:{id_hash(task_id)}"


def gold_task_type(task: Mapping[str, Any]) -> str:
    """The sorted set of a task's state-changing gold actions (``evaluation_criteria.actions`` of both requestors,
    less those named by :data:`READ_ONLY_PREFIXES`) joined by ``+``, or ``"read_only"`` when there are none.

    Examples:
        >>> gold_task_type({"evaluation_criteria": {"actions": [
        ...     {"name": "toggle_data", "requestor": "user"}, {"name": "get_customer_by_phone"},
        ...     {"name": "refuel_data", "requestor": "assistant"}, {"name": "toggle_data"}]}})
        'refuel_data+toggle_data'
        >>> gold_task_type({"evaluation_criteria": {"actions": [{"name": "transfer_to_human_agents"}]}})
        'read_only'
    """
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    changing = sorted({a["name"] for a in actions if not a["name"].startswith(READ_ONLY_PREFIXES)})
    return "+".join(changing) if changing else "read_only"


@dataclass(frozen=True)
class _Header:
    """What every episode of a file shares."""

    path: Path
    domain: str
    agent: str
    user_model: str
    task_types: dict[str, str]


def _read(path: Path, limits: ReadLimits) -> dict[str, Any]:
    name = str(path)
    data = read_json(path, limits)
    if not isinstance(data, dict):
        raise TraceFormatError(f"expected a tau2-bench JSON object {{info, tasks, simulations}}, got "
                               f"{type(data).__name__}", path=name)
    missing = [key for key in ("simulations", "tasks") if key not in data]
    if missing:
        raise TraceFormatError(f"expected a tau2-bench JSON object {{info, tasks, simulations}}: missing required "
                               f"field {' and '.join(missing)}", path=name, field=missing[0])
    return data


def _header(path: Path, data: dict[str, Any]) -> _Header:
    top = Fields(str(path))
    info = top.get(data, "info", dict, "")
    domain = top.get(top.get(info, "environment_info", dict, "info."), "domain_name", str, "info.environment_info.")
    agent = top.get(top.get(info, "agent_info", dict, "info."), "llm", str, "info.agent_info.")
    user_model = top.get(top.get(info, "user_info", dict, "info."), "llm", str, "info.user_info.")
    types = {}
    for k, task in enumerate(top.get(data, "tasks", list, "")):
        item, where = Fields(str(path), f"task {k}"), f"tasks.{k}."
        if not isinstance(task, dict):
            raise item.error(f"expected a task object, got {type(task).__name__}", f"tasks.{k}")
        task_id = item.get(task, "id", (str, int), where)
        criteria = item.get(task, "evaluation_criteria", dict, where, required=False)
        for a, action in enumerate(item.get(criteria, "actions", list, f"{where}evaluation_criteria.",
                                            required=False) or []):
            item.get(action, "name", str, f"{where}evaluation_criteria.actions.{a}.")
        types[str(task_id)] = gold_task_type(task)
    return _Header(path, domain, agent, user_model, types)


def _start_time(item: Fields, sim: dict[str, Any], where: str) -> datetime | None:
    text = item.get(sim, "start_time", str, where, required=False)
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise item.error(f"not an ISO-8601 timestamp: {text!r}", f"{where}start_time") from None
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def read_tau2_bench(path: str | Path, *, limit_tasks: int | None = None,
                    limits: ReadLimits = DEFAULT_LIMITS) -> list[Episode]:
    """Read a tau2-bench simulation file as episodes, one per simulation (see the module docstring).

    Args:
        path: the JSON file (an object ``{info, tasks, simulations}``).
        limit_tasks: keep only the simulations of the first N distinct task_ids (in replay order), all trials.
        limits: nesting and size bounds of the file (:mod:`.limits`).

    Raises:
        TraceFormatError: the file is not tau2-bench JSON; the message names the simulation (or task) and field.
        ConfigError: ``limit_tasks`` is negative or not an integer.

    Examples:
        >>> eps = read_tau2_bench("telecom_gpt-4.1.json")  # doctest: +SKIP
        >>> sorted({c.actor for e in eps for c in e.tool_calls()})  # doctest: +SKIP
        ['assistant', 'user']
    """
    check_limit(limit_tasks, "limit_tasks")
    path = Path(path)
    data = _read(path, limits)
    header = _header(path, data)
    sims = Fields(str(path)).get(data, "simulations", list, "")
    items = [Fields(str(path), f"simulation {i}") for i in range(len(sims))]
    for i, sim in enumerate(sims):
        if not isinstance(sim, dict):
            raise items[i].error(f"expected a simulation object, got {type(sim).__name__}", f"simulations.{i}")
    starts = [_start_time(items[i], sim, f"simulations.{i}.") for i, sim in enumerate(sims)]
    if None in starts or len(set(starts)) < 2:
        starts, order = [None] * len(sims), list(range(len(sims)))
    else:
        order = sorted(range(len(sims)), key=lambda i: starts[i])  # a stable sort: ties stay in file order
    if limit_tasks is not None:
        task_ids = [str(items[i].get(sims[i], "task_id", (str, int), f"simulations.{i}.")) for i in order]
        keep = set(list(dict.fromkeys(task_ids))[:limit_tasks])
        order = [i for i, t in zip(order, task_ids) if t in keep]
    return [_episode(items[i], sims[i], i, starts[i], header) for i in order]


def _episode(item: Fields, sim: dict[str, Any], i: int, started_at: datetime | None, header: _Header) -> Episode:
    where = f"simulations.{i}."
    task_id = str(item.get(sim, "task_id", (str, int), where))
    steps, instruction, final, usage = _steps(item, item.get(sim, "messages", list, where), where)
    if instruction is None:
        raise item.error("no user message with text: the instruction is the first one", f"{where}messages")
    reward_info = item.get(sim, "reward_info", dict, where, required=False)
    reward = None if reward_info is None else float(item.get(reward_info, "reward", (int, float),
                                                             f"{where}reward_info."))
    meta = {"source": "tau2-bench", "source_file": header.path.name, "agent": header.agent,
            "user_model": header.user_model, "trial": item.get(sim, "trial", int, where),
            "simulation_id": item.get(sim, "id", str, where),
            "termination_reason": item.get(sim, "termination_reason", str, where)}
    for key, types in (("seed", int), ("duration", (int, float)), ("agent_cost", (int, float))):
        value = item.get(sim, key, types, where, required=False)
        if value is not None:
            meta[key] = value
    if usage is not None:
        meta["usage"] = usage
    episode = {
        "episode_id": f"tau2-{header.path.stem}-{i:03d}", "task_id": qualified_task_id(header.domain, task_id),
        "task_type": header.task_types.get(task_id), "domain": header.domain, "started_at": started_at,
        "instruction": instruction, "steps": steps, "outcome": "success" if reward == 1.0 else "failure",
        "reward": reward, "failure_cause": None, "final_answer": final, "meta": meta,
    }
    return item.episode(episode)


def _steps(item: Fields, messages: list[Any], where: str
           ) -> tuple[list[dict[str, Any]], str | None, str | None, dict[str, int] | None]:
    """(steps, instruction, last assistant text, assistant token usage summed) of a simulation's messages."""
    steps: list[dict[str, Any]] = []
    instruction = final = usage = None
    for j, msg in enumerate(messages):
        at = f"{where}messages.{j}."
        if not isinstance(msg, dict):
            raise item.error(f"expected a message object, got {type(msg).__name__}", at[:-1])
        role = item.get(msg, "role", str, at)
        content = item.get(msg, "content", str, at, required=False) or ""
        if role == "tool":
            error = (content or "error") if item.get(msg, "error", bool, at, required=False) else None
            steps.append({"type": "tool_result", "id": item.get(msg, "id", str, at, required=False),
                          "content": content, "error": error})
            continue
        if role not in _ACTORS:
            raise item.error(f"unknown role {role!r} (expected assistant, user or tool)", f"{at}role")
        if content.strip():
            steps.append({"type": "message", "role": role, "content": content})
            if role == "user" and instruction is None:
                instruction = content
            final = content if role == "assistant" else final
        steps += _calls(item, msg, role, at)
        if role == "assistant" and (counts := item.get(msg, "usage", dict, at, required=False)) is not None:
            usage = {key: (usage or {}).get(key, 0) + item.get(counts, key, int, f"{at}usage.")
                     for key in ("prompt_tokens", "completion_tokens")}
    return steps, instruction, final, usage


def _calls(item: Fields, msg: dict[str, Any], role: str, at: str) -> list[dict[str, Any]]:
    """The tool_call steps of one message; a call's actor is its requestor, else the message's role."""
    calls = []
    for k, call in enumerate(item.get(msg, "tool_calls", list, at, required=False) or []):
        where = f"{at}tool_calls.{k}."
        name = item.get(call, "name", str, where)
        actor = item.get(call, "requestor", str, where, required=False) or role
        if actor not in _ACTORS:
            raise item.error(f"unknown requestor {actor!r} (expected assistant or user)", f"{where}requestor")
        raw = call.get("arguments")
        arguments = raw if isinstance(raw, dict) else {} if raw is None else {
            "_raw": raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)}
        calls.append({"type": "tool_call", "name": name, "arguments": arguments,
                      "id": item.get(call, "id", str, where, required=False), "actor": actor})
    return calls
