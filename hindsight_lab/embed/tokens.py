"""One token counter for everything (context budgets and metrics), using the embedding model's own tokenizer.

Counts exclude special tokens ([CLS]/[SEP]) and are never truncated: a 2,000-word text counts all its tokens,
even though the model itself only reads the first 256 or so.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hindsight_lab._env import set_offline_defaults
from hindsight_lab.errors import ConfigError, MissingDependencyError

logger = logging.getLogger(__name__)

REGEX_COUNTER = "regex-words"
"""Name of the tokenizer-free counter: one token per word (``\\w+``) and per punctuation character."""
_REGEX_TOKEN = re.compile(r"\w+|[^\w\s]")
_LOAD_LOCK = threading.Lock()


_CACHE_SIZE, _CACHE_TEXT_CHARS = 8192, 4000


class TokenCounter:
    """Counts tokens offline, lazily loading the tokenizer on the first count.

    Built with :meth:`for_embedder` in practice. With ``tokenizer_file`` it uses the fast ``tokenizers`` library
    directly (no torch); with ``embedder`` (a model folder without ``tokenizer.json``) it uses the loaded model's
    own tokenizer; with neither it counts words and punctuation marks with a regular expression.

    Args:
        tokenizer_file: A Hugging Face ``tokenizer.json``.
        embedder: A sentence-transformers embedder whose loaded model's ``.tokenizer`` is used.
        label: Name reported by :meth:`name`; defaults to the embedder's name, the file or ``"regex-words"``.

    Examples:
        >>> from hindsight_lab.embed import HashingEmbedder, SentenceTransformerEmbedder
        >>> TokenCounter.for_embedder(HashingEmbedder()).count("Refund it, please!")
        5
        >>> counter = TokenCounter.for_embedder(SentenceTransformerEmbedder())
        >>> counter.count_many(["refund", "a cancelled flight"])
        [2, 3]
    """

    def __init__(self, tokenizer_file: str | os.PathLike[str] | None = None, *, embedder: Any = None,
                 label: str | None = None) -> None:
        self.tokenizer_file = tokenizer_file
        self.embedder = embedder
        self.label = label
        self.encode_many_: Callable[[list[str]], list[int]] | None = None  # fitted state: the batch counter
        self._cache: dict[str, int] = {}  # rendered memory lines and headers recur on every search

    @classmethod
    def for_embedder(cls, embedder: Any) -> TokenCounter:
        """The counter that matches ``embedder``: its model's tokenizer, or words for the hashing embedder."""
        embedder = getattr(embedder, "wrapped", embedder)  # a PrefetchedEmbedder counts like what it wraps
        from hindsight_lab.embed.hashing import HashingEmbedder
        from hindsight_lab.embed.sentence_transformers import SentenceTransformerEmbedder

        if isinstance(embedder, HashingEmbedder):
            return cls(label=REGEX_COUNTER)
        label = embedder.name() if callable(getattr(embedder, "name", None)) else None
        folder = embedder.tokenizer_path() if callable(getattr(embedder, "tokenizer_path", None)) else None
        if folder is not None and (Path(folder) / "tokenizer.json").is_file():
            return cls(Path(folder) / "tokenizer.json", label=label)
        if isinstance(embedder, SentenceTransformerEmbedder):
            return cls(embedder=embedder, label=label)
        logger.warning("no tokenizer known for embedder %r; counting words and punctuation instead", embedder)
        return cls(label=REGEX_COUNTER)

    def name(self) -> str:
        """What the counts are counted with, e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``."""
        if self.label is not None:
            return self.label
        if self.embedder is not None:
            return str(self.embedder.name())
        return str(self.tokenizer_file) if self.tokenizer_file is not None else REGEX_COUNTER

    def count(self, text: str) -> int:
        """Number of tokens in ``text``, without special tokens or truncation."""
        if not isinstance(text, str):
            raise TypeError(f"count() takes a str, got {type(text).__name__}; use count_many() for many texts")
        n = self._cache.get(text)
        if n is None:
            n = self.count_many([text])[0]
            if len(text) <= _CACHE_TEXT_CHARS:
                if len(self._cache) >= _CACHE_SIZE:
                    self._cache.pop(next(iter(self._cache)))  # oldest first
                self._cache[text] = n
        return n

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (one batched encode)."""
        if isinstance(texts, str):
            raise TypeError("count_many() takes a sequence of texts, got a single str; use count()")
        texts = list(texts)
        bad = next((t for t in texts if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"count_many() takes texts (str), got an item of type {type(bad).__name__}")
        if not texts:
            return []
        if self.encode_many_ is None:
            with _LOAD_LOCK:
                if self.encode_many_ is None:
                    self.encode_many_ = self._load()
        return self.encode_many_(texts)

    def _load(self) -> Callable[[list[str]], list[int]]:
        if self.tokenizer_file is not None:
            return _fast_counter(_load_tokenizer_file(Path(self.tokenizer_file)))
        if self.embedder is not None:
            return _model_counter(self.embedder.load().tokenizer, self.name())
        return lambda texts: [len(_REGEX_TOKEN.findall(t)) for t in texts]

    def __repr__(self) -> str:
        return f"TokenCounter(tokenizer_file={self.tokenizer_file!r}, label={self.name()!r})"


def _load_tokenizer_file(path: Path) -> Any:
    set_offline_defaults()  # also TOKENIZERS_PARALLELISM=false: no fork warnings in sweeps
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise MissingDependencyError("TokenCounter needs the 'tokenizers' package: pip install tokenizers") from exc
    if not path.is_file():
        raise ConfigError(f"TokenCounter: expected a tokenizer.json file, got {str(path)!r}, which does not exist")
    logger.debug("token counter loads %s", path)
    return _without_limits(Tokenizer.from_file(str(path)))


def _fast_counter(tokenizer: Any) -> Callable[[list[str]], list[int]]:
    def count(texts: list[str]) -> list[int]:
        return [len(enc.ids) for enc in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return count


def _model_counter(tokenizer: Any, label: str) -> Callable[[list[str]], list[int]]:
    """Count with a transformers tokenizer: its fast backend when it has one, else the slow tokenizer itself."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        from tokenizers import Tokenizer

        return _fast_counter(_without_limits(Tokenizer.from_str(backend.to_str())))  # a copy, the model's stays
    logger.info("token counter for %s uses a slow (Python) tokenizer", label)

    def count(texts: list[str]) -> list[int]:
        # verbose=False: no "sequence length is longer than the maximum" warning, since nothing is fed to the model
        return [len(tokenizer.encode(t, add_special_tokens=False, truncation=False, verbose=False)) for t in texts]

    return count


def _without_limits(tokenizer: Any) -> Any:
    # The packaged tokenizer.json truncates at 128 and pads to a fixed 128 tokens: both would falsify counts.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
