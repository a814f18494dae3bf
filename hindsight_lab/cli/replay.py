"""``hindsight-lab replay``: recorded traces through memory systems side by side."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .args import add_config, examples, load_config, non_negative_int, out_folder, positive_int, system_names

if TYPE_CHECKING:
    from ..replay.report import ReplayReport


def add_parser(sub: Any) -> None:
    replay = sub.add_parser("replay", help="replay recorded traces through memory systems side by side",
                            epilog=examples(
                                "hindsight-lab replay tau-bench-airline-sample --out reports/tau",
                                "hindsight-lab replay tau-bench-airline-dev --limit 10 --systems dense,bm25,hindsight "
                                "--set retrieval.top_k=10",
                                "hindsight-lab replay tau-bench-airline-sample --explain tau-airline-t1-r1"))
    replay.add_argument("dataset", nargs="+", help="trace file (JSONL, tau-bench, tau2-bench, Reflexion HotpotQA "
                        "log or LoCoMo JSON) or registered dataset name (hindsight-lab datasets list); several are "
                        "replayed as one history, in the order given")
    replay.add_argument("--format", default="auto",
                        choices=["auto", "jsonl", "tau-bench", "tau2-bench", "reflexion-hotpotqa", "locomo"])
    replay.add_argument("--systems", default="none,dense,bm25,dense+ok,bm25+ok,hindsight", type=system_names,
                        help="comma-separated system names (dense+ok, bm25+ok: the baselines over successful "
                        "episodes only)")
    replay.add_argument("--top-k", type=positive_int, default=10,
                        help="shared by every system (the largest k reported)")
    replay.add_argument("--limit", type=non_negative_int, help="keep the first N whole tasks (or conversations)")
    replay.add_argument("--skip-invalid", action="store_true", help="skip and count invalid JSONL lines")
    replay.add_argument("--seed", type=non_negative_int, default=0,
                        help="seed of the bootstrap and randomization tests")
    replay.add_argument("--baseline-key", choices=["instruction", "request_tools", "summary"],
                        help="the text the dense and bm25 baselines index (default: request_tools; "
                        "summary for LoCoMo's conversation turns)")
    replay.add_argument("--out", type=out_folder,
                        help="folder for report.html (tables and plots in one file that opens offline), "
                        "metrics.json, episodes.csv and the plots, written at the end; meanwhile it holds the resume "
                        "journal (.replay-journal)")
    replay.add_argument("--resume", action="store_true",
                        help="continue the killed replay whose --out DIR this is (same arguments; no journal there: "
                        "start from scratch)")
    replay.add_argument("--explain", metavar="ID[,ID...]",
                        help="instead of the figures, show why these queries (episode ids) recalled what they did: "
                        "every candidate of the hindsight search, its rerank terms and score, what was injected, "
                        "and its grade under each judging mode (episode datasets; no MLflow run)")
    replay.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                        help="log the replay as an MLflow run (default: on)")
    replay.add_argument("--mlflow-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else "
                        "sqlite:///$HINDSIGHT_LAB_HOME/mlflow.db, "
                        "else ~/.hindsight_lab/mlflow.db)")
    replay.add_argument("--mlflow-experiment", help="MLflow experiment (default: hindsight-replay)")
    add_config(replay, "LabConfig YAML file for the hindsight system")
    replay.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..replay.runner import run_replay

    cfg = load_config(args)
    if args.explain:
        return explain(args, cfg)
    report = run_replay(args.dataset, format=args.format, systems=args.systems, config=cfg, top_k=args.top_k,
                        limit=args.limit, skip_invalid=args.skip_invalid, show_progress=True, seed=args.seed,
                        out=args.out, resume=args.resume, baseline_key=args.baseline_key)
    print_replay(report)
    if args.resume and not report.result.timing.get("resumed_units"):
        print(f"--resume: no journal of an unfinished replay in {args.out}: replayed from the start")
    if args.out:
        print(f"report written to {args.out}")
    if args.mlflow:
        from ..tracking import EXPERIMENT, default_tracking_uri, log_replay

        uri = args.mlflow_uri or default_tracking_uri()
        run_id = log_replay(report, config=cfg, tracking_uri=uri, experiment=args.mlflow_experiment or EXPERIMENT,
                            report_dir=args.out)
        print(f"MLflow run {run_id} in experiment {args.mlflow_experiment or EXPERIMENT!r} at {uri}")
    return 0


def explain(args: argparse.Namespace, cfg: Any) -> int:
    from ..sweep.explain import explain_queries

    ids = [q.strip() for q in args.explain.split(",") if q.strip()]
    for table in explain_queries(args.dataset, ids, config=cfg, format=args.format, limit=args.limit,
                                 top_k=args.top_k):
        print(table, end="\n\n")
    return 0


def skipped_note(dataset: dict) -> str:
    """``skipped 2 invalid lines (too_deep: 1, invalid_json: 1)``, or "" when a read skipped nothing."""
    skipped = dataset.get("skipped")
    if not skipped:
        return ""
    reasons = ", ".join(f"{r}: {n}" for r, n in skipped["by_reason"].items())
    return f"skipped {skipped['lines']} invalid line{'s' * (skipped['lines'] != 1)} ({reasons})"


def print_replay(report: "ReplayReport") -> None:
    import pandas as pd

    from ..evaluation.report import MODE_QUESTION

    result = report.result
    ds, repeat = result.dataset, result.mode("repeat")
    print(f"{ds['name']} ({ds['format']}): {ds['n_episodes']} episodes, {repeat.queries} "
          f"queries in {repeat.groups} groups; order: {ds['order']}; clock: {ds['clock']}; "
          f"top_k {ds['top_k']}, budget {ds['token_budget']} tokens; retrieval effects {ds['retrieval_effects']}")
    if skipped_note(ds):
        print(f"read: {skipped_note(ds)}")
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        for mode in result.judged_modes():
            cell = result.mode(mode)
            if mode == "repeat":  # its counts are on the dataset's line
                print(f"repeat ({MODE_QUESTION['repeat']}):")
            else:
                print(f"\n{mode} ({MODE_QUESTION[mode]}; {cell.queries} queries in {cell.groups} groups):")
            print(cell.table().to_string())
            if line := group_line(report, mode):
                print(line)
        absent = result.comparison.absent_modes()
        if absent:
            print(f"\n{', '.join(absent)}: n/a (no query of that kind in this replay)")
        by_source = report.source_table()
        if len(by_source):
            print("\nby source (queries of each file):")
            print(by_source.to_string(float_format=lambda v: f"{v:.3f}", na_rep="—"))
    for name, refl in ((n, v) for n, v in repeat.systems.items() if "trigger_rate" in v):
        print(f"{name}: trigger rate {refl['trigger_rate']:.3f} {refl['trigger_reasons']}, "
              f"promotions {refl['promotions']}, reuse rate {refl['reuse_rate']:.3f}")
    for name, lift in result.lift.items():
        print(_lift_line(name, lift))
    if result.rule_ceiling:
        print(_ceiling_line(result.rule_ceiling))
    if "histories" in result.lift_power:
        print(_power_line(result.lift_power))
    timing = dict(result.timing)
    resumed = timing.pop("resumed_units", 0)
    print("timing (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    if resumed:
        print(f"resumed: {resumed} units taken from the journal")


def group_line(report: "ReplayReport", mode: str, metrics: tuple[str, ...] = ("ndcg@5", "recall@10")) -> str:
    """How general hindsight's margin is (:meth:`ReplayReport.group_table`): group by group, against the best of
    the mode's baselines (:data:`~hindsight_lab.evaluation.report.RIVALS`) that were replayed, its mean, range and the
    groups it leads and trails; "" without them."""
    baselines = report.rivals(mode)
    if "hindsight" not in report.systems or not baselines:
        return ""
    parts = []
    for metric in metrics:
        margin = report.mode(mode).margins(metric, baselines=baselines)["margin"]
        parts.append(f"{metric} mean {margin.mean():+.3f} (from {margin.min():+.3f} to {margin.max():+.3f}), "
                     f"ahead in {int((margin > 0).sum())}, behind in {int((margin < 0).sum())} of {len(margin)}")
    rival = (baselines[0] if len(baselines) == 1 else f"the better of {baselines[0]} and {baselines[1]}"
             if len(baselines) == 2 else f"the best of {', '.join(baselines)}")
    return f"by group, hindsight against {rival} in each: " + "; ".join(parts)


def _ceiling_line(ceiling: dict) -> str:
    """What rules the traces support within tasks (``metrics.json`` ``rule_ceiling``): a line, then one per form."""
    lines = [f"traces: {ceiling['tasks_with_both_outcomes']} of {ceiling['tasks']} tasks have both a success and a "
             f"failure; rules supported within tasks (P > {ceiling['min_confidence']:g} from {ceiling['min_tasks']}+ "
             f"tasks, prior on an effect {ceiling.get('prior_effect', 1.0):g}; an optimistic ceiling), by chance "
             "(outcomes shuffled within tasks), and an ideal memory's "
             "(each rule promoted once the runs so far support it, its lift read on later runs):"]
    for form, cell in ceiling["forms"].items():
        line = f"  {form:<9} {cell['supported']} of {cell['tried']}"
        if "p_value" in cell:
            line += f" (chance {cell['chance_mean']:.1f}, p {cell['p_value']:.2f})"
        forward = cell.get("forward")
        if forward:
            line += f"; ideal memory: {forward['promoted']} promoted"
            if forward["lift"] is not None:
                line += (f", lift {forward['lift']:+.3f} over {forward['runs_compared']} later runs "
                         f"(null 95th pct {forward['null_p95']:+.3f}, p {forward['p_value']:.2f})")
        lines.append(line)
    return "\n".join(lines)


def _power_line(power: dict) -> str:
    """Whether data of the replay's shape can show a rule's lift (``metrics.json`` ``lift_power``)."""
    line = (f"power: in {power['histories']} simulated histories of this shape ({power['tasks']} tasks × "
            f"{power['runs']} runs, one agent, task difficulty 0.2–0.8), a rule with a true lift of "
            f"{power['lift']:+.2f} is promoted in {power['promoted']}")
    return line + (f" and its lift clears the null's 95th percentile in {power['cleared']}"
                   if power["promoted"] else "")


def _lift_line(name: str, lift: dict) -> str:
    """One line of a system's promoted rules and their lift (``metrics.json`` ``lift``)."""
    head = f"{name}: {lift.get('promoted', 0)} promoted rule(s) with a check"
    if lift.get("promoted"):
        head += f" ({lift.get('distinct', lift['promoted'])} distinct"
        share = lift.get("injected_where_apply")
        head += "; none applied to a later query)" if share is None else \
            f"; {share:.2f} of those that applied injected for at least half of the later queries they apply to)"
        paired = [r for r in lift.get("rules", ()) if "pairs" in r]
        if paired:
            head += (f"; {sum(r['pairs_across_tasks'] for r in paired)} of the {sum(r['pairs'] for r in paired)} "
                     "pairs of runs they were verified by join different tasks (by the dataset's task ids)")
    if not lift.get("runs_compared"):
        return head + "; lift n/a (no run to compare)"
    ci = lift["ci"]
    return (f"{head}; success lift of the runs that followed them {lift['lift']:+.3f} [{ci[0]:.3f}, {ci[1]:.3f}] "
            f"over {lift['runs_compared']} runs, {lift['null_mean']:+.3f} from the tasks' difficulty alone, "
            f"p {lift['p_value']:.2f} (predictive: the recorded agents never saw the rules)")
