"""tau-bench historical trajectories (``--format tau-bench``) → episodes of the trace format (DESIGN §5).

The input is tau-bench's JSON list of runs ``{task_id, trial, reward, info, traj}``, ``traj`` an OpenAI-style
message list. Each run becomes one :class:`~hindsight_lab.trace.Episode`:

* order: by trial, then task_id; ``started_at`` is synthetic, :data:`START` plus one hour per episode in that
  order, so a replay clock follows it. ``limit_tasks`` keeps the first N task_ids with all their trials.
* ``instruction``: the first user message of ``traj`` — what the agent sees. Never ``info.task.instruction``,
  the simulated user's hidden goal. The system message (the domain policy, the same in every run) is dropped.
* steps: user / assistant text → message steps (an assistant turn that only calls tools has empty content and
  gives no message step); ``tool_calls`` → tool_call steps with their JSON ``arguments`` parsed (kept as
  ``{"_raw": text}`` when that fails); ``role: "tool"`` → tool_result steps linked by ``tool_call_id``. tau-bench
  reports a failed tool call only in the result text, as ``Error: <exception>`` (or ``Unknown action <name>``);
  such a result also carries that text as its ``error``.
* ``outcome``: success iff ``reward == 1.0``, else failure; ``reward`` kept; ``failure_cause`` unknown (None).
* ``task_type`` (ground truth, for judging only): the sorted set of state-changing gold actions of
  ``info.task.actions`` joined by ``+``, or ``read_only``; ``info.task`` is required (a run without it is invalid
  input). ``task_id`` kept as a string.
* ``domain``: from the data (a ``domain``/``env`` key, else a domain named in the file name, e.g.
  ``gpt-4o-airline.json``), else the ``domain`` argument.
* ``meta``: ``{"trial": n, "source": "tau-bench", "step_limit": bool}``; ``step_limit`` is true for a run that
  stopped at the step limit before the episode ended (``info.reward_info`` is present and null: the run was
  never scored; a file without that key flags nothing).

Examples:
    >>> eps = read_tau_bench("../shared/datasets/tau-bench/gpt-4o-airline.dev.json", limit_tasks=3)  # doctest: +SKIP
    >>> len(eps), eps[0].episode_id, eps[0].task_type  # doctest: +SKIP
    (12, 'tau-airline-t0-r0', 'book_reservation')
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any


from ..jsonio.limits import DEFAULT_LIMITS, ReadLimits
from ..jsonio.reading import Fields, check_limit, read_json_list
from ..errors import ConfigError
from ..trace import Episode

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""``started_at`` of the first episode; each next one (in trial, task_id order) is one hour later."""
SPACING = timedelta(hours=1)

STATE_CHANGING: dict[str, frozenset[str]] = {
    # tau_bench/envs/airline/tools (as listed in ../shared/datasets/README.md)
    "airline": frozenset({"book_reservation", "cancel_reservation", "update_reservation_flights",
                          "update_reservation_baggages", "update_reservation_passengers", "send_certificate"}),
    # tau_bench/envs/retail/tools/__init__.py, ALL_TOOLS less the tools that only read or talk (READ_ONLY)
    "retail": frozenset({"cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
                         "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
                         "return_delivered_order_items"}),
}
"""Per domain, the tau-bench tools that change the database."""

READ_ONLY: dict[str, frozenset[str]] = {
    "airline": frozenset({"get_user_details", "get_reservation_details", "search_direct_flight",
                          "search_onestop_flight", "list_all_airports", "get_flight_status", "calculate", "think",
                          "transfer_to_human_agents"}),
    "retail": frozenset({"calculate", "find_user_id_by_email", "find_user_id_by_name_zip", "get_order_details",
                         "get_product_details", "get_user_details", "list_all_product_types", "think",
                         "transfer_to_human_agents"}),
}
"""Per domain, the tau-bench tools that only read or talk."""

READ_ONLY_PREFIXES = ("get_", "search_", "list_", "find_", "calculate", "think", "transfer", "respond")
"""Fallback for a tool of no known domain: it only reads or talks when its name starts with one of these."""

_ERROR_PREFIXES = ("Error:", "Unknown action ")


def is_state_changing(action: str, domain: str | None) -> bool:
    """Whether a tau-bench tool changes state: the domain's lists first, else the :data:`READ_ONLY_PREFIXES` rule.

    Examples:
        >>> is_state_changing("cancel_reservation", "airline"), is_state_changing("get_user_details", None)
        (True, False)
    """
    if domain in STATE_CHANGING:
        if action in STATE_CHANGING[domain]:
            return True
        if action in READ_ONLY[domain]:
            return False
    return not action.startswith(READ_ONLY_PREFIXES)


def gold_task_type(actions: list[str], domain: str | None) -> str:
    """``"+".join(sorted(state-changing actions))``, or ``"read_only"`` when there are none."""
    changing = sorted({a for a in actions if is_state_changing(a, domain)})
    return "+".join(changing) if changing else "read_only"


def domain_from_name(path: str | Path) -> str | None:
    """The one known domain named in a file name (``gpt-4o-airline.dev.json`` → ``airline``), else None."""
    tokens = set(re.split(r"[^a-z0-9]+", Path(path).name.lower()))
    found = tokens & set(STATE_CHANGING)
    return found.pop() if len(found) == 1 else None


class _Item(Fields):
    """One run of the list: its fields, and errors that name the item, its task_id and trial."""

    def __init__(self, data: Any, index: int, path: str) -> None:
        ids = f" (task_id {data.get('task_id')!r}, trial {data.get('trial')!r})" if isinstance(data, dict) else ""
        super().__init__(path, f"item {index}{ids}")
        self.index = index
        if not isinstance(data, dict):
            raise self.error(f"expected an object {{task_id, trial, reward, info, traj}}, got {type(data).__name__}")
        self.data = data


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content, ensure_ascii=False)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return {"_raw": raw}
        return parsed if isinstance(parsed, dict) else {"_raw": raw}
    return {} if raw is None else {"_raw": json.dumps(raw)}


def _steps(item: _Item, traj: list[Any]) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """(steps, first user message, last assistant text) of a trajectory; system messages dropped."""
    steps: list[dict[str, Any]] = []
    first_user = final = None
    for j, msg in enumerate(traj):
        where = f"traj.{j}."
        if not isinstance(msg, dict):
            raise item.error(f"expected a message object, got {type(msg).__name__}", f"traj.{j}")
        role = item.get(msg, "role", str, where)
        content = _text(msg.get("content"))
        if role == "system":
            continue
        if role == "user":
            if first_user is None:
                first_user = content
            if content:
                steps.append({"type": "message", "role": "user", "content": content})
        elif role == "assistant":
            if content.strip():
                steps.append({"type": "message", "role": "assistant", "content": content})
                final = content
            for k, call in enumerate(item.get(msg, "tool_calls", list, where, required=False) or []):
                fn = item.get(call, "function", dict, f"{where}tool_calls.{k}.")
                name = item.get(fn, "name", str, f"{where}tool_calls.{k}.function.")
                steps.append({"type": "tool_call", "name": name, "arguments": _arguments(fn.get("arguments")),
                              "id": call.get("id")})
        elif role == "tool":
            error = content if content.startswith(_ERROR_PREFIXES) else None
            steps.append({"type": "tool_result", "id": msg.get("tool_call_id"), "content": content,
                          "error": error})
        else:
            raise item.error(f"unknown role {role!r} (expected system, user, assistant or tool)", f"{where}role")
    return steps, first_user, final


def _sort_key(task_id: Any) -> tuple[int, Any]:
    return (0, task_id) if isinstance(task_id, int) else (1, str(task_id))


def read_tau_bench(path: str | Path, *, domain: str | None = None, limit_tasks: int | None = None,
                   limits: ReadLimits = DEFAULT_LIMITS) -> list[Episode]:
    """Read tau-bench historical trajectories as episodes, ordered by trial then task_id (see module docstring).

    Args:
        path: the JSON file (a list of ``{task_id, trial, reward, info, traj}``).
        domain: the domain when the data and the file name do not tell (``"airline"``, ``"retail"``…); it must
            agree with them when they do.
        limit_tasks: keep only the first N task_ids (in task_id order), each with all its trials.
        limits: nesting and size bounds of the file (:mod:`.limits`).

    Raises:
        TraceFormatError: the file is not tau-bench JSON; the message names the item and the field.
        ConfigError: ``domain`` contradicts the data, or ``limit_tasks`` is negative.

    Examples:
        >>> eps = read_tau_bench("gpt-4o-airline.json")  # doctest: +SKIP
        >>> eps[0].instruction  # doctest: +SKIP
        "Hi! I'm looking to book a flight from New York to Seattle on May 20th."
    """
    check_limit(limit_tasks, "limit_tasks")
    path = Path(path)
    name = str(path)
    named = domain_from_name(path)
    items: list[tuple[tuple[Any, ...], _Item]] = []
    seen: dict[tuple[int, str], int] = {}
    for i, raw in enumerate(read_json_list(path, "tau-bench runs", limits)):
        item = _Item(raw, i, name)
        task_id = item.get(item.data, "task_id", (int, str), "")
        trial = item.get(item.data, "trial", int, "")
        key = (trial, str(task_id))
        if key in seen:
            raise item.error(f"duplicate run: item {seen[key]} has the same task_id and trial", "trial")
        seen[key] = i
        items.append(((trial, _sort_key(task_id)), item))
    if limit_tasks is not None:
        keep = sorted({_sort_key(it.data["task_id"]) for _, it in items})[:limit_tasks]
        items = [(k, it) for k, it in items if k[1] in set(keep)]
    items.sort(key=lambda pair: pair[0])
    return [_episode(item, n, named, domain) for n, (_, item) in enumerate(items)]


def _episode(item: _Item, n: int, named: str | None, domain_arg: str | None) -> Episode:
    data = item.data
    task_id, trial = data["task_id"], data["trial"]
    info = item.get(data, "info", dict, "")
    reward = item.get(data, "reward", (int, float), "")
    traj = item.get(data, "traj", list, "")
    task = item.get(info, "task", dict, "info.")
    stated = data.get("domain") or data.get("env") or info.get("domain") or info.get("env")
    domain = stated if isinstance(stated, str) and stated else named
    if domain and domain_arg and domain != domain_arg:
        raise ConfigError(f"domain={domain_arg!r} contradicts the data of {item.path}, which says {domain!r} "
                          f"({'in the file name' if domain == named else 'in its domain field'}); "
                          "leave domain unset or fix it")
    domain = domain or domain_arg
    steps, first_user, final = _steps(item, traj)
    if not first_user:
        raise item.error("no user message: the instruction is the first user message of traj", "traj")
    gold = []
    for k, action in enumerate(item.get(task, "actions", list, "info.task.", required=False) or []):
        gold.append(item.get(action, "name", str, f"info.task.actions.{k}."))
    prefix = f"tau-{domain}" if domain else "tau"
    episode = {
        "episode_id": f"{prefix}-t{task_id}-r{trial}", "task_id": str(task_id),
        "task_type": gold_task_type(gold, domain) if "actions" in task else None,
        "domain": domain, "started_at": START + n * SPACING, "instruction": first_user, "steps": steps,
        "outcome": "success" if float(reward) == 1.0 else "failure", "reward": float(reward),
        "failure_cause": None, "final_answer": final,
        "meta": {"trial": trial, "source": "tau-bench",
                 "step_limit": "reward_info" in info and info["reward_info"] is None},
    }
    return item.episode(episode)
