"""What the MCP tools take and return: pydantic models (their JSON schemas are the tools' input and output schemas),
and the converters from the library's results.

Examples:
    >>> from hindsight_lab.types import Kind, MemoryRecord
    >>> record_out(MemoryRecord("rule-0a1b2c3d4e5f", Kind.RULE, "Call verify_identity before issue_refund")).tag
    '[L3#0a1b2c]'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..retrieve.rerank import COLUMNS

if TYPE_CHECKING:
    from ..reflect.pipeline import ReflectionOutcome
    from ..retrieve.result import SearchResult
    from ..types import Hit, MemoryRecord, WriteResult


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------------------------------- inputs
class TriggerIn(_Model):
    """When a rule must be recalled whatever its similarity: the normalised query contains any of ``any`` (or
    ``any`` is empty) and all of ``all``; with ``task_types``, the query's task_type is one of them."""

    any: list[str] = Field(default_factory=list, description="keywords, one of which must occur in the query")
    all: list[str] = Field(default_factory=list, description="keywords that must all occur in the query")
    task_types: list[str] = Field(default_factory=list, description="task types the trigger is limited to")


# --------------------------------------------------------------------------------------------------- outputs
class RecordOut(_Model):
    """A stored memory, as a client sees it."""

    id: str
    tag: str = Field(description="source tag used in the injection block, e.g. [L3#a1b2c3]")
    layer: Literal["L1", "L2", "L3"]
    kind: Literal["episode", "candidate", "rule", "working"]
    content: str
    task_type: str | None
    domain: str | None
    confidence: float
    hit_count: int
    counter_examples: list[str]
    source_episode_ids: list[str]
    ups: int
    downs: int


#: The rerank score of a hit by term (one float field per column of the rerank, in its order): ``total`` = weighted
#: sum of the terms minus the redundancy penalty.
ScoresOut = create_model("ScoresOut", __base__=_Model, __doc__="The rerank score of a hit by term: ``total`` = "
                         "weighted sum of the terms minus the redundancy penalty.",
                         **{name: (float, ...) for name in COLUMNS})


class HitOut(_Model):
    """One injected memory: the record, the recall paths that found it, its score breakdown and token count."""

    rank: int
    record: RecordOut
    paths: list[str] = Field(description="recall paths: vector, keyword, task_type, trigger, conflict")
    forced: bool = Field(description="a triggered rule guaranteed its place")
    scores: ScoresOut
    tokens: int


class InjectionOut(_Model):
    """The rendered block: rules for the system prompt, similar past tasks before the user query."""

    text: str = Field(description="the whole block, sections in prompt order")
    rules: str
    episodes: str
    state: str
    tokens: int


class SearchOut(_Model):
    """What ``memory_search`` found, best first, and the block to inject."""

    namespace: str
    query: str
    task_type: str | None = Field(description="the query's task type: given, inferred, or null")
    task_type_source: str = Field(description="given, inferred, abstained or off")
    hits: list[HitOut]
    injection: InjectionOut


class WriteOut(_Model):
    """What a write did: ``created``, ``merged`` into a candidate, or ``confirmed`` an L3 rule."""

    namespace: str
    action: Literal["created", "merged", "confirmed"]
    promoted: bool = Field(description="the record it ended in was promoted to L3 by this write")
    record: RecordOut


class ReflectionOut(_Model):
    """An accepted reflection (DESIGN §4)."""

    task_type: str
    outcome: str
    key_decision: str
    why_it_worked_or_failed: str
    reusable_rule: str
    confidence: float
    counter_examples: list[str]


class ReflectOut(_Model):
    """What ``memory_reflect`` did with one finished episode."""

    namespace: str
    episode_id: str
    episode_record: RecordOut = Field(description="the L2 episode record written for it")
    reflected: bool = Field(description="a trigger rule fired")
    reason: str = Field(description="the trigger rule that decided")
    reflection: ReflectionOut | None
    rejection: str | None = Field(description="why the reflection was rejected, when it was")
    write: WriteOut | None = Field(description="the candidate write of an accepted reflection")


class FeedbackOut(_Model):
    """The record after feedback, or ``deleted`` when this down removed it."""

    namespace: str
    memory_id: str
    signal: str
    deleted: bool
    record: RecordOut | None


# --------------------------------------------------------------------------------------------------- converters
def record_out(rec: "MemoryRecord") -> RecordOut:
    return RecordOut(id=rec.id, tag=rec.tag, layer=rec.layer.value, kind=rec.kind.value, content=rec.content,
                     task_type=rec.task_type, domain=rec.domain, confidence=float(rec.confidence),
                     hit_count=rec.hit_count, counter_examples=list(rec.counter_examples),
                     source_episode_ids=list(rec.source_episode_ids), ups=rec.ups, downs=rec.downs)


def hit_out(rank: int, hit: "Hit") -> HitOut:
    return HitOut(rank=rank, record=record_out(hit.record), paths=list(hit.paths), forced=hit.forced,
                  scores=ScoresOut(**hit.scores.as_dict()), tokens=hit.tokens)


def search_out(namespace: str, res: "SearchResult") -> SearchOut:
    inj = res.injection
    return SearchOut(namespace=namespace, query=res.query, task_type=res.task_type,
                     task_type_source=res.task_type_source,
                     hits=[hit_out(rank, h) for rank, h in enumerate(res.hits, 1)],
                     injection=InjectionOut(text=inj.text, rules=inj.rules, episodes=inj.episodes, state=inj.state,
                                            tokens=inj.tokens))


def write_out(namespace: str, res: "WriteResult") -> WriteOut:
    return WriteOut(namespace=namespace, action=res.action, promoted=res.promoted, record=record_out(res.record))


def reflect_out(namespace: str, out: "ReflectionOutcome") -> ReflectOut:
    refl = out.reflection
    reflection = None if refl is None else ReflectionOut(
        task_type=refl.task_type, outcome=refl.outcome, key_decision=refl.key_decision,
        why_it_worked_or_failed=refl.why_it_worked_or_failed, reusable_rule=refl.reusable_rule,
        confidence=float(refl.confidence), counter_examples=list(refl.counter_examples))
    rejection = f"{out.rejection.reason}: {out.rejection.detail}" if out.rejection else None
    return ReflectOut(namespace=namespace, episode_id=out.episode_id, episode_record=record_out(out.record),
                      reflected=out.decision.reflect, reason=out.decision.reason, reflection=reflection,
                      rejection=rejection, write=write_out(namespace, out.write) if out.write else None)


def feedback_out(namespace: str, memory_id: str, signal: str, rec: "MemoryRecord | None") -> FeedbackOut:
    return FeedbackOut(namespace=namespace, memory_id=memory_id, signal=signal, deleted=rec is None,
                       record=record_out(rec) if rec is not None else None)
