"""Live runs (and lure runs) kept on disk, so that a sweep stopped part way (a crash, Ctrl-C, a reboot) starts again
where it stopped.

A run of the live environment is deterministic given its config, seed, task count and top k, and the code that runs
it; a sweep with a live term makes one run per (candidate, dev seed), an hour or more on a small machine. The same
holds for a seed of the lexical lures (:mod:`.lures`), kept in the same folder under keys of their own. Each run's
summary is written to a file of its own as soon as it is made, named by a digest of everything the run depends on:

- the hindsight config (every field, :meth:`~hindsight_lab.config.LabConfig.flat`), the seed, the systems run side
  by side, the task count (pair count) and top k, and the environment (``live`` or ``lures``);
- :func:`code_fingerprint`: the package's own source files and the versions of the libraries whose numbers enter a
  run (numpy, torch, sentence-transformers, chromadb, scikit-learn).

So a changed config, an edited module or an upgraded library makes a new key and a new run, never a stale figure.
A file is written to a temporary name and renamed into place, so a stop in the middle of a write leaves no half
file; a file that cannot be read is run again (and overwritten), with a warning.

Examples:
    >>> import tempfile
    >>> store = LiveRunStore(tempfile.mkdtemp())
    >>> key = store.key('{"a": 1}', seed=0, systems=("hindsight",), tasks=24, top_k=10)
    >>> store.get(key) is None
    True
    >>> store.put(key, {"hindsight": {"final_window": 0.75}})
    >>> store.get(key)
    {'hindsight': {'final_window': 0.75}}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

logger = logging.getLogger(__name__)

#: Libraries whose versions are part of :func:`code_fingerprint` (their numbers enter a live run).
LIBRARIES: tuple[str, ...] = ("numpy", "torch", "sentence-transformers", "chromadb", "scikit-learn")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of the package's source files (path and bytes, in path order) and of :data:`LIBRARIES`' versions."""
    from importlib.metadata import PackageNotFoundError, version

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    for lib in LIBRARIES:
        try:
            h.update(f"{lib}=={version(lib)}".encode())
        except PackageNotFoundError:
            h.update(f"{lib}: absent".encode())
    return h.hexdigest()[:16]


class LiveRunStore:
    """A folder of live-run summaries, one JSON file per run, named by :meth:`key`."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    @classmethod
    def default(cls) -> "LiveRunStore":
        """``$HINDSIGHT_LAB_HOME/cache/live`` (default ``~/.hindsight_lab/cache/live``)."""
        from .._env import home

        return cls(home() / "cache" / "live")

    @staticmethod
    def key(config: str, *, seed: int, systems: Sequence[str], tasks: int, top_k: int, mode: str = "live") -> str:
        """The digest of a run: ``config`` (the config's fields as sorted JSON), the run's settings (``tasks``: its
        size, the lures' pairs for a ``lures`` run), the environment (``mode``) and the code."""
        what = {"config": config, "seed": int(seed), "systems": list(systems), "tasks": int(tasks),
                "top_k": int(top_k), "mode": mode, "code": code_fingerprint()}
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The summary kept under ``key``, or None (none kept, or a file that cannot be read: it will be redone)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            logger.warning("live run %s: cannot read %s (%s); running it again", key, path.name, exc)
            return None

    def put(self, key: str, summary: dict[str, Any]) -> None:
        """Keep ``summary`` under ``key``: written to a temporary file in the folder, then renamed into place."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(summary, fh, sort_keys=True, default=_plain)
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (what ``json`` cannot write otherwise)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"a live summary holds {type(value).__name__}, which JSON cannot keep")
