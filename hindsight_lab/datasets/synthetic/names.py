"""The words synthetic data is made of, and the one place that draws names, places and things from them.

Every synthetic generator of the project draws its people, places, products and topics here, through one kind of
object (:class:`Vocabulary`: named word pools, drawn from with ``rng.choice`` and ``rng.sample`` only). There are
three vocabularies, one per kind of data, and they stay apart on purpose: each seeded output — the committed
scenario fixtures, the planted conflicting rules, the benchmark corpus whose embeddings are cached by
:data:`~hindsight_lab.datasets.synthetic.corpus.CORPUS_VERSION` — is a function of the exact word lists and of the
order of the random draws, so merging the lists (or reordering a draw) would change every one of them.

- :data:`SUPPORT`: customers of a shop, an account service and a booking desk (the scenarios and the live
  environment); :func:`draw_entities` draws one customer.
- :data:`WORKPLACE`: agent instructions across domains (the benchmark corpus); :func:`draw_slots` fills every slot
  its templates use.
- :data:`RULE_TOPICS`: actions, purposes, counted things and conditions of the planted rules
  (:mod:`~hindsight_lab.datasets.synthetic.rules`).

Examples:
    >>> import random
    >>> SUPPORT.pick(random.Random(0), "city") in SUPPORT["city"]
    True
    >>> sorted(draw_entities(random.Random(0)))[:4]
    ['city', 'city2', 'color', 'defect']
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Vocabulary:
    """Named word pools and the draws every generator makes from them.

    Each draw is exactly one call of the generator's ``random.Random`` (``choice`` or ``sample``), so a generator
    that draws through a vocabulary makes the same calls, in the same order, as one that indexes its own lists.
    """

    pools: Mapping[str, tuple[Any, ...]]

    def __getitem__(self, pool: str) -> tuple[Any, ...]:
        return self.pools[pool]

    def pick(self, rng: random.Random, pool: str) -> Any:
        """One word of ``pool`` (``rng.choice``)."""
        return rng.choice(self.pools[pool])

    def distinct(self, rng: random.Random, pool: str, k: int) -> list[Any]:
        """``k`` different words of ``pool`` (``rng.sample``)."""
        return rng.sample(self.pools[pool], k)

    def person(self, rng: random.Random) -> tuple[str, str]:
        """A first and a last name (first drawn first)."""
        first = self.pick(rng, "first")
        return first, self.pick(rng, "last")


SUPPORT = Vocabulary({
    "first": ("Maria", "Tomas", "Aisha", "Kenji", "Laura", "Omar", "Priya", "Lucas", "Ingrid", "Mateo", "Chloe",
              "Dmitri", "Fatima", "Henrik", "Yuki", "Rosa", "Nadia", "Felix"),
    "last": ("Alvarez", "Novak", "Okafor", "Tanaka", "Berg", "Haddad", "Sharma", "Moreau", "Lindqvist", "Rossi",
             "Dubois", "Ivanova", "Costa", "Nielsen", "Sato", "Ferreira", "Keller", "Walsh"),
    "city": ("Lisbon", "Denver", "Osaka", "Leeds", "Porto", "Austin", "Lyon", "Gdansk", "Tucson", "Bergen",
             "Seville", "Quebec", "Malmo", "Cork"),
    "color": ("blue", "green", "charcoal", "red", "beige", "navy", "olive", "white"),
    "product": ("rain jacket", "standing desk", "coffee grinder", "hiking boots", "wool sweater", "desk lamp",
                "yoga mat", "blender", "backpack", "office chair", "table fan", "travel mug"),
    "defect": ("damaged", "scratched", "broken", "cracked", "torn", "dented"),
    "plan": ("family plan", "premium plan", "student plan", "business plan"),
    "venue": ("dental check-up", "haircut", "table for four", "meeting room", "massage", "tennis court"),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"),
    "time": ("9:30", "11:00", "13:15", "15:45", "17:30", "19:00"),
})
"""Customers of a shop, an account service and a booking desk: the scenarios and the live environment."""

WORKPLACE = Vocabulary({
    "first": tuple("Olivia Liam Emma Noah Ava Mateo Sofia Lucas Mia Arjun Chloe Kenji Amara Diego Hannah Yusuf Lea "
                   "Omar Ingrid Tariq Zoe Marco Priya Felix Nadia Hugo Aisha Pavel Elena Kwame".split()),
    "last": tuple("Chen Smith Garcia Müller Rossi Dubois Kowalski Tanaka Okafor Silva Johansson Novak Haddad Patel "
                  "Kim Nguyen Moreau Schmidt Costa Ivanova".split()),
    "city": tuple("Lyon Berlin Madrid Osaka Toronto Austin Lisbon Krakow Nairobi Denver Oslo Porto Seattle Dublin "
                  "Milan Seoul Lima Brisbane Boston Prague".split()),
    "product": ("wireless headphones", "standing desk", "espresso machine", "hiking backpack", "office chair",
                "mechanical keyboard", "air purifier", "running shoes", "smart watch", "yoga mat", "desk lamp",
                "laptop sleeve", "bluetooth speaker", "coffee grinder", "rain jacket"),
    "service": tuple("checkout search billing auth inventory notifications payments gateway recommendations".split()),
    "env": ("staging", "production", "eu-west", "us-east", "canary"),
    "team": ("platform", "data", "finance", "design", "sales", "support", "security", "mobile"),
    "issue": ("a late delivery", "a double charge", "a login failure", "a missing invoice", "a broken link",
              "a damaged item", "a password reset", "an expired coupon"),
    "month": tuple("January February March April May June July August September October November December".split()),
    "vendor": ("Acme Supplies", "Northwind", "Globex", "Initech", "Umbrella Logistics", "Hooli Cloud", "Vandelay"),
    "pay": ("gift card", "PayPal", "the Visa ending 4242", "store credit", "bank transfer"),
    "weekday": tuple("Monday Tuesday Wednesday Thursday Friday".split()),
    "title": ("Senior Analyst", "Team Lead", "Staff Engineer", "Product Manager", "Account Executive"),
    "color": ("black", "blue", "red", "grey", "green", "white"),
    "cabin": ("business", "premium economy", "first"),
    "car": ("compact", "SUV", "economy", "full-size"),
    "doc": ("expense report", "board deck", "budget sheet", "sales summary", "audit log"),
})
"""Agent instructions across domains (airline, retail, devops, …): the benchmark corpus."""

SLOT_POOLS: tuple[str, ...] = ("city", "product", "service", "env", "team", "issue", "month", "vendor", "pay",
                               "weekday", "title", "color", "cabin", "car", "doc")
"""The :data:`WORKPLACE` pools :func:`draw_slots` fills one slot each from, in this order."""

RULE_TOPICS = Vocabulary({
    "task_type": ("refund", "booking", "account", "shipping", "billing", "support"),
    "action": (
        ("verify the customer's identity", "verifying the customer's identity"),
        ("look up the order history", "looking up the order history"),
        ("check the refund policy", "checking the refund policy"),
        ("confirm the shipping address", "confirming the shipping address"),
        ("lock the account", "locking the account"),
        ("export the monthly report", "exporting the monthly report"),
        ("quote the final price", "quoting the final price"),
        ("hold the seat", "holding the seat"),
        ("send the confirmation email", "sending the confirmation email"),
        ("issue the refund", "issuing the refund"),
        ("cancel the subscription", "cancelling the subscription"),
        ("reset the password", "resetting the password"),
        ("update the billing address", "updating the billing address"),
        ("create the return label", "creating the return label"),
        ("ship the replacement", "shipping the replacement"),
        ("book the appointment", "booking the appointment"),
        ("notify the duty manager", "notifying the duty manager"),
        ("close the support ticket", "closing the support ticket"),
        ("search the knowledge base", "searching the knowledge base"),
        ("escalate the case", "escalating the case"),
        ("apply the loyalty discount", "applying the loyalty discount"),
        ("record the call notes", "recording the call notes"),
        ("validate the coupon code", "validating the coupon code"),
        ("archive the old invoices", "archiving the old invoices"),
    ),
    "purpose": ("send invoice copies", "track parcel deliveries", "answer delay questions", "build revenue reports",
                "change customer addresses", "issue gift cards", "check seat availability",
                "merge duplicate accounts", "translate customer messages", "schedule callbacks",
                "estimate shipping costs", "collect feedback surveys"),
    "unit": (("retry", "payment API call", "times"), ("allow", "password attempts", None),
             ("send", "reminder emails", None), ("offer", "free checked bags", None), ("make", "search calls", None),
             ("keep", "open tickets per agent", None)),
    "tool_verb": ("fetch", "lookup", "send", "sync", "create", "push", "query", "route"),
    "tool_noun": ("order", "ticket", "seat", "label", "invoice", "refund", "account", "coupon", "parcel", "report",
                  "slot", "quote"),
    "condition": ("the customer is a gold member", "the order has already shipped", "the flight leaves within a day",
                  "the payment was declined twice", "the account is flagged for fraud", "the parcel is marked lost"),
})
"""Topics of the planted conflicting rules: actions (imperative, gerund), purposes, counted things
``(verb, thing, unit)``, tool name parts and conditions, by task type."""


def draw_entities(rng: random.Random) -> dict[str, str]:
    """One customer with an order, an account and a booking: the slots every scenario template may use.

    Examples:
        >>> e = draw_entities(random.Random(0))
        >>> e["name"].startswith(e["first"]), e["city"] != e["city2"], e["email"] == e["email"].lower()
        (True, True, True)
    """
    first, last = SUPPORT.person(rng)
    city, city2 = SUPPORT.distinct(rng, "city", 2)
    day, day2 = SUPPORT.distinct(rng, "weekday", 2)
    return {"first": first, "name": f"{first} {last}", "email": f"{first}.{last}@example.com".lower(),
            "city": city, "city2": city2, "oid": str(rng.randint(10000, 99999)), "color": SUPPORT.pick(rng, "color"),
            "product": SUPPORT.pick(rng, "product"), "defect": SUPPORT.pick(rng, "defect"),
            "plan": SUPPORT.pick(rng, "plan"), "venue": SUPPORT.pick(rng, "venue"), "weekday": day,
            "weekday2": day2, "time": SUPPORT.pick(rng, "time"), "ref": f"BK{rng.randint(1000, 9999)}"}


def draw_slots(rng: random.Random) -> dict[str, Any]:
    """Every slot of the benchmark corpus's templates: one word of each :data:`SLOT_POOLS` pool, then a second
    city, two people, a booking code, two numbers, two dates, a time, two small counts, a port and an amount.

    Examples:
        >>> s = draw_slots(random.Random(0))
        >>> s["city"] in WORKPLACE["city"], len(s["code"]), s["port"] in (22, 443, 5432, 6379, 8080, 9090, 9200)
        (True, 5, True)
    """
    s: dict[str, Any] = {k: WORKPLACE.pick(rng, k) for k in SLOT_POOLS}
    s["city2"] = WORKPLACE.pick(rng, "city")
    s["name"], s["name2"] = (" ".join(WORKPLACE.person(rng)) for _ in range(2))
    s["code"] = "".join(rng.choices(string.ascii_uppercase, k=2)) + "".join(rng.choices(string.digits, k=2)) \
        + rng.choice(string.ascii_uppercase)
    s["num"], s["num2"] = rng.randrange(1000, 99999), rng.randrange(1000, 99999)
    s["date"], s["date2"] = (f"{rng.randint(1, 28)} {WORKPLACE.pick(rng, 'month')}" for _ in range(2))
    s["time"], s["n"], s["q"] = f"{rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}", rng.randint(2, 9), \
        rng.randint(1, 4)
    s["port"] = rng.choice((22, 443, 5432, 6379, 8080, 9090, 9200))
    s["amount"] = f"{rng.choice(('€', '$', '£'))}{rng.randrange(20, 9000)}"
    return s
