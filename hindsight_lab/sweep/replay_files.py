"""Replay caches kept on disk, so the processes of a shared sweep on one machine capture each replay group once.

A capture (:func:`~.cache.capture`) replays a dataset through one hindsight system (seconds on a sample, about
20 s on tau-bench's airline dev split, more with reflection); the caches of a sweep are the same in every process.
The first process that needs a group's cache takes the file's lock (``flock``), captures it and writes it (a
temporary file renamed into place); the others wait on the lock and read it (0.1 s for 10 MB). A file is named by a
digest of everything the capture depends on: the dataset's content, the config's values outside the fields the
evaluator scores (the base config's with the group's), top k and budget, the embedder, and the code
(:func:`~.live_runs.code_fingerprint`). A file that cannot be read is captured again, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .cache import ReplayCache
from .evaluate import is_fast
from .live_runs import code_fingerprint

logger = logging.getLogger(__name__)


class ReplayFiles:
    """A folder of pickled :class:`~.cache.ReplayCache` files, one per dataset and replay group."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    @staticmethod
    def key(dataset_sha256: str, config: Any, *, top_k: int, token_budget: int | None, embedder: str) -> str:
        """The digest of a capture (module docstring); ``config`` is the LabConfig it replays."""
        slow = {k: v for k, v in sorted(config.flat().items()) if not is_fast(k)}
        what = {"dataset": dataset_sha256, "config": slow, "top_k": top_k, "token_budget": token_budget,
                "embedder": embedder, "code": code_fingerprint()}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def get(self, key: str, make: Callable[[], ReplayCache]) -> ReplayCache:
        """The cache kept under ``key``, else ``make()`` kept there (one process makes it, the others wait)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{key}.pkl"
        with _locked(self.folder / f"{key}.lock"):
            if path.exists():
                try:
                    with path.open("rb") as fh:
                        return pickle.load(fh)
                except Exception as exc:  # noqa: BLE001 - a truncated or stale file: capture again
                    logger.warning("replay cache %s: cannot read it (%s); capturing it again", path.name, exc)
            cache = make()
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{key}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(cache, fh, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return cache


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: each process may capture the group itself
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
