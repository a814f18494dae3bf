"""``hindsight-lab fit``: learn the rerank weights from judged replays (:mod:`hindsight_lab.fit`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .args import examples, non_negative_int, out_file


def add_parser(sub: Any) -> None:
    fit = sub.add_parser(
        "fit", help="learn the rerank weights from judged replays, cross-validated by task",
        description="Replay each dataset of the spec once through the base config, keeping every recall; learn a "
                    "weight per rerank term from the candidates' grades (pairwise logistic regression, "
                    "scikit-learn); cross-validate by task against the base config and keep the learnt weights only "
                    "when they beat it by more than luck (else export the base, and say so); then replay each "
                    "dataset with the weights learnt on the others, beside the baselines.",
        epilog=examples("hindsight-lab fit experiments/fit_sample.yaml --out fitted.yaml --no-mlflow",
                        "hindsight-lab fit experiments/fit_default.yaml --out experiments/configs/fitted.yaml"))
    fit.add_argument("spec", help="fit spec YAML (see experiments/fit_default.yaml)")
    fit.add_argument("--out", type=out_file, help="write the exported config (the learnt weights, or the base when "
                     "they did not beat it by more than luck), with provenance, to this YAML file")
    fit.add_argument("--left-out", action=argparse.BooleanOptionalAction, default=True,
                     help="replay each dataset with the weights learnt on the others, beside the baselines "
                     "(default: on)")
    fit.add_argument("--limit", type=non_negative_int, help="overrides the spec's limit (the first N whole tasks of each dataset)")
    fit.add_argument("--mlflow", action=argparse.BooleanOptionalAction, default=True,
                     help="log the fit (parent run, a run per fold and per left-out dataset) to MLflow (default: on)")
    fit.add_argument("--mlflow-uri", help="tracking URI (default: $MLFLOW_TRACKING_URI, else the project's store)")
    fit.add_argument("--progress", action="store_true", help="tqdm bars for the replays")
    fit.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..fit import load_spec, run_fit

    spec = load_spec(args.spec, **({"limit": args.limit} if args.limit is not None else {}))
    uri = None
    if args.mlflow:
        from ..tracking import default_tracking_uri

        uri = args.mlflow_uri or default_tracking_uri()
    result = run_fit(spec, mlflow=args.mlflow, tracking_uri=uri, left_out=args.left_out,
                     show_progress=args.progress, echo=lambda msg: print(msg, file=sys.stderr))
    print(result.summary())
    if result.left_out:
        import pandas as pd

        frame = pd.DataFrame(result.left_out).drop(columns=["weights"])
        print("\neach dataset replayed with the weights learnt on the others:")
        with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
            print(frame.to_string(index=False))
    if args.out:
        from .. import __version__
        from ..config import Provenance
        from ..tracking.export import export_config

        prov = Provenance(run_id=result.run_id, package_version=__version__, dataset_sha256="+".join(result.dataset_sha256.values()),
                          metrics={f"cv.{k}": float(v) for k, v in result.cv.items()})
        export_config(result.config.model_copy(update={"provenance": prov}), args.out)
        print(f"config written to {args.out} ({'the learnt weights' if result.chosen == 'fitted' else 'the base'})")
    if args.mlflow:
        print(f"MLflow experiment 'hindsight-fit' at {uri}")
    return 0
