"""The pluggable parts: :class:`Embedder` and :class:`Store` (``typing.Protocol``, runtime-checkable)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from .types import MemoryRecord

if TYPE_CHECKING:
    from .reflect.compress import CompressedEpisode
    from .reflect.schema import Reflection, Rejection

#: Where a record lives in a store: one collection per kind, plus the archive (kept, never recalled).
BUCKETS: tuple[str, ...] = ("episode", "candidate", "rule", "archive")


@runtime_checkable
class Embedder(Protocol):
    """Chroma's ``EmbeddingFunction`` shape plus the batch/query helpers the engine uses."""

    def __call__(self, input: list[str]) -> list[np.ndarray]: ...

    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@runtime_checkable
class Store(Protocol):
    """Record storage with vector search, one bucket per kind. Similarities are cosine: higher is better."""

    def open(self, embedding_model: str, *, verify: bool = True) -> None:
        """Create or open the buckets; raise ``EmbeddingModelMismatch`` if they were built with another model."""

    def upsert(self, bucket: str, records: Sequence[MemoryRecord], embeddings: np.ndarray) -> None: ...

    def update(self, bucket: str, records: Sequence[MemoryRecord]) -> None:
        """Replace content and metadata, keep the stored vectors."""

    def query(self, bucket: str, embedding: np.ndarray, n: int
              ) -> list[tuple[MemoryRecord, float, np.ndarray]]: ...

    def get(self, bucket: str, ids: Sequence[str]) -> list[tuple[MemoryRecord, np.ndarray]]: ...

    def scan(self, bucket: str) -> Iterator[MemoryRecord]: ...

    def delete(self, bucket: str, ids: Sequence[str]) -> None: ...

    def count(self, bucket: str) -> int: ...

    def rebuild(self, bucket: str, records: Sequence[MemoryRecord], embeddings: np.ndarray,
                embedding_model: str) -> None:
        """Replace a bucket whole (used by ``reembed``)."""

    def close(self) -> None: ...


@runtime_checkable
class Reflector(Protocol):
    """Turns a compressed episode (plus related earlier ones, the source of counter-examples) into a reflection.

    Implementations never raise for a bad model answer: they return a ``Rejection`` with its reason.
    """

    def reflect(self, episode: "CompressedEpisode", related: Sequence["CompressedEpisode"]
                ) -> "Reflection | Rejection": ...

    def reflect_batch(self, items: Sequence[tuple["CompressedEpisode", Sequence["CompressedEpisode"]]]
                      ) -> list["Reflection | Rejection"]: ...
