"""What the command-line subcommands share: the config from ``--config FILE`` and ``--set KEY=VALUE``, and the store
named by ``--store PATH|URL`` — each option defined here once, each command choosing its help text and place.

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_config(p)
    >>> load_config(p.parse_args(["--set", "retrieval.top_k=7"])).retrieval.top_k
    7
    >>> store_params("http://chroma:8000"), store_params("memory-store")
    ({'store.url': 'http://chroma:8000'}, {'store.path': 'memory-store'})
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..config import LabConfig
from ..errors import HindsightLabError

CONFIG_HELP = "LabConfig YAML file"
SET_HELP = "dotted config override (repeatable)"
STORE_HELP = "folder of an embedded store, a Chroma server URL, or a Postgres URL (postgresql://…, postgresql+embedded:///FOLDER)"


def add_set(parser: Any, help: str = SET_HELP) -> None:
    """``--set KEY=VALUE`` (repeatable) on a parser or argument group."""
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=help)


def add_config(parser: Any, help: str = CONFIG_HELP, *, required: bool = False, overrides: bool = True) -> None:
    """``--config FILE`` and, unless ``overrides=False``, ``--set`` right after it."""
    parser.add_argument("--config", required=required, help=help)
    if overrides:
        add_set(parser)


def add_store(parser: Any, help: str = STORE_HELP, *, required: bool = False) -> None:
    """``--store PATH|URL`` on a parser or argument group (a path that is a file is refused while parsing)."""
    parser.add_argument("--store", required=required, help=help, type=store_location)


# ------------------------------------------------------------------ argument types: refused while parsing, in one
# line that names the flag (argparse's own "argument --x: ..." message, exit 2), before any model loads
def non_negative_int(text: str) -> int:
    """A count such as ``--limit``: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number (got {text!r})") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more (got {value})")
    return value


def positive_int(text: str) -> int:
    """A size such as ``--top-k``: a whole number, 1 or more."""
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more (got {value})")
    return value


def store_location(text: str) -> str:
    """``--store``: a URL as given, or a folder path that is not a file (it need not exist yet)."""
    if "://" not in text and Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; a store is a folder (or a server URL)")
    return text


def out_folder(text: str) -> str:
    """An output folder: it need not exist, but must not be a file."""
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; expected a folder (it is created when missing)")
    return text


def out_file(text: str) -> str:
    """An output file: not a folder, and its folder, when it exists, not a file."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; expected a file name")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{parent} is a file, so {text} cannot be written")
    return text


def system_names(text: str) -> list[str]:
    """``--systems``: comma-separated names, each a baseline or ``hindsight``; an unknown one is refused with the
    list of known names (and the nearest, when the name looks like a typo)."""
    import difflib

    from ..replay.systems import BASELINES

    known = [*BASELINES, "hindsight"]
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join(known)}")
    for name in names:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise argparse.ArgumentTypeError(f"unknown system {name!r}{hint}; expected names from "
                                             f"{', '.join(known)}")
    if len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(f"a system is named twice in {text!r}")
    return names


def load_config(args: argparse.Namespace) -> LabConfig:
    """``--config`` (default ``LabConfig()``) with every ``--set`` override applied (values parsed as YAML)."""
    cfg = LabConfig.from_yaml(args.config) if getattr(args, "config", None) else LabConfig()
    overrides = set_overrides(args)
    return cfg.with_params(overrides) if overrides else cfg


def set_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--set KEY=VALUE`` overrides as ``{dotted key: value parsed as YAML}``, in the order given."""
    import yaml

    overrides: dict[str, Any] = {}
    for item in getattr(args, "set", None) or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise HindsightLabError(f"--set {item!r}: expected KEY=VALUE, e.g. retrieval.top_k=10")
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def store_params(store: str | None) -> dict[str, str]:
    """``--store``: a URL is a Chroma server or a Postgres database (``store.url``), anything else a folder
    (``store.path``)."""
    if not store:
        return {}
    return {"store.url": store} if "://" in store else {"store.path": store}


def existing_store(store: str) -> dict[str, str]:
    """:func:`store_params` of a store that must already be there: a folder that is not one raises."""
    where = store_params(store)
    if "store.path" in where and not Path(store).is_dir():
        raise HindsightLabError(f"--store {store}: no such folder")
    return where
