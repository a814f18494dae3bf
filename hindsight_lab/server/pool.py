"""The server's memories: one :class:`~hindsight_lab.memory.MemorySystem` per namespace, all sharing one embedder
and one Chroma client, every call under one lock.

A ``MemorySystem`` keeps in-process indexes next to its store, so one process writes a store (DESIGN §1) and,
inside that process, one call at a time touches it: the MCP transports run tool calls in worker threads, and the
lock serialises them (and the scheduled maintenance) whatever the number of clients.

Examples:
    >>> pool = MemoryPool(LabConfig().with_params({"store.path": "memory-store"})).open()  # doctest: +SKIP
    >>> pool.run("team-a", lambda mem: mem.search("refund a ticket"))  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..config import LabConfig
from ..errors import ConfigError, ValidationError

if TYPE_CHECKING:
    from ..memory import MaintenanceReport, MemorySystem

logger = logging.getLogger(__name__)

T = TypeVar("T")


class MemoryPool:
    """Namespaces of one store, opened on first use (at most ``server.max_namespaces``).

    Args:
        config: the served config; ``store.namespace`` is the namespace of calls that name none.
        embedder: shared by every namespace (default: built from ``config.embedder``).
        client: a Chroma client (default: from ``store.url``, else ``store.path``).
        clock: passed to every ``MemorySystem`` (tests).
    """

    def __init__(self, config: LabConfig, *, embedder: Any = None, client: Any = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.config = config
        self.embedder = embedder
        self.client = client
        self.clock = clock

    def open(self) -> "MemoryPool":
        """Build the embedder and the client and open the default namespace (a bad store fails here)."""
        from ..embed import embedder_for
        from ..store.chroma import make_client

        cfg = self.config
        self.embedder_ = self.embedder or embedder_for(cfg.embedder)
        self.embedder_.embed_query("warm up")  # load the model now, not on the first request
        self.client_ = self.client or make_client(path=cfg.store.path, url=cfg.store.url)
        self._lock = threading.Lock()
        self._mems: dict[str, MemorySystem] = {}
        with self._lock:
            self._get(cfg.store.namespace)
        return self

    @property
    def default_namespace(self) -> str:
        return self.config.store.namespace

    def namespaces(self) -> list[str]:
        """The namespaces opened so far, in order."""
        return list(getattr(self, "_mems", {}))

    def run(self, namespace: str | None, fn: Callable[["MemorySystem"], T]) -> T:
        """``fn(memory of the namespace)`` under the lock; None is the default namespace (an empty name is not a
        name: it is refused, not read as the default)."""
        with self._lock:
            return fn(self._get(self.default_namespace if namespace is None else namespace))

    def _get(self, namespace: str) -> "MemorySystem":
        mem = self._mems.get(namespace)
        if mem is not None:
            return mem
        from ..memory import MemorySystem
        from ..store.chroma import ChromaStore

        try:
            cfg = self.config.with_params({"store.namespace": namespace})
        except ConfigError:
            raise ValidationError(f"namespace: {namespace[:60]!r} is not a namespace: expected 1 to 41 letters, "
                                  "digits, '_' or '-', starting with a letter or digit") from None
        limit = self.config.server.max_namespaces
        if len(self._mems) >= limit:
            raise ValidationError(f"namespace: {namespace!r} would be namespace {limit + 1} of this server, over the "
                                  f"limit of {limit} (server.max_namespaces)")
        store = ChromaStore.from_config(cfg.store, client=self.client_)
        mem = MemorySystem(cfg, store=store, embedder=self.embedder_, clock=self.clock).open()
        self._mems[namespace] = mem
        logger.info("opened namespace %r", namespace)
        return mem

    def maintain(self, now: datetime | None = None) -> dict[str, "MaintenanceReport"]:
        """``MemorySystem.maintain(now)`` on every open namespace, one namespace per lock hold."""
        out = {}
        for namespace in self.namespaces():
            with self._lock:
                out[namespace] = self._mems[namespace].maintain(now)
        return out

    def close(self) -> None:
        """Flush and close every namespace."""
        if not hasattr(self, "_lock"):
            return
        with self._lock:
            for mem in self._mems.values():
                mem.close()
            self._mems.clear()
