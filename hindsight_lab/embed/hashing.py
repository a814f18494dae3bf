"""Deterministic feature-hashing embedder: numpy only, no model, no meaning.

It exists for fast unit tests of code that needs *some* embedding (stores, plumbing, ranking arithmetic). Texts
that share words and letter sequences land close together, but paraphrases do not: never use it to test recall
quality, which needs the real model (:class:`~hindsight_lab.embed.SentenceTransformerEmbedder`).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from hindsight_lab.embed._base import BaseEmbedder, check_texts
from hindsight_lab.errors import ConfigError

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1 << 16)
def _feature_hash(feature: str) -> int:
    """A 64-bit hash of ``feature`` that is the same in every process (unlike the built-in, salted ``hash``)."""
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


def _features(text: str) -> list[str]:
    """Word unigrams and character trigrams of the lower-cased text (words joined by single spaces, padded)."""
    words = _WORD.findall(text.lower())
    joined = f" {' '.join(words)} " if words else ""
    return [f"w:{w}" for w in words] + [f"c:{joined[i:i + 3]}" for i in range(len(joined) - 2)]


class HashingEmbedder(BaseEmbedder):
    """Signed feature hashing of word unigrams and character trigrams into ``dim`` buckets, L2-normalised.

    Deterministic across processes and machines (blake2b, not Python's salted ``hash``). A text without word
    characters embeds to the zero vector. For fast unit tests that do not depend on meaning only: texts sharing
    words are close, paraphrases are not.

    Args:
        dim: Number of hash buckets, which is the embedding dimension.
        query_cache_size: Size of the LRU cache used by :meth:`embed_query`; 0 disables it.

    Examples:
        >>> emb = HashingEmbedder(dim=64)
        >>> emb.name()
        'hashing-64'
        >>> emb.embed(["refund a cancelled flight", "book a hotel"]).shape
        (2, 64)
    """

    def __init__(self, dim: int = 256, query_cache_size: int = 0) -> None:
        self._dim = dim
        self.query_cache_size = query_cache_size

    @property
    def dim(self) -> int:
        """Embedding dimension (the constructor's ``dim``)."""
        return self._dim

    def name(self) -> str:
        """Stable identifier recorded in stores, e.g. ``"hashing-256"``."""
        return f"hashing-{self._dim}"

    def _embed_one(self, text: str) -> np.ndarray:
        vec = np.zeros(self._dim, dtype=np.float32)
        for feature in _features(text):
            h = _feature_hash(feature)
            vec[h % self._dim] += 1.0 if h >> 63 else -1.0  # the top bit signs it, so collisions tend to cancel
        norm = float(np.linalg.norm(vec))
        return vec / np.float32(norm) if norm > 0 else vec

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 array of shape ``(len(texts), dim)``, rows of unit norm."""
        if isinstance(self._dim, bool) or not isinstance(self._dim, int) or self._dim < 1:
            raise ConfigError(f"HashingEmbedder: dim must be a positive integer, got {self._dim!r}")
        texts = check_texts(texts, "embed()")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._embed_one(t) for t in texts])

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim!r}, query_cache_size={self.query_cache_size!r})"
