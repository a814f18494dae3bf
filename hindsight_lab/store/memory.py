"""A dict-backed store: a real implementation of the :class:`~hindsight_lab.protocols.Store` protocol with exact
(numpy) search. Fast unit tests use it; persistence and recall quality are tested on Chroma."""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ..errors import EmbeddingModelMismatch, StoreError
from ..types import BUCKETS
from ..types import MemoryRecord


class InMemoryStore:
    """Records and vectors in dicts; lives as long as the object.

    Examples:
        >>> store = InMemoryStore(); store.open("hashing-256"); store.count("episode")
        0
    """

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, tuple[MemoryRecord, np.ndarray]]] = {b: {} for b in BUCKETS}
        self._models: dict[str, str | None] = {b: None for b in BUCKETS}
        self._open = False

    def open(self, embedding_model: str, *, verify: bool = True) -> None:
        for bucket in BUCKETS:
            built = self._models[bucket]
            if verify and built not in (None, embedding_model) and self._rows[bucket]:
                raise EmbeddingModelMismatch(
                    f"bucket {bucket!r} was built with embedding model {built!r}, but the configured model is "
                    f"{embedding_model!r}. Open it with that model, or run reembed to rebuild its vectors.")
            if built is None or not self._rows[bucket]:
                self._models[bucket] = embedding_model
        self._open = True

    def embedding_models(self) -> dict[str, str | None]:
        return dict(self._models)

    def close(self) -> None:
        self._open = False

    def _bucket(self, bucket: str) -> dict[str, tuple[MemoryRecord, np.ndarray]]:
        if not self._open:
            raise StoreError("store is not open: call open() first")
        return self._rows[bucket]

    def upsert(self, bucket: str, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        rows = self._bucket(bucket)
        for rec, emb in zip(records, np.asarray(embeddings, dtype=np.float32)):
            rows[rec.id] = (rec, emb.copy())

    def update(self, bucket: str, records: Sequence[MemoryRecord]) -> None:
        rows = self._bucket(bucket)
        for rec in records:
            if rec.id in rows:
                rows[rec.id] = (rec, rows[rec.id][1])

    def delete(self, bucket: str, ids: Sequence[str]) -> None:
        rows = self._bucket(bucket)
        for i in ids:
            rows.pop(i, None)

    def rebuild(self, bucket: str, records: Sequence[MemoryRecord], embeddings: np.ndarray,
                embedding_model: str) -> None:
        self._rows[bucket] = {}
        self._models[bucket] = embedding_model
        self.upsert(bucket, records, embeddings)

    def count(self, bucket: str) -> int:
        return len(self._bucket(bucket))

    def query(self, bucket: str, embedding: np.ndarray, n: int) -> list[tuple[MemoryRecord, float, np.ndarray]]:
        rows = list(self._bucket(bucket).values())
        if not rows or n <= 0:
            return []
        mat = np.stack([e for _, e in rows])
        sims = mat @ np.asarray(embedding, dtype=np.float32)
        order = np.argsort(-sims, kind="stable")[:n]
        return [(rows[i][0], float(sims[i]), rows[i][1]) for i in order]

    def get(self, bucket: str, ids: Sequence[str]) -> list[tuple[MemoryRecord, np.ndarray]]:
        rows = self._bucket(bucket)
        return [rows[i] for i in ids if i in rows]

    def scan(self, bucket: str, *, with_embeddings: bool = False) -> Iterator[MemoryRecord]:
        for rec, emb in list(self._bucket(bucket).values()):
            yield (rec, emb) if with_embeddings else rec
