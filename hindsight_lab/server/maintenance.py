"""Scheduled maintenance inside the server: ``MemorySystem.maintain(now)`` (decay, archive, conflicts) over every
open namespace, every ``server.maintenance_interval_s`` seconds, the first run one interval after start.

A failed run is logged and counted; the schedule goes on. :meth:`MaintenanceSchedule.status` is what the health
endpoint shows.

Examples:
    >>> schedule = MaintenanceSchedule(pool, interval_s=3600)  # doctest: +SKIP
    >>> anyio.run(alongside, schedule, server.run_stdio_async)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any, Awaitable, Callable

from ..types import utcnow
from .pool import MemoryPool

logger = logging.getLogger(__name__)


class MaintenanceSchedule:
    """Runs maintenance on a pool at a fixed interval (0: never)."""

    def __init__(self, pool: MemoryPool, interval_s: float) -> None:
        self.pool = pool
        self.interval_s = interval_s
        self.runs = 0
        self.failures = 0
        self.last_at: datetime | None = None
        self.last: dict[str, dict[str, int]] = {}
        self.totals: dict[str, dict[str, int]] = {}

    def run_once(self, now: datetime | None = None) -> dict[str, dict[str, int]]:
        """Maintain every open namespace now; returns, per namespace, the number of ids per action."""
        now = now or utcnow()
        reports = self.pool.maintain(now)
        summary = {ns: {f.name: len(getattr(rep, f.name)) for f in dataclasses.fields(rep)
                        if isinstance(getattr(rep, f.name), (list, tuple))}
                   for ns, rep in reports.items()}
        self.runs += 1
        self.last_at, self.last = now, summary
        for ns, counts in summary.items():
            total = self.totals.setdefault(ns, {})
            for action, n in counts.items():
                total[action] = total.get(action, 0) + n
        logger.info("maintenance: %s", {ns: {k: v for k, v in s.items() if v} for ns, s in summary.items()})
        return summary

    async def loop(self) -> None:
        """Sleep an interval, maintain (in a worker thread), repeat; forever, unless the interval is 0."""
        import anyio

        if self.interval_s <= 0:
            return
        while True:
            await anyio.sleep(self.interval_s)
            try:
                await anyio.to_thread.run_sync(self.run_once)
            except Exception:  # keep serving; the next run tries again
                self.failures += 1
                logger.exception("maintenance run failed")

    def status(self) -> dict[str, Any]:
        return {"interval_s": self.interval_s, "runs": self.runs, "failures": self.failures,
                "last_at": self.last_at.isoformat() if self.last_at else None, "last": self.last,
                "totals": self.totals}


async def alongside(schedule: MaintenanceSchedule, main: Callable[[], Awaitable[None]]) -> None:
    """Run ``main()`` (a transport) with the schedule beside it; when ``main`` returns, the schedule stops."""
    import anyio

    async with anyio.create_task_group() as tg:
        tg.start_soon(schedule.loop)
        await main()
        tg.cancel_scope.cancel()
