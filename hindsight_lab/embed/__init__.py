"""Embedders and the token counter.

``SentenceTransformerEmbedder`` is the default (the packaged all-MiniLM-L6-v2, offline); ``HashingEmbedder`` is a
numpy-only stand-in for fast unit tests that do not depend on meaning. Importing this package imports neither
torch nor sentence-transformers: models and tokenizers load on first use.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from hindsight_lab.embed._base import BaseEmbedder, CacheInfo
from hindsight_lab.embed.hashing import HashingEmbedder
from hindsight_lab.embed.prefetch import PrefetchedEmbedder
from hindsight_lab.embed.sentence_transformers import SentenceTransformerEmbedder
from hindsight_lab.embed.tokens import TokenCounter
from hindsight_lab.errors import ConfigError

__all__ = ["BaseEmbedder", "CacheInfo", "HashingEmbedder", "PrefetchedEmbedder", "SentenceTransformerEmbedder",
           "TokenCounter", "embedder_for", "make_embedder"]

logger = logging.getLogger(__name__)


def make_embedder(model: str, *, device: str = "cpu", batch_size: int = 64, query_cache_size: int = 1024,
                  normalize: bool = True, threads: int = 1, bulk_threads: int = 0
                  ) -> HashingEmbedder | SentenceTransformerEmbedder:
    """Build the embedder a config names.

    ``"hashing"`` or ``"hashing-<dim>"`` gives a :class:`HashingEmbedder` (dim 256 by default; ``device``,
    ``batch_size`` and ``normalize`` do not apply to it); any other string a :class:`SentenceTransformerEmbedder`.

    Args:
        model: ``"hashing[-dim]"``, ``"all-MiniLM-L6-v2"`` (packaged) or any sentence-transformers name or path.
        device: Torch device of a sentence-transformers model.
        batch_size: Texts per forward pass.
        query_cache_size: Size of the LRU query cache; 0 disables it.
        normalize: L2-normalise sentence-transformers embeddings.
        threads: torch intra-op threads set when the model loads (0: torch's default).
        bulk_threads: torch threads of a call of more than ``batch_size`` texts (0: ``OMP_NUM_THREADS``, else
            every core).

    Raises:
        ConfigError: ``model`` is not a string, or ``"hashing-..."`` does not end in a positive integer.

    Examples:
        >>> make_embedder("hashing-64").name()
        'hashing-64'
        >>> make_embedder("all-MiniLM-L6-v2").name()
        'sentence-transformers/all-MiniLM-L6-v2'
    """
    if not isinstance(model, str) or not model:
        raise ConfigError(f"embedding model must be a non-empty string, got {model!r}")
    if model.startswith("hashing"):
        match = re.fullmatch(r"hashing(?:-([0-9]+))?", model)
        if match is None or (match[1] is not None and int(match[1]) == 0):
            raise ConfigError(f"hashing embedder must be named 'hashing' or 'hashing-<dim>' with dim > 0 "
                              f"(e.g. 'hashing-256'), got {model!r}")
        return HashingEmbedder(dim=int(match[1] or 256), query_cache_size=query_cache_size)
    return SentenceTransformerEmbedder(model, device=device, batch_size=batch_size,
                                       query_cache_size=query_cache_size, normalize=normalize, threads=threads,
                                       bulk_threads=bulk_threads)


def embedder_for(cfg: Any) -> HashingEmbedder | SentenceTransformerEmbedder:
    """:func:`make_embedder` with every setting of an ``embedder`` config section
    (:class:`~hindsight_lab.config.EmbedderConfig`).

    Examples:
        >>> from hindsight_lab.config import LabConfig
        >>> embedder_for(LabConfig().with_params({"embedder.model": "hashing-32"}).embedder).name()
        'hashing-32'
    """
    return make_embedder(cfg.model, device=cfg.device, batch_size=cfg.batch_size,
                         query_cache_size=cfg.query_cache_size, threads=cfg.threads, bulk_threads=cfg.bulk_threads)

