"""The bench's corpus and the cache of its embeddings.

The corpus is the synthetic generator's (:mod:`hindsight_lab.datasets.synthetic.corpus`: a few dozen templates,
hence a few dozen derived task types); draw ``j`` of a seed is the same on every machine, and the first m texts of
n are those of m, so one cache of n vectors serves every smaller store. The embeddings are computed once and cached
as ``.npy`` under a cache folder, keyed by the generator's version, the corpus seed, the model and the size; a store
is filled with an embedder that returns the cached vectors for corpus texts (:class:`LookupEmbedder`).

Examples:
    >>> generate(seed=1, n=2)[1]
    (1, 'Escalate ticket #49214 about a damaged item to the sales team')
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..datasets.synthetic.corpus import CORPUS_VERSION as GENERATOR_VERSION  # keys the embedding cache
from ..datasets.synthetic.corpus import corpus_episode as make_episode
from ..datasets.synthetic.corpus import instructions as generate
from ..embed import BaseEmbedder

__all__ = ["CORPUS_SEED", "GENERATOR_VERSION", "LookupEmbedder", "corpus_embeddings", "generate", "make_episode"]

logger = logging.getLogger(__name__)

CORPUS_SEED = 1

# --------------------------------------------------------------------------------------------------- embeddings
class LookupEmbedder(BaseEmbedder):
    """The real model's name and tokenizer, with vectors of known texts read from the cache (else computed)."""

    def __init__(self, inner: Any, rows: dict[str, int], matrix: np.ndarray) -> None:
        self.inner, self.rows, self.matrix, self.query_cache_size, self.computed = inner, rows, matrix, 0, 0

    def name(self) -> str:
        return self.inner.name()

    def tokenizer_path(self) -> Any:
        return self.inner.tokenizer_path()

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        idx = [self.rows.get(t, -1) for t in texts]
        out = np.asarray(self.matrix[[max(i, 0) for i in idx]], dtype=np.float32)
        missing = [k for k, i in enumerate(idx) if i < 0]
        if missing:
            self.computed += len(missing)
            out[missing] = self.inner.embed([texts[k] for k in missing])
        return out


def _cache_key(model: str, n: int) -> str:
    raw = f"{GENERATOR_VERSION}|{CORPUS_SEED}|{model}|{n}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def corpus_embeddings(texts: Sequence[str], embedder: Any, cache_dir: Path, *, show_progress: bool = False
                      ) -> np.ndarray:
    """Embeddings of the corpus prefix ``texts``, from ``cache_dir`` when a run of this size or larger saved them."""
    n, model = len(texts), embedder.name()
    cache_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(cache_dir.glob("corpus-*-*.npy")):
        size, key = path.stem.split("-")[1:3]
        if size.isdigit() and int(size) >= n and key == _cache_key(model, int(size)):
            cached = np.load(path, mmap_mode="r")[:n]
            probe = sorted({0, n // 3, n // 2, n - 1})  # a generator edit without a version bump is caught here
            if np.all(np.sum(cached[probe] * embedder.embed([texts[i] for i in probe]), axis=1) > 0.999):
                logger.info("corpus embeddings: %d of %s read from the cache", n, size)
                return cached
            logger.warning("%s does not match the corpus texts; encoding again", path.name)
    from tqdm.auto import tqdm

    chunks = [embedder.embed(list(texts[lo:lo + 1024]))
              for lo in tqdm(range(0, n, 1024), desc="embedding corpus", unit="chunk", disable=not show_progress)]
    matrix = np.concatenate(chunks).astype(np.float32)
    tmp = cache_dir / f".corpus-{n}.{os.getpid()}.npy"
    np.save(tmp, matrix)
    tmp.replace(cache_dir / f"corpus-{n}-{_cache_key(model, n)}.npy")
    return matrix
