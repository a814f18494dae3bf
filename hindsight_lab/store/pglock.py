"""One writer per Postgres namespace, enforced: a session-level advisory lock per namespace, held on one connection
per process and database for as long as the process has the namespace open for writing.

A ``MemorySystem`` keeps in-process indexes beside its store (task types, triggers, keywords, the classifier) that
another process's writes never reach, so two writers of one namespace would silently diverge (DESIGN §1, and
:mod:`~hindsight_lab.store.lock` for embedded Chroma folders). Postgres gives the lock the same guarantees as
``flock``: the database releases it when the holder's session ends in any way (a killed process included), and a
second process is refused with a :class:`~hindsight_lab.errors.StoreError` that names the holder (its pid, host and
since when, from the lock connection's ``application_name``). Within one process the lock is counted, so several
stores of one namespace share it; read-only stores take none. Once recall is served by the database (issue 20, item
2) this lock goes.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from ..errors import StoreError
from .pgschema import advisory_key, schema_name

__all__ = ["acquire_writer", "release_writer"]

_held: dict[str, tuple[Any, dict[str, int]]] = {}  # conninfo → (lock connection, namespace → count)
_guard = threading.Lock()


def _split(key: int) -> tuple[int, int]:
    """``pg_locks``' (classid, objid) of a bigint advisory key."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    return unsigned >> 32, unsigned & 0xFFFFFFFF


def _holder(conn: Any, key: int) -> str:
    classid, objid = _split(key)
    row = conn.execute("SELECT a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a "
                       "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s "
                       "AND l.objid = %s AND l.objsubid = 1", (classid, objid)).fetchone()
    if row is None:
        return "another process"
    return f"{row[0] or 'another process'} (since {row[1]:%Y-%m-%d %H:%M:%S %Z})"


def acquire_writer(conninfo: str, public: str, namespace: str, connect: Any) -> None:
    """Take (or count once more) this process's writer lock on ``namespace``; ``connect(application_name)`` opens
    the lock connection when the process holds none on this database yet.

    Raises:
        StoreError: another process holds it (the message names that process).
    """
    with _guard:
        conn, counts = _held.get(conninfo, (None, {}))
        if counts.get(namespace):
            counts[namespace] += 1
            return
        if conn is not None and conn.broken:  # the database restarted: its session's locks are gone
            conn = _retake(conninfo, counts, connect)
        if conn is None:
            conn = connect(f"hindsight_lab writer pid {os.getpid()} on {socket.gethostname()}"[:63])
            conn.autocommit = True
            _held[conninfo] = (conn, counts)
        key = advisory_key("writer", schema_name(namespace))
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            who = _holder(conn, key)
            if not counts:
                conn.close()
                del _held[conninfo]
            raise StoreError(
                f"namespace {namespace!r} of store {public} is open for writing by {who}; one process writes a "
                "namespace while recall is served from in-process indexes: stop that process, or open this one "
                "read-only (store.read_only=true)")
        counts[namespace] = 1


def _retake(conninfo: str, counts: dict[str, int], connect: Any) -> Any:
    """A new lock connection for the namespaces this process holds (the old one's session ended)."""
    import logging

    conn = connect(f"hindsight_lab writer pid {os.getpid()} on {socket.gethostname()}"[:63])
    conn.autocommit = True
    for namespace in list(counts):
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (advisory_key("writer", schema_name(namespace)),)
                            ).fetchone()[0]:
            logging.getLogger(__name__).warning("namespace %r: its writer lock was lost with the database session "
                                                "and another process holds it now", namespace)
    _held[conninfo] = (conn, counts)
    return conn


def release_writer(conninfo: str, namespace: str) -> None:
    """Give back one count of this process's writer lock on ``namespace`` (the last one unlocks it, and the last
    namespace closes the lock connection)."""
    with _guard:
        conn, counts = _held.get(conninfo, (None, {}))
        if not counts.get(namespace):
            return
        counts[namespace] -= 1
        if counts[namespace]:
            return
        del counts[namespace]
        try:
            if counts:
                conn.execute("SELECT pg_advisory_unlock(%s)", (advisory_key("writer", schema_name(namespace)),))
                return
            conn.close()  # the session's locks go with it
        except Exception:  # noqa: BLE001 (a dead connection has released its locks already)
            pass
        if not counts:
            del _held[conninfo]
