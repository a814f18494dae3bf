"""A saved copy of a memory's in-process state in its Postgres namespace, stamped with the change counter it holds.

Opening a memory rebuilds what it recalls from (the keyword, task-type and trigger indexes, the classifier, the
evidence and the trigger state) from every record of the namespace; at 100k records that full scan is most of the
open time. A memory saves that state here (:mod:`hindsight_lab.memory.snapshot` makes and reads the bytes), stamped
with the value of the change counter (:mod:`.pgchanges`) it had caught up to, so that the next open reads one value
and then only the changes numbered after it from the change log.

One table of the namespace's schema (migration 3, :mod:`.pgschema`): ``snapshot``, one row per fingerprint of what
the state depends on (``seq``, ``data``, ``saved_at``). A save keeps the newer of two states (``seq``), so writers
saving at once never put an older one back.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MIGRATION_STATEMENTS", "load", "save"]

MIGRATION_STATEMENTS: tuple[str, ...] = (
    "CREATE TABLE {schema}.snapshot (fingerprint text PRIMARY KEY, seq bigint NOT NULL, data bytea NOT NULL, "
    "saved_at timestamptz NOT NULL DEFAULT now())",
    # the bytes come compressed: no second (pglz) compression on the way in
    "ALTER TABLE {schema}.snapshot ALTER COLUMN data SET STORAGE EXTERNAL",
)


def save(conn: Any, sql: Any, fingerprint: str, seq: int, data: bytes) -> bool:
    """Keep ``data`` as the state at change ``seq`` unless a state as new or newer is saved; True when kept.
    Only one fingerprint's row is kept: a state made under another config is of no use once this one writes."""
    conn.execute("SET LOCAL statement_timeout = 0")  # tens of MB at 100k records
    conn.execute(sql("DELETE FROM {schema}.snapshot WHERE fingerprint <> %s"), (fingerprint,))
    row = conn.execute(sql("INSERT INTO {schema}.snapshot (fingerprint, seq, data) VALUES (%s, %s, %s) "
                           "ON CONFLICT (fingerprint) DO UPDATE SET seq = EXCLUDED.seq, data = EXCLUDED.data, "
                           "saved_at = now() WHERE {schema}.snapshot.seq < EXCLUDED.seq RETURNING seq"),
                       (fingerprint, seq, data)).fetchone()
    return row is not None


def load(conn: Any, sql: Any, fingerprint: str) -> tuple[int, bytes] | None:
    """``(seq, data)`` of the state saved under ``fingerprint``, or None."""
    row = conn.execute(sql("SELECT seq, data FROM {schema}.snapshot WHERE fingerprint = %s"),
                       (fingerprint,)).fetchone()
    return (int(row[0]), bytes(row[1])) if row is not None else None
