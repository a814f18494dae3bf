"""``hindsight-lab demo``: the offline end-to-end demo on the embedded defaults."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import HindsightLabError
from .args import add_config, add_store, examples, load_config


def add_parser(sub: Any) -> None:
    demo = sub.add_parser("demo", help="offline end-to-end demo on the embedded defaults",
                          epilog=examples("hindsight-lab demo",
                                          "hindsight-lab demo --store demo-store --set retrieval.top_k=10"))
    add_store(demo, "folder for the embedded Chroma store (default: a temporary folder)")
    add_config(demo)
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..scenarios.demo import run_demo
    from ..memory import MemorySystem

    cfg = load_config(args)
    with tempfile.TemporaryDirectory(prefix="hindsight-demo-") as tmp:
        store = args.store or tmp
        if args.store and Path(args.store).exists() and any(Path(args.store).iterdir()):
            raise HindsightLabError(f"--store {args.store}: folder is not empty; the demo needs a fresh store")
        cfg = cfg.with_params({"store.path": str(store)})
        print(f"hindsight-lab {__version__} demo — embedded Chroma store in "
              f"{'a temporary folder' if not args.store else args.store}, model {cfg.embedder.model}\n")
        with MemorySystem(cfg) as mem:
            demo_run = run_demo(mem)
        _print_run(demo_run, cfg.retrieval.token_budget)
    return 0


def _print_run(run: Any, token_budget: int) -> None:
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_colwidth", 60):
        print("1. Writes: every episode becomes one L2 episode record; each reflection is a candidate rule that")
        print("   merges with its near-duplicates and is promoted to L3 after three different episodes.\n")
        print(run.events_frame().to_string(index=False), "\n")
        for title, res in (("2. Search", run.search), ("3. Search", run.refund_search)):
            print(f"{title}: {res.query!r}  (task_type {res.task_type or '—'}: {res.task_type_source}, "
                  f"{res.n_candidates} candidates from the recall paths)\n")
            frame = res.to_frame().drop(columns=["content", "id"])
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"), "\n")
            print(f"   Injection block ({res.tokens} tokens, budget {token_budget}):\n")
            print("   " + res.injection.text.replace("\n", "\n   "), "\n")
    print("Memory:", {k: v for k, v in run.stats.items() if k in ("episodes", "candidates", "rules")})
