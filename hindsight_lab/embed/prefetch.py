"""An embedder that answers known texts from vectors computed ahead, in batches.

A replay knows every text it will embed one at a time (each episode's instruction and stored summary) before it
starts; embedding them one by one costs a forward pass each, embedding them in batches of ``batch_size`` costs a
fraction of that. Nothing leaks: a vector is only a function of its text, and which texts are in a store still
depends only on what the replay wrote. Texts that were not prefetched (a reflection's rule) go to the wrapped
embedder.

Examples:
    >>> from hindsight_lab.embed import HashingEmbedder
    >>> inner = HashingEmbedder(dim=16)
    >>> emb = PrefetchedEmbedder(inner, ["refund order 42", "book a flight"])
    >>> bool((emb.embed(["book a flight"]) == inner.embed(["book a flight"])).all()), emb.name() == inner.name()
    (True, True)
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from hindsight_lab.embed._base import WrappingEmbedder, check_texts


class PrefetchedEmbedder(WrappingEmbedder):
    """Wraps ``inner``; ``texts`` are embedded at construction, in the inner embedder's batches.

    Args:
        inner: the embedder whose vectors these are (its name, dimension and tokenizer are reported).
        texts: texts to embed ahead (duplicates are embedded once). When ``inner`` is itself a
            PrefetchedEmbedder the two share one table of vectors (a vector depends only on its text): only new
            texts are embedded, and what either embeds the other knows, so one cache can serve several replays.
        cache: a :class:`~hindsight_lab.embed.cache.VectorCache` of ``inner``'s model: texts it holds are read
            from it, the others embedded and kept in it (``from_cache`` counts the first).
    """

    def __init__(self, inner: Any, texts: Iterable[str], *, cache: Any = None) -> None:
        known: dict[str, np.ndarray] = {}
        if isinstance(inner, PrefetchedEmbedder):  # prefetching again: share its vectors, wrap what it wraps
            known, inner = inner._known, inner.wrapped
        super().__init__(inner)
        unique = [t for t in dict.fromkeys(texts) if t not in known]
        self.from_cache = 0
        if unique and cache is not None:  # vectors an earlier run encoded (embed.cache)
            held = cache.get(unique)
            known.update(held)
            self.from_cache = len(held)
            unique = [t for t in unique if t not in held]
        if unique:
            fresh = dict(zip(unique, inner.embed(unique)))
            known.update(fresh)
            if cache is not None:
                cache.put(fresh)
        self._known = known
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts, "embed")
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        if missing:
            self.misses += len(missing)
            self._known.update(zip(missing, self.wrapped.embed(missing)))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._known[t] for t in texts]).astype(np.float32, copy=True)
