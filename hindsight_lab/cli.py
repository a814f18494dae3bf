"""``hindsight-lab``: the command line. Each subcommand is a thin layer over the library."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import __version__
from .cliargs import load_config, store_params
from .errors import HindsightLabError, NothingToDo

if TYPE_CHECKING:
    from .replay.report import ReplayReport
    from .sweep import SweepResult


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .memory import MemorySystem

    cfg = load_config(args)
    with tempfile.TemporaryDirectory(prefix="hindsight-demo-") as tmp:
        store = args.store or tmp
        if args.store and Path(args.store).exists() and any(Path(args.store).iterdir()):
            raise HindsightLabError(f"--store {args.store}: folder is not empty; the demo needs a fresh store")
        cfg = cfg.with_params({"store.path": str(store)})
        print(f"hindsight-lab {__version__} demo — embedded Chroma store in "
              f"{'a temporary folder' if not args.store else args.store}, model {cfg.embedder.model}\n")
        with MemorySystem(cfg) as mem:
            run = run_demo(mem)
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
                print(f"   Injection block ({res.tokens} tokens, budget {cfg.retrieval.token_budget}):\n")
                print("   " + res.injection.text.replace("\n", "\n   "), "\n")
        print("Memory:", {k: v for k, v in run.stats.items() if k in ("episodes", "candidates", "rules")})
    return 0


def _cmd_reflect(args: argparse.Namespace) -> int:
    import json

    import pandas as pd

    from .datasets.combine import load_history
    from .datasets.registry import resolve
    from .memory import MemorySystem

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
                                  limit_tasks=args.limit_tasks)
    skipped = _skipped_note(info)
    if skipped:
        print(f"read {info['name']}: {len(episodes)} episodes; {skipped}", file=sys.stderr)
    if not episodes:
        raise NothingToDo(f"{info['name']}: no episode to reflect on" + (f"; {skipped}" if skipped else ""))
    with tempfile.TemporaryDirectory(prefix="hindsight-reflect-") as tmp:
        cfg = cfg.with_params(store_params(args.store) or {"store.path": tmp})
        with MemorySystem(cfg) as mem:
            outcomes = mem.reflect_many(episodes)
            summary, layers = mem.reflection_stats(), mem.stats()
    frame = pd.DataFrame([o.as_row() for o in outcomes])
    shown = frame if args.all else frame[frame["reflect"]]
    with pd.option_context("display.width", 200, "display.max_colwidth", 90, "display.max_rows", 500):
        print(shown.drop(columns=["memory_id"]).to_string(index=False, max_colwidth=100))
    print(f"\n{summary['episodes']} episodes, {summary['reflections']} reflections "
          f"(trigger rate {summary['trigger_rate']:.3f}); decisions {summary['decisions']}; "
          f"rejections {summary['rejections']}; writes {summary['writes']}; promotions {summary['promotions']}; "
          f"memory: {layers['episodes']} episodes, {layers['candidates']} candidates, {layers['rules']} rules")
    if args.out:
        with Path(args.out).open("w", encoding="utf-8") as fh:
            for o in outcomes:
                row = o.as_row()
                row["reflection"] = o.reflection.model_dump() if o.reflection else None
                row["rejection_detail"] = o.rejection.detail if o.rejection else None
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from .replay.runner import run_replay

    cfg = load_config(args)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    report = run_replay(args.dataset, format=args.format, systems=systems, config=cfg, top_k=args.top_k,
                        limit=args.limit, skip_invalid=args.skip_invalid, show_progress=True, seed=args.seed,
                        out=args.out, resume=args.resume, baseline_key=args.baseline_key)
    _print_replay(report)
    if args.resume and not report.metrics["timing"].get("resumed_units"):
        print(f"--resume: no journal of an unfinished replay in {args.out}: replayed from the start")
    if args.out:
        print(f"report written to {args.out}")
    if args.mlflow:
        from .tracking import EXPERIMENT, default_tracking_uri, log_replay

        uri = args.mlflow_uri or default_tracking_uri()
        run_id = log_replay(report, config=cfg, tracking_uri=uri, experiment=args.mlflow_experiment or EXPERIMENT,
                            report_dir=args.out)
        print(f"MLflow run {run_id} in experiment {args.mlflow_experiment or EXPERIMENT!r} at {uri}")
    return 0


def _skipped_note(dataset: dict) -> str:
    """``skipped 2 invalid lines (too_deep: 1, invalid_json: 1)``, or "" when a read skipped nothing."""
    skipped = dataset.get("skipped")
    if not skipped:
        return ""
    reasons = ", ".join(f"{r}: {n}" for r, n in skipped["by_reason"].items())
    return f"skipped {skipped['lines']} invalid line{'s' * (skipped['lines'] != 1)} ({reasons})"


def _print_replay(report: "ReplayReport") -> None:
    import pandas as pd

    ds = report.metrics["dataset"]
    print(f"{ds['name']} ({ds['format']}): {ds['n_episodes']} episodes, {report.metrics['judging']['queries']} "
          f"queries in {report.metrics['judging']['groups']} groups; order: {ds['order']}; clock: {ds['clock']}; "
          f"top_k {ds['top_k']}, budget {ds['token_budget']} tokens; retrieval effects {ds['retrieval_effects']}")
    if _skipped_note(ds):
        print(f"read: {_skipped_note(ds)}")
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(report.table().to_string())
        by_source = report.source_table()
        if len(by_source):
            print("\nby source (queries of each file):")
            print(by_source.to_string(float_format=lambda v: f"{v:.3f}", na_rep="—"))
    for name, refl in ((n, v) for n, v in report.metrics["systems"].items() if "trigger_rate" in v):
        print(f"{name}: trigger rate {refl['trigger_rate']:.3f} {refl['trigger_reasons']}, "
              f"promotions {refl['promotions']}, reuse rate {refl['reuse_rate']:.3f}")
    timing = dict(report.metrics["timing"])
    resumed = timing.pop("resumed_units", 0)
    print("timing (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    if resumed:
        print(f"resumed: {resumed} units taken from the journal")


def _seeded_table(args: argparse.Namespace, build: Any, **formatters: Any) -> int:
    """Shared by ``live`` and ``lures``: one table row per seed and system (``build(systems, seeds)``), printed and
    written as CSV with ``--out``."""
    import pandas as pd

    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    table = build(systems, seeds)
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False, formatters=formatters or None))
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"table written to {args.out}")
    return 0


def _cmd_live(args: argparse.Namespace) -> int:
    from .replay.live import live_table

    return _seeded_table(args, lambda systems, seeds: live_table(
        systems, seeds=seeds, n_tasks=args.tasks, config=load_config(args), top_k=args.top_k, show_progress=True))


def _cmd_lures(args: argparse.Namespace) -> int:
    from .replay.lures import lure_table

    whole = "{:.0f}".format  # pair counts (the mean row averages them)
    return _seeded_table(args, lambda systems, seeds: lure_table(
        systems, seeds=seeds, n_pairs=args.pairs, config=load_config(args), top_k=args.top_k), pairs=whole, lured=whole)


def _cmd_reembed(args: argparse.Namespace) -> int:
    from .memory import MemorySystem

    cfg = load_config(args)
    where = store_params(args.store)
    if not where.get("store.url") and not Path(args.store).is_dir():
        raise HindsightLabError(f"--store {args.store}: no such folder")
    cfg = cfg.with_params(where)
    mem = MemorySystem(cfg)
    done = mem.reembed()
    mem.close()
    print(f"re-embedded with {cfg.embedder.model}: " + ", ".join(f"{n} {b}" for b, n in done.items()))
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import SweepSpec, run_sweep

    spec = SweepSpec.from_yaml(args.spec)
    if args.mlflow_uri:
        spec = spec.model_copy(update={"mlflow": spec.mlflow.model_copy(update={"uri": args.mlflow_uri})})
    result = run_sweep(spec, trials=args.trials, mlflow=args.mlflow, baselines=args.baselines,
                       show_progress=args.progress, echo=print)
    _print_sweep(result, args.top)
    if args.out and result.best_config is not None:
        from .export import export_config
        from .sweep.run import with_provenance

        export_config(with_provenance(result), args.out)
        print(f"best config written to {args.out}")
    return 0


def _print_sweep(result: "SweepResult", top: int) -> None:
    import pandas as pd

    obj = result.spec.objective.metric
    cols = ["number", *result.spec.fields, f"dev.{obj}", f"test.{obj}", "dev.tokens_median"]
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.precision", 4):
        print(f"\ntop {top} of {len(result.trials)} trials (by dev {obj}):")
        print(result.top(top)[[c for c in cols if c in result.trials]].to_string(index=False))
        heads = [f"{s}.{m}" for s in ("dev", "test") for m in ("ndcg@5", "hit@5", "recall@10", "tokens_median")]
        print("\nbase, best and baselines:")
        print(result.comparison[[c for c in heads if c in result.comparison]].to_string())
    t = result.timing
    print(f"\ntiming: load {t['load_s']:.1f} s, replays for the cache {t['capture_s']:.1f} s, evaluation "
          f"{t['eval_s']:.2f} s ({len(result.trials)} trials), baselines {t['baselines_s']:.1f} s, MLflow "
          f"{t['mlflow_s']:.1f} s")
    if result.parent_run_id:
        print(f"MLflow parent run {result.parent_run_id}; best trial run {result.best_run_id}")


def _cmd_export(args: argparse.Namespace) -> int:
    from . import __version__
    from .config import Provenance
    from .export import config_from_run, export_config

    if args.run_id:
        cfg = config_from_run(args.run_id, tracking_uri=args.mlflow_uri)
    else:
        cfg = load_config(args)
        if cfg.provenance is None:
            cfg = cfg.model_copy(update={"provenance": Provenance(package_version=__version__)})
    export_config(cfg, args.output)
    print(f"exported {len(cfg.behaviour_fields())} behaviour fields to {args.output}")
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    from .datasets import registry

    if args.action == "list":
        import pandas as pd

        frame = pd.DataFrame(registry.list_rows())
        if args.json:
            print(frame.to_json(orient="records", indent=2))
            return 0
        frame["present"] = frame["present"].map({True: "yes", False: "no"})
        frame["sha256"] = frame["sha256"].str[:12]
        frame["size"] = frame["size"].map(lambda n: f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB")
        cols = ["name", "format", "source", "licence", "split", "size", "sha256", "present", "where"]
        with pd.option_context("display.width", 250, "display.max_colwidth", 70, "display.max_rows", 200):
            print(frame[cols].to_string(index=False))
        print(f"\nfetched datasets live in {registry.datasets_home()}; samples in {registry.samples_dir()}")
        return 0
    if args.action == "path":
        for path in registry.resolve(args.names):
            print(path)
        return 0
    from .datasets.fetch import fetch

    names = [e.name for n in args.names for e in registry.expand(n)]
    for name in names:
        done = fetch(name, from_dir=args.source_dir, url=args.url, force=args.force, timeout_s=args.timeout)
        extra = f", resumed at byte {done.resumed_at:,}" if done.resumed_at else ""
        print(f"{name}: {done.action} {done.path} (sha256 {done.sha256[:12]}… from {done.origin}{extra})")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench_cli

    return run_bench_cli(args)


def _seeded_arguments(parser: argparse.ArgumentParser, systems: str, systems_help: str, seeds_help: str) -> None:
    """The options of a seeded side-by-side command (``live``, ``lures``)."""
    parser.add_argument("--systems", default=systems, help=systems_help)
    parser.add_argument("--seeds", default="0", help=seeds_help)
    parser.add_argument("--top-k", type=int, default=10, help="shared by every system")
    parser.add_argument("--out", help="also write the table as CSV")
    parser.add_argument("--config", help="LabConfig YAML file for the hindsight system")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hindsight-lab", description=__doc__, epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"hindsight-lab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="offline end-to-end demo on the embedded defaults")
    demo.add_argument("--store", help="folder for the embedded Chroma store (default: a temporary folder)")
    demo.add_argument("--config", help="LabConfig YAML file")
    demo.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")
    demo.set_defaults(func=_cmd_demo)

    reflect = sub.add_parser("reflect", help="write recorded episodes and reflect where a trigger fires")
    reflect.add_argument("traces", nargs="+", help="trace file (JSONL, tau-bench, tau2-bench or Reflexion HotpotQA) "
                         "or registered dataset name; several are read as one history, in the order given")
    reflect.add_argument("--format", default="auto",
                         choices=["auto", "jsonl", "tau-bench", "tau2-bench", "reflexion-hotpotqa"])
    reflect.add_argument("--reflector", choices=["heuristic", "litellm"], help="overrides reflect.reflector")
    reflect.add_argument("--model", help="LiteLLM model string for --reflector litellm (reflect.llm.model)")
    reflect.add_argument("--api-base", help="OpenAI-compatible server URL for the LiteLLM reflector")
    reflect.add_argument("--skip-invalid", action="store_true", help="skip and count invalid lines (lenient)")
    reflect.add_argument("--limit-tasks", type=int, help="keep the first N tasks (all their trials)")
    reflect.add_argument("--store", help="store folder or Chroma server URL (default: a temporary folder)")
    reflect.add_argument("--out", help="write one JSON line per episode (decision, reflection or rejection)")
    reflect.add_argument("--all", action="store_true", help="list every episode, not only those reflected on")
    reflect.add_argument("--config", help="LabConfig YAML file")
    reflect.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")
    reflect.set_defaults(func=_cmd_reflect)

    replay = sub.add_parser("replay", help="replay recorded traces through memory systems side by side")
    replay.add_argument("dataset", nargs="+", help="trace file (JSONL, tau-bench, tau2-bench, Reflexion HotpotQA "
                        "log or LoCoMo JSON) or registered dataset name (hindsight-lab datasets list); several are "
                        "replayed as one history, in the order given")
    replay.add_argument("--format", default="auto",
                        choices=["auto", "jsonl", "tau-bench", "tau2-bench", "reflexion-hotpotqa", "locomo"])
    replay.add_argument("--systems", default="none,dense,bm25,hindsight", help="comma-separated system names")
    replay.add_argument("--top-k", type=int, default=10, help="shared by every system (the largest k reported)")
    replay.add_argument("--limit", type=int, help="keep the first N whole tasks (or conversations)")
    replay.add_argument("--skip-invalid", action="store_true", help="skip and count invalid JSONL lines")
    replay.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and randomization tests")
    replay.add_argument("--baseline-key", choices=["instruction", "request_tools", "summary"],
                        help="the text the dense and bm25 baselines index (default: request_tools; "
                        "summary for LoCoMo's conversation turns)")
    replay.add_argument("--out", help="folder for metrics.json, episodes.csv and the plots, written at the end; "
                        "meanwhile it holds the resume journal (.replay-journal)")
    replay.add_argument("--resume", action="store_true",
                        help="continue the killed replay whose --out DIR this is (same arguments; no journal there: "
                        "start from scratch)")
    replay.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                        help="log the replay as an MLflow run (default: on)")
    replay.add_argument("--mlflow-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else "
                        "sqlite:///$HINDSIGHT_LAB_HOME/mlflow.db, "
                        "else ~/.hindsight_lab/mlflow.db)")
    replay.add_argument("--mlflow-experiment", help="MLflow experiment (default: hindsight-replay)")
    replay.add_argument("--config", help="LabConfig YAML file for the hindsight system")
    replay.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")
    replay.set_defaults(func=_cmd_replay)

    live = sub.add_parser("live", help="the live synthetic environment: an agent acts on what each system injects")
    _seeded_arguments(live, "none,dense,bm25,hindsight", "comma-separated system names",
                      "comma-separated environment seeds (one run each)")
    live.add_argument("--tasks", type=int, default=240, help="tasks per run (retries come on top)")
    live.set_defaults(func=_cmd_live)

    lures = sub.add_parser("lures", help="synthetic lexical lures: does a system inject the right memory before the "
                                         "lure that bm25 ranks first?")
    _seeded_arguments(lures, "hindsight", "comma-separated systems compared with bm25",
                      "comma-separated generator seeds (one set of pairs each)")
    lures.add_argument("--pairs", type=int, default=60, help="lure pairs per seed")
    lures.set_defaults(func=_cmd_lures)

    reembed = sub.add_parser("reembed", help="rebuild every vector of a store with the configured embedding model")
    reembed.add_argument("--store", required=True, help="folder of an embedded store, or a Chroma server URL")
    reembed.add_argument("--config", help="LabConfig YAML file (its embedder.model is the new model)")
    reembed.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")
    reembed.set_defaults(func=_cmd_reembed)

    sweep = sub.add_parser("sweep", help="MLflow-tracked sweep over config fields (rerank weights first)")
    sweep.add_argument("spec", help="sweep spec YAML (see experiments/rerank_weights.yaml)")
    sweep.add_argument("--trials", type=int, help="overrides the spec's trial count")
    sweep.add_argument("--top", type=int, default=5, help="how many of the best trials to print")
    sweep.add_argument("--out", help="also write the best config (exported, with provenance) to this YAML file")
    sweep.add_argument("--baselines", action=argparse.BooleanOptionalAction, default=True,
                       help="replay none, dense and bm25 on the same splits for the comparison (default: on)")
    sweep.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                       help="log the sweep (parent run, trial runs, artifacts) to MLflow (default: on)")
    sweep.add_argument("--mlflow-uri", help="tracking URI (default: the spec's, else $MLFLOW_TRACKING_URI, else the "
                       "project's store)")
    sweep.add_argument("--progress", action="store_true", help="tqdm bars for the replays")
    sweep.set_defaults(func=_cmd_sweep)

    export = sub.add_parser("export", help="write a tuned config for production (behaviour fields + provenance)")
    source = export.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-id", help="MLflow run of a sweep (its best config) or of one trial")
    source.add_argument("--config", help="LabConfig YAML file")
    export.add_argument("-o", "--output", required=True, help="the YAML file to write")
    export.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")
    export.add_argument("--mlflow-uri", help="tracking URI of --run-id (default: $MLFLOW_TRACKING_URI, else the "
                        "project's store)")
    export.set_defaults(func=_cmd_export)

    data = sub.add_parser("datasets", help="the registered datasets: list them, fetch them, print their paths",
                          description="Registered datasets: development splits of public recorded traces "
                          "(fetched into $HINDSIGHT_LAB_HOME/datasets) and the samples committed with the project.")
    data_sub = data.add_subparsers(dest="action", required=True)
    listing = data_sub.add_parser("list", help="every dataset: source, licence, split rule, size, sha256, where")
    listing.add_argument("--json", action="store_true", help="print JSON records")
    fetching = data_sub.add_parser("fetch", help="download the source, derive the split, verify its sha256, store it")
    fetching.add_argument("names", nargs="+", help="dataset or group names")
    fetching.add_argument("--from", dest="source_dir", metavar="DIR",
                          help="take the files from this folder (a mirror, a copy of the data), not the network")
    fetching.add_argument("--url", help="download from this URL instead of the registered source (one dataset)")
    fetching.add_argument("--force", action="store_true", help="fetch again even when a verified copy is there")
    fetching.add_argument("--timeout", type=float, default=60.0, help="network timeout in seconds (default 60)")
    path = data_sub.add_parser("path", help="print the local file(s) of datasets (exit 2 when one is not here)")
    path.add_argument("names", nargs="+", help="dataset or group names")
    data.set_defaults(func=_cmd_datasets)

    from .bench import add_bench_arguments

    bench = sub.add_parser("bench", help="speed and memory benchmark of search and write (prints and writes JSON)")
    add_bench_arguments(bench)
    bench.set_defaults(func=_cmd_bench)

    from .server.cli import add_serve_arguments  # the command body lives there too

    add_serve_arguments(sub.add_parser("serve", help="MCP memory server (stdio, or streamable HTTP for many clients)"))
    from .conflicts.cli import add_commands as add_conflict_commands  # maintain, conflicts
    from .manage import add_commands as add_manage_commands  # memories, inspect

    add_conflict_commands(sub)
    add_manage_commands(sub)
    return parser


EXIT_CODES = """exit codes: 0 done; 2 invalid input, configuration or usage (the message names the file, line and
field); 3 nothing to do (no episode left after skipping invalid lines, or a replay with an empty query set);
130 interrupted."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except NothingToDo as exc:
        print(f"hindsight-lab {args.command}: nothing to do: {exc}", file=sys.stderr)
        return 3
    except HindsightLabError as exc:
        print(f"hindsight-lab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hindsight-lab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
