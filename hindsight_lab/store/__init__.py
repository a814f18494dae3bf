"""Stores behind the :class:`~hindsight_lab.protocols.Store` protocol: Chroma (:mod:`.chroma`, embedded folder or
server), Postgres + pgvector (:mod:`.postgres`, server or embedded data folder) and a dict (:mod:`.memory`, tests).

:func:`store_for` is the one road from ``config.store`` to a store: the URL's scheme chooses the backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .pgconn import is_postgres_url

if TYPE_CHECKING:
    from ..config import StoreConfig

__all__ = ["is_postgres_url", "store_for"]


def store_for(cfg: "StoreConfig", *, client: Any = None, guard: Any = None) -> Any:
    """The (unopened) store ``cfg`` names: Postgres for a ``postgresql://``, ``postgres://`` or
    ``postgresql+embedded://`` URL, else Chroma (``client`` and ``guard``: a shared Chroma client and its guard).

    Examples:
        >>> from hindsight_lab import LabConfig
        >>> cfg = LabConfig().with_params({"store.url": "postgresql://hl@db:5432/memory"}).store
        >>> type(store_for(cfg)).__name__
        'PostgresStore'
    """
    if is_postgres_url(cfg.url):
        from .postgres import PostgresStore

        return PostgresStore.from_config(cfg)
    from .chroma import ChromaStore

    return ChromaStore.from_config(cfg, client=client, guard=guard)
