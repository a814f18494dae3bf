"""``hindsight-lab maintain`` and ``hindsight-lab conflicts``: argument building and command bodies.

- ``maintain --store S [--now T]``: decay, archive and the conflict pass; prints the report (what was archived,
  decayed, merged, superseded, flagged).
- ``conflicts --store S [--png F] [--all] [--out CSV]``: the conflict pass without changing anything — clusters,
  the contradicting pairs and what maintenance would do with them, and an optional 2-D picture.
- ``conflicts --pairs FILE.jsonl [--predictions OUT.jsonl]``: judge hand-labelled pairs, print precision and recall.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigError
from .args import add_config, add_store, examples, existing_store, iso_time, load_config, out_file

_MAX_ROWS = 40


def add_parser(sub: Any) -> None:
    """Register ``maintain`` and ``conflicts`` on the CLI's subparsers."""
    m = sub.add_parser("maintain", help="decay, archive and the conflict pass on a store; prints the report",
                       epilog=examples("hindsight-lab maintain --store memory-store",
                                       "hindsight-lab maintain --store memory-store --now 2024-01-02 --out "
                                       "maintenance.csv"))
    add_store(m, required=True)
    m.add_argument("--now", type=iso_time,
                   help="ISO-8601 time of the maintenance clock (default: now; naive times are UTC)")
    m.add_argument("--out", type=out_file, help="also write the report as CSV")
    add_config(m)
    m.set_defaults(func=run_maintain)

    c = sub.add_parser("conflicts", help="clusters and contradicting rules of a store (read-only), or judge "
                       "labelled rule pairs (--pairs)",
                       epilog=examples(
                           "hindsight-lab conflicts --store memory-store --png conflicts.png --out pairs.csv",
                           "hindsight-lab conflicts --pairs conflict-pairs-sample --predictions pred.jsonl"))
    where = c.add_mutually_exclusive_group(required=True)
    add_store(where)
    where.add_argument("--pairs", help="JSONL of labelled pairs {id, task_type, rule_a, rule_b, conflict, kind}, or "
                       "a registered pairs dataset (conflict-pairs-dev, conflict-pairs-sample)")
    c.add_argument("--predictions", type=out_file,
                   help="with --pairs: write one JSON line per pair (label, verdict, reason)")
    c.add_argument("--png", type=out_file, help="with --store: write a 2-D projection of clusters and flagged pairs")
    c.add_argument("--all", action="store_true", help="with --store: list every compared pair, not only conflicts")
    c.add_argument("--out", type=out_file, help="with --store: write the compared pairs as CSV")
    c.add_argument("--judge", choices=["offline", "litellm"], help="overrides conflicts.judge")
    c.add_argument("--model", help="LiteLLM model string for --judge litellm (conflicts.llm.model)")
    c.add_argument("--api-base", help="OpenAI-compatible server URL for the LiteLLM judge")
    add_config(c)
    c.set_defaults(func=run_conflicts)


def _config(args: argparse.Namespace, *, store: bool = True) -> Any:
    cfg = load_config(args)
    over: dict[str, Any] = {}
    if getattr(args, "judge", None):
        over["conflicts.judge"] = args.judge
    if getattr(args, "model", None):
        over["conflicts.llm.model"] = args.model
    if getattr(args, "api_base", None):
        over["conflicts.llm.api_base"] = args.api_base
    if store:
        over.update(existing_store(args.store))
    return cfg.with_params(over) if over else cfg


def _show(frame: Any, **kw: Any) -> str:
    import pandas as pd

    with pd.option_context("display.width", 220, "display.max_colwidth", 90, "display.max_rows", 500):
        return frame.to_string(index=False, **kw)


def run_maintain(args: argparse.Namespace) -> int:
    from ..memory import MemorySystem

    cfg = _config(args)
    with MemorySystem(cfg) as mem:
        report = mem.maintain(args.now)
        stats = mem.stats()
    frame = report.to_frame()
    print(f"maintenance at {report.now.isoformat()}: {len(report.archived)} archived, {len(report.decayed)} "
          f"decayed, {len(report.merged)} merged, {len(report.superseded)} superseded, {len(report.flagged)} "
          f"flagged pairs")
    if report.conflicts is not None:
        s = report.conflicts.summary()
        print(f"conflict pass: {s['records']} rules and candidates, {s['clusters']} clusters, {s['noise']} noise, "
              f"{s['pairs']} pairs compared, {s['conflicts']} contradicting ({s['seconds']['total']:.2f} s)")
    if len(frame):
        print(_show(frame.head(_MAX_ROWS)))
        if len(frame) > _MAX_ROWS:
            print(f"… {len(frame) - _MAX_ROWS} more rows (--out FILE.csv writes them all)")
    print(f"memory now: {stats['episodes']} episodes, {stats['candidates']} candidates, {stats['rules']} rules, "
          f"{stats['archived']} archived")
    if args.out:
        frame.to_csv(args.out, index=False)
    return 0


def run_conflicts(args: argparse.Namespace) -> int:
    if args.pairs:
        return _judge_file(args)
    for flag in ("predictions",):
        if getattr(args, flag):
            raise ConfigError(f"--{flag} goes with --pairs")
    from ..conflicts.scan import read_store, scan
    from ..memory import MemorySystem

    cfg = _config(args).with_params({"store.read_only": True})  # a read-only pass: it may run beside a writer
    with MemorySystem(cfg) as mem:
        plan = scan(*read_store(mem.store), cfg)
    s = plan.summary()
    print(f"{s['records']} rules and candidates: {s['clusters']} clusters, {s['noise']} noise; {s['pairs']} pairs "
          f"compared {s['pairs_by_source']}; {s['conflicts']} contradicting: maintenance would merge {s['merged']}, "
          f"supersede {s['superseded']}, flag {s['flagged']} pairs (judge {plan.judge.get('name')}, "
          f"{s['seconds']['total']:.2f} s)")
    if len(plan.records):
        print("\nclusters:\n" + _show(plan.clusters_frame()))
        pairs = plan.pairs_frame(conflicts_only=not args.all)
        print(f"\n{'compared' if args.all else 'contradicting'} pairs:")
        print(_show(pairs.drop(columns=["reason"])) if len(pairs) else "(none)")
        if args.out:
            plan.pairs_frame().to_csv(args.out, index=False)
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        from ..report.conflicts import plot_plan

        plot_plan(plan, args.png)
        print(f"\npicture written to {args.png}")
    return 0


def _judge_file(args: argparse.Namespace) -> int:
    for flag in ("png", "out", "all"):
        if getattr(args, flag):
            raise ConfigError(f"--{flag.replace('_', '-')} goes with --store, not --pairs")
    from ..conflicts.pairs import judge_pairs, scores, write_predictions
    from ..datasets.conflict_pairs import load_pairs
    from ..conflicts.scan import make_judge
    from ..datasets.registry import resolve

    cfg = _config(args, store=False)
    (path,) = resolve(args.pairs)
    pairs = load_pairs(path)
    judge = make_judge(cfg)
    judged = judge_pairs(pairs, judge)
    sc = scores(judged)
    wrong = [j for j in judged if j.pair.conflict != j.verdict.conflict]
    print(f"{args.pairs}: {sc['n']} pairs, judge {cfg.conflicts.judge}: precision {sc['precision']:.3f}, recall "
          f"{sc['recall']:.3f}, F1 {sc['f1']:.3f} (tp {sc['tp']}, fp {sc['fp']}, fn {sc['fn']}, tn {sc['tn']})")
    for kind, v in sc["by_kind"].items():
        print(f"  {kind:<32} {v['correct']}/{v['n']} correct")
    for j in wrong:
        print(f"  wrong: {j.pair.id} label {j.pair.conflict} ({j.pair.kind}), predicted {j.verdict.conflict}: "
              f"{j.verdict.reason}")
    if hasattr(judge, "usage_summary"):
        print(f"judge usage: {judge.usage_summary()}")
    if args.predictions:
        print(f"predictions written to {write_predictions(judged, args.predictions)}")
    return 0
