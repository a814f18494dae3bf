"""Rules verified by later outcomes (DESIGN §2.4, article §3.2 "反复验证有效 confidence 上升").

A candidate or rule with a checkable form (:class:`~hindsight_lab.trace.checks.Check`) is verified by every later
run that reaches the step it guards: a run that **followed** it and succeeded, or **ignored** it and failed,
confirms it; one that followed it and failed, or ignored it and succeeded, weakens it. Runs that failed for an
outside cause (``failure_cause: external``) say nothing about strategy and are not counted. What counts is read
from the run itself — its tools in order and its recorded outcome — never from judging labels.

The evidence is two success rates, of the runs that followed the rule and of those that did not, each with a
uniform Beta(1, 1) prior. A rule's **confidence** is the posterior probability that following it raises the
success rate, ``P(p_followed > p_ignored)``; before any run reached its step, it is the confidence the reflector
proposed (``attrs.proposed``). A lucky rule — a wrong order that once succeeded — is weakened by the later runs that
follow it and fail, whatever the reflector thought of it.

A candidate is promoted (article §3.3, "three verifications") when the runs that confirmed it, with the runs it was
proposed from, come from ``promotion.min_hits`` different tasks — told apart by what they were about, the identifiers
they named, and for successes by what they changed (:func:`~hindsight_lab.trace.summary.distinct_tasks`), not by a
dataset's task id — its confidence is above ``promotion.min_mean_confidence``, and it has counter-examples.

Examples:
    >>> round(helps_probability({"fo": 0, "fx": 0, "io": 0, "ix": 0}), 3)  # no evidence: either way
    0.5
    >>> round(helps_probability({"fo": 6, "fx": 1, "io": 1, "ix": 5}), 3)  # followers succeed, the others fail
    0.991
    >>> round(helps_probability({"fo": 0, "fx": 4, "io": 0, "ix": 0}), 3)  # a lucky order: its followers fail
    0.167
"""

from __future__ import annotations

from dataclasses import replace
from math import exp, lgamma, log
from typing import Any, Mapping

from ..trace.checks import Check
from ..types import MemoryRecord

#: Codes of the runs a rule's evidence holds: followed and succeeded (``fo``), followed and failed (``fx``),
#: ignored and succeeded (``io``), ignored and failed (``ix``).
CODES: tuple[str, ...] = ("fo", "fx", "io", "ix")
CONFIRMS = ("fo", "ix")


def _lbeta(a: float, b: float) -> float:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def helps_probability(counts: Mapping[str, int]) -> float:
    """``P(p_f > p_i)`` for independent ``p_f ~ Beta(1 + fo, 1 + fx)`` and ``p_i ~ Beta(1 + io, 1 + ix)``: the
    exact sum for integer parameters (Miller, "Formulas for Bayesian A/B testing", 2015)."""
    af, bf = 1 + int(counts.get("fo", 0)), 1 + int(counts.get("fx", 0))
    ai, bi = 1 + int(counts.get("io", 0)), 1 + int(counts.get("ix", 0))
    total = 0.0
    for k in range(af):
        total += exp(_lbeta(ai + k, bi + bf) - log(bf + k) - _lbeta(1 + k, bf) - _lbeta(ai, bi))
    return min(1.0, max(0.0, total))


def evidence(rec: MemoryRecord) -> dict[str, str]:
    """``{episode id: code}`` of the runs that verified the record (its ``attrs.evidence``)."""
    raw = (rec.attrs or {}).get("evidence")
    return {str(k): str(v) for k, v in raw.items() if v in CODES} if isinstance(raw, Mapping) else {}


def counts(rec: MemoryRecord) -> dict[str, int]:
    out = dict.fromkeys(CODES, 0)
    for code in evidence(rec).values():
        out[code] += 1
    return out


def settle(rec: MemoryRecord) -> MemoryRecord:
    """The record with its confidence as its evidence says (the proposed confidence while it has none)."""
    ev = evidence(rec)
    proposed = float((rec.attrs or {}).get("proposed", rec.confidence))
    conf = helps_probability(counts(rec)) if ev else proposed
    return rec if conf == rec.confidence else replace(rec, confidence=conf)


def code_of(check: Check, tools: list[str], outcome: str | None, failure_cause: str | None) -> str | None:
    """How a run verifies a check: one of :data:`CODES`, or None when it says nothing (it did not reach the step,
    or failed for an outside cause)."""
    if not check.reaches(tools) or (outcome != "success" and failure_cause == "external"):
        return None
    return ("f" if check.followed(tools) else "i") + ("o" if outcome == "success" else "x")


def observed(rec: MemoryRecord, episode: MemoryRecord) -> MemoryRecord | None:
    """``rec`` with the evidence of the episode record ``episode`` added and its confidence settled; None when the
    episode says nothing of it (no check, step not reached, an outside failure, or already counted)."""
    check = Check.of((rec.attrs or {}).get("check"))
    eid = episode.source_episode_ids[0] if episode.source_episode_ids else episode.id
    if check is None or eid in rec.source_episode_ids:
        return None
    a = episode.attrs or {}
    code = code_of(check, list(a.get("tools", ())), episode.outcome, a.get("failure_cause"))
    ev = evidence(rec)
    if code is None or ev.get(eid) == code:
        return None
    attrs: dict[str, Any] = {**rec.attrs, "evidence": {**ev, eid: code}}
    attrs.setdefault("proposed", rec.confidence)
    return settle(replace(rec, attrs=attrs))


def confirming(rec: MemoryRecord) -> list[str]:
    """The episode ids that confirmed the record (followed and succeeded, or ignored and failed)."""
    return [eid for eid, code in evidence(rec).items() if code in CONFIRMS]
