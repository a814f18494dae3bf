"""The search process of ``hindsight-lab bench``: ``python -m hindsight_lab.bench --worker SPEC.json`` (internal)."""

import sys

from .search import worker_main

if sys.argv[1:2] != ["--worker"] or len(sys.argv) != 3:
    sys.exit("usage: python -m hindsight_lab.bench --worker SPEC.json (internal; use `hindsight-lab bench`)")
worker_main(sys.argv[2])
