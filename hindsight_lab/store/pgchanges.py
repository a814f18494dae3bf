"""The change log of a Postgres namespace: how every process that has the namespace open learns, before its next
search or write, which records another process wrote, moved or deleted — so its in-process recall index (keywords,
task types, triggers, the classifier) holds what the database holds.

Two tables of the namespace's schema (migration 2, :mod:`.pgschema`):

* ``clock``: one row, the namespace's change counter. Every transaction that changes records bumps it (``UPDATE …
  RETURNING``), which takes the row's lock until the transaction commits: the counter's values are given out in
  commit order, so a reader that has seen value ``n`` has seen every change numbered ``n`` or below — a sequence
  (``bigserial``) does not promise that, since a later number may commit first.
* ``changes``: the last change of each record, ``(id, seq, bucket)``, ``bucket`` NULL once deleted. One row per
  record ever written, whatever the number of writes; an index on ``seq`` serves ``WHERE seq > n``.

The in-process index is refreshed from it incrementally (:meth:`~hindsight_lab.memory.system.MemorySystem.open`
reads the counter before it scans the store, then every search and write applies the changes since), which keeps
BM25's statistics (term and length counts) exact in every process; a search costs one indexed read of the counter
when nothing changed.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..types import Bucket

__all__ = ["MIGRATION_STATEMENTS", "log", "read", "seen"]

MIGRATION_STATEMENTS: tuple[str, ...] = (
    "CREATE TABLE {schema}.clock (one boolean PRIMARY KEY DEFAULT true CHECK (one), seq bigint NOT NULL)",
    "INSERT INTO {schema}.clock (seq) VALUES (0)",
    "CREATE TABLE {schema}.changes (id text PRIMARY KEY, seq bigint NOT NULL, bucket text)",
    "CREATE INDEX changes_seq ON {schema}.changes (seq)",
)


def log(conn: Any, sql: Any, ids: Sequence[str], bucket: Bucket | None) -> int | None:
    """Record, in the caller's transaction, that ``ids`` now live in ``bucket`` (None: deleted from it); returns the
    change's number."""
    if not ids:
        return None
    seq = _tick(conn, sql)
    conn.execute(sql("INSERT INTO {schema}.changes (id, seq, bucket) SELECT i, %s, %s FROM unnest(%s::text[]) AS i "
                     "ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, bucket = EXCLUDED.bucket"),
                 (seq, str(bucket) if bucket is not None else None, list(dict.fromkeys(ids))))
    return seq


def log_delete(conn: Any, sql: Any, ids: Sequence[str], bucket: Bucket) -> int | None:
    """Deleted from ``bucket``: a record that has moved on to another bucket meanwhile keeps that later change."""
    if not ids:
        return None
    seq = _tick(conn, sql)
    conn.execute(sql("INSERT INTO {schema}.changes (id, seq, bucket) SELECT i, %s, NULL FROM unnest(%s::text[]) AS i "
                     "ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, bucket = NULL "
                     "WHERE {schema}.changes.bucket = %s"),
                 (seq, list(dict.fromkeys(ids)), str(bucket)))
    return seq


def _tick(conn: Any, sql: Any) -> int:
    """The next change number; the clock row stays locked by the caller's transaction until it commits."""
    return int(conn.execute(sql("UPDATE {schema}.clock SET seq = seq + 1 RETURNING seq")).fetchone()[0])


def seen(conn: Any, sql: Any) -> int:
    """The namespace's change counter now."""
    return int(conn.execute(sql("SELECT seq FROM {schema}.clock")).fetchone()[0])


def read(conn: Any, sql: Any, after: int, own: frozenset[int] = frozenset()
         ) -> tuple[int, list[tuple[str, Bucket | None]]]:
    """The counter, and each record changed since ``after`` with the bucket it is in now (None: deleted) — but
    those whose last change is one of ``own`` (the reader's own writes, which it has applied already)."""
    now = seen(conn, sql)
    if now == after:
        return now, []
    rows = conn.execute(sql("SELECT id, bucket, seq FROM {schema}.changes WHERE seq > %s AND seq <= %s "
                            "ORDER BY seq"), (after, now)).fetchall()
    return now, [(i, Bucket(b) if b is not None else None) for i, b, seq in rows if seq not in own]
