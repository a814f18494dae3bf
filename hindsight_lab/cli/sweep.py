"""``hindsight-lab sweep`` (an MLflow-tracked sweep over config fields) and ``hindsight-lab export`` (a tuned config
for production)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .args import add_alias, add_config, add_set, examples, load_config, out_file, positive_int

if TYPE_CHECKING:
    from ..sweep import SweepResult


def add_parser(sub: Any) -> None:
    sweep = sub.add_parser(
        "sweep", help="MLflow-tracked sweep over config fields (rerank weights first)",
        description="Score many configs on the dev split, cross-validated by task; choose one only when it beats the "
                    "base config by more than the best of N would by luck (else keep the base); score the base, "
                    "the choice and the baselines once on the test split.",
        epilog=examples("hindsight-lab sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",
                        "hindsight-lab sweep experiments/rerank_weights.yaml --no-baselines --no-mlflow",
                        "hindsight-lab sweep experiments/rerank_weights_sample.yaml --workers 2",
                        "hindsight-lab sweep experiments/rerank_weights.yaml --storage postgresql://hl@db.internal/"
                        "sweeps --workers 4 --mlflow-uri http://mlflow.internal:5000"))
    sweep.add_argument("spec", help="sweep spec YAML (see experiments/rerank_weights.yaml)")
    sweep.add_argument("--trials", type=positive_int, help="overrides the spec's trial count")
    sweep.add_argument("--top", type=positive_int, default=5, help="how many of the best trials to print")
    sweep.add_argument("--out", type=out_file,
                       help="also write the chosen config (the base config when no trial beat it by more "
                                     "than luck; exported, with provenance) to this YAML file")
    sweep.add_argument("--baselines", action=argparse.BooleanOptionalAction, default=True,
                       help="replay none, dense and bm25 on the same splits for the comparison (default: on)")
    sweep.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                       help="log the sweep (parent run, trial runs, artifacts) to MLflow (default: on)")
    sweep.add_argument("--mlflow-uri", help="tracking URI (default: the spec's, else $MLFLOW_TRACKING_URI, else the "
                       "project's store)")
    sweep.add_argument("--progress", action="store_true", help="tqdm bars for the replays and the live runs")
    shared = sweep.add_argument_group(
        "a sweep shared by processes and machines",
        "The trials live in an Optuna study in PostgreSQL; the same command on another machine, with the same "
        "--storage and --study, joins it. When the study holds every trial, one process chooses among all of them "
        "and logs one MLflow parent run; a worker lost mid-trial is replaced by a rerun of its trials.")
    shared.add_argument("--storage", metavar="URL",
                        help="where the study lives: postgresql://USER@HOST:PORT/DB (a server every machine "
                             "reaches), postgresql+embedded:///FOLDER, or sqlite:///FILE (one process only); "
                             "default with --workers above 1: an embedded PostgreSQL in "
                             "$HINDSIGHT_LAB_HOME/sweeps/<spec name>/pg (this machine only)")
    shared.add_argument("--study", metavar="NAME", help="the study's name (default: the spec's name)")
    shared.add_argument("--workers", type=positive_int, default=1, metavar="N",
                        help="processes on this machine: this one and N-1 it starts (default: 1)")
    shared.add_argument("--heartbeat", type=positive_int, default=10, metavar="SECONDS",
                        help="seconds between a trial's heartbeats; a trial silent for three is run again "
                             "(default: 10)")
    kept = sweep.add_mutually_exclusive_group()
    kept.add_argument("--live-runs", metavar="DIR",
                       help="where the live environment's runs are kept as they are made, so a sweep run again after "
                            "a stop takes them from there (default: $HINDSIGHT_LAB_HOME/cache/live)")
    kept.add_argument("--no-live-runs", action="store_true",
                       help="keep the live runs in memory only (every run is made again)")
    sweep.set_defaults(func=run_sweep)

    export = sub.add_parser("export", help="write a tuned config for production (behaviour fields + provenance)",
                            epilog=examples("hindsight-lab export --run-id 4f9c2d7e8a1b4c3d --out tuned.yaml",
                                            "hindsight-lab export --config experiments/configs/default.yaml --set "
                                            "retrieval.top_k=8 --out my.yaml"))
    source = export.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-id", help="MLflow run of a sweep (its best config) or of one trial")
    add_config(source, overrides=False)
    export.add_argument("--out", type=out_file, help="the YAML file to write (required)")
    add_alias(export, "-o", "--output", dest="out", type=out_file)  # its names until issue 51
    add_set(export)
    export.add_argument("--mlflow-uri", help="tracking URI of --run-id (default: $MLFLOW_TRACKING_URI, else the "
                        "project's store)")
    export.set_defaults(func=run_export)


def run_sweep(args: argparse.Namespace) -> int:
    from ..sweep import SweepSpec, run_sweep

    spec = SweepSpec.from_yaml(args.spec)
    if args.mlflow_uri:
        spec = spec.model_copy(update={"mlflow": spec.mlflow.model_copy(update={"uri": args.mlflow_uri})})
    from ..sweep.live_runs import LiveRunStore

    store = None if args.no_live_runs else LiveRunStore(args.live_runs) if args.live_runs else LiveRunStore.default()
    study = None
    if args.storage or args.study or args.workers > 1:
        from ..sweep.shared import StudyOptions
        from ..sweep.storage import sqlalchemy_url

        if args.storage and args.storage.lower().startswith("sqlite:"):
            sqlalchemy_url(args.storage, workers=args.workers, folder=Path("."))  # refused before anything loads
        study = StudyOptions(storage=args.storage, name=args.study, workers=args.workers, heartbeat=args.heartbeat)
    result = run_sweep(spec, trials=args.trials, mlflow=args.mlflow, baselines=args.baselines,
                       show_progress=args.progress, echo=print, live_runs=store, study=study)
    print_sweep(result, args.top)
    if args.out and result.chosen_config is not None:
        from ..tracking.export import export_config
        from ..sweep.run import with_provenance

        export_config(with_provenance(result), args.out)
        kept = "the base config (no trial beat it by more than luck)" if result.chosen is None \
            else f"trial {result.chosen}"
        print(f"chosen config ({kept}) written to {args.out}")
    return 0


def print_sweep(result: "SweepResult", top: int) -> None:
    import pandas as pd

    from ..sweep.spec import SEEDED_TERMS

    label = result.spec.objective.label
    seeded = [f"{mode}.{m}" for mode, term in SEEDED_TERMS.items() for m in term.METRICS]
    cols = ["number", *result.spec.fields, "cv.mean", "cv.se", "dev.ndcg@5", *(f"dev.{c}" for c in seeded),
            "dev.tokens_median"]
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.precision", 4):
        print(f"\ntop {top} of {len(result.trials)} trials (by {label}, cross-validated by task on dev):")
        print(result.top(top)[[c for c in cols if c in result.trials]].to_string(index=False))
        print("\n" + selection_text(result.selection))
        heads = [f"{s}.{m}" for s in ("dev", "test")
                 for m in ("objective", "ndcg@5", "hit@5", "recall@10", "live.final_quarter", "lures.right_first",
                           "tokens_median")]
        # objective: when declared; live.final_quarter, lures.right_first: with a live or lures section
        print("\nbase, chosen, best and baselines (test scored once, here):")
        print(result.comparison[[c for c in heads if c in result.comparison]].to_string())
    t = result.timing
    print(f"\ntiming: load {t['load_s']:.1f} s, replays for the cache {t['capture_s']:.1f} s, evaluation "
          f"{t['eval_s']:.2f} s ({len(result.trials)} trials), baselines {t['baselines_s']:.1f} s, MLflow "
          f"{t['mlflow_s']:.1f} s" + (f", live environment {t['live_s']:.1f} s" if "live_s" in t else "")
          + (f", lures {t['lures_s']:.1f} s" if "lures_s" in t else ""))
    if result.study:
        st = result.study
        print(f"study {st['name']!r} in {st['storage']}: {st['told_here']} of {len(result.trials)} trials scored by "
              f"the {st['processes']} process{'es' if st['processes'] > 1 else ''} here, {st['retried']} run again "
              f"after a lost worker, {t.get('study_s', 0.0):.1f} s; chosen by {st.get('chosen_by')}")
    if result.parent_run_id:
        print(f"MLflow parent run {result.parent_run_id}; chosen trial run {result.chosen_run_id or '— (the base)'}")


def best_name(sel: dict) -> str:
    """The best candidate in words: a trial, or the base config when no trial scores higher."""
    return "the base: no trial scores higher" if sel["best"] == "base" else f"trial {sel['best']}"


def selection_text(sel: dict) -> str:
    """The choice in words: what was chosen, the gains, the optimism of the best of N, the held-out check."""
    if not sel:
        return "no valid trial"
    return (f"chosen: {sel['chosen']} ({sel['rule']}; {sel['folds']} folds, {sel['candidates']} candidates)\n"
            f"  CV {sel['objective']}: base {sel['base_cv']:.4f} ± {sel['base_se']:.4f}, chosen "
            f"{sel['chosen_cv']:.4f} ± {sel['chosen_se']:.4f}, best ({best_name(sel)}) {sel['best_cv']:.4f} "
            f"± {sel['best_se']:.4f}\n"
            f"  best gain {sel['best_gain']:+.4f} against an optimism of {sel['optimism']:+.4f} (what the best of "
            f"{sel['candidates']} gains when none differs from the base; {1 - sel['level']:.0%} of such draws stay "
            f"below {sel['luck_bar']:+.4f}), p = {sel['p_value']:.3f}\n"
            f"  the rule on folds it did not see: gain {sel['holdout_gain']:+.4f} "
            f"({', '.join(f'{g:+.3f}' for g in sel['holdout_gain_by_fold'])})")


def run_export(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..config import Provenance
    from ..tracking.export import config_from_run, export_config

    if not args.out:  # not required=True: then the old spellings, which fill the same dest, would be refused
        raise ConfigError("the following arguments are required: --out")
    if args.run_id:
        cfg = config_from_run(args.run_id, tracking_uri=args.mlflow_uri)
    else:
        cfg = load_config(args)
        if cfg.provenance is None:
            cfg = cfg.model_copy(update={"provenance": Provenance(package_version=__version__)})
    export_config(cfg, args.out)
    print(f"exported {len(cfg.behaviour_fields())} behaviour fields to {args.out}")
    return 0
