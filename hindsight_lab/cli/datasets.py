"""``hindsight-lab datasets``: the registered datasets — list them, fetch them, print their paths."""

from __future__ import annotations

import argparse
from typing import Any

from .args import examples, positive_seconds


def add_parser(sub: Any) -> None:
    data = sub.add_parser("datasets", help="the registered datasets: list them, fetch them, print their paths",
                          description="Registered datasets: development splits of public recorded traces "
                          "(fetched into $HINDSIGHT_LAB_HOME/datasets) and the samples committed with the project.",
                          epilog=examples("hindsight-lab datasets list",
                                          "hindsight-lab datasets fetch tau-bench-airline-dev",
                                          "hindsight-lab datasets path tau-bench-airline-sample"))
    data_sub = data.add_subparsers(dest="action", required=True)
    listing = data_sub.add_parser("list", help="every dataset: source, licence, split rule, size, sha256, where",
                                  epilog=examples("hindsight-lab datasets list", "hindsight-lab datasets list --json"))
    listing.add_argument("--json", action="store_true", help="print JSON records")
    fetching = data_sub.add_parser("fetch", help="download the source, derive the split, verify its sha256, store it",
                                   epilog=examples("hindsight-lab datasets fetch tau-bench-airline-dev locomo-dev",
                                                   "hindsight-lab datasets fetch tau-bench-airline-dev --from "
                                                   "/mnt/mirror"))
    fetching.add_argument("names", nargs="+", help="dataset or group names")
    fetching.add_argument("--from", dest="source_dir", metavar="DIR",
                          help="take the files from this folder (a mirror, a copy of the data), not the network")
    fetching.add_argument("--url", help="download from this URL instead of the registered source (one dataset)")
    fetching.add_argument("--force", action="store_true", help="fetch again even when a verified copy is there")
    fetching.add_argument("--timeout", type=positive_seconds, default=60.0,
                          help="network timeout in seconds (default 60)")
    path = data_sub.add_parser("path", help="print the local file(s) of datasets (exit 2 when one is not here)",
                               epilog=examples("hindsight-lab datasets path tau-bench-airline-sample"))
    path.add_argument("names", nargs="+", help="dataset or group names")
    data.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..datasets import registry

    if args.action == "list":
        _print_list(registry, as_json=args.json)
        return 0
    if args.action == "path":
        for path in registry.resolve(args.names):
            print(path)
        return 0
    from ..datasets.fetch import fetch

    names = [e.name for n in args.names for e in registry.expand(n)]
    for name in names:
        done = fetch(name, from_dir=args.source_dir, url=args.url, force=args.force, timeout_s=args.timeout)
        extra = f", resumed at byte {done.resumed_at:,}" if done.resumed_at else ""
        print(f"{name}: {done.action} {done.path} (sha256 {done.sha256[:12]}… from {done.origin}{extra})")
    return 0


def _print_list(registry: Any, *, as_json: bool) -> None:
    import pandas as pd

    frame = pd.DataFrame(registry.list_rows())
    if as_json:
        print(frame.to_json(orient="records", indent=2))
        return
    frame["present"] = frame["present"].map({True: "yes", False: "no"})
    frame["sha256"] = frame["sha256"].str[:12]
    frame["size"] = frame["size"].map(lambda n: f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB")
    cols = ["name", "format", "source", "licence", "split", "size", "sha256", "present", "where"]
    with pd.option_context("display.width", 250, "display.max_colwidth", 70, "display.max_rows", 200):
        print(frame[cols].to_string(index=False))
    print(f"\nfetched datasets live in {registry.datasets_home()}; samples in {registry.samples_dir()}")
