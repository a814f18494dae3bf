"""The bench's corpus: a seeded generator of agent task instructions and their episodes, and the cache of the
corpus's embeddings.

The generator draws from a few dozen templates (hence a few dozen derived task types); draw ``j`` of a seed is the
same on every machine, and the first m texts of n are those of m, so one cache of n vectors serves every smaller
store. The embeddings are computed once and cached as ``.npy`` under a cache folder, keyed by
:data:`GENERATOR_VERSION`, the corpus seed, the model and the size; a store is filled with an embedder that returns
the cached vectors for corpus texts (:class:`LookupEmbedder`).

Examples:
    >>> from hindsight_lab.bench.corpus import generate
    >>> generate(seed=1, n=2)[1]
    (1, 'Escalate ticket #49214 about a damaged item to the sales team')
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import string
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..embed import BaseEmbedder

logger = logging.getLogger(__name__)

GENERATOR_VERSION = 1  # bump on any change to the generator below: it keys the embedding cache
CORPUS_SEED = 1

# --------------------------------------------------------------------------------------------------- corpus
_FIRST = ("Olivia Liam Emma Noah Ava Mateo Sofia Lucas Mia Arjun Chloe Kenji Amara Diego Hannah Yusuf Lea Omar "
          "Ingrid Tariq Zoe Marco Priya Felix Nadia Hugo Aisha Pavel Elena Kwame").split()
_LAST = ("Chen Smith Garcia Müller Rossi Dubois Kowalski Tanaka Okafor Silva Johansson Novak Haddad Patel Kim "
         "Nguyen Moreau Schmidt Costa Ivanova").split()
_WORDS = {
    "city": "Lyon Berlin Madrid Osaka Toronto Austin Lisbon Krakow Nairobi Denver Oslo Porto Seattle Dublin Milan "
            "Seoul Lima Brisbane Boston Prague".split(),
    "product": ["wireless headphones", "standing desk", "espresso machine", "hiking backpack", "office chair",
                "mechanical keyboard", "air purifier", "running shoes", "smart watch", "yoga mat", "desk lamp",
                "laptop sleeve", "bluetooth speaker", "coffee grinder", "rain jacket"],
    "service": "checkout search billing auth inventory notifications payments gateway recommendations".split(),
    "env": ["staging", "production", "eu-west", "us-east", "canary"],
    "team": ["platform", "data", "finance", "design", "sales", "support", "security", "mobile"],
    "issue": ["a late delivery", "a double charge", "a login failure", "a missing invoice", "a broken link",
              "a damaged item", "a password reset", "an expired coupon"],
    "month": "January February March April May June July August September October November December".split(),
    "vendor": ["Acme Supplies", "Northwind", "Globex", "Initech", "Umbrella Logistics", "Hooli Cloud", "Vandelay"],
    "pay": ["gift card", "PayPal", "the Visa ending 4242", "store credit", "bank transfer"],
    "weekday": "Monday Tuesday Wednesday Thursday Friday".split(),
    "title": ["Senior Analyst", "Team Lead", "Staff Engineer", "Product Manager", "Account Executive"],
    "color": ["black", "blue", "red", "grey", "green", "white"],
    "cabin": ["business", "premium economy", "first"],
    "car": ["compact", "SUV", "economy", "full-size"],
    "doc": ["expense report", "board deck", "budget sheet", "sales summary", "audit log"],
}
# (domain, phrasings, tools): "?tool" is called with probability 0.7; the other tools always are.
_TEMPLATES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("airline", ("Cancel reservation {code} for {name} and refund to the original card",
                 "{name} wants booking {code} cancelled with the fare refunded"),
     ("?get_reservation_details", "cancel_reservation", "refund_payment")),
    ("airline", ("Change the flight on booking {code} for {name} to {date} from {city} to {city2}",
                 "Move {name}'s flight {code} to {date}, still {city} to {city2}"),
     ("?get_reservation_details", "search_flights", "update_reservation_flights")),
    ("airline", ("Add {n} checked bags to reservation {code} for {name}",), ("?get_reservation_details",
                                                                              "update_reservation_baggages")),
    ("airline", ("Book a one-way flight from {city} to {city2} on {date} for {name} in economy",
                 "Find and book {name} a flight {city} to {city2} leaving {date}"), ("search_flights",
                                                                                    "book_reservation")),
    ("airline", ("Upgrade {name}'s booking {code} to {cabin}",), ("?get_reservation_details", "update_cabin")),
    ("airline", ("Add passenger {name2} to reservation {code} made by {name}",), ("update_passengers",)),
    ("retail", ("Return the {product} from order #{num} for {name} and refund to {pay}",
                "{name} wants to send back the {product} from order #{num}"),
     ("?get_order_details", "return_delivered_order_items")),
    ("retail", ("Exchange the {product} in order #{num} for a {color} one",), ("?get_order_details",
                                                                               "exchange_delivered_order_items")),
    ("retail", ("Cancel pending order #{num} for {name} because they ordered by mistake",
                "Cancel {name}'s order #{num} before it ships"), ("?get_order_details", "cancel_pending_order")),
    ("retail", ("Update the shipping address of order #{num} to {n} Main Street, {city}",),
     ("?get_order_details", "modify_pending_order_address")),
    ("retail", ("Change the payment method of order #{num} to {pay}",), ("modify_pending_order_payment",)),
    ("retail", ("Update {name}'s default address to {n} Harbour Road, {city}",), ("?find_user", "modify_user_address")),
    ("analytics", ("Summarise Q{q} sales for the {city} store by product line",
                   "Break down Q{q} revenue of the {city} store per product line"),
     ("query_sales_db", "create_report")),
    ("analytics", ("Build a dashboard of weekly active users for the {team} team since {date}",),
     ("query_events", "create_dashboard")),
    ("analytics", ("Compare {month} revenue across regions and email the result to {name}",),
     ("query_sales_db", "send_email")),
    ("analytics", ("Forecast demand for the {product} in {city} for the next {n} weeks",),
     ("query_sales_db", "run_forecast")),
    ("devops", ("Restart the {service} service in {env} after the {date} deploy",
                "The {service} service in {env} is stuck, restart it"), ("?check_service_health", "restart_service")),
    ("devops", ("Roll back {service} in {env} to version 2.{n}.{q}",), ("?list_deployments", "rollback_deployment")),
    ("devops", ("Scale {service} in {env} to {n} replicas",), ("scale_deployment",)),
    ("devops", ("Rotate the API keys for {service} and update the secret in {env}",),
     ("rotate_credentials", "update_secret")),
    ("devops", ("Open an incident for {service} latency in {env} and page the {team} team",),
     ("create_incident", "page_oncall")),
    ("devops", ("Allow port {port} from the {team} subnet to {service} in {env}",), ("update_firewall",)),
    ("hr", ("Schedule an onboarding session for {name} on {date} with the {team} team",),
     ("find_free_slot", "create_calendar_event")),
    ("hr", ("Approve {name}'s vacation request from {date} for {n} days",), ("?get_leave_balance",
                                                                              "approve_leave_request")),
    ("hr", ("Update {name}'s job title to {title} effective {date}",), ("update_employee_record",)),
    ("hr", ("Process expense claim {code} for {name} and reimburse {amount}",),
     ("?get_expense_claim", "approve_expense", "issue_reimbursement")),
    ("finance", ("Pay invoice {code} from {vendor} for {amount} before {date}",), ("?lookup_invoice",
                                                                                   "schedule_payment")),
    ("finance", ("Reconcile the {month} statement of the {city} account",), ("fetch_transactions",
                                                                             "reconcile_account")),
    ("finance", ("Issue a credit note of {amount} to {vendor} for invoice {code}",), ("create_credit_note",)),
    ("finance", ("Move {amount} from the operating account to payroll on {date}",), ("move_funds",)),
    ("support", ("Reply to ticket #{num} from {name} about {issue} and close it",),
     ("?get_ticket", "send_reply", "close_ticket")),
    ("support", ("Escalate ticket #{num} about {issue} to the {team} team",), ("?get_ticket", "escalate_ticket")),
    ("support", ("Merge duplicate tickets #{num} and #{num2} from {name}",), ("merge_tickets",)),
    ("calendar", ("Move my {date} meeting with {name} to {date2} at {time}",), ("find_event", "update_event")),
    ("calendar", ("Send {name} the {month} {doc} as a PDF",), ("search_files", "send_email")),
    ("calendar", ("Set up a weekly sync with {name} and {name2} on {weekday}s at {time}",),
     ("create_recurring_event",)),
    ("travel", ("Book a hotel in {city} from {date} for {n} nights for {name}",), ("search_hotels", "book_hotel")),
    ("travel", ("Rent a {car} car in {city} from {date} for {n} days",), ("search_cars", "book_car")),
    ("travel", ("Cancel {name}'s hotel booking {code} in {city}",), ("?get_booking", "cancel_hotel_booking")),
    ("crm", ("Create a lead for {vendor} in {city} assigned to {name}",), ("create_lead",)),
    ("crm", ("Log a call with {name} from {vendor} about {issue}",), ("search_contacts", "log_activity")),
    ("crm", ("Set the renewal date of {vendor}'s contract with {name} to {date}",), ("update_contract",)),
    ("retail", ("What is the status of order #{num} for {name}?",), ("get_order_details",)),
    ("airline", ("Look up the baggage allowance on reservation {code} for {name}",), ("get_reservation_details",)),
)
_PREFIX = ("", "", "", "Please ", "Can you ", "I need you to ", "Urgent: ")
_ERRORS = ("not found", "payment declined", "permission denied", "invalid state", "timeout")
_BASE = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _slots(rng: random.Random) -> dict[str, Any]:
    s: dict[str, Any] = {k: rng.choice(v) for k, v in _WORDS.items()}
    s["city2"] = rng.choice(_WORDS["city"])
    s["name"], s["name2"] = (f"{rng.choice(_FIRST)} {rng.choice(_LAST)}" for _ in range(2))
    s["code"] = "".join(rng.choices(string.ascii_uppercase, k=2)) + "".join(rng.choices(string.digits, k=2)) \
        + rng.choice(string.ascii_uppercase)
    s["num"], s["num2"] = rng.randrange(1000, 99999), rng.randrange(1000, 99999)
    s["date"], s["date2"] = (f"{rng.randint(1, 28)} {rng.choice(_WORDS['month'])}" for _ in range(2))
    s["time"], s["n"], s["q"] = f"{rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}", rng.randint(2, 9), \
        rng.randint(1, 4)
    s["port"] = rng.choice((22, 443, 5432, 6379, 8080, 9090, 9200))
    s["amount"] = f"{rng.choice(('€', '$', '£'))}{rng.randrange(20, 9000)}"
    return s


def _draw(seed: int, j: int) -> tuple[str, int, dict[str, Any], random.Random]:
    rng = random.Random(seed * 1_000_003 + j)
    t = rng.randrange(len(_TEMPLATES))
    pattern = rng.choice(_TEMPLATES[t][1])
    slots = _slots(rng)
    text, prefix = pattern.format(**slots), rng.choice(_PREFIX)
    if prefix and not pattern.startswith("{") and not pattern.endswith("?"):
        text = prefix + text[0].lower() + text[1:]
    used = {k: slots[k] for _, k, _, _ in string.Formatter().parse(pattern) if k}
    return text, t, used, rng


def generate(seed: int, n: int, exclude: frozenset[str] | set[str] = frozenset()) -> list[tuple[int, str]]:
    """``n`` distinct instructions ``(draw index, text)``, none in ``exclude``; the first m of n are those of m."""
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    j = 0
    while len(out) < n:
        text = _draw(seed, j)[0]
        if text not in seen and text not in exclude:
            seen.add(text)
            out.append((j, text))
        j += 1
    return out


def make_episode(seed: int, j: int) -> dict[str, Any]:
    """The trace-format episode of draw ``j``: 1–4 tool calls whose names follow the template."""
    text, t, slots, rng = _draw(seed, j)
    domain, _, tools = _TEMPLATES[t]
    calls = [name.lstrip("?") for name in tools if not name.startswith("?") or rng.random() < 0.7]
    outcome = rng.choices(("success", "failure", "partial"), weights=(7, 2, 1))[0]
    args = dict(list(slots.items())[:3])
    steps: list[dict[str, Any]] = []
    for i, name in enumerate(calls):
        steps.append({"type": "tool_call", "name": name, "arguments": args, "id": f"c{i}"})
        failed = outcome == "failure" and i == len(calls) - 1
        steps.append({"type": "tool_result", "id": f"c{i}", "content": "" if failed else "ok",
                      "error": rng.choice(_ERRORS) if failed else None})
    return {"episode_id": f"bench-{seed}-{j}", "instruction": text, "domain": domain, "steps": steps,
            "started_at": (_BASE + timedelta(minutes=rng.randrange(180 * 24 * 60))).isoformat(),
            "outcome": outcome, "failure_cause": "strategy" if outcome == "failure" else None}


# --------------------------------------------------------------------------------------------------- embeddings
class LookupEmbedder(BaseEmbedder):
    """The real model's name and tokenizer, with vectors of known texts read from the cache (else computed)."""

    def __init__(self, inner: Any, rows: dict[str, int], matrix: np.ndarray) -> None:
        self.inner, self.rows, self.matrix, self.query_cache_size, self.computed = inner, rows, matrix, 0, 0

    def name(self) -> str:
        return self.inner.name()

    def tokenizer_path(self) -> Any:
        return self.inner.tokenizer_path()

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        idx = [self.rows.get(t, -1) for t in texts]
        out = np.asarray(self.matrix[[max(i, 0) for i in idx]], dtype=np.float32)
        missing = [k for k, i in enumerate(idx) if i < 0]
        if missing:
            self.computed += len(missing)
            out[missing] = self.inner.embed([texts[k] for k in missing])
        return out


def _cache_key(model: str, n: int) -> str:
    raw = f"{GENERATOR_VERSION}|{CORPUS_SEED}|{model}|{n}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def corpus_embeddings(texts: Sequence[str], embedder: Any, cache_dir: Path, *, show_progress: bool = False
                      ) -> np.ndarray:
    """Embeddings of the corpus prefix ``texts``, from ``cache_dir`` when a run of this size or larger saved them."""
    n, model = len(texts), embedder.name()
    cache_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(cache_dir.glob("corpus-*-*.npy")):
        size, key = path.stem.split("-")[1:3]
        if size.isdigit() and int(size) >= n and key == _cache_key(model, int(size)):
            cached = np.load(path, mmap_mode="r")[:n]
            probe = sorted({0, n // 3, n // 2, n - 1})  # a generator edit without a version bump is caught here
            if np.all(np.sum(cached[probe] * embedder.embed([texts[i] for i in probe]), axis=1) > 0.999):
                logger.info("corpus embeddings: %d of %s read from the cache", n, size)
                return cached
            logger.warning("%s does not match the corpus texts; encoding again", path.name)
    from tqdm.auto import tqdm

    chunks = [embedder.embed(list(texts[lo:lo + 1024]))
              for lo in tqdm(range(0, n, 1024), desc="embedding corpus", unit="chunk", disable=not show_progress)]
    matrix = np.concatenate(chunks).astype(np.float32)
    tmp = cache_dir / f".corpus-{n}.{os.getpid()}.npy"
    np.save(tmp, matrix)
    tmp.replace(cache_dir / f"corpus-{n}-{_cache_key(model, n)}.npy")
    return matrix
