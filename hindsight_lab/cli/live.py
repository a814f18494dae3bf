"""``hindsight-lab live`` and ``hindsight-lab lures``: seeded side-by-side tables, one row per seed and system."""

from __future__ import annotations

import argparse
from typing import Any

from .args import add_config, examples, load_config, out_file, positive_int, system_names, whole_numbers


def add_parser(sub: Any) -> None:
    live = sub.add_parser("live", help="the live synthetic environment: an agent acts on what each system injects",
                          epilog=examples("hindsight-lab live --seeds 0,1,2 --tasks 120 --out live.csv",
                                          "hindsight-lab live --systems dense,hindsight --set retrieval.top_k=3"))
    _seeded_arguments(live, "none,dense,bm25,hindsight", "comma-separated system names",
                      "comma-separated environment seeds (one run each)")
    live.add_argument("--tasks", type=positive_int, default=240, help="tasks per run (retries come on top)")
    live.set_defaults(func=run_live)

    lures = sub.add_parser("lures", help="synthetic lexical lures: does a system inject the right memory before the "
                                         "lure that bm25 ranks first?",
                           epilog=examples("hindsight-lab lures --seeds 0,1 --pairs 30 --out lures.csv",
                                           "hindsight-lab lures --systems dense,hindsight --config "
                                           "experiments/configs/lure-resistant.yaml"))
    _seeded_arguments(lures, "hindsight", "comma-separated systems compared with bm25",
                      "comma-separated generator seeds (one set of pairs each)")
    lures.add_argument("--pairs", type=positive_int, default=60, help="lure pairs per seed")
    lures.set_defaults(func=run_lures)


def _seeded_arguments(parser: argparse.ArgumentParser, systems: str, systems_help: str, seeds_help: str) -> None:
    """The options of a seeded side-by-side command (``live``, ``lures``)."""
    parser.add_argument("--systems", default=systems, type=system_names, help=systems_help)
    parser.add_argument("--seeds", default="0", type=whole_numbers, help=seeds_help)
    parser.add_argument("--top-k", type=positive_int, default=10, help="shared by every system")
    parser.add_argument("--out", type=out_file, help="also write the table as CSV")
    add_config(parser, "LabConfig YAML file for the hindsight system")


def _seeded_table(args: argparse.Namespace, build: Any, **formatters: Any) -> int:
    """Shared by ``live`` and ``lures``: one table row per seed and system (``build(systems, seeds)``), printed and
    written as CSV with ``--out``."""
    import pandas as pd

    table = build(args.systems, args.seeds)
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False, formatters=formatters or None))
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"table written to {args.out}")
    return 0


def run_live(args: argparse.Namespace) -> int:
    from ..scenarios.live import live_table

    return _seeded_table(args, lambda systems, seeds: live_table(
        systems, seeds=seeds, n_tasks=args.tasks, config=load_config(args), top_k=args.top_k, show_progress=True))


def run_lures(args: argparse.Namespace) -> int:
    from ..scenarios.lures import lure_table

    whole = "{:.0f}".format  # pair counts (the mean row averages them)
    return _seeded_table(args, lambda systems, seeds: lure_table(
        systems, seeds=seeds, n_pairs=args.pairs, config=load_config(args), top_k=args.top_k), pairs=whole, lured=whole)
