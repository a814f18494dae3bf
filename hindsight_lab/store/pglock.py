"""One write at a time per Postgres namespace, across every process that writes it: a session-level advisory lock
per namespace, taken for the length of one logical write (a dedup check and the insert or merge it decides, a
promotion, a maintenance pass) and given back after it.

Row locks cannot guard a check-then-insert (the row the check looks for does not exist yet), so dedup, merge,
promotion and the evidence counters of rules are serialised by this lock instead; recall needs no lock (every
process refreshes its recall index from the namespace's change log, :mod:`.pgchanges`). The database releases the
lock when the holder's session ends in any way (a killed process included). Each process keeps one lock connection
per database and namespace, so a wait on one namespace holds up no other; a wait longer than the store's timeout
is a :class:`~hindsight_lab.errors.StoreError` that names the holder (its pid and host, from the holding
connection's ``application_name``). Within one process the lock is re-entrant per thread and exclusive between
threads.
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..errors import StoreError
from .pgschema import advisory_key, schema_name

__all__ = ["exclusive"]


class _Slot:
    """The lock connection of one (database, namespace) in this process, and who in the process holds it."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.conn: Any = None
        self.depth = 0


_slots: dict[tuple[str, str], _Slot] = {}
_guard = threading.Lock()


def _split(key: int) -> tuple[int, int]:
    """``pg_locks``' (classid, objid) of a bigint advisory key."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    return unsigned >> 32, unsigned & 0xFFFFFFFF


def _holder(conn: Any, key: int) -> str:
    classid, objid = _split(key)
    row = conn.execute("SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                       "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s "
                       "AND l.objsubid = 1", (classid, objid)).fetchone()
    return (row[0] if row and row[0] else "another process")


def _slot(conninfo: str, namespace: str) -> _Slot:
    with _guard:
        return _slots.setdefault((conninfo, namespace), _Slot())


@contextmanager
def exclusive(conninfo: str, public: str, namespace: str, connect: Callable[[str], Any],
              timeout_s: float) -> Iterator[None]:
    """Hold the namespace's write lock for the block (``connect(application_name)`` opens the lock connection the
    first time, or again after the database dropped it).

    Raises:
        StoreError: the lock was not had within ``timeout_s`` (the message names its holder), or the database
            cannot be reached.
    """
    import psycopg

    slot = _slot(conninfo, namespace)
    if not slot.thread_lock.acquire(timeout=timeout_s):
        raise StoreError(f"namespace {namespace!r} of store {public}: another write of this process held the "
                         f"write lock for over {timeout_s:g} s")
    try:
        if slot.depth == 0:
            try:
                _take(slot, namespace, public, connect, timeout_s)
            except psycopg.Error as exc:
                raise StoreError(f"store {public}: cannot take the write lock of namespace {namespace!r}: "
                                 f"{exc}") from None
        slot.depth += 1
        try:
            yield
        finally:
            slot.depth -= 1
            if slot.depth == 0:
                _give_back(slot, namespace)
    finally:
        slot.thread_lock.release()


def _take(slot: _Slot, namespace: str, public: str, connect: Callable[[str], Any], timeout_s: float) -> None:
    import psycopg

    key = advisory_key("writer", schema_name(namespace))
    for attempt in (0, 1):
        if slot.conn is None or slot.conn.closed or slot.conn.broken:
            slot.conn = connect(f"hindsight_lab writer pid {os.getpid()} on {socket.gethostname()}"[:63])
            slot.conn.autocommit = True
        try:
            slot.conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(timeout_s * 1000)}ms",))
            slot.conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            return
        except psycopg.errors.LockNotAvailable:
            who = _holder(slot.conn, key)
            raise StoreError(f"namespace {namespace!r} of store {public}: the write lock was held by {who} for "
                             f"over {timeout_s:g} s") from None
        except psycopg.OperationalError:
            if attempt:
                raise
            slot.conn = None  # the database restarted: a new session (the old one's locks are gone)


def _give_back(slot: _Slot, namespace: str) -> None:
    try:
        slot.conn.execute("SELECT pg_advisory_unlock(%s)", (advisory_key("writer", schema_name(namespace)),))
    except Exception:  # noqa: BLE001 (a dead session has given its locks back already)
        slot.conn = None
