"""``hindsight-lab reembed``: rebuild every vector of a store with the configured embedding model."""

from __future__ import annotations

import argparse
from typing import Any

from .args import add_config, add_store, examples, existing_store, load_config


def add_parser(sub: Any) -> None:
    reembed = sub.add_parser("reembed", help="rebuild every vector of a store with the configured embedding model",
                             epilog=examples("hindsight-lab reembed --store memory-store --set "
                                             "embedder.model=sentence-transformers/all-mpnet-base-v2"))
    add_store(reembed, required=True)
    add_config(reembed, "LabConfig YAML file (its embedder.model is the new model)")
    reembed.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..memory import MemorySystem

    cfg = load_config(args)
    cfg = cfg.with_params(existing_store(args.store))
    mem = MemorySystem(cfg)
    done = mem.reembed()
    mem.close()
    print(f"re-embedded with {cfg.embedder.model}: " + ", ".join(f"{n} {b}" for b, n in done.items()))
    return 0
