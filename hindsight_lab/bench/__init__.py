"""Benchmarks: each module computes its figures and returns them (a JSON-ready dict) with a function that renders
them as text; ``hindsight-lab bench`` (:mod:`hindsight_lab.cli.bench`) parses the options, prints and writes JSON.

- :mod:`.search`: search latency, ANN recall, write throughput and peak memory against raw Chroma (the default);
  :mod:`.corpus` its generated corpus and embedding cache.
- :mod:`.mcp`: many concurrent MCP clients against a real memory server (``--mcp``).
- :mod:`.sweep`: the sweep's cached evaluator against full replays (``--sweep``).
- :mod:`.conflicts`: the conflict pass on N generated rules (``--conflicts N``).

``python -m hindsight_lab.bench --worker SPEC`` is the search process :mod:`.search` starts for each store size.
"""
