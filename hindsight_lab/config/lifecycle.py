"""A memory record's life: how an episode becomes an L2 record, dedup on write, promotion to an L3 rule,
explicit feedback, and decay and archive on the maintenance clock."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .base import RECALL, WRITE, Section, affects


class EpisodeConfig(Section):
    """How a finished episode becomes one L2 episode record (no LLM involved)."""

    key: Literal["instruction", "request_tools", "summary"] = Field("request_tools",
                                                                   json_schema_extra=affects(WRITE, RECALL))
    """What an episode record is found by (embedded, and indexed for keywords): the instruction followed by the
    names of the tools it called (``request_tools``), the instruction alone, or the whole stored summary. A
    replay's ``dense`` and ``bm25`` baselines index ``request_tools`` whatever this is."""
    summary_max_chars: int = Field(600, ge=80, json_schema_extra=affects(WRITE, RECALL))
    """Length bound of the stored summary text."""
    success_confidence: float = Field(0.8, ge=0, le=1, json_schema_extra=affects(WRITE, RECALL))
    """Confidence of an episode record whose outcome is success."""
    partial_confidence: float = Field(0.6, ge=0, le=1, json_schema_extra=affects(WRITE, RECALL))
    """Confidence of an episode record whose outcome is partial."""
    failure_confidence: float = Field(0.5, ge=0, le=1, json_schema_extra=affects(WRITE, RECALL))
    """Confidence of an episode record whose outcome is failure (failures still carry lessons)."""
    retire_contradicted_after: int = Field(2, ge=0, json_schema_extra=affects(WRITE, RECALL))
    """Archive stored successes once at least this many later runs in a row repeated their tools up to a
    state-changing step they had passed and were refused there (a lucky success, or a rule of the world that
    changed), and the run is too long to be chance at that step (``retire_significance``); a later success past
    that step brings them back (:mod:`hindsight_lab.evidence`). 0 never retires."""
    retire_significance: float = Field(0.05, gt=0, lt=1, json_schema_extra=affects(WRITE, RECALL))
    """A run of refusals retires only if a run that long would come by chance, at the step's earlier refusal rate,
    with a probability below this over as many tries as the step has had."""
    read_only_prefixes: tuple[str, ...] = Field(
        ("get", "search", "list", "find", "lookup", "read", "fetch", "query", "calculate", "think", "check",
         "verify", "quote", "view", "show", "transfer", "finish", "answer", "respond"),
        json_schema_extra=affects(WRITE, RECALL))
    """Tool names starting with one of these (case-insensitive, before ``_`` or a capital) only read or talk; the
    task_type derived from an episode is the sorted set of the *other* tools it called (``read_only`` when
    none)."""


class DedupConfig(Section):
    """Dedup on write for candidates and rules (article §8.2)."""

    similarity: float = Field(0.92, ge=0, le=1, json_schema_extra=affects(WRITE))
    """Cosine similarity at or above which a new rule merges into the nearest existing one."""
    same_task_type: bool = Field(True, json_schema_extra=affects(WRITE))
    """Merge only records of the same task_type when both have one."""
    same_check: bool = Field(True, json_schema_extra=affects(WRITE))
    """A rule with a checkable form also merges into one with the same check (the same tools in the same order
    before the same step), whatever their wording and task types: the two make the same claim, and later runs
    verify them alike (:mod:`hindsight_lab.memory.verify`)."""


class PromotionConfig(Section):
    """When a candidate becomes an L3 rule (article §3.3, "three verifications")."""

    min_hits: int = Field(3, ge=1, json_schema_extra=affects(WRITE))
    """How many *different* tasks (or episodes, see ``distinct``) must confirm a candidate: those it was proposed
    from, and the later runs that confirmed it by outcome (``verify``)."""
    min_mean_confidence: float = Field(0.7, ge=0, le=1, json_schema_extra=affects(WRITE))
    """The candidate's confidence must be strictly above this: the probability, from later outcomes, that following
    it raises the success rate (``verify``); the reflectors' running mean while no run has verified it."""
    prior_effect: float = Field(0.1, gt=0, le=1, json_schema_extra=affects(WRITE))
    """The prior probability that a verified rule changes the success rate at all; the rest of the prior is on no
    effect (:mod:`hindsight_lab.memory.verify`). The confidence is checked after every run, so without this weight a
    rule without effect crosses the bar by chance on a long enough history. For such a rule, the chance that its
    confidence ever exceeds ``min_mean_confidence`` ``c`` is at most ``π (1 − c) / ((1 − π) c)`` (Ville's
    inequality, exact for independent pairs of ``within_task`` evidence): 0.048 at the defaults. 1.0 is the uniform
    prior alone."""
    verify: bool = Field(True, json_schema_extra=affects(WRITE))
    """Verify candidates and rules that carry a checkable form by the later runs that reach their step
    (:mod:`hindsight_lab.memory.verify`): their confidence follows those runs' outcomes."""
    evidence: Literal["runs", "within_task"] = Field("runs", json_schema_extra=affects(WRITE))
    """What a verified rule's confidence is read from (``verify``): ``runs``, the success rates of every later run
    that followed it and of every one that did not; ``within_task``, only the pairs of runs of one task (the same
    instance, ``same_task_overlap``; the runs it was proposed from included) that it tells apart — one followed it and
    one did not, one succeeded and one failed — so a rule whose followers were merely in easier tasks gains nothing
    (the null its lift is tested against, :mod:`hindsight_lab.rule_stats.lift`). Then the tasks that confirm it are
    those with a pair that agrees with it."""
    distinct: Literal["tasks", "episodes"] = Field("tasks", json_schema_extra=affects(WRITE))
    """What counts as different: ``tasks`` — runs about different instances (the identifiers they name,
    ``same_task_overlap``) or, for two successes, that changed different things (their state-changing tools: one
    customer, two requests), so retries of one task count once
    (:func:`~hindsight_lab.trace.summary.distinct_tasks`); ``episodes`` — every episode."""
    same_task_overlap: float = Field(0.5, gt=0, le=1, json_schema_extra=affects(WRITE))
    """Two runs are of one task when their identifiers overlap this much (Jaccard) or more."""
    require_counter_examples: bool = Field(True, json_schema_extra=affects(WRITE))
    """Never promote a candidate without counter_examples (article §8.5)."""



class FeedbackConfig(Section):
    """Explicit feedback on a memory (DESIGN §2.5)."""

    up_step: float = Field(0.1, ge=0, le=1, json_schema_extra=affects(WRITE))
    """Confidence added by an up (capped at 1)."""
    down_step: float = Field(0.2, ge=0, le=1, json_schema_extra=affects(WRITE))
    """Confidence removed by a down (floored at 0)."""
    delete_after_downs: int = Field(2, ge=1, json_schema_extra=affects(WRITE))
    """The down that brings a record to this many downs deletes it."""


class DecayConfig(Section):
    """Decay and archive on the maintenance clock (DESIGN §2.6, article §7.3)."""

    archive_unretrieved: bool = Field(True, json_schema_extra=affects(WRITE))
    """Archive L2 records unretrieved for ``l2_archive_days`` (retrieval-driven; replays switch it off)."""
    l2_archive_days: float = Field(30.0, gt=0, json_schema_extra=affects(WRITE))
    """Days without retrieval after which an L2 record is archived."""
    l3_decay_days: tuple[float, ...] = Field((90.0, 180.0), json_schema_extra=affects(WRITE))
    """Ages (days since the later of last_triggered_at and last_confirmed_at) at which an L3 rule decays."""
    l3_decay_factor: float = Field(0.8, gt=0, le=1, json_schema_extra=affects(WRITE))
    """Confidence multiplier applied at each decay age."""
    l3_archive_days: float = Field(270.0, gt=0, json_schema_extra=affects(WRITE))
    """Age at which an untriggered, unconfirmed L3 rule is archived."""

    @field_validator("l3_decay_days")
    @classmethod
    def _increasing(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if any(b <= a for a, b in zip(v, v[1:])) or any(d <= 0 for d in v):
            raise ValueError("must be positive and strictly increasing")
        return v

