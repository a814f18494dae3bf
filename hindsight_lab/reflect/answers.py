"""Reading a model's answer: the reflections of a batch answer, which episode each belongs to, and the usage and
cost the provider reports."""

from __future__ import annotations

from typing import Any, Mapping

from .schema import extract_json


def read_usage(litellm: Any, response: Any, record: dict[str, Any]) -> None:
    usage = getattr(response, "usage", None)
    record["prompt_tokens"] = getattr(usage, "prompt_tokens", None)
    record["completion_tokens"] = getattr(usage, "completion_tokens", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # noqa: BLE001 - an unmapped model (local servers) has no known price
            cost = None
    record["cost_usd"] = float(cost) if cost is not None else None

def parse_batch(content: str) -> list[Any] | None:
    """The list of reflections of a batch answer, or None when it cannot be read as one."""
    try:
        data = extract_json(content)
    except ValueError:
        return None
    if isinstance(data, Mapping):
        data = data.get("reflections")
    return list(data) if isinstance(data, list) else None

def assign(entries: list[Any], ids: list[str]) -> dict[int, Any]:
    """Map answer entries to episode positions: by ``episode_id`` first, then by position for the rest.

    An ``episode_id`` that is not one of ``ids`` but a number 1…n is taken as the episode's number in the
    prompt. An entry whose slot is already taken is dropped.
    """
    index = {eid: i for i, eid in enumerate(ids)}
    assigned: dict[int, Any] = {}
    unmatched: list[tuple[int, Any]] = []
    for pos, entry in enumerate(entries):
        raw_id = entry.get("episode_id") if isinstance(entry, Mapping) else None
        slot = index.get(str(raw_id)) if raw_id is not None else None
        if slot is None and raw_id is not None and str(raw_id).strip().isdigit():
            number = int(str(raw_id).strip())
            slot = number - 1 if 1 <= number <= len(ids) else None
        if slot is not None and slot not in assigned:
            assigned[slot] = entry
        else:
            unmatched.append((pos, entry))
    for pos, entry in unmatched:
        if pos < len(ids) and pos not in assigned:
            assigned[pos] = entry
    return assigned
