"""Offline defaults and the package home folder.

These are the only environment variables the package touches (DESIGN §9): offline switches for the heavy
libraries, set with ``os.environ.setdefault`` before any of them is imported so a notebook or the CLI never waits
on a network that is not there, and ``HINDSIGHT_LAB_HOME``, the folder of default stores (MLflow, demo, bench).
"""

from __future__ import annotations

import os
from pathlib import Path

OFFLINE_DEFAULTS: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "1",
}


def set_offline_defaults() -> None:
    """Set the offline defaults without overriding anything the user set."""
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)


def home() -> Path:
    """The folder for default stores: ``$HINDSIGHT_LAB_HOME`` or ``~/.hindsight_lab``."""
    return Path(os.environ.get("HINDSIGHT_LAB_HOME") or Path.home() / ".hindsight_lab").expanduser()
