"""Seeded synthetic scenarios in the trace format (DESIGN §5), with ground truth, for the article's failure cases.

This module owns the synthetic task catalogue (task types, their tools, the order their state-changing tools must
be called in, and small hand-written instruction templates), the scenario generator and the committed fixtures under
``datasets/synthetic/``. :mod:`hindsight_lab.replay.live` reuses the catalogue, :mod:`hindsight_lab.replay.lures`
evaluates the lures.

Scenarios (``n`` counts groups; each group has its own span of days on the generator's own clock):

- ``lures``: lexical lures across task types. Per pair: background episodes (``background_per_type`` of every
  task type about the same kind of thing as the query, one of every other), a **right**
  memory (the query's intent in other words, other entities) and a **lure** (another task type about the very same
  order, account or booking, so it shares most of the query's words), then the **query**, whose
  ``relevant_episode_ids`` is ``[right]``.
- ``floods``: context inflation. A useful successful run of a task type, then ``retries`` (15) near-identical
  failed retries of one task, then a query of that type whose only relevant memory is the useful run.
- ``lucky``: two runs with the required tool order, a run that skipped the prerequisite and succeeded by chance
  (``meta.lucky``), the same wrong order failing three times after it, then a query; relevant: the two right runs.
- ``policy``: a rule that changes over time. Before ``meta.policy_changed_at`` one order of two tools succeeds,
  after it that order fails and the reverse succeeds; the query comes after the change and its relevant memories
  are the successes under the new policy.
- ``strategic``: a short strategic rule (a ``reflection`` step of one run) that two later queries of *other*
  task types need, although their instructions share almost no words with it; relevant: the run with the rule.

Every episode carries its ground-truth ``task_type``, ``task_id``, ``started_at`` and ``meta`` with ``scenario``,
``group`` and ``role``; everything is a pure function of ``(scenario, n, seed)`` through ``random.Random``.

Examples:
    >>> eps = generate("lures", n=2, seed=0)
    >>> sorted({e.meta["role"] for e in eps})
    ['background', 'lure', 'query', 'right']
    >>> q = next(e for e in eps if e.meta["role"] == "query")
    >>> q.relevant_episode_ids == [q.meta["right"]]
    True
    >>> generate("floods", n=1, seed=3) == generate("floods", n=1, seed=3)
    True
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..trace import Episode

logger = logging.getLogger(__name__)

SCENARIOS: tuple[str, ...] = ("lures", "floods", "lucky", "policy", "strategic")
"""Scenario names accepted by :func:`generate`."""

FIXTURE_SIZES: dict[str, int] = {"lures": 4, "floods": 2, "lucky": 3, "policy": 2, "strategic": 3}
"""``n`` of each committed fixture ``datasets/synthetic/<scenario>.jsonl`` (seed :data:`FIXTURE_SEED`)."""

FIXTURE_SEED = 0
START = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)
"""The generator's clock starts here; group ``i`` starts ``i * GROUP_DAYS`` days later."""
GROUP_DAYS = 14


# ---------------------------------------------------------------------------------------------------- catalogue
@dataclass(frozen=True)
class TaskType:
    """One kind of task: its tools, the order they must run in, and how people phrase it.

    Attributes:
        name: ground-truth label.
        context: what its instructions are about (``order``, ``account`` or ``booking``); lures pair task types
            of the same context.
        read: the read-only tool called first.
        steps: the tools after the read, in the order the environment requires (prerequisite first); a task
            with two has a trap (its default path skips the first); ``tracking`` only reads.
        canonical: instruction templates in the usual words of the task type.
        paraphrase: templates with the same intent in other words (none of the canonical intent words).
        error: what the last tool answers when its prerequisite was skipped.
        flippable: the order of ``steps`` may flip in a policy change (``policy`` scenario, live environment).
    """

    name: str
    context: str
    read: str
    steps: tuple[str, ...]
    canonical: tuple[str, ...]
    paraphrase: tuple[str, ...]
    error: str = "request rejected (code E-4031)"
    flippable: bool = False

    @property
    def tools(self) -> tuple[str, ...]:
        """Every tool of the task, read tool first, in the required order."""
        return (self.read, *self.steps)


TASK_TYPES: dict[str, TaskType] = {t.name: t for t in (
    TaskType("refund", "order", "lookup_order", ("verify_identity", "issue_refund"),
             ("Refund order {oid}: {name} in {city} says the {color} {product} arrived {defect}.",
              "Issue a refund for the {color} {product} on order {oid} for {name} from {city}.",
              "Process a refund on order {oid}, the {color} {product} that {name} bought in {city}."),
             ("{first} wants the money back for a {product} that turned up {defect}; pay the purchase back.",
              "Reimburse a shopper from {city} whose {product} came {defect} in the parcel.",
              "Give {first} their payment back: the {product} they received was {defect}.")),
    TaskType("cancellation", "order", "lookup_order", ("verify_identity", "cancel_order"),
             ("Cancel order {oid}: {name} in {city} no longer needs the {color} {product}.",
              "Cancel the {color} {product} on order {oid} for {name} from {city} before it ships.",
              "Please cancel order {oid}, the {color} {product} that {name} bought in {city}."),
             ("{first} changed their mind about a {product}; stop the purchase before it leaves the warehouse.",
              "Call off a {product} purchase for a shopper in {city} so it is never dispatched.",
              "A buyer no longer wants the {product} they paid for yesterday; halt it before dispatch.")),
    TaskType("exchange", "order", "lookup_order", ("create_return_label", "ship_replacement"),
             ("Exchange order {oid}: {name} in {city} needs a different size of the {color} {product}.",
              "Exchange the {color} {product} on order {oid} for {name} from {city} for another size.",
              "Set up an exchange on order {oid}, the {color} {product} that {name} bought in {city}."),
             ("{first} would like the {product} swapped for a larger one and will send the first back.",
              "Send a shopper from {city} a bigger {product} and let them post the small one back.",
              "The {product} {first} got is too small; get a new one out and take the old one back."),
             error="replacement refused: no return registered (code R-212)", flippable=True),
    TaskType("tracking", "order", "lookup_order", ("get_shipment_status",),
             ("Track order {oid}: where is the {color} {product} that {name} in {city} is waiting for?",
              "Track the {color} {product} on order {oid} for {name} from {city} and give a delivery date.",
              "Check order {oid}: has the {color} {product} that {name} bought in {city} shipped yet?"),
             ("{first} asks how far away their {product} parcel is and when the courier will turn up.",
              "A shopper from {city} has been waiting a week for a {product}; find where the parcel is now.")),
    TaskType("address_change", "account", "lookup_account", ("verify_identity", "update_address"),
             ("Change the address on the account of {name} ({email}) from {city} to {city2}.",
              "Update the address on the {plan} account of {name} ({email}), now living in {city2}.",
              "Change the account address of {name} ({email}) in {city} to a street in {city2}."),
             ("{first} has moved house to {city2}; make sure future post goes to the new home.",
              "A member relocated from {city} and wants letters delivered to where they live now.")),
    TaskType("password_reset", "account", "lookup_account", ("verify_identity", "reset_password"),
             ("Reset the password on the account of {name} ({email}) in {city}.",
              "Reset the password for the {plan} account of {name} ({email}) registered in {city}.",
              "Password reset needed on the account of {name} ({email}) from {city}."),
             ("{first} is locked out and cannot sign in; give them a fresh way to log in.",
              "A member from {city} forgot their login secret and needs new credentials to get back in.")),
    TaskType("plan_change", "account", "lookup_account", ("quote_proration", "change_plan"),
             ("Upgrade the account of {name} ({email}) in {city} to the {plan}.",
              "Upgrade the {plan} account of {name} ({email}) registered in {city} to the next tier.",
              "Move the account of {name} ({email}) from {city} to the {plan} as an upgrade."),
             ("{first} wants more features and is happy to pay more each month from now on.",
              "A member from {city} asks for a bigger subscription tier starting this billing cycle."),
             error="plan change refused: proration not quoted (code P-118)"),
    TaskType("booking", "booking", "search_availability", ("hold_slot", "confirm_booking"),
             ("Book a {venue} for {name} in {city} on {weekday} at {time}.",
              "Make a booking of a {venue} for {name} from {city}, {weekday} at {time}.",
              "Book {name} from {city} a {venue} for {weekday} at {time}, please."),
             ("{first} would like to reserve a {venue} later this week somewhere near {city}.",
              "Set up a reservation so that {first} has a {venue} waiting for them.",
              "Get {first} a {venue} slot; any free time this week suits them."),
             error="confirmation refused: slot not held (code B-409)", flippable=True),
    TaskType("reschedule", "booking", "lookup_booking", ("hold_slot", "move_booking"),
             ("Reschedule the {venue} booking of {name} in {city} from {weekday} at {time} to {weekday2}.",
              "Reschedule {name} from {city}: the {venue} on {weekday} at {time} should move to {weekday2}.",
              "Move the {venue} booking that {name} in {city} has on {weekday} at {time} to {weekday2}."),
             ("{first} cannot make it on the planned day and wants the {venue} pushed later.",
              "Shift an existing {venue} reservation for {first} to a later date that suits them."),
             error="move refused: target slot not held (code B-412)", flippable=True),
)}
"""The task catalogue shared by the scenarios and the live environment."""

TRAP_TYPES: tuple[str, ...] = tuple(n for n, t in TASK_TYPES.items() if len(t.steps) == 2)
"""Task types with a prerequisite that the default (trap) path skips."""

READ_ONLY_TOOLS: frozenset[str] = frozenset({t.read for t in TASK_TYPES.values()} | {"get_shipment_status"})
"""Tools that only read (every other tool of the catalogue changes state)."""

STRATEGIC_RULES: dict[str, str] = {
    "verify_identity": "Identity first: verify_identity before touching money or account data.",
    "hold_slot": "Hold the slot first (hold_slot), only then commit to it.",
}
"""Short strategic rules per shared prerequisite (``strategic`` scenario)."""

_FIRST = ("Maria", "Tomas", "Aisha", "Kenji", "Laura", "Omar", "Priya", "Lucas", "Ingrid", "Mateo", "Chloe",
          "Dmitri", "Fatima", "Henrik", "Yuki", "Rosa", "Nadia", "Felix")
_LAST = ("Alvarez", "Novak", "Okafor", "Tanaka", "Berg", "Haddad", "Sharma", "Moreau", "Lindqvist", "Rossi",
         "Dubois", "Ivanova", "Costa", "Nielsen", "Sato", "Ferreira", "Keller", "Walsh")
_CITIES = ("Lisbon", "Denver", "Osaka", "Leeds", "Porto", "Austin", "Lyon", "Gdansk", "Tucson", "Bergen",
           "Seville", "Quebec", "Malmo", "Cork")
_COLORS = ("blue", "green", "charcoal", "red", "beige", "navy", "olive", "white")
_PRODUCTS = ("rain jacket", "standing desk", "coffee grinder", "hiking boots", "wool sweater", "desk lamp",
             "yoga mat", "blender", "backpack", "office chair", "table fan", "travel mug")
_DEFECTS = ("damaged", "scratched", "broken", "cracked", "torn", "dented")
_PLANS = ("family plan", "premium plan", "student plan", "business plan")
_VENUES = ("dental check-up", "haircut", "table for four", "meeting room", "massage", "tennis court")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_TIMES = ("9:30", "11:00", "13:15", "15:45", "17:30", "19:00")
_RETRY_NOTES = ("", " Second try.", " Please retry.", " Trying again.", " Customer still waiting.", " Retry.")
_EXTERNAL = ("upstream timeout (504)", "rate limited, try later (429)", "service unavailable (503)")

_STOP = frozenset("a an and are as at be by for from has have in is it its of on or so the that their them they "
                  "this to was were will with".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def content_tokens(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens of ``text`` without common English stopwords.

    Examples:
        >>> sorted(content_tokens("Refund order 42 for the BLUE jacket"))
        ['42', 'blue', 'jacket', 'order', 'refund']
    """
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


def shared_tokens(a: str, b: str) -> int:
    """How many content tokens two texts share (:func:`content_tokens`).

    Examples:
        >>> shared_tokens("Cancel order 42 for Maria", "Refund order 42 for Maria")
        3
    """
    return len(content_tokens(a) & content_tokens(b))


def draw_entities(rng: random.Random) -> dict[str, str]:
    """One customer with an order, an account and a booking: the slots every template may use."""
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    city, city2 = rng.sample(_CITIES, 2)
    day, day2 = rng.sample(_DAYS, 2)
    return {"first": first, "name": f"{first} {last}", "email": f"{first}.{last}@example.com".lower(),
            "city": city, "city2": city2, "oid": str(rng.randint(10000, 99999)), "color": rng.choice(_COLORS),
            "product": rng.choice(_PRODUCTS), "defect": rng.choice(_DEFECTS), "plan": rng.choice(_PLANS),
            "venue": rng.choice(_VENUES), "weekday": day, "weekday2": day2, "time": rng.choice(_TIMES),
            "ref": f"BK{rng.randint(1000, 9999)}"}


def _reference(task: TaskType, ents: Mapping[str, str]) -> dict[str, str]:
    return {"order": {"order_id": ents["oid"]}, "account": {"email": ents["email"]},
            "booking": {"booking": ents["ref"]}}[task.context]


# ---------------------------------------------------------------------------------------------------- episodes
def build_episode(episode_id: str, task: TaskType, instruction: str, ents: Mapping[str, str], *,
                  calls: Sequence[str], started_at: datetime, task_id: str | None = None,
                  error_at: str | None = None, error: str | None = None, failure_cause: str | None = None,
                  outcome: str | None = None, reflection: str | None = None,
                  relevant: Sequence[str] | None = None, meta: Mapping[str, Any] | None = None) -> Episode:
    """A trace-format episode: the user's message, the read call, then ``calls`` in order.

    When ``error_at`` names one of ``calls``, that call returns ``error`` and the run stops there (outcome
    ``failure`` unless given). ``reflection`` adds a ``reflection`` step (hindsight the recorded agent wrote).

    Examples:
        >>> t = TASK_TYPES["refund"]
        >>> ep = build_episode("e1", t, "Refund order 1", draw_entities(random.Random(0)), calls=t.steps,
        ...                    started_at=START)
        >>> ep.tool_names(), ep.outcome
        (['lookup_order', 'verify_identity', 'issue_refund'], 'success')
    """
    ref = _reference(task, ents)
    steps: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": instruction},
                                   {"type": "tool_call", "name": task.read, "arguments": ref},
                                   {"type": "tool_result", "content": f"found {next(iter(ref.values()))}"}]
    failed = False
    for tool in calls:
        steps.append({"type": "tool_call", "name": tool, "arguments": ref})
        if tool == error_at:
            steps.append({"type": "tool_result", "content": "", "error": error or task.error})
            failed = True
            break
        steps.append({"type": "tool_result", "content": "ok"})
    steps.append({"type": "message", "role": "assistant",
                  "content": "I could not complete the request." if failed else "Done."})
    if reflection:
        steps.append({"type": "reflection", "content": reflection})
    return Episode.model_validate({
        "episode_id": episode_id, "task_id": task_id or episode_id, "task_type": task.name,
        "domain": "support", "started_at": started_at.isoformat(), "instruction": instruction, "steps": steps,
        "outcome": outcome or ("failure" if failed else "success"),
        "failure_cause": failure_cause if (failed or outcome == "failure") else None,
        "relevant_episode_ids": list(relevant) if relevant is not None else None, "meta": dict(meta or {})})


def _text(rng: random.Random, task: TaskType, ents: Mapping[str, str], style: str) -> str:
    pool = task.canonical if style == "canonical" or not task.paraphrase else task.paraphrase
    return rng.choice(pool).format(**ents)


def _background(rng: random.Random, group: str, t0: datetime, span_h: float, per_type: int,
                types: Sequence[str] | None = None) -> list[Episode]:
    """``per_type`` episodes of every task type (half canonical, half paraphrased wording), mostly successful;
    a failure is an outage at the last step (``external``), so every run calls the task's full tool set."""
    out = []
    for name in types or TASK_TYPES:
        task = TASK_TYPES[name]
        for j in range(per_type):
            ents = draw_entities(rng)
            style = "canonical" if (j + rng.randint(0, 1)) % 2 == 0 else "paraphrase"
            outage = task.name in TRAP_TYPES and rng.random() < 0.15
            at = t0 + _minutes(rng, span_h)
            eid = f"{group}-bg-{name}-{j}"
            out.append(build_episode(
                eid, task, _text(rng, task, ents, style), ents, calls=task.steps,
                started_at=at, error_at=task.steps[-1] if outage else None,
                error=rng.choice(_EXTERNAL) if outage else None, failure_cause="external" if outage else None,
                meta={"scenario": group.split("-")[0], "group": group, "role": "background"}))
    return out


def _minutes(rng: random.Random, hours: float) -> timedelta:
    """A random offset within ``hours``, in whole minutes (timestamps stay short and exact)."""
    return timedelta(minutes=rng.randint(0, int(hours * 60)))


# ---------------------------------------------------------------------------------------------------- scenarios
def _lures(rng: random.Random, i: int, t0: datetime, *, background_per_type: int = 3) -> list[Episode]:
    group = f"lures-{i:03d}"
    contexts: dict[str, list[str]] = {}
    for name, t in TASK_TYPES.items():
        contexts.setdefault(t.context, []).append(name)
    q_name = rng.choice([n for n in TASK_TYPES if len(contexts[TASK_TYPES[n].context]) > 1])
    qt = TASK_TYPES[q_name]
    lt = TASK_TYPES[rng.choice([n for n in contexts[qt.context] if n != q_name])]
    ents = draw_entities(rng)
    query = _text(rng, qt, ents, "canonical")
    lure = _text(rng, lt, ents, "canonical")
    for _ in range(50):  # the right memory: other words, other entities, fewer shared tokens than the lure
        r_ents = draw_entities(rng)
        right = _text(rng, qt, r_ents, "paraphrase")
        if shared_tokens(right, query) < shared_tokens(lure, query) and r_ents["city"] != ents["city"]:
            break
    span = 24.0 * 10
    near = contexts[qt.context]  # the task types the query could be confused with, then one run of every other
    bg = _background(rng, group, t0, span, background_per_type, near) \
        + _background(rng, group, t0, span, 1, [n for n in TASK_TYPES if n not in near])
    meta = {"scenario": "lures", "group": group}
    ids = {"right": f"{group}-right", "lure": f"{group}-lure", "query": f"{group}-query"}
    right_ep = build_episode(ids["right"], qt, right, r_ents, calls=qt.steps,
                             started_at=t0 + _minutes(rng, span), meta={**meta, "role": "right"})
    lure_ep = build_episode(ids["lure"], lt, lure, ents, calls=lt.steps,
                            started_at=t0 + _minutes(rng, span), meta={**meta, "role": "lure"})
    query_ep = build_episode(ids["query"], qt, query, ents, calls=qt.steps,
                             started_at=t0 + timedelta(hours=span + 1), relevant=[ids["right"]],
                             meta={**meta, "role": "query", "right": ids["right"], "lure": ids["lure"],
                                   "lure_type": lt.name})
    return _by_time([*bg, right_ep, lure_ep]) + [query_ep]


def _floods(rng: random.Random, i: int, t0: datetime, *, retries: int = 15) -> list[Episode]:
    group = f"floods-{i:03d}"
    task = TASK_TYPES[rng.choice(TRAP_TYPES)]
    meta = {"scenario": "floods", "group": group}
    ents = draw_entities(rng)
    useful = build_episode(f"{group}-useful", task, _text(rng, task, ents, "paraphrase"), ents, calls=task.steps,
                           started_at=t0, meta={**meta, "role": "useful", "order": list(task.steps)})
    others = [n for n in TRAP_TYPES if n != task.name]
    bg = _background(rng, group, t0 + timedelta(hours=2), 20.0, 1, rng.sample(others, 2))
    f_ents = draw_entities(rng)
    base = _text(rng, task, f_ents, "canonical")
    flood = [build_episode(f"{group}-retry-{k:02d}", task, base + rng.choice(_RETRY_NOTES), f_ents,
                           calls=task.steps[-1:], error_at=task.steps[-1], failure_cause="strategy",
                           started_at=t0 + timedelta(days=1, minutes=20 * k), task_id=f"{group}-flooded",
                           meta={**meta, "role": "retry"})
             for k in range(retries)]
    q_ents = draw_entities(rng)
    query = build_episode(f"{group}-query", task, _text(rng, task, q_ents, "canonical"), q_ents, calls=task.steps,
                          started_at=t0 + timedelta(days=2), relevant=[useful.episode_id],
                          meta={**meta, "role": "query"})
    return _by_time([useful, *bg, *flood]) + [query]


def _lucky(rng: random.Random, i: int, t0: datetime) -> list[Episode]:
    group = f"lucky-{i:03d}"
    task = TASK_TYPES[rng.choice(TRAP_TYPES)]
    meta = {"scenario": "lucky", "group": group, "order": list(task.steps)}
    out, right_ids = [], []
    for j in range(2):
        ents = draw_entities(rng)
        eid = f"{group}-right-{j}"
        right_ids.append(eid)
        out.append(build_episode(eid, task, _text(rng, task, ents, ("canonical", "paraphrase")[j]), ents,
                                 calls=task.steps, started_at=t0 + timedelta(days=j),
                                 meta={**meta, "role": "right", "lucky": False}))
    wrong = task.steps[-1:]
    ents = draw_entities(rng)
    out.append(build_episode(f"{group}-lucky", task, _text(rng, task, ents, "canonical"), ents, calls=wrong,
                             started_at=t0 + timedelta(days=2), meta={**meta, "role": "lucky", "lucky": True}))
    for j in range(3):
        ents = draw_entities(rng)
        out.append(build_episode(f"{group}-repeat-{j}", task, _text(rng, task, ents, "canonical"), ents,
                                 calls=wrong, error_at=wrong[-1], failure_cause="strategy",
                                 started_at=t0 + timedelta(days=3 + j),
                                 meta={**meta, "role": "repeat", "lucky": False}))
    ents = draw_entities(rng)
    out.append(build_episode(f"{group}-query", task, _text(rng, task, ents, "canonical"), ents, calls=task.steps,
                             started_at=t0 + timedelta(days=7), relevant=right_ids, meta={**meta, "role": "query"}))
    return out


def _policy(rng: random.Random, i: int, t0: datetime) -> list[Episode]:
    group = f"policy-{i:03d}"
    task = TASK_TYPES[rng.choice([n for n, t in TASK_TYPES.items() if t.flippable])]
    old, new = task.steps, task.steps[::-1]
    changed = t0 + timedelta(days=5)
    meta = {"scenario": "policy", "group": group, "policy_changed_at": changed.isoformat()}
    flip_error = f"{new[-1]} must now come after {new[0]} (policy of {changed.date().isoformat()})"
    plan = [("before", old, None, d) for d in range(4)] + [("after", old, old[-1], 5 + d) for d in range(2)] \
        + [("after", new, None, 7 + d) for d in range(2)]
    out, new_ok = [], []
    for j, (when, calls, err_at, day) in enumerate(plan):
        ents = draw_entities(rng)
        eid = f"{group}-{when}-{j}"
        if when == "after" and err_at is None:
            new_ok.append(eid)
        out.append(build_episode(eid, task, _text(rng, task, ents, rng.choice(("canonical", "paraphrase"))), ents,
                                 calls=calls, error_at=err_at, error=flip_error, failure_cause="strategy",
                                 started_at=t0 + timedelta(days=day) + _minutes(rng, 6),
                                 meta={**meta, "role": f"{when}_change", "policy_version": 1 + (day >= 5),
                                       "order": list(calls)}))
    ents = draw_entities(rng)
    out.append(build_episode(f"{group}-query", task, _text(rng, task, ents, "canonical"), ents, calls=new,
                             started_at=t0 + timedelta(days=9), relevant=new_ok,
                             meta={**meta, "role": "query", "policy_version": 2, "order": list(new)}))
    return out


def _strategic(rng: random.Random, i: int, t0: datetime) -> list[Episode]:
    group = f"strategic-{i:03d}"
    prereq = rng.choice(sorted(STRATEGIC_RULES))
    users = [n for n, t in TASK_TYPES.items() if t.steps and t.steps[0] == prereq]
    source = TASK_TYPES[rng.choice(users)]
    rule = STRATEGIC_RULES[prereq]
    meta = {"scenario": "strategic", "group": group, "rule": rule}
    ents = draw_entities(rng)
    src = build_episode(f"{group}-rule", source, _text(rng, source, ents, "canonical"), ents, calls=source.steps,
                        started_at=t0, reflection=rule,
                        meta={**meta, "role": "rule", "applies_to": [n for n in users if n != source.name]})
    bg = _background(rng, group, t0 + timedelta(hours=3), 48.0, 1,
                     rng.sample([n for n in TASK_TYPES if n not in users], 3))
    later = [n for n in users if n != source.name] or users
    queries = []
    for j in range(2):
        task = TASK_TYPES[later[j % len(later)]]
        q_ents = draw_entities(rng)
        queries.append(build_episode(f"{group}-query-{j}", task, _text(rng, task, q_ents, "canonical"), q_ents,
                                     calls=task.steps, started_at=t0 + timedelta(days=3, hours=j),
                                     relevant=[src.episode_id], meta={**meta, "role": "query"}))
    return _by_time([src, *bg]) + queries


_GENERATORS: dict[str, Callable[..., list[Episode]]] = {
    "lures": _lures, "floods": _floods, "lucky": _lucky, "policy": _policy, "strategic": _strategic}


def _by_time(eps: list[Episode]) -> list[Episode]:
    return sorted(eps, key=lambda e: (e.started_at, e.episode_id))


def generate(scenario: str, *, n: int, seed: int, **options: Any) -> list[Episode]:
    """``n`` groups of a scenario as episodes in replay order (their own ``started_at`` clock).

    Args:
        scenario: one of :data:`SCENARIOS`.
        n: groups (lure pairs, floods, …); each gets its own span of :data:`GROUP_DAYS` days.
        seed: everything is a pure function of ``(scenario, n, seed, options)``.
        **options: ``lures``: ``background_per_type`` (3); ``floods``: ``retries`` (15).

    Raises:
        ValueError: an unknown scenario or ``n < 1``.

    Examples:
        >>> [e.meta["role"] for e in generate("lucky", n=1, seed=1)][-5:]
        ['lucky', 'repeat', 'repeat', 'repeat', 'query']
    """
    if scenario not in _GENERATORS:
        raise ValueError(f"unknown synthetic scenario {scenario!r}; expected one of {list(SCENARIOS)}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer (got {n!r})")
    rng = random.Random(f"hindsight-synthetic/{scenario}/{seed}")
    out: list[Episode] = []
    for i in range(n):
        out.extend(_GENERATORS[scenario](rng, i, START + timedelta(days=GROUP_DAYS * i), **options))
    return out


# ---------------------------------------------------------------------------------------------------- fixtures
def fixture_dir() -> Path:
    """``datasets/synthetic`` of the project checkout."""
    return Path(__file__).resolve().parents[2] / "datasets" / "synthetic"


def write_fixtures(folder: str | Path | None = None, *, seed: int = FIXTURE_SEED,
                   sizes: Mapping[str, int] = FIXTURE_SIZES) -> dict[str, Path]:
    """Write ``<scenario>.jsonl`` for every scenario in ``sizes`` (with :func:`~.jsonl.write_jsonl`).

    Regenerating with the same seed and sizes gives byte-identical files.

    Examples:
        >>> paths = write_fixtures("/tmp/synthetic-fixtures")  # doctest: +SKIP
    """
    from .jsonl import write_jsonl

    folder = Path(folder) if folder is not None else fixture_dir()
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for scenario, n in sizes.items():
        out[scenario] = folder / f"{scenario}.jsonl"
        write_jsonl(generate(scenario, n=n, seed=seed), out[scenario])
    return out


if __name__ == "__main__":  # regenerate the committed fixtures: python -m hindsight_lab.datasets.synthetic
    write_fixtures()
