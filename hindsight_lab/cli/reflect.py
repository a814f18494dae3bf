"""``hindsight-lab reflect``: write recorded episodes and reflect where a trigger fires."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import NothingToDo
from .args import add_alias, add_config, add_store, examples, load_config, non_negative_int, out_file, store_params
from .replay import skipped_note


def add_parser(sub: Any) -> None:
    reflect = sub.add_parser("reflect", help="write recorded episodes and reflect where a trigger fires",
                             epilog=examples(
                                 "hindsight-lab reflect tau-bench-airline-sample --limit 5 --out reflections.jsonl",
                                 "hindsight-lab reflect tau-bench-airline-sample --store memory-store --reflector "
                                 "litellm --model openai/gpt-4o-mini"))
    reflect.add_argument("traces", nargs="+", help="trace file (JSONL, tau-bench, tau2-bench or Reflexion HotpotQA) "
                         "or registered dataset name; several are read as one history, in the order given")
    reflect.add_argument("--format", default="auto",
                         choices=["auto", "jsonl", "tau-bench", "tau2-bench", "reflexion-hotpotqa"])
    reflect.add_argument("--reflector", choices=["heuristic", "litellm"], help="overrides reflect.reflector")
    reflect.add_argument("--model", help="LiteLLM model string for --reflector litellm (reflect.llm.model)")
    reflect.add_argument("--api-base", help="OpenAI-compatible server URL for the LiteLLM reflector")
    reflect.add_argument("--skip-invalid", action="store_true", help="skip and count invalid lines (lenient)")
    reflect.add_argument("--limit", type=non_negative_int, help="keep the first N whole tasks (all their trials)")
    add_alias(reflect, "--limit-tasks", dest="limit", type=non_negative_int)  # its name until issue 51
    add_store(reflect, "store folder or Chroma server URL (default: a temporary folder)")
    reflect.add_argument("--out", type=out_file,
                         help="write one JSON line per episode (decision, reflection or rejection)")
    reflect.add_argument("--all", action="store_true", help="list every episode, not only those reflected on")
    add_config(reflect)
    reflect.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..datasets.combine import load_history
    from ..datasets.registry import resolve
    from ..memory import MemorySystem

    cfg = load_config(args)
    overrides: dict[str, object] = {}
    if args.reflector:
        overrides["reflect.reflector"] = args.reflector
    if args.model:
        overrides["reflect.llm.model"] = args.model
    if args.api_base:
        overrides["reflect.llm.api_base"] = args.api_base
    cfg = cfg.with_params(overrides) if overrides else cfg
    episodes, info = load_history(resolve(args.traces), format=args.format, strict=not args.skip_invalid,
                                  limit_tasks=args.limit)
    skipped = skipped_note(info)
    if skipped:
        print(f"read {info['name']}: {len(episodes)} episodes; {skipped}", file=sys.stderr)
    if not episodes:
        raise NothingToDo(f"{info['name']}: no episode to reflect on" + (f"; {skipped}" if skipped else ""))
    with tempfile.TemporaryDirectory(prefix="hindsight-reflect-") as tmp:
        cfg = cfg.with_params(store_params(args.store) or {"store.path": tmp})
        with MemorySystem(cfg) as mem:
            outcomes = mem.reflect_many(episodes)
            summary, layers = mem.reflection_stats(), mem.stats()
    _print_outcomes(outcomes, summary, layers, show_all=args.all)
    if args.out:
        _write_outcomes(outcomes, Path(args.out))
    return 0


def _print_outcomes(outcomes: list[Any], summary: dict[str, Any], layers: dict[str, Any], *, show_all: bool) -> None:
    import pandas as pd

    frame = pd.DataFrame([o.as_row() for o in outcomes])
    shown = frame if show_all else frame[frame["reflect"]]
    with pd.option_context("display.width", 200, "display.max_colwidth", 90, "display.max_rows", 500):
        print(shown.drop(columns=["memory_id"]).to_string(index=False, max_colwidth=100))
    print(f"\n{summary['episodes']} episodes, {summary['reflections']} reflections "
          f"(trigger rate {summary['trigger_rate']:.3f}); decisions {summary['decisions']}; "
          f"rejections {summary['rejections']}; writes {summary['writes']}; promotions {summary['promotions']}; "
          f"memory: {layers['episodes']} episodes, {layers['candidates']} candidates, {layers['rules']} rules")


def _write_outcomes(outcomes: list[Any], path: Path) -> None:
    """One JSON line per episode: its decision row, the reflection and the rejection detail."""
    from ..jsonio.reading import dump_line

    with path.open("w", encoding="utf-8") as fh:
        for o in outcomes:
            row = o.as_row()
            row["reflection"] = o.reflection.model_dump() if o.reflection else None
            row["rejection_detail"] = o.rejection.detail if o.rejection else None
            fh.write(dump_line(row, default=str) + "\n")
