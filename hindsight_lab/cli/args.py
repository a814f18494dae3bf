"""What the command-line subcommands share: the config from ``--config FILE`` and ``--set KEY=VALUE``, the store
named by ``--store PATH|URL`` and the output named by ``--out`` — each option defined here once, each command choosing
its help text and place; the argument types that refuse a bad value while parsing; the help layout, whose epilog
ends with examples (:func:`examples`).

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
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import LabConfig
from ..errors import ConfigError, HindsightLabError

CONFIG_HELP = "LabConfig YAML file"
SET_HELP = "dotted config override (repeatable)"
STORE_HELP = "folder of an embedded store, a Chroma server URL, or a Postgres URL (postgresql://…, postgresql+embedded:///FOLDER)"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's layout, except that a paragraph of a description or epilog with an indented line (an example
    command, a list) is kept as written; the other paragraphs are wrapped as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = textwrap.dedent(text).strip("\n").split("\n\n")
        return "\n\n".join(
            "\n".join(indent + line for line in p.splitlines()) if any(line[:1] == " " for line in p.splitlines())
            else textwrap.fill(" ".join(p.split()), width, initial_indent=indent, subsequent_indent=indent)
            for p in paragraphs)


class Parser(argparse.ArgumentParser):
    """The CLI's parser: :class:`HelpFormatter` unless told otherwise; its subparsers are of this class too."""

    def __init__(self, *args: Any, formatter_class: Any = HelpFormatter, **kwargs: Any) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


def examples(*commands: str) -> str:
    """The epilog of a command's ``--help``: ``Examples:`` and one indented command a line (each starts with
    ``hindsight-lab`` and parses; ``tests/test_first_hour.py`` checks both)."""
    return ("Example:" if len(commands) == 1 else "Examples:") + "".join(f"\n  {c}" for c in commands)


def add_alias(parser: Any, *flags: str, dest: str, **kwargs: Any) -> None:
    """An old spelling of an option (``--limit-tasks`` for ``--limit``): accepted, stored in the same ``dest``, not
    shown in ``--help``."""
    parser.add_argument(*flags, dest=dest, help=argparse.SUPPRESS, **kwargs)


def add_set(parser: Any, help: str = SET_HELP) -> None:
    """``--set KEY=VALUE`` (repeatable) on a parser or argument group."""
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=help)


def add_config(parser: Any, help: str = CONFIG_HELP, *, required: bool = False, overrides: bool = True) -> None:
    """``--config FILE`` and, unless ``overrides=False``, ``--set`` right after it."""
    parser.add_argument("--config", required=required, help=help, type=config_file)
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


def whole_numbers(text: str) -> list[int]:
    """``--seeds``: comma-separated whole numbers (``0,1,2``)."""
    try:
        numbers = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, e.g. 0,1,2 (got "
                                         f"{text[:80]!r})") from None
    if not numbers:
        raise argparse.ArgumentTypeError("expected one or more whole numbers, e.g. 0,1,2")
    return numbers


def sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated sizes, each 1 or more (``10000,100000``)."""
    numbers = whole_numbers(text)
    if min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"expected sizes of 1 or more (got {min(numbers)})")
    return numbers


def port_number(text: str) -> int:
    """``--port``: 0 (any free port) to 65535."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 (got {value})")
    return value


def positive_seconds(text: str) -> float:
    """A timeout such as ``--timeout``: seconds, more than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, e.g. 30 (got {text[:80]!r})") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected more than 0 seconds (got {text})")
    return value


def iso_time(text: str) -> datetime:
    """``--now``: an ISO-8601 time, as an aware datetime (a naive one is UTC)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO-8601 time, e.g. 2026-03-01T09:00:00+00:00 (got "
                                         f"{text[:80]!r})") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def config_file(text: str) -> str:
    """``--config``: a file that is there (its content is checked when it is loaded, still before any model)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; expected a LabConfig YAML file")
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return text


def load_config(args: argparse.Namespace) -> LabConfig:
    """``--config`` (default ``LabConfig()``) with every ``--set`` override applied (values parsed as YAML).

    Raises:
        ConfigError: the file or an override is invalid, in one line naming the field (and the file, or
            ``--set``).
    """
    cfg = LabConfig.from_yaml(args.config) if getattr(args, "config", None) else LabConfig()
    overrides = set_overrides(args)
    if not overrides:
        return cfg
    try:
        return cfg.with_params(overrides)
    except ConfigError as exc:
        raise set_error(exc) from None


def load_served_config(args: argparse.Namespace) -> tuple[LabConfig, Any]:
    """:func:`load_config` of a served config file (``serve``, ``bench --mcp``): ``--config`` (default: the packaged
    default) with its ``server:`` section, and the ``--set`` overrides, ``server.<key>`` ones included; returns the
    :class:`LabConfig` and the :class:`~hindsight_lab.server.config.ServerConfig`."""
    from ..server.config import load_served

    served = load_served(args.config)
    overrides = set_overrides(args)
    if not overrides:
        return served
    try:  # the file loaded alone above: an error here is one of the overrides
        return load_served(args.config, overrides)
    except ConfigError as exc:
        raise set_error(exc) from None


def set_error(exc: ConfigError) -> ConfigError:
    """An error of the ``--set`` overrides, named by the flag (the library names its source ``with_params``)."""
    return ConfigError(f"--set: {str(exc).removeprefix('with_params: ')}")


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
