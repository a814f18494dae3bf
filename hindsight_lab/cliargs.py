"""What the command-line subcommands share: the config from ``--config FILE`` and ``--set KEY=VALUE``, and the store
named by ``--store PATH|URL``."""

from __future__ import annotations

import argparse

from .config import LabConfig
from .errors import HindsightLabError


def load_config(args: argparse.Namespace) -> LabConfig:
    """``--config`` (default ``LabConfig()``) with every ``--set`` override applied (values parsed as YAML)."""
    cfg = LabConfig.from_yaml(args.config) if getattr(args, "config", None) else LabConfig()
    overrides = {}
    for item in getattr(args, "set", None) or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise HindsightLabError(f"--set {item!r}: expected KEY=VALUE, e.g. retrieval.top_k=10")
        import yaml

        overrides[key.strip()] = yaml.safe_load(value)
    return cfg.with_params(overrides) if overrides else cfg


def store_params(store: str | None) -> dict[str, str]:
    """``--store``: a URL is a Chroma server or a Postgres database (``store.url``), anything else a folder
    (``store.path``)."""
    if not store:
        return {}
    return {"store.url": store} if "://" in store else {"store.path": store}
