"""Export of a tuned config to production (DESIGN §7): every field that affects write, recall or reflect, plus
provenance, and nothing of this machine — no paths, no secrets (API keys are named by environment variable only).

``LabConfig.from_yaml``, ``MemorySystem`` and ``hindsight-lab serve`` load the file unchanged; where the store
lives is given at serve time.

Examples:
    >>> from hindsight_lab.config import LabConfig
    >>> from hindsight_lab.tracking.export import export_config
    >>> text = export_config(LabConfig())  # no path: only the YAML text
    >>> "retrieval:" in text and "store:" not in text
    True
"""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

from ..config import LabConfig, Provenance
from ..errors import ConfigError, HindsightLabWarning
from ..redact import MASK, has_secret, mask_secrets

_ABSOLUTE = re.compile(r"^(/|~|[A-Za-z]:[\\/]|file:)")


def export_config(config: LabConfig, path: str | Path | None = None) -> str:
    """The exportable YAML of ``config`` (behaviour fields and provenance), written to ``path`` when given.

    A password inside a URL (``reflect.llm.api_base: http://user:PASSWORD@host``) is written as ``***``, with a
    :class:`~hindsight_lab.errors.HindsightLabWarning` naming the field: production gives secrets by environment
    variable (``reflect.llm.api_key_env``), never in the file.

    Raises:
        ConfigError: a value is a path of this machine (e.g. a local embedding model): export a model name.
    """
    data = config.to_dict(only_behaviour=True)
    for dotted, value in _strings(data):
        if _ABSOLUTE.match(value):
            raise ConfigError(f"export: {dotted} is a path of this machine ({value!r}); exported configs carry no "
                              "machine paths: use a model name or a path relative to where the config is served")
    leaked = [dotted for dotted, value in _strings(data) if has_secret(value)]
    if leaked:
        warnings.warn(f"export: {', '.join(leaked)} held a secret (a password in a URL); it is written as "
                      f"{MASK}: give secrets to production by environment variable", HindsightLabWarning,
                      stacklevel=2)
    text = mask_secrets(config.to_yaml(only_behaviour=True))
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return text


def _strings(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(data, dict):
        return [item for k, v in data.items() for item in _strings(v, f"{prefix}{k}.")]
    if isinstance(data, list):
        return [item for i, v in enumerate(data) for item in _strings(v, f"{prefix}{i}.")]
    return [(prefix.rstrip("."), data)] if isinstance(data, str) else []


def config_from_run(run_id: str, *, tracking_uri: str | None = None) -> LabConfig:
    """The config an MLflow run logged (a sweep's parent: ``best-config.yaml``; a trial: ``config.yaml``), with
    provenance: the run id, its dataset hash tag, its metrics, the package version.

    Raises:
        ConfigError: no such run, or the run logged no config.
    """
    from mlflow.exceptions import MlflowException

    from .. import __version__
    from .runs import client

    c = client(tracking_uri)
    try:
        run = c.get_run(run_id)
    except MlflowException as exc:
        raise ConfigError(f"export: no MLflow run {run_id!r} in {c.tracking_uri}: {exc.message}") from None
    names = {a.path for a in c.list_artifacts(run_id)}
    name = next((n for n in ("best-config.yaml", "config.yaml") if n in names), None)
    if name is None:
        raise ConfigError(f"export: run {run_id!r} logged no config (best-config.yaml or config.yaml)")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = LabConfig.from_yaml(c.download_artifacts(run_id, name, tmp))
    prov = cfg.provenance or Provenance()
    metrics = dict(prov.metrics) or {k: float(v) for k, v in run.data.metrics.items()
                                     if k.startswith(("dev.", "test."))}
    return cfg.model_copy(update={"provenance": Provenance(
        run_id=prov.run_id or run_id, dataset_sha256=prov.dataset_sha256 or run.data.tags.get("dataset_sha256"),
        metrics=metrics, package_version=prov.package_version or __version__)})
