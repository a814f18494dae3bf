"""The reflection output schema (DESIGN §4, article §3.2) and its validation.

A reflection is accepted only when it parses, has every field with the right type, a confidence in [0, 1], non-empty
counter_examples, and a reusable_rule that is neither too generic nor too long (bounds in
``LabConfig.reflect.rules``). Anything else becomes a :class:`Rejection` with a reason from :data:`REJECT_REASONS`;
a rejected reflection never becomes a candidate.

Examples:
    >>> from hindsight_lab.config import ReflectionRulesConfig
    >>> out = validate_reflection('{"task_type": "refund", "outcome": "failure", "key_decision": "refunded first",'
    ...     ' "why_it_worked_or_failed": "shipped orders cannot be refunded", "reusable_rule": "Call lookup_order'
    ...     ' before issue_refund on any order", "confidence": 0.8, "counter_examples": ["digital goods"]}',
    ...     ReflectionRulesConfig())
    >>> out.reusable_rule
    'Call lookup_order before issue_refund on any order'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr
from pydantic import ValidationError as _PydanticError

from ..config import ReflectionRulesConfig
from ..retrieve.paths import normalise

#: Every reason a reflection can be rejected for.
REJECT_REASONS: tuple[str, ...] = ("invalid_json", "missing_field", "wrong_type", "confidence_out_of_range",
                                   "empty_counter_examples", "rule_too_generic", "rule_too_long",
                                   "nothing_to_learn", "reflector_error", "prompt_too_long", "timed_out")


class Reflection(BaseModel):
    """One accepted reflection: the judgement worth keeping from an episode."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task_type: StrictStr
    outcome: Literal["success", "failure", "partial"]
    key_decision: StrictStr
    why_it_worked_or_failed: StrictStr
    reusable_rule: StrictStr
    confidence: StrictFloat | StrictInt
    counter_examples: list[StrictStr]
    trigger: dict[str, list[StrictStr]] | None = None
    check: dict[str, Any] | None = Field(None, description="the rule's checkable form, if any "
                                         "(:mod:`hindsight_lab.trace.checks`)")
    episode_id: str | None = Field(None, description="the episode reflected on (set by the pipeline)")


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a reflection was refused; ``raw`` is what the reflector produced (truncated)."""

    reason: str
    detail: str
    raw: str = ""
    episode_id: str | None = None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """Parse JSON from model output: plain JSON, a fenced block, or the first balanced object/array in the text.

    Raises ``ValueError`` when no JSON value can be found.
    """
    text = text.strip()
    candidates = [text] + _FENCE.findall(text)
    for opener, closer in (("{", "}"), ("[", "]")):
        start = text.find(opener)
        end = text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start:end + 1])
    for cand in candidates:
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, TypeError):
            continue
    raise ValueError("no JSON object found in the reflector output")


def validate_reflection(raw: str | Mapping[str, Any], rules: ReflectionRulesConfig, *,
                        episode_id: str | None = None, known: Mapping[str, Any] | None = None
                        ) -> Reflection | Rejection:
    """Validate one reflection (a JSON string or an already-parsed mapping).

    ``known`` holds the fields the system already knows of the episode (its ``task_type`` and ``outcome``): they
    are filled in when the answer leaves them out and override what it says (a model does not decide what the
    episode was). A ``task_type`` the system does not know either becomes ``"none"``.
    """
    shown = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
    shown = shown[:2000]
    if isinstance(raw, str):
        try:
            raw = extract_json(raw)
        except ValueError as exc:
            return Rejection("invalid_json", str(exc), shown, episode_id)
    if not isinstance(raw, Mapping):
        return Rejection("invalid_json", f"expected a JSON object, got {type(raw).__name__}", shown, episode_id)
    data = dict(raw)
    if known is not None:
        data.update({k: v for k, v in known.items() if v is not None})
        data.setdefault("task_type", "none")
    try:
        refl = Reflection.model_validate({**data, "episode_id": episode_id})
    except _PydanticError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        reason = "missing_field" if err["type"] == "missing" else "wrong_type"
        return Rejection(reason, f"{field}: {err['msg']}", shown, episode_id)
    if not 0.0 <= float(refl.confidence) <= 1.0:
        return Rejection("confidence_out_of_range", f"confidence {refl.confidence} is not in [0, 1]", shown,
                         episode_id)
    counter = [c.strip() for c in refl.counter_examples if c.strip()]
    if rules.require_counter_examples and not counter:
        return Rejection("empty_counter_examples", "counter_examples is empty", shown, episode_id)
    rule = " ".join(refl.reusable_rule.split())
    if len(rule) > rules.max_rule_chars:
        return Rejection("rule_too_long", f"reusable_rule has {len(rule)} characters (max {rules.max_rule_chars})",
                         shown, episode_id)
    norm = normalise(rule)
    generic = {normalise(p) for p in rules.generic_phrases}
    if len(rule) < rules.min_rule_chars or len(norm.split()) < rules.min_rule_words or norm in generic:
        return Rejection("rule_too_generic", f"reusable_rule {rule!r} is too generic", shown, episode_id)
    return refl.model_copy(update={"reusable_rule": rule, "counter_examples": counter,
                                   "confidence": float(refl.confidence), "check": _check(refl.check)})


def _check(data: Any) -> dict[str, Any] | None:
    """A checkable form that parses (:class:`~hindsight_lab.trace.checks.Check`), normalised; one that does not is
    dropped — the rule
    stands without it, as a rule no code can verify."""
    from ..trace.checks import Check

    check = Check.of(data)
    return check.to_dict() if check else None
