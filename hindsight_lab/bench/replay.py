"""``hindsight-lab bench --replay``: what a replay costs as the recorded history grows.

A synthetic history of ``n`` episodes (:func:`history`: the benchmark corpus's tasks, each run ``runs`` times, the
runs of a task spread evenly over the history, on one forward clock) is replayed through each system, one system
per process (its peak memory, ``VmHWM``, is then its own). Every episode is written as a replay writes it (reflection
included, for ``hindsight``); the last ``queries`` episodes are also recalled first, as replay queries, so the
per-query time is read on a store that holds the whole history. Every text is embedded ahead in batches, as a replay
prefetches it, and that time is reported apart (``prefetch_s``).

Per system and size: episodes per second over the whole replay (writes and queries), per-query p50/p95 (ms),
per-write mean (ms), peak memory, and across sizes the growth ratio of the per-query p50 from the smallest to the
largest history (the target: at most 2 for ``hindsight`` from 1k to 50k).

Examples:
    >>> eps = history(8, runs=2)
    >>> [e.task_id for e in eps][:4], len({e.episode_id for e in eps})
    (['bench-t0', 'bench-t1', 'bench-t2', 'bench-t3'], 8)
"""

from __future__ import annotations

import multiprocessing
import random
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import numpy as np

__all__ = ["format_replay_bench", "history", "run_replay_bench"]

SIZES = (1000, 10_000, 50_000)
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
SYSTEMS = ("dense", "bm25", "hindsight")


def history(n: int, *, runs: int = 4, seed: int = 0) -> list[Any]:
    """``n`` episodes: ``n // runs`` corpus tasks run ``runs`` times each, task ``j``'s runs at positions ``j``,
    ``j + T``, ``j + 2T``… (``T`` tasks), one minute apart; a later run of a task keeps its request and tools and
    draws its own outcome."""
    from ..datasets.synthetic.corpus import corpus_episode
    from ..trace import Episode

    tasks = max(n // runs, 1)
    out = []
    for k in range(n):
        j, r = k % tasks, k // tasks
        ep = corpus_episode(seed, j)
        rng = random.Random(f"bench-replay/{seed}/{k}")
        outcome = ep["outcome"] if r == 0 else rng.choices(("success", "failure"), weights=(6, 4))[0]
        at = START + timedelta(minutes=k)
        out.append(Episode.model_validate({
            **ep, "episode_id": f"bench-{seed}-{j}-r{r}", "task_id": f"bench-t{j}", "outcome": outcome,
            "failure_cause": "strategy" if outcome == "failure" else None, "started_at": at.isoformat()}))
    return out


def _replay_one(job: dict[str, Any]) -> dict[str, Any]:
    """One system over one history, in a process of its own."""
    from ..config import LabConfig
    from ..embed import make_embedder
    from ..replay.runner import prefetch
    from ..replay.systems import BASELINE_KEY, build_systems
    from .search import peak_rss_mb

    cfg = LabConfig().with_params({"embedder.model": job["model"]})
    episodes = history(job["n"], runs=job["runs"], seed=job["seed"])
    t = time.perf_counter()
    embedder, _ = prefetch(make_embedder(job["model"]), episodes, [], cfg, keys=(BASELINE_KEY,))
    prefetch_s = time.perf_counter() - t
    (system,) = build_systems([job["system"]], config=cfg, embedder=embedder, top_k=10,
                              token_budget=cfg.retrieval.token_budget)
    first_query = len(episodes) - job["queries"]
    query_ms, write_ms, day = [], [], None
    start = time.perf_counter()
    try:
        for k, ep in enumerate(episodes):
            now = ep.started_at
            if day is not None and now.date() != day:
                system.maintain(now)
            day = now.date()
            if k >= first_query:
                t = time.perf_counter()
                system.recall(ep.instruction, now)
                query_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            system.observe(ep, now)
            write_ms.append((time.perf_counter() - t) * 1000)
        total = time.perf_counter() - start
    finally:
        system.close()
    return {"system": job["system"], "n": job["n"], "episodes_per_s": len(episodes) / total, "total_s": total,
            "prefetch_s": prefetch_s, "query_p50_ms": float(np.percentile(query_ms, 50)),
            "query_p95_ms": float(np.percentile(query_ms, 95)), "write_mean_ms": float(np.mean(write_ms)),
            "write_p95_ms": float(np.percentile(write_ms, 95)), "peak_rss_mb": peak_rss_mb(),
            "queries": len(query_ms)}


def run_replay_bench(sizes: Sequence[int] = SIZES, *, systems: Sequence[str] = SYSTEMS, queries: int = 200,
                     runs: int = 4, seed: int = 0, model: str = "all-MiniLM-L6-v2") -> dict[str, Any]:
    """Every system over every history size (module docstring), each in a fresh process; the growth ratio of
    each system's per-query p50 from the smallest size to the largest."""
    ctx = multiprocessing.get_context("spawn")
    rows = []
    for n in sizes:
        for system in systems:
            job = {"n": int(n), "system": system, "queries": min(int(queries), int(n)), "runs": runs, "seed": seed,
                   "model": model}
            with ctx.Pool(1) as pool:
                rows.append(pool.apply(_replay_one, (job,)))
    growth = {}
    for system in systems:
        mine = sorted((r for r in rows if r["system"] == system), key=lambda r: r["n"])
        if len(mine) > 1:
            growth[system] = mine[-1]["query_p50_ms"] / mine[0]["query_p50_ms"]
    small, large = min(sizes), max(sizes)
    target = growth.get("hindsight")
    return {"sizes": list(sizes), "systems": list(systems), "queries": queries, "runs_per_task": runs,
            "model": model, "rows": rows, "growth_p50": growth,
            "targets": {f"hindsight per-query p50 at {large} <= 2 x at {small}":
                        None if target is None else bool(target <= 2.0)}}


def format_replay_bench(out: dict[str, Any]) -> str:
    """The table ``bench --replay`` prints."""
    lines = [f"replay cost by history size ({out['runs_per_task']} runs a task, the last {out['queries']} episodes "
             f"recalled as queries, model {out['model']}):",
             f"{'system':10} {'episodes':>9} {'ep/s':>8} {'query p50':>10} {'query p95':>10} {'write mean':>11} "
             f"{'peak MB':>8} {'prefetch s':>10}"]
    for r in out["rows"]:
        lines.append(f"{r['system']:10} {r['n']:>9} {r['episodes_per_s']:>8.1f} {r['query_p50_ms']:>8.2f}ms "
                     f"{r['query_p95_ms']:>8.2f}ms {r['write_mean_ms']:>9.2f}ms {r['peak_rss_mb']:>8.0f} "
                     f"{r['prefetch_s']:>10.1f}")
    for system, g in out["growth_p50"].items():
        lines.append(f"growth of the per-query p50, {min(out['sizes'])} → {max(out['sizes'])} episodes: "
                     f"{system} × {g:.2f}")
    for name, ok in out["targets"].items():
        lines.append(f"target {name}: {'met' if ok else 'not met' if ok is not None else 'n/a'}")
    return "\n".join(lines)
