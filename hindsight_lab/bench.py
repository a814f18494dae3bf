"""``hindsight-lab bench``: search latency, ANN recall, write throughput and peak memory, each against raw Chroma.

Everything is measured in one run on real text embedded with the real model (HNSW recall on random vectors means
nothing), with the query cache off and distinct query texts that are not in the corpus:

- **search**: for each store size, a fresh process opens the store and times :meth:`MemorySystem.search` against
  the raw baseline, ``embed_query`` + one ``collection.query(n_results=20)`` on the episodes collection, in
  alternating blocks of the same queries; its peak RSS is the search process's.
- **recall@20**: Chroma's top 20 from the raw query against the exact top 20 of a numpy scan of the stored vectors.
- **write**: :meth:`MemorySystem.write_episodes` in batches, embedding included, against ``embed`` + ``add`` on a
  raw collection with the same HNSW settings.

The corpus comes from a seeded generator of agent task instructions (a few dozen templates, hence a few dozen
derived task types). Its embeddings are computed once and cached as ``.npy`` under ``--cache-dir``; a store is
filled through ``write_episodes`` with an embedder that returns the cached vectors for corpus texts.

Examples:
    >>> from hindsight_lab.bench import generate
    >>> generate(seed=1, n=2)[1]
    (1, 'Escalate ticket #49214 about a damaged item to the sales team')
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import random
import resource
import shutil
import string
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ._env import home
from .embed._base import BaseEmbedder
from .errors import ConfigError

logger = logging.getLogger(__name__)

GENERATOR_VERSION = 1  # bump on any change to the generator below: it keys the embedding cache
CORPUS_SEED, QUERY_SEED, WRITE_SEED = 1, 2, 3
TOP_N, WARMUP, WRITE_BATCH, FILL_BATCH = 20, 5, 64, 5000
_BLOCK, _PAUSE_S = 20, 0.3  # search-vs-raw timing: queries per block, pause between blocks
TARGETS = {"search_ratio": 1.5, "growth": 1.3, "recall": 0.95, "write_ratio": 0.7, "peak_rss_mb": 1536.0}

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
class _LookupEmbedder(BaseEmbedder):
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


# --------------------------------------------------------------------------------------------------- measuring
def _config(path: Path, model: str | None = None) -> Any:
    """Default config on the store at ``path``, query cache off (``model``: the embedder it builds, if any).

    Episodes are embedded by their instruction, the text the corpus matrix holds, so the exact search the recall is
    measured against and the store index the same vectors."""
    from .config import LabConfig

    params: dict[str, Any] = {"store.path": str(path), "embedder.query_cache_size": 0, "episode.key": "instruction"}
    return LabConfig().with_params({**params, "embedder.model": model} if model else params)


def fill_store(path: Path, corpus: Sequence[tuple[int, str]], matrix: np.ndarray, embedder: Any,
               *, show_progress: bool = False) -> list[str]:
    """Write the corpus episodes through :meth:`MemorySystem.write_episodes`; returns their record ids in order."""
    from tqdm.auto import tqdm

    from .memory import MemorySystem
    from .trace import Episode

    lookup = _LookupEmbedder(embedder, {text: i for i, (_, text) in enumerate(corpus)}, matrix)
    ids: list[str] = []
    with MemorySystem(_config(path), embedder=lookup) as mem:
        for lo in tqdm(range(0, len(corpus), FILL_BATCH), desc=f"filling {len(corpus)}", disable=not show_progress):
            eps = [Episode.model_validate(make_episode(CORPUS_SEED, j)) for j, _ in corpus[lo:lo + FILL_BATCH]]
            ids += [r.id for r in mem.write_episodes(eps)]
    if lookup.computed:
        logger.warning("%d corpus texts were not in the embedding cache and were encoded", lookup.computed)
    return ids


def _summary(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)), "mean": float(a.mean())}


def search_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: time ``search`` and the raw baseline per query, and report peak RSS.

    ``spec`` holds ``store``, ``model``, ``warmup`` and ``queries`` (texts); the raw top-20 ids and query vectors
    come back for the recall computation, which runs in the parent (so the corpus matrix never counts here).
    """
    import psutil

    from .memory import MemorySystem

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    mem = MemorySystem(_config(Path(spec["store"]), spec["model"])).open()
    open_s = time.perf_counter() - t0
    col = mem.store.client.get_collection(mem.store.collection_name("episode"), embedding_function=None)

    def raw(q: str) -> tuple[list[str], np.ndarray]:
        v = mem.embedder.embed_query(q)
        return col.query(query_embeddings=[v], n_results=TOP_N)["ids"][0], v

    for q in spec["warmup"]:
        mem.search(q)
        raw(q)
    # Blocks, not per-query interleaving: a search leaves side effects (e.g. BLAS threads still spinning after the
    # rerank's matmul) that would slow a raw query run right after it and hide the search's own cost. The pause
    # lets them settle; alternating which side goes first in a block spreads drift in machine load evenly.
    search_ms, raw_ms, ids, vecs = [], [], [], []
    queries = spec["queries"]
    for b, lo in enumerate(range(0, len(queries), _BLOCK)):
        for side in ((0, 1) if b % 2 == 0 else (1, 0)):
            time.sleep(_PAUSE_S)
            for q in queries[lo:lo + _BLOCK]:
                t = time.perf_counter()
                if side == 0:
                    mem.search(q)
                    search_ms.append((time.perf_counter() - t) * 1000)
                else:
                    got, v = raw(q)
                    raw_ms.append((time.perf_counter() - t) * 1000)
                    ids.append(got)
                    vecs.append(v.tolist())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss_mb = psutil.Process().memory_info().rss / 2**20
    mem.close()
    return {"search_ms": _summary(search_ms), "raw_ms": _summary(raw_ms), "open_s": open_s, "peak_rss_mb": peak_mb,
            "rss_after_mb": rss_mb, "raw_ids": ids, "query_vectors": vecs,
            "load_1m": {"before": load_before, "after": os.getloadavg()[0]}}


def recall_at(raw_ids: Sequence[Sequence[str]], vectors: np.ndarray, matrix: np.ndarray, ids: Sequence[str],
              k: int = TOP_N) -> float:
    """Mean over queries of ``|ANN top-k ∩ exact top-k| / k``, exact by dot product (normalised: cosine)."""
    scores = np.asarray(vectors, dtype=np.float32) @ np.asarray(matrix, dtype=np.float32).T
    exact = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return float(np.mean([len({ids[i] for i in row} & set(got)) / k for row, got in zip(exact, raw_ids)]))


def measure_writes(path: Path, episodes: Sequence[Any], embedder: Any, *, batch: int = WRITE_BATCH
                   ) -> dict[str, float]:
    """Episodes/s of ``write_episodes`` vs ``embed`` + ``collection.add`` on a raw collection (first batch: warm-up)."""
    from .memory import MemorySystem
    from .store.chroma import make_client

    cfg = _config(path / "hindsight")
    h = cfg.store.hnsw
    col = make_client(path=str(path / "raw")).create_collection(
        "raw-episodes", embedding_function=None, configuration={"hnsw": {
            "space": "cosine", "ef_construction": h.ef_construction, "ef_search": h.ef_search,
            "max_neighbors": h.max_neighbors}})
    secs = [0.0, 0.0]
    with MemorySystem(cfg, embedder=embedder) as mem:
        for b, lo in enumerate(range(0, len(episodes), batch)):
            chunk = episodes[lo:lo + batch]
            for which in ((0, 1) if b % 2 == 0 else (1, 0)):
                t = time.perf_counter()
                if which == 0:
                    mem.write_episodes(chunk)
                else:
                    texts = [e.instruction for e in chunk]
                    col.add(ids=[e.episode_id for e in chunk], embeddings=embedder.embed(texts), documents=texts,
                            metadatas=[{"outcome": e.outcome} for e in chunk])
                if b:
                    secs[which] += time.perf_counter() - t
    n = len(episodes) - min(batch, len(episodes))
    return {"hindsight_eps": n / secs[0], "raw_eps": n / secs[1], "ratio": secs[1] / secs[0], "batch": batch}


def run_bench(sizes: Sequence[int], *, queries: int = 200, write_n: int = 2000, model: str = "all-MiniLM-L6-v2",
              cache_dir: Path | None = None, show_progress: bool = False) -> dict[str, Any]:
    """Run every measurement and return the JSON-ready result (figures, targets, machine; no paths)."""
    from .embed import make_embedder
    from .trace import Episode

    sizes = sorted(set(sizes))
    if not sizes or sizes[0] < TOP_N or queries < 1 or write_n < 1:
        raise ConfigError(f"bench: expected sizes >= {TOP_N}, queries >= 1 and write-n >= 1 "
                          f"(got sizes={list(sizes)}, queries={queries}, write-n={write_n})")
    embedder = make_embedder(model, query_cache_size=0)
    corpus = generate(CORPUS_SEED, sizes[-1])
    matrix = corpus_embeddings([t for _, t in corpus], embedder, cache_dir or home() / "bench" / "cache",
                               show_progress=show_progress)
    qs = [t for _, t in generate(QUERY_SEED, queries + WARMUP, exclude={t for _, t in corpus})]
    out: dict[str, Any] = {"schema": 1, "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "model": embedder.name(), "generator_version": GENERATOR_VERSION, "sizes": sizes,
                           "queries": queries, "top_n": TOP_N, "query_cache": "off", "search": {}}
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
        for n in sizes:
            store = Path(tmp) / f"store-{n}"
            t0 = time.perf_counter()
            ids = fill_store(store, corpus[:n], matrix[:n], embedder, show_progress=show_progress)
            fill_s = time.perf_counter() - t0
            spec, result = Path(tmp) / "spec.json", Path(tmp) / "result.json"
            spec.write_text(json.dumps({"store": str(store), "model": model, "warmup": qs[:WARMUP],
                                        "queries": qs[WARMUP:], "out": str(result)}))
            logger.info("searching the %d-episode store in a fresh process", n)
            subprocess.run([sys.executable, "-m", "hindsight_lab.bench", "--worker", str(spec)], check=True)
            res = json.loads(result.read_text())
            res["recall_at_20"] = recall_at(res.pop("raw_ids"), np.asarray(res.pop("query_vectors")), matrix[:n], ids)
            res["ratio_p50"] = res["search_ms"]["p50"] / res["raw_ms"]["p50"]
            out["search"][str(n)] = {"fill_s": fill_s, **res}
            shutil.rmtree(store, ignore_errors=True)
        if len(sizes) > 1:
            first, last = out["search"][str(sizes[0])], out["search"][str(sizes[-1])]
            out["growth_p50"] = last["search_ms"]["p50"] / first["search_ms"]["p50"]
            out["growth_raw_p50"] = last["raw_ms"]["p50"] / first["raw_ms"]["p50"]
        eps = [Episode.model_validate(make_episode(WRITE_SEED, j))
               for j, _ in generate(WRITE_SEED, write_n + WRITE_BATCH)]
        out["write"] = measure_writes(Path(tmp) / "write", eps, embedder)
    out["write"]["episodes"] = write_n
    out["targets"] = targets(out)
    out["all_pass"] = all(t["pass"] for t in out["targets"])
    out["machine"] = _machine()
    return out


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The acceptance targets, each with its value, limit and pass/miss."""
    rows = []
    for n, r in out["search"].items():
        rows += [(f"search p50 / raw p50 @ {n}", r["ratio_p50"], "<=", TARGETS["search_ratio"]),
                 (f"recall@{TOP_N} @ {n}", r["recall_at_20"], ">=", TARGETS["recall"]),
                 (f"peak RSS MB @ {n}", r["peak_rss_mb"], "<=", TARGETS["peak_rss_mb"])]
    if "growth_p50" in out:
        rows.append((f"search p50 growth {out['sizes'][0]}->{out['sizes'][-1]}", out["growth_p50"], "<=",
                     TARGETS["growth"]))
    rows.append(("write eps / raw eps", out["write"]["ratio"], ">=", TARGETS["write_ratio"]))
    return [{"name": name, "value": v, "op": op, "limit": lim, "pass": bool(v <= lim if op == "<=" else v >= lim)}
            for name, v, op, lim in rows]


def _machine() -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {"cpu_count": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "versions": {d: version(d) for d in ("hindsight-lab", "chromadb", "torch", "sentence-transformers",
                                                 "numpy")}}


def format_table(out: dict[str, Any]) -> str:
    """A readable table of the figures and targets."""
    lines = [f"hindsight-lab bench — {out['model']}, {out['queries']} distinct queries, query cache off, "
             f"{out['machine']['cpu_count']} CPUs", "",
             f"{'size':>8} {'search p50':>11} {'p95':>8} {'raw p50':>9} {'p95':>8} {'ratio':>6} {'recall@20':>10}"
             f" {'peak RSS':>9} {'RSS after':>10} {'open s':>7} {'fill s':>7} {'load 1m':>9}"]
    for n, r in out["search"].items():
        s, w = r["search_ms"], r["raw_ms"]
        lines.append(f"{n:>8} {s['p50']:>9.2f}ms {s['p95']:>6.2f}ms {w['p50']:>7.2f}ms {w['p95']:>6.2f}ms "
                     f"{r['ratio_p50']:>6.2f} {r['recall_at_20']:>10.3f} {r['peak_rss_mb']:>7.0f}MB "
                     f"{r['rss_after_mb']:>8.0f}MB {r['open_s']:>7.1f} {r['fill_s']:>7.1f} "
                     f"{r['load_1m']['before']:>4.1f}/{r['load_1m']['after']:<4.1f}")
    if "growth_p50" in out:
        lines.append(f"p50 growth {out['sizes'][0]}->{out['sizes'][-1]}: search {out['growth_p50']:.2f}x, "
                     f"raw {out['growth_raw_p50']:.2f}x")
    w = out["write"]
    lines += ["", f"write ({w['episodes']} episodes, batches of {w['batch']}, embedding included): hindsight "
              f"{w['hindsight_eps']:.1f} eps/s, raw {w['raw_eps']:.1f} eps/s", "", "targets:"]
    lines += [f"  {'PASS' if t['pass'] else 'MISS'}  {t['name']:<34} {t['value']:>9.3f}  (target {t['op']} "
              f"{t['limit']:g})" for t in out["targets"]]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- CLI
def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to its subparser."""
    parser.add_argument("--sizes", default="10000,100000", help="store sizes in L2 episodes (default 10000,100000)")
    parser.add_argument("--queries", type=int, default=200, help="distinct query texts (default 200)")
    parser.add_argument("--write-n", type=int, default=2000, help="episodes written for the write comparison")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="embedding model (default: the packaged MiniLM)")
    parser.add_argument("--out", help="JSON file (default <HINDSIGHT_LAB_HOME>/bench/bench-<timestamp>.json)")
    parser.add_argument("--cache-dir", help="corpus embedding cache (default <HINDSIGHT_LAB_HOME>/bench/cache)")
    from .server.bench import add_mcp_bench_arguments

    add_mcp_bench_arguments(parser)  # --mcp: concurrent MCP clients against a memory server
    from .sweep.bench import add_sweep_bench_arguments

    add_sweep_bench_arguments(parser)  # --sweep: the sweep's cached evaluator against full replays
    parser.add_argument("--conflicts", type=int, metavar="N",
                        help="time the conflict pass (HDBSCAN clustering, pairing, judging) on N generated rules")


def run_bench_cli(args: argparse.Namespace) -> int:
    """Run the benchmark, print the table and write the JSON; 0 whether or not targets are met."""
    if getattr(args, "conflicts", None):
        from .conflicts.bench import run_conflict_bench_cli

        return run_conflict_bench_cli(args)
    if getattr(args, "sweep", False):
        from .sweep.bench import run_sweep_bench_cli

        return run_sweep_bench_cli(args)
    if getattr(args, "mcp", False):
        from .server.bench import run_mcp_bench_cli

        return run_mcp_bench_cli(args)
    try:
        sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--sizes {args.sizes!r}: expected comma-separated integers, e.g. 10000,100000") from None
    out = run_bench(sizes, queries=args.queries, write_n=args.write_n, model=args.model,
                    cache_dir=Path(args.cache_dir) if args.cache_dir else None, show_progress=True)
    path = Path(args.out) if args.out else home() / "bench" / f"bench-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(format_table(out))
    print(f"\nwritten to {path}")
    return 0


def _worker_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    Path(spec["out"]).write_text(json.dumps(search_worker(spec)))


if __name__ == "__main__":  # the search process: python -m hindsight_lab.bench --worker SPEC
    if sys.argv[1:2] != ["--worker"] or len(sys.argv) != 3:
        sys.exit("usage: python -m hindsight_lab.bench --worker SPEC.json (internal; use `hindsight-lab bench`)")
    _worker_main(sys.argv[2])
