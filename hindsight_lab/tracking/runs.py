"""MLflow tracking: the project's one default store, runs with params, metrics and artifacts, and replays as runs.

The default store (DESIGN §9) is a sqlite database in the package's home folder — ``$HINDSIGHT_LAB_HOME/mlflow.db``,
else ``~/.hindsight_lab/mlflow.db`` — so the CLI and notebooks write to the same place whatever the current folder;
runs' artifacts go to ``mlartifacts/`` beside the database (MLflow's own default would be ``./mlruns`` in the current
folder). Browse it with::

    mlflow ui --backend-store-uri sqlite:///$HOME/.hindsight_lab/mlflow.db

(an absolute sqlite URI has four slashes once ``$HOME`` is expanded). MLflow's own ``MLFLOW_TRACKING_URI``, when
set, takes the place of that default (an explicit ``--mlflow-uri`` or a sweep spec's ``mlflow.uri`` still wins).
MLflow is imported on first use only, after ``MLFLOW_DISABLE_TELEMETRY=true`` is set unless the user set it.

A replay is one run (:func:`log_replay`): params are the hindsight config as the replay ran it
(``LabConfig.flat()`` keys, e.g. ``retrieval.weights.semantic``) plus ``dataset.*`` (name, format, sha256,
episodes) and ``replay.*`` (systems, top_k, token_budget, limit, seed); metrics are ``<system>.<metric>`` with
``@`` spelled ``_at_`` (``hindsight.ndcg_at_5``; MLflow names cannot hold ``@``), the bootstrap intervals as
``<system>.<metric>.ci_low`` / ``.ci_high`` and the randomization tests as ``<system>.<metric>.p_vs_hindsight``;
artifacts are the saved report (``report.html``, ``metrics.json``, ``episodes.csv``, the plots) and
``config.yaml``. Several named hindsight configs in one replay: the ``hindsight`` one (the default) gives the
params, every named one is attached as ``configs/<name>.yaml`` and listed in the ``replay.configs`` param.

Examples:
    >>> from hindsight_lab.tracking.runs import metric_key
    >>> metric_key("ndcg@5")
    'ndcg_at_5'
    >>> with start_run("my-experiment", tracking_uri="sqlite:////tmp/hl/mlflow.db") as run:  # doctest: +SKIP
    ...     run.log_params({"retrieval.weights.semantic": 0.4})
    ...     run.log_metrics({"hindsight.ndcg_at_5": 0.61})
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .._env import home, set_offline_defaults
from ..errors import ConfigError, MissingDependencyError
from ..redact import has_secret, mask_secrets

if TYPE_CHECKING:
    from ..config import LabConfig
    from ..evaluation import ModeReport, ReplayMetrics
    from ..replay.report import ReplayReport

logger = logging.getLogger(__name__)

#: The experiment replays log to unless told otherwise.
EXPERIMENT = "hindsight-replay"

_MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value
_BATCH = 100  # MLflow's limit on params (and tags) per log_batch call
_MAX_SCANNED_BYTES = 64 * 1024 * 1024  # text artifacts up to this size are checked for secrets before they are logged
_BAD_KEY_CHARS = re.compile(r"[^\w.\- /]")


def default_tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI`` when set (MLflow's own variable, which its users expect honoured), else the
    project's store ``sqlite:///<home>/mlflow.db`` with ``home()`` absolute (so four slashes on POSIX)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(home() / 'mlflow.db').resolve().as_posix()}"


def artifact_location(tracking_uri: str) -> str | None:
    """Where new experiments of a sqlite store keep artifacts: ``mlartifacts/`` beside the database file.

    None for other stores (a tracking server decides for itself).
    """
    db = _sqlite_path(tracking_uri)
    return (db.parent / "mlartifacts").resolve().as_uri() if db is not None else None


def _sqlite_path(tracking_uri: str) -> Path | None:
    if not tracking_uri.startswith("sqlite:///"):
        return None
    rest = tracking_uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(rest) if rest and rest != ":memory:" else None


def _mlflow() -> Any:
    set_offline_defaults()  # MLFLOW_DISABLE_TELEMETRY=true (setdefault) before the import
    try:
        import mlflow
    except ImportError as exc:  # pragma: no cover - mlflow is a dependency
        raise MissingDependencyError("MLflow tracking needs mlflow: pip install 'mlflow==3.17.2'") from exc
    return mlflow


def client(tracking_uri: str | None = None) -> Any:
    """An ``MlflowClient`` for ``tracking_uri`` (default :func:`default_tracking_uri`; its folder is created)."""
    _mlflow()
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or default_tracking_uri()
    db = _sqlite_path(uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=uri)


def experiment_id(mlflow_client: Any, name: str) -> str:
    """The id of experiment ``name``, created (with :func:`artifact_location`) when it does not exist.

    Raises:
        ConfigError: the experiment exists but was deleted.
    """
    from mlflow.exceptions import MlflowException

    exp = mlflow_client.get_experiment_by_name(name)
    if exp is None:
        try:
            return mlflow_client.create_experiment(name, artifact_location=artifact_location(
                mlflow_client.tracking_uri))
        except MlflowException:  # created meanwhile by another process
            exp = mlflow_client.get_experiment_by_name(name)
            if exp is None:
                raise
    if exp.lifecycle_stage == "deleted":
        raise ConfigError(f"MLflow experiment {name!r} is deleted in {mlflow_client.tracking_uri}: restore it "
                          "(mlflow experiments restore) or choose another name")
    return exp.experiment_id


class TrackedRun:
    """One open MLflow run, logged through an explicit client (no global MLflow state is touched). Nothing it logs
    shows a secret: params, tags, texts and text artifacts pass through :func:`~hindsight_lab.redact.mask_secrets`.

    Args:
        mlflow_client: the ``MlflowClient``.
        run_id: the run's id.
    """

    def __init__(self, mlflow_client: Any, run_id: str) -> None:
        self.client = mlflow_client
        self.run_id = run_id

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log params (values stringified: JSON for lists, tuples and dicts; cut at MLflow's 6000 characters)."""
        from mlflow.entities import Param

        items = [Param(_key(mask_secrets(str(k))), mask_secrets(param_value(v))) for k, v in params.items()]
        for lo in range(0, len(items), _BATCH):
            self.client.log_batch(self.run_id, params=items[lo:lo + _BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        """Log numeric metrics at ``step`` (names through :func:`metric_key`)."""
        import time

        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        items = [Metric(metric_key(k), float(v), stamp, step) for k, v in metrics.items()]
        for lo in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[lo:lo + 1000])

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        """Log a file; a text file that holds a secret is logged as a masked copy of the same name."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8") if path.stat().st_size <= _MAX_SCANNED_BYTES else None
        except (UnicodeDecodeError, OSError):
            text = None
        if text is None or not has_secret(text):
            self.client.log_artifact(self.run_id, str(path), artifact_path)
            return
        with tempfile.TemporaryDirectory(prefix="hindsight-masked-") as tmp:
            copy = Path(tmp) / path.name
            copy.write_text(mask_secrets(text), encoding="utf-8")
            self.client.log_artifact(self.run_id, str(copy), artifact_path)

    def log_text(self, text: str, artifact_file: str) -> None:
        self.client.log_text(self.run_id, mask_secrets(text), artifact_file)


@contextmanager
def start_run(experiment: str = EXPERIMENT, *, tracking_uri: str | None = None, run_name: str | None = None,
              tags: Mapping[str, Any] | None = None, parent_run_id: str | None = None) -> Iterator[TrackedRun]:
    """Open a run in ``experiment``; it ends FINISHED, or FAILED if the block raises.

    Args:
        experiment: created when missing.
        tracking_uri: default :func:`default_tracking_uri`.
        run_name: shown in the MLflow UI.
        tags: set on the run.
        parent_run_id: makes this a child run (as a sweep's trials under their parent).
    """
    c = client(tracking_uri)
    all_tags = {str(k): mask_secrets(str(v)) for k, v in (tags or {}).items()}
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
    run = c.create_run(experiment_id(c, experiment), run_name=mask_secrets(run_name) if run_name else run_name,
                       tags=all_tags)
    run_id = run.info.run_id
    try:
        yield TrackedRun(c, run_id)
    except BaseException:
        c.set_terminated(run_id, "FAILED")
        raise
    c.set_terminated(run_id, "FINISHED")


def metric_key(name: str) -> str:
    """An MLflow-safe name: ``@`` becomes ``_at_``, any other character MLflow refuses becomes ``_``."""
    key = _BAD_KEY_CHARS.sub("_", str(name).replace("@", "_at_")).strip("/ ")
    return re.sub(r"/+", "/", key).replace("..", "__") or "_"


_key = metric_key


def param_value(value: Any) -> str:
    """A param value as MLflow stores it: a string of at most 6000 characters."""
    text = json.dumps(value, default=str) if isinstance(value, (list, tuple, dict)) else str(value)
    return text if len(text) <= _MAX_PARAM_CHARS else text[:_MAX_PARAM_CHARS - 1] + "…"


def numeric_leaves(data: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every finite-or-NaN number in a nested mapping, keyed ``a.b.c`` (booleans and strings skipped)."""
    out: dict[str, float] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(numeric_leaves(value, name + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isinf(value):
            out[name] = float(value)
    return out


# ---------------------------------------------------------------------- replays
def replay_metrics(metrics: "ReplayMetrics | Mapping[str, Any]") -> dict[str, float]:
    """MLflow metrics of a replay (its typed :class:`~hindsight_lab.evaluation.ReplayMetrics`, or a
    ``metrics.json`` mapping of any version): ``<system>.<metric>`` for every number of a system's summary,
    ``.ci_low``/``.ci_high`` from its intervals, ``.p_vs_<reference>`` from its tests, for the ``repeat`` mode
    without a prefix (the names runs have always had, so old and new runs compare in ``mlflow ui``) and under
    ``<mode>.`` for every other judging mode with queries (``transfer.hindsight.ndcg_at_5``), with
    ``<mode>.queries``, then ``lift.<system>.*`` (promoted rules, distinct checks among them, the share injected
    where they apply, runs compared, and when runs were compared the lift with its interval and p-value),
    ``judging.*`` (the ``repeat`` mode's queries and groups, the seed and resamples) and ``timing.*``."""
    from ..evaluation import ReplayMetrics

    result = metrics if isinstance(metrics, ReplayMetrics) else ReplayMetrics.from_json(metrics)
    c = result.comparison
    out: dict[str, float] = {}
    for mode, part in c.modes.items():
        if mode != "repeat":
            out[metric_key(f"{mode}.queries")] = part.queries
        if part.judged:
            out.update(_mode_metrics(part, "" if mode == "repeat" else f"{mode}.", c.reference))
    for name, lift in result.lift.items():
        row = {k: lift.get(k) for k in ("promoted", "distinct", "injected_where_apply", "runs_compared", "lift",
                                        "p_value", "null_mean", "null_p95")}
        row["ci_low"], row["ci_high"] = lift.get("ci") or (None, None)
        out.update({metric_key(f"lift.{name}.{k}"): float(v) for k, v in row.items() if v is not None})
    repeat = c.modes["repeat"]
    judging = {"queries": repeat.queries, "groups": repeat.groups, "seed": c.seed, "n_resamples": c.n_resamples}
    for section, values in (("judging", judging), ("timing", result.timing)):
        out.update({metric_key(k): v for k, v in numeric_leaves(values, section + ".").items()})
    return out


def _mode_metrics(part: "ModeReport", prefix: str, ref: str) -> dict[str, float]:
    out = {metric_key(prefix + k): v for k, v in numeric_leaves(part.systems).items()}
    for name, per_metric in part.intervals.items():
        for m, (_, low, high) in per_metric.items():
            out[metric_key(f"{prefix}{name}.{m}.ci_low")], out[metric_key(f"{prefix}{name}.{m}.ci_high")] = low, high
    for name, per_metric in part.tests.items():
        for m, p in per_metric.items():
            out[metric_key(f"{prefix}{name}.{m}.p_vs_{ref}")] = p
    return out


def replay_params(report: "ReplayReport", config: "LabConfig | None" = None,
                  configs: Mapping[str, "LabConfig"] | None = None) -> dict[str, Any]:
    """MLflow params of a replay: the ``hindsight`` config as replayed (shared ``top_k`` and budget, retrieval
    effects off), ``dataset.*`` and ``replay.*``."""
    from ..config import LabConfig
    from ..replay.systems import replay_config

    ds = report.result.dataset
    cfg = replay_config(config or LabConfig(), top_k=int(ds["top_k"]), token_budget=int(ds["token_budget"]))
    params: dict[str, Any] = dict(cfg.flat())
    params.update({"dataset.name": ds.get("name"), "dataset.format": ds.get("format"),
                   "dataset.sha256": ds.get("sha256"), "dataset.n_episodes": ds.get("n_episodes"),
                   "replay.systems": ",".join(report.systems), "replay.top_k": ds["top_k"],
                   "replay.token_budget": ds["token_budget"], "replay.limit": ds.get("limit"),
                   "replay.seed": report.comparison.seed,
                   "replay.retrieval_effects": ds.get("retrieval_effects"),
                   "dataset.skipped_lines": (ds.get("skipped") or {}).get("lines", 0)})
    for reason, n in ((ds.get("skipped") or {}).get("by_reason") or {}).items():
        params[f"dataset.skipped.{reason}"] = n
    if configs:
        params["replay.configs"] = ",".join(configs)
    return params


def log_replay(report: "ReplayReport", *, config: "LabConfig | None" = None,
               configs: Mapping[str, "LabConfig"] | None = None, tracking_uri: str | None = None,
               experiment: str = EXPERIMENT, run_name: str | None = None, report_dir: str | Path | None = None,
               tags: Mapping[str, Any] | None = None) -> str:
    """Log a judged replay as one MLflow run; returns its run id.

    Args:
        report: from :func:`~hindsight_lab.replay.runner.run_replay`.
        config: the ``hindsight`` config it ran (default config when None): the run's params.
        configs: named hindsight configs it also ran: attached as ``configs/<name>.yaml``.
        tracking_uri: default :func:`default_tracking_uri`.
        experiment: default ``"hindsight-replay"``.
        run_name: default ``"replay <dataset name>"``.
        report_dir: a folder where ``report.save`` already wrote the report (else it is saved to a temporary
            folder); only the report's own files are logged from it.
        tags: extra run tags.
    """
    from .. import __version__
    from ..config import LabConfig
    from ..replay.report import REPORT_FILES

    ds = report.result.dataset
    all_tags = {"hindsight_lab.kind": "replay", "hindsight_lab.version": __version__,
                "dataset.name": ds.get("name"), **(tags or {})}
    with start_run(experiment, tracking_uri=tracking_uri, run_name=run_name or f"replay {ds.get('name')}",
                   tags=all_tags) as run:
        run.log_params(replay_params(report, config, configs))
        run.log_metrics(replay_metrics(report.result))
        with tempfile.TemporaryDirectory(prefix="hindsight-mlflow-") as tmp:
            folder = Path(report_dir) if report_dir is not None else report.save(tmp)
            for name in REPORT_FILES:
                if (folder / name).is_file():
                    run.log_artifact(folder / name)
        run.log_text((config or LabConfig()).to_yaml(), "config.yaml")
        for name, cfg in (configs or {}).items():
            run.log_text(cfg.to_yaml(), f"configs/{name}.yaml")
        return run.run_id
