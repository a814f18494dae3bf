"""Prompts of the LiteLLM reflector (DESIGN §4, article §3.2–3.4).

The system prompt explains the task — distil ONE reusable judgement from a compressed episode, for the next similar
task — gives the JSON fields the model must fill (:data:`REFLECTION_JSON_SCHEMA`, also sent as structured output
where the provider takes it), a good answer and a bad one. It is short on purpose (about 600 tokens): many local
models run with a 4k–8k context. The episode's task_type, outcome and id are not asked for: the system knows them
and fills them in. The user prompt holds the compressed episode and the related earlier episodes (the source of
counter-examples), each bounded in length; :mod:`hindsight_lab.reflect.budget` shrinks both to fit the model.

The batch variant numbers several episodes and asks for ``{"reflections": [...]}``, one object per episode, in
order, each carrying its ``episode_id``.

Examples:
    >>> from hindsight_lab.reflect.compress import CompressedEpisode
    >>> ep = CompressedEpisode("e1", None, None, "Refund order 42", "issue_refund", "failure", "strategy",
    ...     ("issue_refund",), ("issue_refund(order=42)",), (), ((2, "issue_refund", "order shipped"),), None, (), 2)
    >>> messages = build_messages(ep, [])
    >>> [m["role"] for m in messages]
    ['system', 'user']
    >>> "episode e1" in messages[1]["content"]
    True
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from .compress import CompressedEpisode

#: Bump when a prompt changes in a way that changes reflections (it is part of the reflector's run-log args).
PROMPT_VERSION = 2

SCHEMA_TEXT = """\
{
  "key_decision": string,             // the ONE decision that decided the outcome, and the step it was taken at
  "why_it_worked_or_failed": string,  // the cause: what the agent knew or checked at that moment
  "reusable_rule": string,            // what to do in the NEXT similar task: concrete, 5+ words, at most 400
                                      // characters, naming the tools, fields or conditions involved
  "confidence": number,               // 0 to 1: how sure the rule generalises (0.9+ only if related episodes agree)
  "counter_examples": [string, ...],  // 1+ situations where the rule does not hold (a related episode's id if any)
  "trigger": {"any": [string, ...], "all": [string, ...], "task_types": [string, ...]}
                                      // optional: words of a future request that should bring the rule up
}"""

JUDGEMENT_FIELDS = ("key_decision", "why_it_worked_or_failed", "reusable_rule", "confidence", "counter_examples")
"""What the model is asked for; the episode's task_type and outcome (and episode_id) are filled in by the system."""

_STR = {"type": "string"}
_LIST = {"type": "array", "items": _STR}
REFLECTION_JSON_SCHEMA = {
    "type": "object",
    "properties": {"key_decision": _STR, "why_it_worked_or_failed": _STR, "reusable_rule": _STR,
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                   "counter_examples": {**_LIST, "minItems": 1},
                   "trigger": {"type": "object", "properties": {"any": _LIST, "all": _LIST, "task_types": _LIST}}},
    "required": list(JUDGEMENT_FIELDS),
}
"""The JSON schema of one answer, for providers that take ``response_format`` of type ``json_schema``."""
BATCH_JSON_SCHEMA = {
    "type": "object", "required": ["reflections"],
    "properties": {"reflections": {"type": "array", "items": {
        **REFLECTION_JSON_SCHEMA, "properties": {"episode_id": _STR, **REFLECTION_JSON_SCHEMA["properties"]},
        "required": ["episode_id", *JUDGEMENT_FIELDS]}}},
}


def batch_json_schema(ids: Sequence[str]) -> dict[str, Any]:
    """:data:`BATCH_JSON_SCHEMA` for a call on these episodes: exactly ``len(ids)`` reflections, each ``episode_id``
    one of ``ids``. A server that turns the schema into a grammar (llama.cpp) then cannot leave an episode out, as
    gemma-3-270m did with the open-ended list (one reflection for two episodes)."""
    items = BATCH_JSON_SCHEMA["properties"]["reflections"]["items"]
    items = {**items, "properties": {**items["properties"], "episode_id": {"type": "string", "enum": list(ids)}}}
    return {**BATCH_JSON_SCHEMA, "properties": {"reflections": {
        "type": "array", "items": items, "minItems": len(ids), "maxItems": len(ids)}}}


GOOD_EXAMPLE = """\
{"key_decision": "Called issue_refund at step 2 without reading the order status first.",
 "why_it_worked_or_failed": "A shipped order can only be refunded after a return is opened; the agent saw the status only after the refund was rejected.",
 "reusable_rule": "Before issue_refund, call get_order and check the status: if a physical order is shipped or delivered, call create_return first and refund after it.",
 "confidence": 0.8,
 "counter_examples": ["Digital goods have no shipping status and can be refunded directly (ep-0377).",
                      "A pending order was never shipped: cancel it instead of opening a return."],
 "trigger": {"any": ["refund", "money back"], "all": [], "task_types": ["issue_refund"]}}"""

EXAMPLE_RULE: str = json.loads(GOOD_EXAMPLE)["reusable_rule"]
"""The worked example's rule: a model that hands it back has copied the prompt (gemma-3-270m did, every time)."""

BAD_EXAMPLE = """\
{"key_decision": "refunded", "why_it_worked_or_failed": "mistake", "reusable_rule": "Be careful with refunds.",
 "confidence": 1.0, "counter_examples": []}"""

_TASK = """\
You review a finished episode of an AI agent (compressed: instruction, tool calls, decision points, errors, outcome)
and distil ONE reusable judgement: the lesson that would most improve its next attempt at a similar task. Related
earlier episodes are shown too: one that went another way is a counter-example.

- A judgement, not a summary: the decision that mattered, why, what to do next time.
- The reusable_rule is concrete (tools, fields, conditions, order of steps), about the kind of task, not this order,
  user or date; never a generic phrase like "be careful".
- counter_examples is never empty; confidence is a number from 0 to 1.
- Answer with JSON only: no prose, no code fences."""

SYSTEM_PROMPT = f"""{_TASK}

Answer with exactly one JSON object with these fields:
{SCHEMA_TEXT}

A good answer (for a refund that failed because the order had shipped):
{GOOD_EXAMPLE}

A bad answer, which would be rejected (generic rule, no counter-example, unjustified confidence):
{BAD_EXAMPLE}
"""

BATCH_SYSTEM_PROMPT = f"""{_TASK}

You will get several numbered episodes, each with its own related earlier episodes. Reflect on each separately.
Answer with exactly one JSON object {{"reflections": [...]}}: one reflection per episode, in the order given, each
with "episode_id" (copied from the episode header) plus these fields:
{SCHEMA_TEXT}

A good reflection (for a refund that failed because the order had shipped):
{GOOD_EXAMPLE}
"""

USER_TEMPLATE = """\
Compressed episode:
{episode}

Related earlier episodes:
{related}

Answer with the JSON object only."""

BATCH_ITEM_TEMPLATE = """\
### Episode {number} of {total} (episode_id: {episode_id})
{episode}

Related earlier episodes for {episode_id}:
{related}"""

BATCH_USER_TEMPLATE = """\
{items}

Answer with the JSON object {{"reflections": [...]}} only: {total} reflections, in this order, with episode_id \
{ids}."""


def render_related(related: Sequence[CompressedEpisode], max_chars: int) -> str:
    """The related episodes as text, each brief (no decisions or final answer) and at most ``max_chars // 4``
    characters, all together at most ``max_chars // 2``: what a counter-example needs."""
    if not related:
        return "(none)"
    each, total = max(200, max_chars // 4), max(200, max_chars // 2)
    parts: list[str] = []
    used = 0
    for n, ep in enumerate(related):
        text = ep.to_text(each, brief=True)
        if parts and used + len(text) > total:
            parts.append(f"({len(related) - n} more omitted)")
            break
        parts.append(text)
        used += len(text) + 2
    return "\n\n".join(parts)


def render_user(episode: CompressedEpisode, related: Sequence[CompressedEpisode], max_chars: int = 2000) -> str:
    """The user prompt for one episode (``max_chars`` bounds the episode; the related ones get half of it)."""
    return USER_TEMPLATE.format(episode=episode.to_text(max_chars), related=render_related(related, max_chars))


def build_messages(episode: CompressedEpisode, related: Sequence[CompressedEpisode],
                   max_chars: int = 2000) -> list[dict[str, str]]:
    """Chat messages for reflecting on one episode."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_user(episode, related, max_chars)}]


def render_batch_user(items: Sequence[tuple[Any, ...]], max_chars: int = 2000) -> str:
    """The user prompt for several episodes, numbered from 1; an item ``(episode, related, chars)`` carries its own
    bound instead of ``max_chars``."""
    total = len(items)
    blocks = []
    for n, (ep, rel, *own) in enumerate(items, 1):
        chars = own[0] if own else max_chars
        blocks.append(BATCH_ITEM_TEMPLATE.format(number=n, total=total, episode_id=ep.episode_id,
                                                 episode=ep.to_text(chars), related=render_related(rel, chars)))
    ids = ", ".join(f'"{item[0].episode_id}"' for item in items)
    return BATCH_USER_TEMPLATE.format(items="\n\n".join(blocks), total=total, ids=ids)


def build_batch_messages(items: Sequence[tuple[Any, ...]], max_chars: int = 2000) -> list[dict[str, str]]:
    """Chat messages for reflecting on several episodes in one call."""
    return [{"role": "system", "content": BATCH_SYSTEM_PROMPT},
            {"role": "user", "content": render_batch_user(items, max_chars)}]
