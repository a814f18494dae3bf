"""``hindsight-lab bench``: the default search benchmark, or ``--mcp``, ``--sweep``, ``--conflicts N`` — each
computed by a module of :mod:`hindsight_lab.bench`, printed here (and written as JSON)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ..bench.sweep import DEFAULT_DATASET as SWEEP_DATASET  # a light module: its imports are inside run_sweep_bench
from ..errors import ConfigError
from .args import (add_config, add_store, examples, load_served_config, non_negative_int, out_file, positive_int,
                   sizes, system_names)


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("bench", help="speed and memory benchmark of search and write (prints and writes JSON)",
                            epilog=examples("hindsight-lab bench --sizes 1000,10000 --queries 50 --out bench.json",
                                            "hindsight-lab bench --mcp --clients 8 --ops 100 --set "
                                            "embedder.model=hashing-256",
                                            "hindsight-lab bench --sweep --sweep-configs 200",
                                            "hindsight-lab bench --replay --replay-sizes 1000,10000 --out r.json",
                                            "hindsight-lab bench --conflicts 200 --out conflicts-bench.json"))
    parser.add_argument("--sizes", default="10000,100000", type=sizes,
                        help="store sizes in L2 episodes (default 10000,100000)")
    parser.add_argument("--queries", type=positive_int, default=200, help="distinct query texts (default 200)")
    parser.add_argument("--write-n", type=positive_int, default=2000, help="episodes written for the write comparison")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="embedding model (default: the packaged MiniLM)")
    parser.add_argument("--out", type=out_file,
                        help="JSON file (default <HINDSIGHT_LAB_HOME>/bench/bench-<timestamp>.json)")
    parser.add_argument("--cache-dir", help="corpus embedding cache (default <HINDSIGHT_LAB_HOME>/bench/cache)")
    parser.add_argument("--postgres", metavar="URL",
                        help="also measure every size on a fresh namespace of this Postgres database "
                             "(postgresql://… or postgresql+embedded://…), in the same run")
    _mcp_arguments(parser)
    _sweep_arguments(parser)
    _replay_arguments(parser)
    parser.add_argument("--conflicts", type=non_negative_int, metavar="N",
                        help="time the conflict pass (HDBSCAN clustering, pairing, judging) on N generated rules")
    parser.set_defaults(func=run)


def _mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """``--mcp``: concurrent MCP clients against a memory server."""
    group = parser.add_argument_group("MCP server load test (--mcp)")
    group.add_argument("--mcp", action="store_true", help="benchmark a memory server over streamable HTTP instead")
    group.add_argument("--clients", type=positive_int, default=8, help="concurrent MCP clients (default 8)")
    group.add_argument("--ops", type=positive_int, default=200, help="operations per client (default 200)")
    group.add_argument("--servers", type=positive_int, default=1,
                       help="server processes on the one store, clients spread over them; a write is then also "
                            "searched for through the next server (default 1; more need a Postgres --store)")
    group.add_argument("--compare", action="store_true",
                       help="with a Postgres --store and --servers N: run Chroma (a temporary embedded folder, one "
                            "server), then Postgres with one and with N servers, one after the other, and print "
                            "them side by side")
    group.add_argument("--no-probe", dest="probe", action="store_false",
                       help="with --servers N: do not search for each write through the next server (the probes "
                            "share the wall time the throughput is measured over)")
    add_config(group, "LabConfig YAML the server loads, with an optional server: section (default: the defaults)")
    add_store(group, "store folder or Chroma server URL (default: a temporary folder)")
    group.add_argument("--seed", type=non_negative_int, default=0, help="seed of the operation mix and texts")


def _sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sweep``: the sweep's cached evaluator against full replays."""
    parser.add_argument("--sweep", action="store_true", help="benchmark the sweep's cached evaluator instead")
    parser.add_argument("--sweep-dataset", default=SWEEP_DATASET,
                        help=f"dataset of --sweep: a registered name or a file (default {SWEEP_DATASET})")
    parser.add_argument("--sweep-format", default="auto", help="its format (default: detected)")
    parser.add_argument("--sweep-configs", type=positive_int, default=1000, help="random weight configs (default 1000)")


def _replay_arguments(parser: argparse.ArgumentParser) -> None:
    """``--replay``: what a replay costs as the history grows."""
    group = parser.add_argument_group("replay cost by history size (--replay)")
    group.add_argument("--replay", action="store_true",
                       help="benchmark replays of synthetic histories instead (each system in its own process)")
    group.add_argument("--replay-sizes", type=sizes, default=[1000, 10000, 50000],
                       help="history sizes in episodes (default 1000,10000,50000)")
    group.add_argument("--replay-systems", type=system_names, default=["dense", "bm25", "hindsight"],
                       help="systems replayed (default dense,bm25,hindsight)")
    group.add_argument("--replay-queries", type=positive_int, default=200,
                       help="the last N episodes of each history are recalled as queries (default 200)")


def run(args: argparse.Namespace) -> int:
    """Run the chosen benchmark, print its figures (and write the JSON); 0 whether or not targets are met."""
    if getattr(args, "replay", False):
        return _replay(args)
    if getattr(args, "conflicts", None):
        return _conflicts(args)
    if getattr(args, "sweep", False):
        return _sweep(args)
    if getattr(args, "mcp", False):
        return _mcp(args)
    return _search(args)


def _write_json(out: dict[str, Any], path: str | None, stem: str) -> Path:
    """``--out``, else ``<HINDSIGHT_LAB_HOME>/bench/<stem>-<timestamp>.json``."""
    from .._env import home

    where = Path(path) if path else home() / "bench" / f"{stem}-{datetime.now():%Y%m%d-%H%M%S}.json"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return where


def _search(args: argparse.Namespace) -> int:
    from ..bench.search import format_table, run_bench

    out = run_bench(args.sizes, queries=args.queries, write_n=args.write_n, model=args.model,
                    cache_dir=Path(args.cache_dir) if args.cache_dir else None, show_progress=True,
                    postgres_url=args.postgres)
    path = _write_json(out, args.out, "bench")
    print(format_table(out))
    print(f"\nwritten to {path}")
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from ..bench.mcp import format_mcp_table, run_mcp_bench
    from ..server.auth import read_token

    cfg, settings = load_served_config(args)
    if args.compare:
        from ..bench.mcp import format_mcp_comparison, run_mcp_comparison

        both = run_mcp_comparison(cfg, settings, store=args.store, servers=args.servers, clients=args.clients,
                                  ops=args.ops, seed=args.seed, token=read_token(settings.token_env))
        path = _write_json(both, args.out, "mcp")
        print(format_mcp_comparison(both))
        print(f"\nwritten to {path}")
        return 0
    out = run_mcp_bench(cfg, settings, clients=args.clients, ops=args.ops, store=args.store, seed=args.seed,
                        token=read_token(settings.token_env), servers=args.servers, probe=args.probe)
    path = _write_json(out, args.out, "mcp")
    print(format_mcp_table(out))
    print(f"\nwritten to {path}")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from ..bench.sweep import format_sweep_bench, run_sweep_bench

    out = run_sweep_bench(args.sweep_dataset, fmt=args.sweep_format, configs=args.sweep_configs)
    print(format_sweep_bench(out))
    print(json.dumps(out, default=str))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from ..bench.replay import format_replay_bench, run_replay_bench

    out = run_replay_bench(args.replay_sizes, systems=args.replay_systems, queries=args.replay_queries,
                           model=args.model)
    print(format_replay_bench(out))
    if getattr(args, "out", None):
        Path(args.out).write_text(json.dumps(out, indent=2), encoding="utf-8")
        print(f"written to {args.out}")
    return 0


def _conflicts(args: argparse.Namespace) -> int:
    from ..bench.conflicts import format_conflict_bench, run_conflict_bench

    if args.conflicts < 2:
        raise ConfigError(f"--conflicts {args.conflicts}: expected at least 2 rules")
    out = run_conflict_bench(args.conflicts, model=args.model)
    print(format_conflict_bench(out))
    if getattr(args, "out", None):
        Path(args.out).write_text(json.dumps(out, indent=2), encoding="utf-8")
        print(f"written to {args.out}")
    return 0
