"""What every embedder shares: the query cache, Chroma's ``EmbeddingFunction`` shape and input checks."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, overload

import numpy as np

from hindsight_lab.errors import ConfigError


class CacheInfo(NamedTuple):
    """Query-cache statistics, in the spirit of :func:`functools.lru_cache`'s ``cache_info()``."""

    hits: int
    misses: int
    maxsize: int
    size: int


class QueryCache:
    """Thread-safe LRU map from query text to its embedding; ``maxsize=0`` disables it (every call a miss).

    Stored vectors are read-only and :meth:`get_or_compute` returns a copy, so a caller that edits the vector it
    got back cannot corrupt the cache.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def get_or_compute(self, key: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        """Return a copy of the cached vector for ``key``, computing and storing it on a miss."""
        with self._lock:
            vec = self._data.get(key)
            if vec is not None:
                self._hits += 1
                self._data.move_to_end(key)
                return vec.copy()
            self._misses += 1
        vec = compute(key)  # outside the lock: a forward pass must not hold up cache hits in other threads
        if self.maxsize > 0:
            stored = vec.copy()
            stored.flags.writeable = False
            with self._lock:
                self._data[key] = stored
                self._data.move_to_end(key)
                while len(self._data) > self.maxsize:
                    self._data.popitem(last=False)
        return vec

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, self.maxsize, len(self._data))

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._hits = self._misses = 0


def check_texts(texts: object, where: str) -> list[str]:
    """Return ``texts`` as a list of str, or raise a TypeError that says what arrived."""
    if isinstance(texts, str):
        raise TypeError(f"{where} takes a sequence of texts, got a single str; use embed_query() for one text")
    texts = list(texts)  # type: ignore[call-overload]
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise TypeError(f"{where} takes texts (str), got an item of type {type(bad).__name__}: {bad!r:.80}")
    return texts


class BaseEmbedder(ABC):
    """Query cache, ``embed_query`` and Chroma's ``EmbeddingFunction`` shape on top of :meth:`embed`."""

    query_cache_size: int
    _cache: QueryCache | None = None  # built at first embed_query, so __init__ stays parameter-only

    @abstractmethod
    def name(self) -> str:
        """Stable identifier of the embedding model, recorded in stores."""

    @property
    @abstractmethod
    def dim(self) -> int:
        """Embedding dimension."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 array of shape ``(len(texts), dim)``."""

    @overload
    def embed_query(self, text: str) -> np.ndarray: ...
    @overload
    def embed_query(self, *, input: Sequence[str]) -> list[np.ndarray]: ...  # noqa: A002

    def embed_query(self, text: str | None = None, *, input: Sequence[str] | None = None):  # noqa: A002
        """Embed one query into a float32 vector of shape ``(dim,)``, through the LRU query cache.

        The vector returned is the caller's own copy. Chroma calls ``embed_query(input=[...])`` for
        ``query_texts``; that form returns one vector per text, as Chroma's ``EmbeddingFunction`` does.
        """
        if input is not None:
            return [self.embed_query(t) for t in check_texts(input, "embed_query(input=...)")]
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes one text (str), got {type(text).__name__}; use embed() for many")
        return self._query_cache().get_or_compute(text, lambda t: self.embed([t])[0])

    def embed_query_with(self, text: str, others: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``embed_query(text)`` and ``embed(others)`` in one encoder pass when the query is not cached (a search
        that also reads the query's masked text pays for one pass, not two)."""
        others = check_texts(others, "embed_query_with(others=...)")
        if not isinstance(text, str):
            raise TypeError(f"embed_query_with() takes one text (str), got {type(text).__name__}")
        rest: list[np.ndarray] = []

        def both(t: str) -> np.ndarray:
            vectors = self.embed([t, *others])
            rest.append(vectors[1:])
            return vectors[0]

        q = self._query_cache().get_or_compute(text, both)
        return q, (rest[0] if rest else self.embed(others))

    def _query_cache(self) -> QueryCache:
        if self._cache is None:
            size = self.query_cache_size
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ConfigError(f"{type(self).__name__}: query_cache_size must be an integer >= 0 "
                                  f"(0 disables the cache), got {size!r}")
            self._cache = QueryCache(size)
        return self._cache

    def cache_info(self) -> CacheInfo:
        """Hits, misses, maxsize and current size of the query cache."""
        return self._cache.info() if self._cache is not None else CacheInfo(0, 0, self.query_cache_size, 0)

    def clear_cache(self) -> None:
        """Empty the query cache and reset its counters."""
        if self._cache is not None:
            self._cache.clear()

    def __call__(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002 - Chroma's parameter name
        """Chroma ``EmbeddingFunction`` shape: one float32 vector per document."""
        return list(self.embed(input))

    def is_legacy(self) -> bool:
        """Tell Chroma to store no embedding-function config of its own.

        Chroma's registry of "known" functions is keyed by a static ``name()`` and rebuilt from ``get_config()``;
        ours are per-instance, and the store records :meth:`name` in the collection metadata itself.
        """
        return True


class WrappingEmbedder(BaseEmbedder):
    """An embedder in front of another (``wrapped``): its name, dimension, tokenizer and query-cache size are the
    wrapped one's, so stores and token counts cannot tell the two apart."""

    wrapped: Any

    def __init__(self, inner: Any) -> None:
        self.wrapped = inner
        self.query_cache_size = int(getattr(inner, "query_cache_size", 1024))

    def name(self) -> str:
        return str(self.wrapped.name())

    @property
    def dim(self) -> int:
        return int(self.wrapped.dim)

    def tokenizer_path(self) -> Path | None:
        """The wrapped embedder's tokenizer folder, so the token counter is the same."""
        fn = getattr(self.wrapped, "tokenizer_path", None)
        return fn() if callable(fn) else None
