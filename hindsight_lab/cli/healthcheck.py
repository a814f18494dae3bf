"""``python -m hindsight_lab.cli.healthcheck [BASE_URL]``: exit 0 when the memory server's health endpoint
answers ``ok``, 1 otherwise — the container health check (``Dockerfile``, ``compose.yaml``).

The bearer token is read from ``$HINDSIGHT_MCP_TOKEN`` (``--token-env`` names another variable) and never printed.
It imports neither torch nor chromadb nor the ``mcp`` SDK, so it stays quick beside a busy server.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..server.process import get_health


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hindsight_lab.cli.healthcheck", description=__doc__)
    parser.add_argument("base_url", nargs="?", default="http://127.0.0.1:8765", help="server URL without /health")
    parser.add_argument("--token-env", default="HINDSIGHT_MCP_TOKEN", help="variable holding the bearer token")
    parser.add_argument("--timeout", type=float, default=4.0)
    args = parser.parse_args(argv)
    try:
        status = get_health(args.base_url.rstrip("/"), os.environ.get(args.token_env) or None, args.timeout)
    except (OSError, ValueError) as exc:
        print(f"unhealthy: {type(exc).__name__}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    ok = status.get("status") == "ok"
    print("ok" if ok else f"unhealthy: {status.get('status')!r}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
