"""The pluggable parts of the engine: :class:`Embedder` and :class:`Store` (``typing.Protocol``, runtime-checkable).
The reflector's protocol lives with the reflection pipeline (:mod:`hindsight_lab.reflect.protocol`)."""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from .types import Bucket, MemoryRecord

__all__ = ["Embedder", "Store"]


@runtime_checkable
class Embedder(Protocol):
    """Chroma's ``EmbeddingFunction`` shape plus the batch/query helpers the engine uses."""

    def __call__(self, input: list[str]) -> list[np.ndarray]: ...

    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@runtime_checkable
class Store(Protocol):
    """Record storage with vector search, one bucket per :class:`~hindsight_lab.types.Bucket`.

    A bucket argument is a :class:`~hindsight_lab.types.Bucket` or its string value. Similarities are cosine:
    higher is better. Records keep the vectors they were stored with until ``upsert`` or ``rebuild`` replaces them.

    A store that several processes may write also has ``change_seq() -> int``, ``changes_since(after) -> (seq,
    [(id, bucket or None)])`` (what changed, by any process, since a counter value) and ``exclusive()`` (a context
    manager: one logical write at a time across processes); the memory uses them where they exist
    (:mod:`hindsight_lab.memory.changes`). Postgres has them; Chroma and the dict store (one writer) do not.
    """

    def open(self, embedding_model: str, *, verify: bool = True) -> None:
        """Create or open the buckets; raise ``EmbeddingModelMismatch`` if they were built with another model."""

    def embedding_models(self) -> dict[str, str | None]:
        """The embedding model each bucket was built with (None: not yet known)."""

    def upsert(self, bucket: Bucket | str, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None:
        """Insert or replace records with their vectors."""

    def update(self, bucket: Bucket | str, records: Sequence[MemoryRecord]) -> None:
        """Replace content and metadata, keep the stored vectors."""

    def query(self, bucket: Bucket | str, embedding: np.ndarray, n: int
              ) -> list[tuple[MemoryRecord, float, np.ndarray]]:
        """The ``n`` nearest records to ``embedding``, nearest first, with their similarity and vector."""

    def get(self, bucket: Bucket | str, ids: Sequence[str]) -> list[tuple[MemoryRecord, np.ndarray]]:
        """The records with these ids that the bucket holds, with their vectors."""

    def scan(self, bucket: Bucket | str, *, with_embeddings: bool = False) -> Iterator[Any]:
        """Every record of a bucket; ``(record, vector)`` pairs with ``with_embeddings``."""

    def delete(self, bucket: Bucket | str, ids: Sequence[str]) -> None: ...

    def count(self, bucket: Bucket | str) -> int: ...

    def rebuild(self, bucket: Bucket | str, records: Sequence[MemoryRecord], embeddings: np.ndarray,
                embedding_model: str) -> None:
        """Replace a bucket whole (used by ``reembed``)."""

    def close(self) -> None: ...
