"""``hindsight-lab serve``: the MCP memory server on stdio or streamable HTTP (:func:`hindsight_lab.server.run.
run_server` does the serving).

The config file says how memory behaves (an exported :class:`~hindsight_lab.config.LabConfig`, loaded unchanged)
and, in an optional ``server:`` section, how the server runs (:class:`~hindsight_lab.server.config.ServerConfig`;
``--set server.<key>=...`` overrides it). Without ``--config`` the server runs the packaged default config
(``LabConfig()``, which ``experiments/configs/default.yaml`` spells out) and says so on start. ``--store`` says where
memory lives: a folder (embedded Chroma), a Chroma server URL, or a Postgres URL (``postgresql://USER@HOST:5432/DB``,
the password from ``PGPASSWORD``). Logs go to stderr (stdout is the stdio transport's channel).

Examples:
    hindsight-lab serve --store memory-store
    HINDSIGHT_MCP_TOKEN=... hindsight-lab serve --config tuned.yaml --store http://chroma:8000 --transport http \\
        --host 0.0.0.0 --port 8765
    PGPASSWORD=... hindsight-lab serve --config tuned.yaml --store postgresql://hindsight@db:5432/hindsight
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Any

from .args import add_config, add_set, add_store, examples, load_served_config, port_number, store_params

if TYPE_CHECKING:
    from ..config import LabConfig
    from ..server.config import ServerConfig

logger = logging.getLogger(__name__)

DEFAULT_CONFIG_NOTE = ("no --config: running the packaged default config (LabConfig(), as in "
                       "experiments/configs/default.yaml)")
"""The start line of a server run without ``--config``."""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("serve", help="MCP memory server (stdio, or streamable HTTP for many clients)",
                            epilog=examples(
                                "hindsight-lab serve --store memory-store",
                                "hindsight-lab serve --store memory-store --set server.tool_prefix=team_",
                                "hindsight-lab serve --config experiments/configs/lure-resistant.yaml --store "
                                "http://chroma:8000 --transport http --port 8765"))
    add_config(parser, "LabConfig YAML file (e.g. one written by export), with an optional server: section "
               "(default: the packaged default config)", overrides=False)
    add_store(parser, "folder of an embedded Chroma store, a Chroma server URL, or a Postgres URL "
              "(postgresql://USER@HOST:5432/DB, postgresql+embedded:///FOLDER)", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio for one local client (default), http (streamable HTTP at /mcp) for many")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1; any other "
                        "needs a bearer token in the variable server.token_env names)")
    parser.add_argument("--port", type=port_number, default=8765, help="HTTP port (default 8765)")
    add_set(parser, "dotted config override (repeatable); server.<key> sets the server's own settings")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log level on stderr (default INFO)")
    parser.set_defaults(func=run)


def served_config(args: argparse.Namespace) -> tuple["LabConfig", "ServerConfig"]:
    """The served config (``--config``, else the packaged default, which is logged) with the ``--set`` overrides
    and the ``--store``; nothing heavy is loaded."""
    if args.config is None:
        logger.info(DEFAULT_CONFIG_NOTE)
    cfg, settings = load_served_config(args)
    return cfg.with_params(store_params(args.store)), settings


def run(args: argparse.Namespace) -> int:
    """Load the config, then serve until the transport ends."""
    from ..server.run import run_server

    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg, settings = served_config(args)
    run_server(cfg, args.store, settings, transport=args.transport, host=args.host, port=args.port)
    return 0
