"""One writer per embedded store folder, enforced: an exclusive lock on ``<folder>/hindsight-writer.lock``.

A ``MemorySystem`` keeps in-process indexes next to its store (task types, triggers, keywords, the classifier)
that another process's writes would never reach, so two writers on one embedded folder silently diverge: the same
rule written through each became two records, and feedback through one on the other's id answered "no memory with
id". The first process to open a folder for writing takes the lock; any other process that tries gets a
:class:`~hindsight_lab.errors.StoreError` naming the holder (pid, host, since when). Read-only opens
(``store.read_only``) take no lock and refuse writes.

The lock is ``fcntl.flock`` on the file, which the operating system releases when the holder exits in any way
(SIGKILL included): a lock file left by a process that died is simply taken over, its holder line rewritten. Within
one process the lock is counted, so several stores (namespaces) on one folder share it.

Examples:
    >>> acquire_writer("memory-store")  # doctest: +SKIP
    >>> release_writer("memory-store")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import socket
import threading
from datetime import datetime, timezone
from pathlib import Path

from ..errors import StoreError

__all__ = ["LOCK_NAME", "acquire_writer", "holder", "release_writer"]

LOCK_NAME = "hindsight-writer.lock"

_held: dict[Path, tuple[int, int]] = {}
"""folder → (file descriptor, how many opens of this process hold it)."""
_guard = threading.Lock()


def holder(folder: str | Path) -> dict | None:
    """What the lock file says of its last holder (``pid``, ``host``, ``since``), or None."""
    try:
        return json.loads((Path(folder) / LOCK_NAME).read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None


def acquire_writer(folder: str | Path) -> None:
    """Take (or count once more) this process's writer lock on ``folder``.

    Raises:
        StoreError: another process holds it (the message names that process).
    """
    import fcntl

    path = Path(folder).resolve()
    with _guard:
        if path in _held:
            fd, n = _held[path]
            _held[path] = (fd, n + 1)
            return
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            who = holder(path) or {}
            raise StoreError(
                f"store folder {folder} is open for writing by process {who.get('pid', '?')} on "
                f"{who.get('host', '?')} (since {who.get('since', '?')}); one process writes an embedded store: "
                "stop that process, open this one read-only (store.read_only=true), or serve the data with "
                "`chroma run` and give every process its URL") from None
        stamp = {"pid": os.getpid(), "host": socket.gethostname(),
                 "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(stamp).encode(), 0)
        _held[path] = (fd, 1)


def release_writer(folder: str | Path) -> None:
    """Give back one count of this process's writer lock on ``folder`` (the last one unlocks it)."""
    import fcntl

    path = Path(folder).resolve()
    with _guard:
        if path not in _held:
            return
        fd, n = _held[path]
        if n > 1:
            _held[path] = (fd, n - 1)
            return
        del _held[path]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
