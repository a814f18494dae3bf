"""Chroma-backed store: embedded (``PersistentClient``), a ``chroma run`` server (``HttpClient``), or held in this
process's memory for a store that lives as long as one replay (:meth:`ChromaStore.in_memory`).

One collection per bucket (``<namespace>-episodes``, ``-candidates``, ``-rules``, ``-archive``): a ``where`` filter
over one large collection costs ~35× an unfiltered query (DESIGN §1). Embeddings are always supplied by us
(``embedding_function=None``), so Chroma never tries to download its default model. Each collection records the
embedding model that built it in its metadata.

Examples:
    >>> store = ChromaStore.from_config(LabConfig().store.model_copy(update={"path": "/tmp/mem"}))  # doctest: +SKIP
    >>> store.open("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar
from urllib.parse import urlparse

import numpy as np

from .._env import set_offline_defaults
from ..errors import EmbeddingModelMismatch, StoreError
from ..types import BUCKETS, Bucket
from ..types import MemoryRecord
from .codec import from_row, to_metadata
from .guard import StoreGuard, probe
from .lock import acquire_writer, release_writer

if TYPE_CHECKING:
    from ..config import StoreConfig

logger = logging.getLogger(__name__)

T = TypeVar("T")
_PLURAL = {Bucket.EPISODE: "episodes", Bucket.CANDIDATE: "candidates", Bucket.RULE: "rules", Bucket.ARCHIVE: "archive"}
_SCAN_BATCH = 5000


class Connection:
    """A Chroma client and what guards it: for a server URL its :class:`~hindsight_lab.store.guard.StoreGuard`
    (timeouts, retries, breaker), for an embedded folder this process's writer lock (unless read-only), released
    by :meth:`release`."""

    def __init__(self, client: Any, guard: StoreGuard | None = None, locked: str | None = None) -> None:
        self.client, self.guard, self.locked = client, guard, locked

    def release(self) -> None:
        if self.locked is not None:
            release_writer(self.locked)
            self.locked = None


def connect(*, path: str | None = None, url: str | None = None, timeout_s: float = 10.0, retries: int = 2,
            read_only: bool = False) -> Connection:
    """A guarded client: a server URL is probed first (an unreachable or stalled one fails here, within
    ``timeout_s``) and every later request is bounded; an embedded folder is locked for writing unless
    ``read_only``.

    Raises:
        StoreError: the server does not answer (the message names the URL, password masked, and the cause), or
            another process writes the folder.
    """
    if url:
        problem = probe(url, timeout_s)
        if problem:
            raise StoreError(problem)
        guard = StoreGuard(url, timeout_s=timeout_s, retries=retries)
        return Connection(guard.bound(guard.call("connect", lambda: make_client(url=url))), guard)
    if path and not read_only:
        acquire_writer(path)
        try:
            return Connection(make_client(path=path), locked=path)
        except BaseException:
            release_writer(path)
            raise
    return Connection(make_client(path=path))


def make_client(*, path: str | None = None, url: str | None = None, in_memory: bool = False) -> Any:
    """A Chroma client with telemetry off: ``HttpClient`` for a URL, else ``PersistentClient`` for a path (no
    lock, no timeout: :func:`connect` adds them), or with ``in_memory`` Chroma's in-memory client (one per process,
    shared by every in-memory store: each keeps to its own namespace)."""
    set_offline_defaults()
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError as exc:  # pragma: no cover - chromadb is a hard dependency
        from ..errors import MissingDependencyError

        raise MissingDependencyError("chromadb is required for the Chroma store: pip install chromadb") from exc
    settings = Settings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        if not parsed.hostname:
            raise StoreError(f"store.url {url!r} has no host; expected e.g. http://127.0.0.1:8000")
        return chromadb.HttpClient(host=parsed.hostname, port=parsed.port or 8000,
                                   ssl=parsed.scheme == "https", settings=settings)
    if in_memory:
        return chromadb.EphemeralClient(settings=settings)
    if not path:
        raise StoreError("a Chroma store needs store.path (a folder) or store.url (a chroma server)")
    return chromadb.PersistentClient(path=str(path), settings=settings)


def hnsw_configuration(hnsw: Any) -> dict[str, Any]:
    """The Chroma ``configuration`` of a new collection from ``store.hnsw`` (or anything with its four fields, as a
    :class:`ChromaStore` has); the space is always cosine."""
    return {"hnsw": {"space": "cosine", "ef_construction": hnsw.ef_construction, "ef_search": hnsw.ef_search,
                     "max_neighbors": hnsw.max_neighbors, "sync_threshold": hnsw.sync_threshold}}


class ChromaStore:
    """Store on Chroma collections. The client is injected (tests may pass an ephemeral one)."""

    def __init__(self, client: Any = None, *, namespace: str = "default", path: str | None = None,
                 url: str | None = None, ef_construction: int = 200, ef_search: int = 100,
                 max_neighbors: int = 16, sync_threshold: int = 100, timeout_s: float = 10.0, retries: int = 2,
                 read_only: bool = False, guard: StoreGuard | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.path = path
        self.url = url
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.max_neighbors = max_neighbors
        self.sync_threshold = sync_threshold
        self.timeout_s = timeout_s
        self.retries = retries
        self.read_only = read_only
        self.guard = guard

    @classmethod
    def in_memory(cls, namespace: str) -> "ChromaStore":
        """A store in this process's memory, for one that lives as long as a replay: the same Chroma collections,
        HNSW index and queries as an embedded folder, without the disk writes; its collections are deleted when it
        is closed. ``namespace`` must be unique among the
        process's open in-memory stores (they share one Chroma client)."""
        store = cls(make_client(in_memory=True), namespace=namespace)
        store.transient = True
        return store

    @classmethod
    def from_config(cls, cfg: "StoreConfig", client: Any = None, guard: StoreGuard | None = None
                    ) -> "ChromaStore":
        return cls(client, namespace=cfg.namespace, path=cfg.path, url=cfg.url,
                   ef_construction=cfg.hnsw.ef_construction, ef_search=cfg.hnsw.ef_search,
                   max_neighbors=cfg.hnsw.max_neighbors, sync_threshold=cfg.hnsw.sync_threshold,
                   timeout_s=cfg.timeout_s, retries=cfg.retries,
                   read_only=cfg.read_only, guard=guard)

    def _connect(self) -> None:
        if self.client is None:
            conn = connect(path=self.path, url=self.url, timeout_s=self.timeout_s, retries=self.retries,
                           read_only=self.read_only)
            self.client, self.guard, self._connection = conn.client, conn.guard, conn

    def _do(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` through the server's guard (timeouts, retries, errors that name the cause)."""
        return self.guard.call(what, fn) if self.guard is not None else fn()

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise StoreError(f"store opened read-only (store.read_only): {what} refused")

    # ------------------------------------------------------------------ lifecycle
    def collection_name(self, bucket: str) -> str:
        return f"{self.namespace}-{_PLURAL[bucket]}"

    def open(self, embedding_model: str, *, verify: bool = True) -> None:
        self._connect()
        self.embedding_model_ = embedding_model
        self.max_batch_ = int(self._do("open", getattr(self.client, "get_max_batch_size", lambda: 5000)))
        self.collections_: dict[str, Any] = {}
        for bucket in BUCKETS:
            self.collections_[bucket] = self._do("open", lambda b=bucket: self._open_collection(b, embedding_model,
                                                                                             verify))

    def _open_collection(self, bucket: str, embedding_model: str, verify: bool = True) -> Any:
        name = self.collection_name(bucket)
        from chromadb.errors import NotFoundError

        try:
            col = self.client.get_collection(name, embedding_function=None)
        except NotFoundError:
            return self.client.create_collection(
                name, embedding_function=None, metadata=self._collection_metadata(bucket, embedding_model),
                configuration=self._configuration())
        synced = ((getattr(col, "configuration_json", None) or {}).get("hnsw") or {}).get("sync_threshold")
        if not self.read_only and synced != self.sync_threshold:  # the one HNSW setting Chroma lets change
            col.modify(configuration={"hnsw": {"sync_threshold": self.sync_threshold}})
        built_with = (col.metadata or {}).get("embedding_model")
        if built_with != embedding_model and verify:
            if col.count() == 0:  # nothing to mismatch: stamp it with the current model
                col.modify(metadata=self._collection_metadata(bucket, embedding_model))
            else:
                raise EmbeddingModelMismatch(
                    f"collection {name!r} was built with embedding model {built_with!r}, but the configured "
                    f"model is {embedding_model!r}. Open it with embedder.model={built_with!r}, or rebuild its "
                    f"vectors with MemorySystem.reembed() or `hindsight-lab reembed --store ...`.")
        return col

    def _configuration(self) -> dict[str, Any]:
        return hnsw_configuration(self)

    @staticmethod
    def _collection_metadata(bucket: str, embedding_model: str) -> dict[str, Any]:
        return {"hindsight_lab": 1, "bucket": str(bucket), "embedding_model": embedding_model}

    def embedding_models(self) -> dict[str, str | None]:
        """The embedding model recorded on each existing collection (opening nothing)."""
        from chromadb.errors import NotFoundError

        self._connect()
        out: dict[str, str | None] = {}
        for bucket in BUCKETS:
            try:
                col = self._do("read", lambda b=bucket: self.client.get_collection(self.collection_name(b),
                                                                                  embedding_function=None))
            except (NotFoundError, ValueError):
                continue
            out[bucket] = (col.metadata or {}).get("embedding_model")
        return out

    def drop(self) -> None:
        """Delete this namespace's collections and close: what a store kept for one replay leaves behind."""
        self._writable("drop")
        self._connect()
        for bucket in BUCKETS:
            name = self.collection_name(bucket)
            if any(c.name == name for c in self._do("drop", self.client.list_collections)):
                self._do("drop", lambda n=name: self.client.delete_collection(n))
        self.close()

    def close(self) -> None:
        self.collections_ = {}
        connection = getattr(self, "_connection", None)
        if connection is not None:
            connection.release()

    def _col(self, bucket: str) -> Any:
        try:
            return self.collections_[bucket]
        except AttributeError:
            raise StoreError("store is not open: call open() first") from None

    # ------------------------------------------------------------------ writes
    def upsert(self, bucket: str, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        if not records:
            return
        self._writable("upsert")
        col = self._col(bucket)
        emb = np.asarray(embeddings, dtype=np.float32)
        for lo in range(0, len(records), self.max_batch_):
            chunk = records[lo:lo + self.max_batch_]
            self._do("upsert", lambda: col.upsert(ids=[r.id for r in chunk], embeddings=emb[lo:lo + len(chunk)],
                                                  documents=[r.content for r in chunk],
                                                  metadatas=[to_metadata(r) for r in chunk]))

    def update(self, bucket: str, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        self._writable("update")
        col = self._col(bucket)
        for lo in range(0, len(records), self.max_batch_):
            chunk = records[lo:lo + self.max_batch_]
            self._do("update", lambda: col.update(ids=[r.id for r in chunk],
                                                  metadatas=[to_metadata(r) for r in chunk]))

    def delete(self, bucket: str, ids: Sequence[str]) -> None:
        if ids:
            self._writable("delete")
            col = self._col(bucket)
            self._do("delete", lambda: col.delete(ids=list(ids)))

    def rebuild(self, bucket: str, records: Sequence[MemoryRecord], embeddings: np.ndarray,
                embedding_model: str) -> None:
        """Write the new collection first, then swap it in, so a failure leaves the old one intact."""
        self._writable("rebuild")
        name = self.collection_name(bucket)
        tmp_name = f"{name}-rebuild"
        try:
            self.client.delete_collection(tmp_name)
        except Exception:
            pass
        tmp = self.client.create_collection(
            tmp_name, embedding_function=None, metadata=self._collection_metadata(bucket, embedding_model),
            configuration=self._configuration())
        self.collections_[bucket] = tmp
        self.upsert(bucket, records, embeddings)
        self.client.delete_collection(name)
        tmp.modify(name=name)
        self.collections_[bucket] = self.client.get_collection(name, embedding_function=None)

    # ------------------------------------------------------------------ reads
    def count(self, bucket: str) -> int:
        col = self._col(bucket)
        return int(self._do("count", col.count))

    def query(self, bucket: str, embedding: np.ndarray, n: int) -> list[tuple[MemoryRecord, float, np.ndarray]]:
        col = self._col(bucket)
        if n <= 0:
            return []
        res = self._do("query", lambda: col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                                                  n_results=n,
                                                  include=["documents", "metadatas", "distances", "embeddings"]))
        ids, docs, metas = res["ids"][0], res["documents"][0], res["metadatas"][0]
        dists, embs = res["distances"][0], res["embeddings"][0]
        return [(from_row(i, d, m), 1.0 - float(dist), np.asarray(e, dtype=np.float32))
                for i, d, m, dist, e in zip(ids, docs, metas, dists, embs)]

    def get(self, bucket: str, ids: Sequence[str]) -> list[tuple[MemoryRecord, np.ndarray]]:
        if not ids:
            return []
        col = self._col(bucket)
        res = self._do("get", lambda: col.get(ids=list(ids), include=["documents", "metadatas", "embeddings"]))
        by_id = {i: (from_row(i, d, m), np.asarray(e, dtype=np.float32))
                 for i, d, m, e in zip(res["ids"], res["documents"], res["metadatas"], res["embeddings"])}
        return [by_id[i] for i in ids if i in by_id]

    def scan(self, bucket: str, *, with_embeddings: bool = False) -> Iterator[MemoryRecord]:
        """Every record of a bucket, in pages (``with_embeddings`` yields ``(record, embedding)`` pairs)."""
        col = self._col(bucket)
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        offset = 0
        while True:
            res = self._do("scan", lambda o=offset: col.get(include=include, limit=_SCAN_BATCH, offset=o))
            if not res["ids"]:
                return
            embs = res["embeddings"] if with_embeddings else [None] * len(res["ids"])
            for i, d, m, e in zip(res["ids"], res["documents"], res["metadatas"], embs):
                rec = from_row(i, d, m)
                yield (rec, np.asarray(e, dtype=np.float32)) if with_embeddings else rec
            offset += len(res["ids"])
