"""A finished episode → the text and task_type of its one L2 episode record (DESIGN §2.1). No LLM involved.

The summary keeps the instruction, the tool sequence, the decisive step (the first error, else the last tool call),
the outcome, and the recorded agent's own reflection when the trace has one, bounded in length.

The task_type of an episode record comes only from what the agent did: the sorted set of the tools it called that
change state, joined by ``+`` — a tool is taken to only read or talk when its name starts with one of the configured
``read_only_prefixes`` (``get_…``, ``search_…``, ``calculate``…). An episode that called only such tools is
``read_only``; one that called no tool has no task_type. The dataset's ground-truth ``task_type`` is never used.
"""

from __future__ import annotations

import re
from typing import Sequence

from .model import Episode, ToolCallStep, ToolResultStep

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _first_word(tool: str) -> str:
    return _CAMEL.sub("_", tool).split("_")[0].casefold()


def is_read_only(tool: str, read_only_prefixes: Sequence[str]) -> bool:
    """Whether a tool name starts with a read-only verb (``get_user``, ``searchFlights``, ``Lookup``)."""
    first = _first_word(tool)
    return any(first == p.casefold() for p in read_only_prefixes)


def derive_task_type(episode: Episode, read_only_prefixes: Sequence[str]) -> str | None:
    """Task type from the tools the agent called (see module docstring).

    Examples:
        >>> ep = Episode.model_validate({"episode_id": "e", "instruction": "x", "outcome": "success", "steps": [
        ...     {"type": "tool_call", "name": "get_order"}, {"type": "tool_call", "name": "refund_order"}]})
        >>> derive_task_type(ep, ("get",))
        'refund_order'
    """
    names = episode.tool_names()
    if not names:
        return None
    changing = sorted({n for n in names if not is_read_only(n, read_only_prefixes)})
    return "+".join(changing) if changing else "read_only"


def _abbrev(value: object, limit: int = 24) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call(step: ToolCallStep) -> str:
    args = ", ".join(f"{k}={_abbrev(v)}" for k, v in list(step.arguments.items())[:3])
    return f"{step.name}({args})"


def summarise(episode: Episode, max_chars: int = 600) -> str:
    """The stored text of an episode record: instruction, tool sequence, decisive step, outcome."""
    calls = episode.tool_calls()
    tools = " → ".join(s.name for s in calls) if calls else "no tools"
    decisive = ""
    for i, step in enumerate(episode.steps):
        if isinstance(step, ToolResultStep) and step.error:
            prev = next((s for s in reversed(episode.steps[:i]) if isinstance(s, ToolCallStep)), None)
            decisive = f"error at {prev.name if prev else 'step ' + str(i)}: {_abbrev(step.error, 80)}"
            break
    if not decisive and calls:
        decisive = f"last call {_call(calls[-1])}"
    outcome = episode.outcome + (f" ({episode.failure_cause})" if episode.failure_cause else "")
    tail = f" | tools: {tools} | {decisive + ' | ' if decisive else ''}outcome: {outcome}"
    hindsight = episode.reflections()
    if hindsight:  # what the recorded agent itself wrote after the episode (e.g. Reflexion)
        tail += f" | hindsight: {_abbrev(' '.join(hindsight[-1].split()), 240)}"
    room = max(max_chars - len(tail), 40)
    instruction = " ".join(episode.instruction.split())
    if len(instruction) > room:
        instruction = instruction[: room - 1] + "…"
    text = f"Task: {instruction}{tail}"
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def episode_key(episode: Episode, key: str) -> str | None:
    r"""The text an episode record is found by (embedded and indexed for keywords), per ``episode.key``:
    ``instruction`` (the request alone), ``request_tools`` (the request, then the names of the tools called, each
    once, in call order) or ``summary`` (None: the stored summary itself is the key).

    Examples:
        >>> ep = Episode.model_validate({"episode_id": "e", "instruction": "Refund order 7", "outcome": "success",
        ...     "steps": [{"type": "tool_call", "name": "get_order"}, {"type": "tool_call", "name": "refund"},
        ...               {"type": "tool_call", "name": "get_order"}]})
        >>> episode_key(ep, "request_tools")
        'Refund order 7\nTools: get_order refund'
        >>> episode_key(ep, "summary") is None
        True
    """
    if key == "summary":
        return None
    if key == "instruction":
        return episode.instruction
    if key == "request_tools":
        names = list(dict.fromkeys(episode.tool_names()))
        return f"{episode.instruction}\nTools: {' '.join(names)}" if names else episode.instruction
    raise ValueError(f"episode.key: unknown key {key!r}; expected instruction, request_tools or summary")


def key_request(key: str) -> str:
    r"""The request in an episode record's key (:func:`episode_key`): the key without its ``Tools:`` line.

    Examples:
        >>> key_request('Refund order 7\nTools: get_order refund'), key_request('Refund order 7')
        ('Refund order 7', 'Refund order 7')
    """
    head, sep, _ = key.rpartition("\nTools: ")
    return head if sep else key


_IDENT = re.compile(r"^(?=.*\d)[\w.@-]{4,64}$|^[A-Z][A-Z0-9]{2,9}$")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def instance_signature(episode: Episode, max_items: int = 16) -> tuple[str, ...]:
    """What a run was about — the customer, order, booking — as the identifiers it named: the string argument
    values of its tool calls that look like identifiers (a digit in them, or a short all-caps code) and the
    capitalised words (not opening a sentence) and numbers of its instruction, lower-cased, sorted. Two runs of one
    task share most of them; two tasks rarely do (see :func:`same_instance`). Read from the trace alone, never from
    a label.

    Examples:
        >>> ep = Episode.model_validate({"episode_id": "e", "instruction": "Hi, I am Mia Li, refund order 7",
        ...     "outcome": "success", "steps": [{"type": "tool_call", "name": "get_user",
        ...     "arguments": {"user_id": "mia_li_3668", "note": "a long free text"}}]})
        >>> instance_signature(ep)
        ('7', 'mia', 'mia_li_3668')
    """
    found: set[str] = set()
    for call in episode.tool_calls():
        for value in _leaves(call.arguments):
            if isinstance(value, str) and _IDENT.match(value.strip()):
                found.add(value.strip().lower())
    text = episode.instruction
    found.update(m.lower() for m in _NAME.findall(text))
    found.update(re.findall(r"\b\d+\b", text))
    return tuple(sorted(found)[:max_items])


def request_signature(text: str, max_items: int = 16) -> tuple[str, ...]:
    """What a request alone says it is about: its capitalised words (not opening a sentence), its numbers and its
    identifier-like words (a digit in them, a short all-caps code, an e-mail address), lower-cased, sorted. The
    text half of :func:`instance_signature`, with the identifiers a request names itself (a query has no tool
    calls yet); compare two with :func:`same_instance`.

    Examples:
        >>> request_signature("Hi, I am Mia Li (user mia_li_3668, mia@li.org): refund order #4821, not XK93.")
        ('4821', 'mia', 'mia@li.org', 'mia_li_3668', 'xk93')
    """
    found = {m.lower() for m in _NAME.findall(text)} | set(re.findall(r"\b\d+\b", text))
    found.update(w.strip(".-").lower() for w in re.findall(r"[\w.@-]+", text) if _IDENT.match(w.strip(".-")))
    found.update(m.lower() for m in _EMAIL.findall(text))
    return tuple(sorted(found)[:max_items])


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def same_instance(a: Sequence[str], b: Sequence[str], threshold: float = 0.5) -> bool:
    """Whether two signatures name one instance: they share at least ``threshold`` of their union (Jaccard). Two
    empty signatures say nothing of the task, so they are not taken as the same.

    Examples:
        >>> same_instance(("mia_li_3668", "jfk"), ("jfk", "mia_li_3668", "sea")), same_instance(("a1",), ("b2",))
        (True, False)
    """
    sa, sb = set(a), set(b)
    return bool(sa and sb) and len(sa & sb) / len(sa | sb) >= threshold


def distinct_tasks(runs: Sequence[tuple[Sequence[str], frozenset[str] | None]], threshold: float = 0.5) -> int:
    """How many different tasks a list of runs did: a task is what a run was about (its instance signature,
    :func:`same_instance`) and what it needed done, which only a success shows — the state-changing tools it called.
    Each run is ``(signature, changed)``, ``changed`` None for a run that did not succeed. Successes group first: one
    joins the first earlier success of the same instance that changed the same things, else is a task of its own
    (one customer, two different requests: two tasks). Then a run that did not succeed joins the first task of its
    instance, whatever was changed there (it could have been any of them), else starts one of its own. Read from the
    runs alone, never from a label.

    Examples:
        >>> one = ("555-0100", "c1001")
        >>> distinct_tasks([(one, frozenset({"resume_line"})), (one, frozenset({"reboot_device"}))])  # two requests
        2
        >>> distinct_tasks([(one, frozenset({"resume_line"})), (one, frozenset({"resume_line"})), (one, None)])
        1
        >>> distinct_tasks([(("a1",), None), (("a1",), None), (("b2",), frozenset())])
        2
    """
    tasks: list[tuple[set[str], frozenset[str] | None]] = []
    for sig, changed in sorted(runs, key=lambda run: run[1] is None):  # successes first, in order
        if not any(same_instance(sig, s, threshold) and (changed is None or c == changed) for s, c in tasks):
            tasks.append((set(sig), changed))
    return len(tasks)
