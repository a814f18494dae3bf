"""Prompts of the LiteLLM reflector (DESIGN §4, article §3.2–3.4).

The system prompt explains the task — distil ONE reusable judgement from a compressed episode, for the next similar
task — gives the exact JSON schema that :func:`hindsight_lab.reflect.schema.validate_reflection` checks, a worked
example with good counter-examples and a bad example with the reason it would be rejected. The user prompt holds the
compressed episode and the related earlier episodes (the source of counter-examples), each bounded in length.

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

from typing import Sequence

from .compress import CompressedEpisode

#: Bump when a prompt changes in a way that changes reflections (it is part of the reflector's run-log args).
PROMPT_VERSION = 1

SCHEMA_TEXT = """\
{
  "task_type": string,                 // the task_type shown for the episode (from the tools used), or a short
                                       // snake_case label when it is "none"
  "outcome": "success" | "failure" | "partial",   // as recorded for the episode
  "key_decision": string,              // the ONE decision that decided the outcome, with the tool/step it happened at
  "why_it_worked_or_failed": string,   // the cause, in terms of what the agent knew or checked at that moment
  "reusable_rule": string,             // an instruction for the NEXT similar task: concrete, actionable, 5+ words,
                                       // at most 400 characters, naming the tools/fields/conditions involved
  "confidence": number,                // 0.0 to 1.0: how sure you are the rule generalises (0.9+ only when the
                                       // related episodes confirm it)
  "counter_examples": [string, ...],   // at least one situation where the rule does NOT hold or must be adapted,
                                       // taken from the related episodes (cite their episode id) or from general
                                       // knowledge of the domain
  "trigger": {                         // optional: when the rule must be shown even without a similar episode
    "any": [string, ...],              // concrete keywords/phrases of a future user request (e.g. "refund")
    "all": [string, ...],              // keywords that must all appear (usually [])
    "task_types": [string, ...]        // task_type values as shown in the episodes, or [] for any
  }
}"""

GOOD_EXAMPLE = """\
{"task_type": "issue_refund",
 "outcome": "failure",
 "key_decision": "Called issue_refund at step 2 without reading the order status first.",
 "why_it_worked_or_failed": "Physical orders that are shipped or delivered can only be refunded after a return is opened; the agent learned the status only after the refund was rejected.",
 "reusable_rule": "Before issue_refund, call get_order and check the status: if a physical order is shipped or delivered, call create_return first and refund after it.",
 "confidence": 0.8,
 "counter_examples": [
   "Digital goods such as e-books have no shipping status and can be refunded directly (ep-0377).",
   "An order that is still pending was never shipped: cancel it instead of opening a return.",
   "If the user already opened a return, refund right away instead of creating a second return (ep-0398 refunded right after create_return)."],
 "trigger": {"any": ["refund", "money back", "reimburse"], "all": [], "task_types": ["issue_refund", "create_return+issue_refund"]}}"""

BAD_EXAMPLE = """\
{"task_type": "issue_refund", "outcome": "failure", "key_decision": "refunded", "why_it_worked_or_failed": "mistake",
 "reusable_rule": "Be careful with refunds.", "confidence": 1.0, "counter_examples": []}"""

WORKED_EXAMPLE = """\
Compressed episode:
episode ep-0412 (task t-88)
instruction: I want my money back for order 1187, the blender arrived broken
task_type (from tools used): issue_refund
outcome: failure (strategy)
tool calls: issue_refund(order_id=1187, amount=89.0) → get_order(order_id=1187)
decision: before issue_refund: User wants a refund, issue it right away
error at step 3 (issue_refund): refund rejected: order 1187 is shipped; open a return first
final answer: Sorry, I cannot refund this order.

Related earlier episodes:
episode ep-0377 (task t-61)
instruction: Please refund the e-book I bought yesterday, order 1042
task_type (from tools used): issue_refund
outcome: success
tool calls: get_order(order_id=1042) → issue_refund(order_id=1042, amount=12.5)

episode ep-0398 (task t-70)
instruction: Return the headphones from order 1099 and refund me
task_type (from tools used): create_return+issue_refund
outcome: success
tool calls: get_order(order_id=1099) → create_return(order_id=1099) → issue_refund(order_id=1099, amount=59.0)

A good answer:
{good}

Why it is good: the rule names the tools and the condition to check, it would change what the agent does next
time, and each counter-example marks a concrete boundary of the rule, two of them found in the related episodes.

A bad answer (it would be REJECTED):
{bad}

Why it is rejected: "be careful" says nothing the agent can act on (rules that are only a generic phrase, shorter
than 20 characters or 5 words are rejected as too generic), the key decision and cause name no step, confidence 1.0
is unjustified by a single episode, and counter_examples is empty — a reflection without counter-examples is never
stored.""".format(good=GOOD_EXAMPLE, bad=BAD_EXAMPLE)

_TASK = """\
You review what an AI agent did in a finished episode and distil ONE reusable judgement from it: the lesson that
would most improve the agent's next attempt at a similar task. You see the episode compressed (instruction, tool-call
sequence, decision points, errors, final answer, user feedback, outcome) and some related earlier episodes. Use the
related episodes to test the rule: where one of them succeeded or failed for a different reason, that situation is
a counter-example.

Rules:
- One judgement, not a summary: the decision that mattered, why, and what to do next time.
- The reusable_rule is an instruction for a future task of the same kind: concrete (tools, fields, conditions,
  order of steps), not about this particular order, user or date, and never a generic phrase like "be careful",
  "double check" or "follow the policy".
- counter_examples must not be empty: name situations where the rule does NOT hold or must be adapted.
- confidence is a number between 0 and 1.
- Use the trigger only with concrete keywords a future request would contain; omit it otherwise.
- Answer with JSON only: no prose, no code fences."""

SYSTEM_PROMPT = f"""{_TASK}

Answer with exactly one JSON object with these fields:
{SCHEMA_TEXT}

Worked example.
{WORKED_EXAMPLE}
"""

BATCH_SYSTEM_PROMPT = f"""{_TASK}

You will get several numbered episodes, each with its own related earlier episodes. Reflect on each episode
separately. Answer with exactly one JSON object {{"reflections": [...]}} holding one reflection per episode, in the
order given, each with the field "episode_id" (copied from the episode header) plus these fields:
{SCHEMA_TEXT}

Worked example (for one episode; in a batch it would be one element of "reflections", with "episode_id": "ep-0412").
{WORKED_EXAMPLE}
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
    """The related episodes as text: each at most ``max_chars // 2`` characters, all together at most ``max_chars``."""
    if not related:
        return "(none)"
    each = max(200, max_chars // 2)
    parts: list[str] = []
    used = 0
    for n, ep in enumerate(related):
        text = ep.to_text(each)
        if parts and used + len(text) > max_chars:
            parts.append(f"({len(related) - n} more omitted)")
            break
        parts.append(text)
        used += len(text) + 2
    return "\n\n".join(parts)


def render_user(episode: CompressedEpisode, related: Sequence[CompressedEpisode], max_chars: int = 2000) -> str:
    """The user prompt for one episode (``max_chars`` bounds the episode and, separately, the related ones)."""
    return USER_TEMPLATE.format(episode=episode.to_text(max_chars), related=render_related(related, max_chars))


def build_messages(episode: CompressedEpisode, related: Sequence[CompressedEpisode],
                   max_chars: int = 2000) -> list[dict[str, str]]:
    """Chat messages for reflecting on one episode."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_user(episode, related, max_chars)}]


def render_batch_user(items: Sequence[tuple[CompressedEpisode, Sequence[CompressedEpisode]]],
                      max_chars: int = 2000) -> str:
    """The user prompt for several episodes, numbered from 1."""
    total = len(items)
    blocks = [BATCH_ITEM_TEMPLATE.format(number=n, total=total, episode_id=ep.episode_id,
                                         episode=ep.to_text(max_chars), related=render_related(rel, max_chars))
              for n, (ep, rel) in enumerate(items, 1)]
    ids = ", ".join(f'"{ep.episode_id}"' for ep, _ in items)
    return BATCH_USER_TEMPLATE.format(items="\n\n".join(blocks), total=total, ids=ids)


def build_batch_messages(items: Sequence[tuple[CompressedEpisode, Sequence[CompressedEpisode]]],
                         max_chars: int = 2000) -> list[dict[str, str]]:
    """Chat messages for reflecting on several episodes in one call."""
    return [{"role": "system", "content": BATCH_SYSTEM_PROMPT},
            {"role": "user", "content": render_batch_user(items, max_chars)}]
