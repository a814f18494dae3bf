"""The server's memories: one :class:`~hindsight_lab.memory.MemorySystem` per namespace, all sharing one embedder
and one guarded Chroma client, each namespace under its own lock.

A ``MemorySystem`` keeps in-process indexes next to its store, and one call at a time touches a memory: the MCP
transports run tool calls in worker threads, and each namespace's lock serialises its calls (and the scheduled
maintenance of it). Calls on other namespaces do not wait. On a store that several processes may write (Postgres),
searches do not wait behind writes either: each namespace has a second memory that serves only searches, under a
lock of its own, and catches up with the writes (this process's and every other's) from the store's change log
before each search (:mod:`hindsight_lab.memory.changes`). A call waits at most ``server.lock_wait_s``
(:class:`~hindsight_lab.server.config.ServerConfig`) for its
namespace, then fails with :class:`~hindsight_lab.errors.Busy`; a stalled store fails each call within
``store.timeout_s`` (:mod:`hindsight_lab.store.guard`), so no client waits behind one stuck call for longer than
those two bounds.

Examples:
    >>> cfg = LabConfig().with_params({"store.path": "memory-store"})
    >>> pool = MemoryPool(cfg, ServerConfig(lock_wait_s=5)).open()  # doctest: +SKIP
    >>> pool.run("team-a", lambda mem: mem.search("refund a ticket"))  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from ..config import LabConfig
from ..errors import Busy, ConfigError, ValidationError
from .config import ServerConfig

if TYPE_CHECKING:
    from ..memory import MaintenanceReport, MemorySystem

logger = logging.getLogger(__name__)

T = TypeVar("T")


class MemoryPool:
    """Namespaces of one store, opened on first use (at most ``server.max_namespaces``).

    Args:
        config: the served config; ``store.namespace`` is the namespace of calls that name none.
        settings: the server's settings (``lock_wait_s``, ``max_namespaces``; default: ``ServerConfig()``).
        embedder: shared by every namespace (default: built from ``config.embedder``).
        client: a Chroma client (default: from ``store.url``, else ``store.path``; none for a Postgres
            ``store.url``, whose stores share a connection pool per process).
        clock: passed to every ``MemorySystem`` (tests).
    """

    def __init__(self, config: LabConfig, settings: ServerConfig | None = None, *, embedder: Any = None,
                 client: Any = None, clock: Callable[[], datetime] | None = None) -> None:
        self.config = config
        self.settings = settings if settings is not None else ServerConfig()
        self.embedder = embedder
        self.client = client
        self.clock = clock

    def open(self) -> "MemoryPool":
        """Build the embedder and the client and open the default namespace (a bad store fails here)."""
        from ..embed import embedder_for
        from ..store import is_postgres_url
        from ..store.chroma import Connection, connect

        cfg = self.config
        self.embedder_ = self.embedder or embedder_for(cfg.embedder)
        if self.settings.batch_embeddings:
            from ..embed.batching import BatchingEmbedder

            self.embedder_ = BatchingEmbedder(self.embedder_, max_batch=cfg.embedder.batch_size)
        self.embedder_.embed_query("warm up")  # load the model now, not on the first request
        postgres = is_postgres_url(cfg.store.url)  # its stores share one connection pool per process by themselves
        self._connection = Connection(self.client) if self.client is not None or postgres else connect(
            path=cfg.store.path, url=cfg.store.url, timeout_s=cfg.store.timeout_s, retries=cfg.store.retries,
            read_only=cfg.store.read_only)
        self.client_ = self._connection.client
        self._lock = threading.Lock()  # guards the two dicts below, never held during a call
        self._mems: dict[str, MemorySystem] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._readers: dict[str, tuple[threading.Lock, MemorySystem | None]] = {}
        self._shared = postgres and not cfg.store.read_only  # a store with a change log: readers of their own
        self.run(cfg.store.namespace, lambda mem: None)
        return self

    @property
    def default_namespace(self) -> str:
        return self.config.store.namespace

    def namespaces(self) -> list[str]:
        """The namespaces opened so far, in order."""
        return list(getattr(self, "_mems", {}))

    def run(self, namespace: str | None, fn: Callable[["MemorySystem"], T], *, search: bool = False) -> T:
        """``fn(memory of the namespace)`` under that namespace's lock; None is the default namespace (an empty name
        is not a name: it is refused, not read as the default). ``search``: ``fn`` only searches, so on a store with
        a change log it runs on the namespace's search memory, beside its writes.

        Raises:
            Busy: the namespace stayed held for ``server.lock_wait_s``.
        """
        name = self.default_namespace if namespace is None else namespace
        lock = self._lock_of(name)
        if search and self._shared:
            return self._search(name, fn)
        with self._holding(lock, name, "another call has"):
            return fn(self._get(name))

    @contextmanager
    def _holding(self, lock: threading.Lock, name: str, who: str) -> Iterator[None]:
        wait = self.settings.lock_wait_s
        if not lock.acquire(timeout=wait):
            raise Busy(f"namespace {name!r} is busy: {who} held it for more than {wait:g} s "
                       "(server.lock_wait_s); try again")
        try:
            yield
        finally:
            lock.release()

    def embed_query(self, text: str) -> Any:
        """A query's embedding, outside every namespace's lock: concurrent queries share model passes
        (``server.batch_embeddings``)."""
        return self.embedder_.embed_query(text)

    def _search(self, name: str, fn: Callable[["MemorySystem"], T]) -> T:
        with self._lock:
            lock, mem = self._readers.setdefault(name, (threading.Lock(), None))
        with self._holding(lock, name, "searches have"):
            if mem is None:
                mem = self._open(name)
                with self._lock:
                    self._readers[name] = (lock, mem)
            return fn(mem)

    def _lock_of(self, namespace: str) -> threading.Lock:
        self._check_name(namespace)
        with self._lock:
            lock = self._locks.get(namespace)
            if lock is None:
                limit = self.settings.max_namespaces
                if len(self._locks) >= limit:
                    raise ValidationError(f"namespace: {namespace!r} would be namespace {limit + 1} of this server, "
                                          f"over the limit of {limit} (server.max_namespaces)")
                lock = self._locks[namespace] = threading.Lock()
            return lock

    def _check_name(self, namespace: str) -> None:
        try:
            self.config.with_params({"store.namespace": namespace})
        except ConfigError:
            raise ValidationError(f"namespace: {namespace[:60]!r} is not a namespace: expected 1 to 41 letters, "
                                  "digits, '_' or '-', starting with a letter or digit") from None

    def _get(self, namespace: str) -> "MemorySystem":
        """The namespace's memory, opened on first use (the caller holds the namespace's lock)."""
        mem = self._mems.get(namespace)
        if mem is not None:
            return mem
        mem = self._open(namespace)
        with self._lock:
            self._mems[namespace] = mem
        logger.info("opened namespace %r", namespace)
        return mem

    def _open(self, namespace: str) -> "MemorySystem":
        from ..memory import MemorySystem
        from ..store import store_for

        cfg = self.config.with_params({"store.namespace": namespace})
        store = store_for(cfg.store, client=self.client_, guard=self._connection.guard)
        return MemorySystem(cfg, store=store, embedder=self.embedder_, clock=self.clock).open()

    def health(self) -> tuple[str, str | None]:
        """``("ok", None)``, or ``("degraded", why)`` when the store does not answer (a Chroma server's heartbeat
        or a Postgres connection within 2 s, an embedded folder's database file) or its breaker is open after a
        failed call."""
        from ..store import is_postgres_url
        from ..store.guard import probe

        store = self.config.store
        guard = self._connection.guard
        why = (guard.reason and f"store {guard.url} {guard.reason}") if guard is not None else None
        if why is None and is_postgres_url(store.url):
            from ..store.pgconn import probe as probe_postgres

            why = probe_postgres(store.url, timeout_s=min(2.0, store.timeout_s))
        elif why is None and store.url:
            why = probe(store.url, timeout_s=min(2.0, store.timeout_s))
        elif why is None and store.path:
            from pathlib import Path

            if not (Path(store.path) / "chroma.sqlite3").is_file():
                why = f"embedded store {store.path}: its database file is missing"
        return ("degraded", why) if why else ("ok", None)

    def maintain(self, now: datetime | None = None) -> dict[str, "MaintenanceReport"]:
        """``MemorySystem.maintain(now)`` on every open namespace, each under its own lock (a busy namespace is
        waited for, like any call), after its searches' bookkeeping is stored (decay reads when each memory was
        last retrieved)."""
        out = {}
        for namespace in self.namespaces():
            self.run(namespace, lambda mem: mem.flush(), search=True)
            out[namespace] = self.run(namespace, lambda mem: mem.maintain(now))
        return out

    def close(self) -> None:
        """Flush and close every namespace, and give back the store's writer lock."""
        if not hasattr(self, "_lock"):
            return
        for namespace in self.namespaces():
            with self._locks[namespace]:
                self._mems[namespace].close()
        for lock, mem in list(self._readers.values()):
            with lock:
                if mem is not None:
                    mem.close()
        with self._lock:
            self._mems.clear()
            self._readers.clear()
        self._connection.release()
