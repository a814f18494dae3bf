"""The Postgres store's schema: one Postgres schema per namespace, versioned, migrated by ordered SQL steps.

Layout of the schema ``hindsight_<namespace>`` (one per namespace, so namespaces share nothing and a search never
filters by namespace):

* ``schema_version``: one row per applied migration (``version``, ``description``, ``applied_at``);
* ``buckets``: per bucket the embedding model that built it and the dimension of its vectors (NULL until the first
  vector arrives);
* ``clock`` and ``changes``: the change log every process's recall index is refreshed from (:mod:`.pgchanges`);
* ``snapshot``: a memory's in-process state as of a change number, read at open instead of every record
  (:mod:`.pgsnapshot`);
* one table per bucket (``episodes``, ``candidates``, ``rules``, ``archive``), each with its own HNSW index
  (``vector_cosine_ops``): like Chroma's collection per bucket (DESIGN §1), a bucket's search filters nothing, so
  pgvector returns its ``k`` nearest without iterative scans or partial indexes. A record is ``id``, ``document``
  (its content), ``meta`` (the flat metadata :mod:`~hindsight_lab.store.codec` writes for Chroma, as ``jsonb``:
  one codec for both stores, so a record reads back exactly as Chroma returns it) and ``embedding``; ``seq`` keeps
  the order of first insertion (scans return it, as the dict-backed store does).

The vector column is created without a dimension: a bucket's dimension becomes known with its first vectors
(``vector(d)`` and the HNSW index are set then, :func:`bind_dimension`), and ``rebuild`` may change it.

Migrations are applied in one transaction under a transaction-level advisory lock, so two processes opening a new
namespace at once neither race nor half-apply a step; a schema newer than this code is refused. Append a
:class:`Migration` to :data:`MIGRATIONS` to change the schema; never edit an applied one. The SQL is PostgreSQL 16
(the compose image) and works on 18 (the embedded server).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError
from ..types import Bucket
from . import pgchanges, pgsnapshot

__all__ = ["MIGRATIONS", "Migration", "TABLES", "advisory_key", "bind_dimension", "create_index", "ensure_pgvector",
           "migrate", "schema_name", "schema_version", "unbind_dimension"]

SCHEMA_PREFIX = "hindsight_"
TABLES: dict[Bucket, str] = {Bucket.EPISODE: "episodes", Bucket.CANDIDATE: "candidates", Bucket.RULE: "rules",
                             Bucket.ARCHIVE: "archive"}
MIN_PGVECTOR = (0, 8, 0)  # hnsw.iterative_scan


@dataclass(frozen=True)
class Migration:
    """One schema step: SQL statements with ``{schema}`` where the namespace's schema goes."""

    version: int
    description: str
    statements: tuple[str, ...]


def _bucket_table(table: str) -> str:
    return (f"CREATE TABLE {{schema}}.{table} (seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE, "
            "id text PRIMARY KEY, document text NOT NULL, meta jsonb NOT NULL, embedding vector NOT NULL)")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "buckets (embedding model, dimension) and one table per bucket", (
        "CREATE TABLE {schema}.buckets (bucket text PRIMARY KEY, embedding_model text, dim integer, "
        "updated_at timestamptz NOT NULL DEFAULT now())",
        *(_bucket_table(t) for t in TABLES.values()),
    )),
    Migration(2, "the change log (clock, changes) that keeps every process's recall index in step",
              (*pgchanges.MIGRATION_STATEMENTS,
               # a namespace of version 1 already holds records: each is logged once, as a change before any other
               *(f"INSERT INTO {{schema}}.changes (id, seq, bucket) SELECT id, 0, '{b}' FROM {{schema}}.{t}"
                 for b, t in TABLES.items()))),
    Migration(3, "a saved copy of a memory's in-process state, stamped with the change counter",
              pgsnapshot.MIGRATION_STATEMENTS),
)


def schema_name(namespace: str) -> str:
    """The Postgres schema of a namespace.

    Examples:
        >>> schema_name("team-a")
        'hindsight_team-a'
    """
    return SCHEMA_PREFIX + namespace


def advisory_key(*parts: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_xact_lock`` (the same in every process).

    Examples:
        >>> advisory_key("migrate") == advisory_key("migrate") != advisory_key("other")
        True
    """
    digest = hashlib.blake2b("\x1f".join(("hindsight_lab",) + parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _q(template: str, schema: str) -> Any:
    from psycopg import sql

    return sql.SQL(template).format(schema=sql.Identifier(schema))


def schema_version(conn: Any, schema: str) -> int:
    """The version the schema is at (0: it does not exist yet)."""
    row = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".schema_version',)).fetchone()
    if row[0] is None:
        return 0
    return int(conn.execute(_q("SELECT coalesce(max(version), 0) FROM {schema}.schema_version", schema)
                            ).fetchone()[0])


def _pgvector(conn: Any, create: bool) -> tuple[int, ...] | None:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None and create:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        return None
    return tuple(int(p) for p in row[0].split(".")[:3] if p.isdigit())


def ensure_pgvector(conn: Any) -> tuple[int, ...]:
    """Create the ``vector`` extension if the database has none (under an advisory lock) and check its version;
    ``conn`` is outside any transaction and is left so.

    Raises:
        StoreError: pgvector is missing and cannot be created, or is older than 0.8.0.
    """
    import psycopg

    version = _pgvector(conn, create=False)
    conn.commit()
    if version is None:
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key("migrate"),))
                version = _pgvector(conn, create=True)
        except psycopg.Error as exc:
            raise StoreError(f"the database has no pgvector extension and creating it failed ({exc}); install "
                             "pgvector 0.8.0 or newer on the server (the pgvector/pgvector images ship it) or have "
                             "an administrator run CREATE EXTENSION vector") from None
    if version is None or version < MIN_PGVECTOR:
        have = ".".join(map(str, version)) if version else "none"
        raise StoreError(f"pgvector {'.'.join(map(str, MIN_PGVECTOR))} or newer is required (the database has "
                         f"{have}): ALTER EXTENSION vector UPDATE, or use a newer pgvector/pgvector image")
    return version


def migrate(conn: Any, namespace: str, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Create or upgrade the namespace's schema; returns the version it is at. ``conn`` is outside any
    transaction; a schema at the latest version costs one read and no lock.

    Raises:
        StoreError: the schema is newer than this code.
    """
    schema, latest = schema_name(namespace), migrations[-1].version
    current = schema_version(conn, schema)
    conn.commit()
    if current < latest:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key("migrate"),))
            conn.execute("SET LOCAL statement_timeout = 0")
            conn.execute(_q("CREATE SCHEMA IF NOT EXISTS {schema}", schema))
            conn.execute(_q("CREATE TABLE IF NOT EXISTS {schema}.schema_version (version integer PRIMARY KEY, "
                            "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())", schema))
            current = schema_version(conn, schema)
            for step in migrations:
                if step.version > current:
                    for statement in step.statements:
                        conn.execute(_q(statement, schema))
                    conn.execute(_q("INSERT INTO {schema}.schema_version (version, description) VALUES (%s, %s)",
                                    schema), (step.version, step.description))
            current = max(current, latest)
    if current > latest:
        raise StoreError(f"namespace {namespace!r} (schema {schema}) is at schema version {current}, newer than "
                         f"this hindsight_lab knows ({latest}): upgrade hindsight_lab to open it")
    return current


def bind_dimension(conn: Any, schema: str, bucket: Bucket, dim: int) -> None:
    """Give a bucket's (empty, dimensionless) vector column its dimension; the caller holds the bucket's row lock
    (``buckets ... FOR UPDATE``) in its transaction, and indexes the column (:func:`create_index`) once the first
    rows are in (building an HNSW index over rows is faster than inserting rows into one)."""
    from psycopg import sql

    if not 1 <= dim <= 2000:
        raise StoreError(f"vectors of {dim} dimensions: pgvector's HNSW index takes 1 to 2000")
    conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE vector({})").format(
        sql.Identifier(schema, TABLES[bucket]), sql.Literal(dim)))
    conn.execute(_q("UPDATE {schema}.buckets SET dim = %s, updated_at = now() WHERE bucket = %s", schema),
                 (dim, str(bucket)))


def create_index(conn: Any, schema: str, bucket: Bucket, *, m: int, ef_construction: int) -> None:
    """The bucket's HNSW index (cosine distance) with graph degree ``m`` and build width ``ef_construction``."""
    from psycopg import sql

    table = TABLES[bucket]
    conn.execute("SET LOCAL statement_timeout = 0")  # an index over many rows takes as long as it takes
    conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
                         "WITH (m = {}, ef_construction = {})").format(
        sql.Identifier(f"{table}_embedding_hnsw"), sql.Identifier(schema, table), sql.Literal(int(m)),
        sql.Literal(int(ef_construction))))


def unbind_dimension(conn: Any, schema: str, bucket: Bucket) -> None:
    """Empty a bucket and make its vector column dimensionless again (``rebuild``; same lock as above)."""
    from psycopg import sql

    table = TABLES[bucket]
    ident = sql.Identifier(schema, table)
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(schema, f"{table}_embedding_hnsw")))
    conn.execute(sql.SQL("TRUNCATE {}").format(ident))
    conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE vector").format(ident))
    conn.execute(_q("UPDATE {schema}.buckets SET dim = NULL, updated_at = now() WHERE bucket = %s", schema),
                 (str(bucket),))
