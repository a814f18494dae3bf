"""How many threads an encode may use: one for a single query (several spin-wait on each other beside a busy
process), every core a process may have for a bulk encode, and a share of them when several processes work at once
(a sweep's workers): :func:`share_cores` sets ``OMP_NUM_THREADS``, the variable every numeric library reads, for
this process and the ones it starts."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def core_share(processes: int) -> int:
    """Each of ``processes`` working at once gets this many cores: an equal share, at least one."""
    return max(1, cores() // max(1, int(processes)))


@contextmanager
def share_cores(processes: int) -> Iterator[int]:
    """Within the block, each of ``processes`` working at once (this one and those it starts, which inherit the
    environment) has an equal share of the cores, at least one: ``OMP_NUM_THREADS``, unless the user set it, is
    restored after. Yields the threads per process.

    Examples:
        >>> with share_cores(10 ** 6) as share:
        ...     share
        1
    """
    user = os.environ.get("OMP_NUM_THREADS")
    if user is None:
        os.environ["OMP_NUM_THREADS"] = str(core_share(processes))
    try:
        yield bulk_thread_count(0)
    finally:
        if user is None:
            os.environ.pop("OMP_NUM_THREADS", None)


_BULK_LOCK = threading.Lock()


def bulk_thread_count(bulk_threads: int) -> int:
    """The torch threads of one bulk encode: ``bulk_threads`` when set, else ``OMP_NUM_THREADS`` (the convention
    every numeric library reads; a pool of worker processes sets it to share the cores), else every core this
    process may run on.

    Examples:
        >>> bulk_thread_count(3)
        3
        >>> bulk_thread_count(0) >= 1
        True
    """
    if bulk_threads:
        return int(bulk_threads)
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return cores()


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the count (a no-op when it is already n)."""
    import torch

    before = torch.get_num_threads()
    if n == before:
        yield
        return
    with _BULK_LOCK:  # one bulk encode at a time changes the count
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(before)
