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

Most rules a reflector proposes change nothing, and a confidence checked after every run will cross any bar by
chance on a long enough history. So the prior also puts weight on **no effect** (both rates equal; ``θ = ½`` below):
``promotion.prior_effect`` is the prior probability that a rule has any effect at all, and a rule's confidence is
``P(it helps)`` under that prior — the posterior weight of an effect times the uniform part's answer. Its default
(0.1) keeps the chance that a rule without effect ever reaches the promotion bar 0.7 below 5 % (Ville's inequality;
:func:`agree_probability`).

With ``promotion.evidence: within_task`` the confidence is read from pairs of runs of one task instead (the same
instance, :func:`~hindsight_lab.trace.summary.same_instance`; the runs a rule was proposed from included): a pair
it tells apart — one run followed it and the other did not, one succeeded and the other failed — **agrees** when the
run that followed succeeded. The confidence is ``P(θ > ½)`` for the chance ``θ`` that such a pair agrees, under the
same prior (:func:`agree_probability`), the proposed one while no pair exists, and the tasks that confirm the rule
are those of its agreeing pairs. A rule whose followers were only in easier tasks gains nothing: that is what the
null of its lift keeps (:mod:`hindsight_lab.rule_stats.lift`).

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
from math import comb, exp, lgamma, log
from typing import Any, Iterator, Mapping

from ..trace.checks import Check
from ..trace.summary import same_instance
from ..types import MemoryRecord

#: Codes of the runs a rule's evidence holds: followed and succeeded (``fo``), followed and failed (``fx``),
#: ignored and succeeded (``io``), ignored and failed (``ix``).
CODES: tuple[str, ...] = ("fo", "fx", "io", "ix")
CONFIRMS = ("fo", "ix")


def _lbeta(a: float, b: float) -> float:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def helps_probability(counts: Mapping[str, int], prior_effect: float = 1.0) -> float:
    """``P(p_f > p_i)`` for the success rates of the runs that followed a rule (``fo`` of ``fo + fx``) and of those
    that did not (``io`` of ``io + ix``).

    With ``prior_effect`` π, the prior is π on independent uniform rates and 1 − π on no effect (one uniform rate
    shared by both); the uniform part alone (π = 1) is the exact sum for integer parameters (Miller, "Formulas for
    Bayesian A/B testing", 2015)."""
    af, bf = 1 + int(counts.get("fo", 0)), 1 + int(counts.get("fx", 0))
    ai, bi = 1 + int(counts.get("io", 0)), 1 + int(counts.get("ix", 0))
    total = 0.0
    for k in range(af):
        total += exp(_lbeta(ai + k, bi + bf) - log(bf + k) - _lbeta(1 + k, bf) - _lbeta(ai, bi))
    log_bf = _lbeta(af, bf) + _lbeta(ai, bi) - _lbeta(af + ai - 1, bf + bi - 1)
    return _with_no_effect(min(1.0, max(0.0, total)), log_bf, prior_effect)


def _with_no_effect(p_uniform: float, log_bayes_factor: float, prior_effect: float) -> float:
    """``P(helps)`` under a prior of ``prior_effect`` on the uniform model (where ``P(helps) = p_uniform``) and the
    rest on no effect (where it is 0), given the evidence's Bayes factor of the first over the second."""
    if prior_effect >= 1.0:
        return p_uniform
    odds = prior_effect / (1.0 - prior_effect) * exp(min(log_bayes_factor, 700.0))
    return p_uniform * odds / (1.0 + odds)


def evidence(rec: MemoryRecord) -> dict[str, str]:
    """``{episode id: code}`` of the runs that verified the record (its ``attrs.evidence``)."""
    raw = (rec.attrs or {}).get("evidence")
    return {str(k): str(v) for k, v in raw.items() if v in CODES} if isinstance(raw, Mapping) else {}


def counts(rec: MemoryRecord) -> dict[str, int]:
    out = dict.fromkeys(CODES, 0)
    for code in evidence(rec).values():
        out[code] += 1
    return out


def agree_probability(agree: int, disagree: int, prior_effect: float = 1.0) -> float:
    """``P(θ > ½)`` for the chance ``θ`` that a pair of runs agrees with a rule, after ``agree`` and ``disagree``
    pairs.

    With ``prior_effect`` π, the prior is π on ``θ ~ Uniform(0, 1)`` and 1 − π on no effect (``θ = ½``). The uniform
    part alone (π = 1) gives ``P(Binomial(agree + disagree + 1, ½) ≤ agree)``; the rest weighs it by the posterior
    probability of an effect, whose Bayes factor over none is ``2ⁿ B(agree + 1, disagree + 1)``. Under no effect
    that factor is a nonnegative martingale, so however often the probability is checked, it exceeds ``c`` with
    chance at most ``π (1 − c) / ((1 − π) c)`` (Ville's inequality, for independent pairs).

    Examples:
        >>> agree_probability(0, 0), agree_probability(3, 0), round(agree_probability(4, 1), 4)
        (0.5, 0.9375, 0.8906)
        >>> round(agree_probability(3, 0, 0.1), 3), round(agree_probability(8, 0, 0.1), 3)  # 3 pairs say little
        (0.17, 0.758)
    """
    n = agree + disagree + 1
    p_uniform = sum(comb(n, k) for k in range(agree + 1)) / 2 ** n
    return _with_no_effect(p_uniform, (n - 1) * log(2) + _lbeta(agree + 1, disagree + 1), prior_effect)


def pair_vote(first: tuple[bool, bool], second: tuple[bool, bool]) -> int:
    """What a pair of runs of one task, each ``(followed, succeeded)``, says of a rule: 1 when it agrees (one
    followed it and succeeded, the other did not follow it and failed), -1 when it disagrees, 0 when the rule does
    not tell the two apart (both followed it or neither did, or both ended alike).

    Examples:
        >>> pair_vote((True, True), (False, False)), pair_vote((False, True), (True, False))
        (1, -1)
        >>> pair_vote((True, True), (False, True)), pair_vote((True, True), (True, False))
        (0, 0)
    """
    (f1, ok1), (f2, ok2) = first, second
    if f1 == f2 or ok1 == ok2:
        return 0
    return 1 if (ok1 if f1 else ok2) else -1


def paired_runs(rec: MemoryRecord) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``{episode id: (code, instance signature)}`` of the runs a ``within_task`` rule is verified by (its
    ``attrs.paired``: the runs it was proposed from and the later runs that reached its step)."""
    raw = (rec.attrs or {}).get("paired")
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): (str(v[0]), tuple(map(str, v[1]))) for k, v in raw.items()
            if isinstance(v, (list, tuple)) and len(v) == 2 and v[0] in CODES}


def pairs(rec: MemoryRecord, overlap: float = 0.5) -> tuple[int, int, list[str]]:
    """The pairs of runs of one task (instances overlapping ``overlap`` or more) the record tells apart: how many
    agree with it, how many disagree, and the episode ids of the agreeing ones.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from hindsight_lab.types import Kind
        >>> paired = {"a1": ["ix", ["a"]], "a2": ["fo", ["a"]], "b1": ["fx", ["b"]], "b2": ["io", ["b"]],
        ...           "c1": ["fo", ["c"]]}
        >>> rec = MemoryRecord(id="r", kind=Kind.CANDIDATE, content="x", created_at=datetime.now(timezone.utc),
        ...                    attrs={"paired": paired})
        >>> pairs(rec)  # a: the follower succeeded; b: the follower failed; c: alone
        (1, 1, ['a1', 'a2'])
    """
    agree = disagree = 0
    agreeing: list[str] = []
    for e1, e2, vote in told_apart(rec, overlap):
        if vote > 0:
            agree += 1
            agreeing += [e1, e2]
        else:
            disagree += 1
    return agree, disagree, list(dict.fromkeys(agreeing))


def told_apart(rec: MemoryRecord, overlap: float = 0.5) -> Iterator[tuple[str, str, int]]:
    """The pairs of the record's runs (``attrs.paired``) of one instance that it tells apart: ``(episode id, episode
    id, vote)``, the vote as :func:`pair_vote` gives it."""
    runs = list(paired_runs(rec).items())
    for i, (e1, (c1, s1)) in enumerate(runs):
        for e2, (c2, s2) in runs[i + 1:]:
            vote = pair_vote((c1[0] == "f", c1[1] == "o"), (c2[0] == "f", c2[1] == "o"))
            if vote and same_instance(s1, s2, overlap):
                yield e1, e2, vote


def settle(rec: MemoryRecord, within_task: bool = False, overlap: float = 0.5,
           prior_effect: float = 1.0) -> MemoryRecord:
    """The record with its confidence as its evidence says (the proposed confidence while it has none); with
    ``within_task``, as its pairs of runs of one task say; ``prior_effect``, the prior's weight on an effect
    (module docstring)."""
    proposed = float((rec.attrs or {}).get("proposed", rec.confidence))
    if within_task:
        agree, disagree, _ = pairs(rec, overlap)
        conf = agree_probability(agree, disagree, prior_effect) if agree + disagree else proposed
    else:
        conf = helps_probability(counts(rec), prior_effect) if evidence(rec) else proposed
    return rec if conf == rec.confidence else replace(rec, confidence=conf)


def code_of(check: Check, tools: list[str], outcome: str | None, failure_cause: str | None) -> str | None:
    """How a run verifies a check: one of :data:`CODES`, or None when it says nothing (it did not reach the step,
    or failed for an outside cause)."""
    if not check.reaches(tools) or (outcome != "success" and failure_cause == "external"):
        return None
    return run_code(check.followed(tools), outcome == "success")


def run_code(followed: bool, succeeded: bool) -> str:
    """The :data:`CODES` entry of a run that ``followed`` a rule or not and ``succeeded`` or not."""
    return ("f" if followed else "i") + ("o" if succeeded else "x")


def observed(rec: MemoryRecord, episode: MemoryRecord, within_task: bool = False,
             overlap: float = 0.5, prior_effect: float = 1.0) -> MemoryRecord | None:
    """``rec`` with the evidence of the episode record ``episode`` added and its confidence settled; None when the
    episode says nothing of it (no check, step not reached, an outside failure, or already counted). A run it was
    proposed from is no evidence (``attrs.evidence``), but with ``within_task`` it joins the record's pairs
    (``attrs.paired``, with its instance signature)."""
    check = Check.of((rec.attrs or {}).get("check"))
    if check is None:
        return None
    eid = episode.source_episode_ids[0] if episode.source_episode_ids else episode.id
    a = episode.attrs or {}
    code = code_of(check, list(a.get("tools", ())), episode.outcome, a.get("failure_cause"))
    if code is None:
        return None
    attrs: dict[str, Any] = dict(rec.attrs)
    ev = evidence(rec)
    if eid not in rec.source_episode_ids and ev.get(eid) != code:
        attrs["evidence"] = {**ev, eid: code}
    if within_task and paired_runs(rec).get(eid, ("",))[0] != code:
        attrs["paired"] = {**attrs.get("paired", {}), eid: [code, list(a.get("instance", ()))]}
    if attrs == rec.attrs:
        return None
    attrs.setdefault("proposed", rec.confidence)
    return settle(replace(rec, attrs=attrs), within_task, overlap, prior_effect)


def confirming(rec: MemoryRecord, within_task: bool = False, overlap: float = 0.5) -> list[str]:
    """The episode ids that confirmed the record: those that followed it and succeeded, or ignored it and failed;
    with ``within_task``, those of its agreeing pairs."""
    if within_task:
        return pairs(rec, overlap)[2]
    return [eid for eid, code in evidence(rec).items() if code in CONFIRMS]
