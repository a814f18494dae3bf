"""The production memory server over MCP (DESIGN §8): ``hindsight-lab serve``.

- :mod:`~hindsight_lab.server.app`: the four tools (``memory_write``, ``memory_search``, ``memory_reflect``,
  ``memory_feedback``) with the configured name prefix and namespaces; :mod:`~hindsight_lab.server.models` their
  inputs and structured outputs; :mod:`~hindsight_lab.server.limits` the input size limits.
- :mod:`~hindsight_lab.server.config`: :class:`~hindsight_lab.server.config.ServerConfig`, the server's own settings
  (the ``server:`` section of a served config file), and reading such a file.
- :mod:`~hindsight_lab.server.pool`: one ``MemorySystem`` per namespace, each behind its own lock.
- :mod:`~hindsight_lab.server.http`, :mod:`~hindsight_lab.server.auth`: streamable HTTP, health, bearer token.
- :mod:`~hindsight_lab.server.maintenance`: maintenance on a schedule.
- :mod:`~hindsight_lab.server.run`: :func:`~hindsight_lab.server.run.run_server`, what ``hindsight-lab serve``
  (:mod:`hindsight_lab.cli.serve`) runs.
- :mod:`~hindsight_lab.server.process`: a server in a child process and an MCP client for it (benchmarks,
  notebooks, tests; ``hindsight-lab bench --mcp`` is :mod:`hindsight_lab.bench.mcp`, the container health check
  ``python -m hindsight_lab.cli.healthcheck``).

Importing this package imports neither the ``mcp`` SDK nor chromadb nor torch.
"""
