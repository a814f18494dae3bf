"""Vectors kept on disk between runs, keyed by the model and the text: a replay of texts embedded before reads them
back instead of encoding them again (the second replay of a dataset, a notebook run again after a change of
weights, every trial of a sweep over the same data).

One SQLite file (``$HINDSIGHT_LAB_HOME/cache/embeddings.sqlite``; WAL, so several processes may read and write it
at once) holds a row per ``(model fingerprint, sha256 of the text)`` with the float32 vector. The fingerprint
(:func:`fingerprint`) names what a vector depends on: the model's name, its files when it is a local folder (the
packaged MiniLM is one), whether vectors are normalised, and the versions of the libraries that encode. A vector
read back is the one encoded then, so a replay that reads every vector from the cache scores exactly as the replay
that wrote them; a replay that encodes them afresh agrees to float rounding (the padding of a batch moves the last
bits). Delete the file to empty the cache; ``embedder.disk_cache: false`` turns it off.

Examples:
    >>> import tempfile, numpy as np
    >>> cache = VectorCache(Path(tempfile.mkdtemp()) / "v.sqlite", "model-a")
    >>> cache.put({"refund": np.ones(3, dtype=np.float32)})
    >>> sorted(cache.get(["refund", "book"])), cache.get(["refund"])["refund"].tolist()
    (['refund'], [1.0, 1.0, 1.0])
"""

from __future__ import annotations

import hashlib
import sqlite3
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

_SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, sha BLOB NOT NULL, dim INTEGER NOT NULL, "
           "vec BLOB NOT NULL, PRIMARY KEY (model, sha)) WITHOUT ROWID")
_CHUNK = 500  # SQLite's bound parameters per statement stay well under its limit


def default_path() -> Path:
    """``$HINDSIGHT_LAB_HOME/cache/embeddings.sqlite``."""
    from .._env import home

    return home() / "cache" / "embeddings.sqlite"


def disk_cache(embedder: Any, path: Path | None = None) -> "VectorCache | None":
    """The cache of ``embedder``'s model (through any wrappers), None for an embedder without a
    :meth:`fingerprint` (the hashing one costs less to run than to cache)."""
    inner = embedder
    while not callable(getattr(inner, "fingerprint", None)) and getattr(inner, "wrapped", None) is not None:
        inner = inner.wrapped
    if not callable(getattr(inner, "fingerprint", None)):
        return None
    return VectorCache(path or default_path(), inner.fingerprint())


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def fingerprint(name: str, folder: Path | None, normalize: bool) -> str:
    """What a vector depends on besides its text: the model ``name``, the names, sizes and first bytes of the files
    of its ``folder`` (when it is a local one), ``normalize``, and the versions of sentence-transformers,
    transformers and torch."""
    digest = hashlib.sha256(f"{name}|normalize={bool(normalize)}".encode())
    for dist in ("sentence-transformers", "transformers", "torch"):
        digest.update(f"|{dist}={_version(dist)}".encode())
    if folder is not None and folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(f"|{path.relative_to(folder).as_posix()}:{path.stat().st_size}".encode())
            with path.open("rb") as fh:
                digest.update(fh.read(1 << 16))
    return f"{name}@{digest.hexdigest()[:16]}"


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """The vectors of one model fingerprint in one SQLite file (module docstring).

    Args:
        path: the SQLite file (made, with its folder, on first use).
        model: the model's :func:`fingerprint`.
    """

    def __init__(self, path: str | Path, model: str) -> None:
        self.path, self.model = Path(path), model
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            self._db = db
        return self._db

    def get(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those ``texts`` the cache holds."""
        by_sha = {_sha(t): t for t in texts}
        out: dict[str, np.ndarray] = {}
        shas = list(by_sha)
        db = self._conn()
        for i in range(0, len(shas), _CHUNK):
            part = shas[i:i + _CHUNK]
            rows = db.execute(f"SELECT sha, vec FROM vectors WHERE model = ? AND sha IN ({','.join('?' * len(part))})",
                              [self.model, *part])
            for sha, vec in rows:
                out[by_sha[sha]] = np.frombuffer(vec, dtype="<f4").astype(np.float32)
        return out

    def put(self, vectors: Mapping[str, Any]) -> None:
        """Keep ``vectors`` (text → vector), in one transaction."""
        if not vectors:
            return
        rows = [(self.model, _sha(t), int(np.asarray(v).shape[0]), np.asarray(v, dtype="<f4").tobytes())
                for t, v in vectors.items()]
        db = self._conn()
        with db:
            db.executemany("INSERT OR REPLACE INTO vectors (model, sha, dim, vec) VALUES (?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM vectors WHERE model = ?", [self.model]).fetchone()[0])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
