"""``hindsight-lab``: the command line. Each subcommand is a thin layer over the library.

One module per command group, each with an ``add_parser(sub)`` that registers its subcommands and their bodies:
:mod:`.demo`, :mod:`.reflect`, :mod:`.replay`, :mod:`.live` (``live``, ``lures``), :mod:`.reembed`, :mod:`.sweep`
(``sweep``, ``export``), :mod:`.datasets`, :mod:`.bench`, :mod:`.serve`, :mod:`.conflicts` (``maintain``,
``conflicts``), :mod:`.memories` (``memories``, ``inspect``); :mod:`.args` holds the options they share. The
command modules import the library inside their bodies, so building the parser stays light.
:mod:`.healthcheck` is the container health check (``python -m hindsight_lab.cli.healthcheck``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .. import __version__
from ..errors import HindsightLabError, NothingToDo
from . import bench, conflicts, datasets, demo, fit, live, memories, reembed, reflect, replay, serve, sweep
from .args import Parser, examples

DESCRIPTION = "``hindsight-lab``: the command line. Each subcommand is a thin layer over the library."
EXIT_CODES = """exit codes: 0 done; 2 invalid input, configuration or usage (the message names the file, line and
field); 3 nothing to do (no episode left after skipping invalid lines, or a replay with an empty query set);
130 interrupted."""
FIRST_STEPS = examples("hindsight-lab demo", "hindsight-lab replay tau-bench-airline-sample --out reports/tau",
                       "hindsight-lab serve --store memory-store", "hindsight-lab datasets list")
# The order of ``hindsight-lab --help``.
COMMAND_GROUPS = (demo, reflect, replay, live, reembed, sweep, fit, datasets, bench, serve, conflicts, memories)


def _build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="hindsight-lab", description=DESCRIPTION, epilog=f"{EXIT_CODES}\n\n{FIRST_STEPS}")
    parser.add_argument("--version", action="version", version=f"hindsight-lab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.add_parser(sub)
    return parser


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
