"""Seeded synthetic rules with planted contradictions, to measure the whole conflict pass (clustering, pairing,
judging) and to benchmark it at scale.

Each group is one topic (a task type from a small shared set, two actions, tools with the group's own names)
and yields a base rule, a rule that agrees with it (a paraphrase or refinement), a rival that contradicts both
(one kind: order, tool, negation, quantity), and a related rule compatible with all three. The planted pairs are
(base, rival) and (agree, rival). Every fifth group plants a *loose* pair: the
contradiction is stated inside a long, differently worded rule, so the two rules are far apart and HDBSCAN tends
to label one of them noise — the pairs the nearest-neighbour check must still catch.

Examples:
    >>> rules, planted = planted_rules(4, seed=0)
    >>> len(planted), sorted({a.rsplit("-", 1)[1] for a, _ in planted}), {b.rsplit("-", 1)[1] for _, b in planted}
    (8, ['agree', 'base'], {'rival'})
    >>> planted_rules(4, seed=0) == (rules, planted)
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ...types import Kind, MemoryRecord
from .names import RULE_TOPICS

START = datetime(2025, 6, 2, 9, 0, tzinfo=timezone.utc)
"""The first group's rules are dated from here; group ``g`` starts ``g`` hours later."""
RULE_TASK_TYPES: tuple[str, ...] = RULE_TOPICS["task_type"]
"""The task types a topic is drawn from (:data:`~hindsight_lab.datasets.synthetic.names.RULE_TOPICS`)."""
KINDS = ("order", "tool", "negation", "quantity")
"""The kinds of planted contradiction, rotating over the groups."""


@dataclass(frozen=True, slots=True)
class _Topic:
    task_type: str
    a: tuple[str, str]
    b: tuple[str, str]
    tools: tuple[str, str, str]
    purpose: str
    unit: tuple[str, str, str | None]
    condition: str


def _topic(rng: random.Random, g: int, used: set[tuple[str, str]]) -> _Topic:
    """A topic whose actions, purpose and counted thing no earlier group of its task type used (while the
    vocabulary lasts), so that groups do not contradict each other by accident."""
    for _ in range(50):
        a, b = RULE_TOPICS.distinct(rng, "action", 2)
        task_type, purpose, unit = (RULE_TOPICS.pick(rng, "task_type"), RULE_TOPICS.pick(rng, "purpose"),
                                    RULE_TOPICS.pick(rng, "unit"))
        facets = {(task_type, a[0]), (task_type, b[0]), (task_type, purpose), (task_type, unit[1])}
        if not facets & used:
            break
    used |= facets
    verbs = RULE_TOPICS.distinct(rng, "tool_verb", 3)
    nouns = RULE_TOPICS.distinct(rng, "tool_noun", 3)
    tools = tuple(f"{v}_{n}_{g}" for v, n in zip(verbs, nouns))
    return _Topic(task_type, a, b, tools, purpose, unit, RULE_TOPICS.pick(rng, "condition"))  # type: ignore[arg-type]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _texts(t: _Topic, kind: str, loose: bool, rng: random.Random) -> tuple[str, str, list[str]]:
    """(base rule, rival, [rule agreeing with the base, related rule]) of a topic."""
    (a, a_ing), (b, b_ing) = t.a, t.b
    t1, t2, t3 = t.tools
    verb, thing, unit = t.unit
    n = rng.randint(2, 4)
    m = n + rng.randint(2, 5)
    count = f"{thing} {unit}" if unit else thing
    if kind == "order":
        base = f"Always {a} before {b_ing}."
        rival = f"{_cap(b)} first, then {a}."
        compatible = [f"Make sure to {a} before you {b}, and note the outcome.", f"{_cap(a)} when {t.condition}."]
    elif kind == "tool":
        base = f"Use {t1} to {t.purpose}."
        rival = f"{_cap(t.purpose)} with {t2}, not with {t1}."
        compatible = [f"Use {t1} to {t.purpose} and log each call.", f"Use {t3} to {a}."]
    elif kind == "negation":
        base = f"{_cap(a)} when {t.condition}."
        rival = f"Never {a} when {t.condition}."
        compatible = [f"{_cap(a)} when {t.condition}, then {b}.", f"Do not {b} before {a_ing}."]
    else:
        base = f"{_cap(verb)} at most {n} {count} for {t.task_type} tasks."
        rival = f"{_cap(verb)} up to {m} {count} for {t.task_type} tasks."
        compatible = [f"{_cap(verb)} no more than {n} {count} for {t.task_type} tasks.",
                      f"Wait {n + 1} minutes between {thing} for {t.task_type} tasks."]
    if loose:
        rival = (f"Lessons from the {t.task_type} desk, collected in the weekly retrospective with escalations and "
                 f"audits: {rival[0].lower()}{rival[1:-1]}; colleagues confirmed it on several shifts.")
    return base, rival, compatible


def planted_rules(n_groups: int, *, seed: int = 0, loose_every: int = 5) -> tuple[list[MemoryRecord],
                                                                                  list[tuple[str, str]]]:
    """``n_groups`` topics as rule records (ids ``syn-<group>-<role>``), and the planted contradicting pairs.

    Each group has four records (base, agree, rival, related); kinds rotate through :data:`KINDS`; every
    ``loose_every``-th group's rival is written loosely (see the module docstring). The rival is the newer and
    more confirmed rule. Pure function of ``(n_groups, seed, loose_every)``.
    """
    rng = random.Random(f"hindsight-conflicts/{seed}")
    records: list[MemoryRecord] = []
    planted: list[tuple[str, str]] = []
    used: set[tuple[str, str]] = set()
    for g in range(n_groups):
        topic = _topic(rng, g, used)
        kind = KINDS[g % len(KINDS)]
        loose = loose_every > 0 and g % loose_every == loose_every - 1
        base, rival, compatible = _texts(topic, kind, loose, rng)
        t0 = START + timedelta(hours=g)
        for role, text, day, hits in (("base", base, 0, 1), ("rival", rival, 3, 3), ("agree", compatible[0], 1, 1),
                                      ("related", compatible[1], 2, 1)):
            records.append(MemoryRecord(f"syn-{g:05d}-{role}", Kind.RULE, text, task_type=topic.task_type,
                                        confidence=0.7, hit_count=hits, created_at=t0 + timedelta(days=day),
                                        last_confirmed_at=t0 + timedelta(days=day),
                                        attrs={"group": g, "kind": kind, "loose": loose}))
        planted += [(f"syn-{g:05d}-base", f"syn-{g:05d}-rival"), (f"syn-{g:05d}-agree", f"syn-{g:05d}-rival")]
    return records, planted


def evaluate_plan(plan: object, planted: list[tuple[str, str]]) -> dict[str, object]:
    """Precision and recall of a conflict plan's conflicting pairs against the planted ones, overall and for the
    planted pairs with a member HDBSCAN labelled noise."""
    labels = dict(zip((r.id for r in plan.records), plan.labels.tolist()))  # type: ignore[attr-defined]
    found = {tuple(sorted((p.a, p.b))) for p in plan.pairs if p.verdict.conflict}  # type: ignore[attr-defined]
    truth = {tuple(sorted(p)) for p in planted}
    tp = len(found & truth)
    noisy = {p for p in truth if labels[p[0]] < 0 or labels[p[1]] < 0}
    return {"planted": len(truth), "found": len(found), "true_positives": tp,
            "precision": tp / len(found) if found else 0.0, "recall": tp / len(truth) if truth else 0.0,
            "planted_with_noise_member": len(noisy),
            "recall_noise_pairs": len(found & noisy) / len(noisy) if noisy else None,
            "false_positives": sorted(found - truth)[:20]}
