"""An embedder shared by concurrent callers that runs the model once for the texts of every caller waiting.

A server answers several clients at once, and each search embeds its query: one forward pass per query, each
paying the model's fixed cost per call on a few shared cores. Calls that arrive while the model is busy wait, and
the next pass embeds all of them together (at most ``max_batch`` texts), so under load the passes grow and their
number falls, while a call that finds the model idle starts at once: no waiting window is added to a lone call.
A vector depends only on its text (the model is deterministic up to batch padding), so which call a text came with
changes nothing but the time.

Examples:
    >>> from hindsight_lab.embed import HashingEmbedder
    >>> inner = HashingEmbedder(dim=16)
    >>> emb = BatchingEmbedder(inner)
    >>> bool((emb.embed(["refund order 42"]) == inner.embed(["refund order 42"])).all()), emb.name() == inner.name()
    (True, True)
    >>> emb.stats()["calls"], emb.stats()["passes"]
    (1, 1)
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from hindsight_lab.embed._base import WrappingEmbedder, check_texts


class _Call:
    __slots__ = ("texts", "vectors", "error")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None


class BatchingEmbedder(WrappingEmbedder):
    """Wraps ``inner`` (its name, dimension, tokenizer and query-cache size are reported as its own).

    Args:
        inner: the embedder that runs the model.
        max_batch: most texts in one pass (a call with more runs alone).
    """

    def __init__(self, inner: Any, max_batch: int = 64) -> None:
        super().__init__(inner)
        self.max_batch = int(max_batch)
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._busy = False
        self._calls = self._passes = self._texts = self._largest = 0

    def stats(self) -> dict[str, Any]:
        """Calls, model passes, texts embedded, the largest pass and the mean texts per pass."""
        with self._cond:
            return {"calls": self._calls, "passes": self._passes, "texts": self._texts, "largest": self._largest,
                    "mean_batch": self._texts / self._passes if self._passes else 0.0}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts, "embed")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        call = _Call(list(texts))
        with self._cond:
            self._calls += 1
            self._queue.append(call)
            while True:
                while self._busy and call.vectors is None and call.error is None:
                    self._cond.wait()
                if call.vectors is not None or call.error is not None:
                    break
                batch = self._take()  # the model is idle: this caller runs the next pass
                self._busy = True
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if call.error is not None:
            raise call.error
        assert call.vectors is not None
        return call.vectors

    def _take(self) -> list[_Call]:
        """The waiting calls, oldest first, up to ``max_batch`` texts (always at least one call)."""
        batch, n = [], 0
        while self._queue and (not batch or n + len(self._queue[0].texts) <= self.max_batch):
            call = self._queue.pop(0)
            batch.append(call)
            n += len(call.texts)
        self._passes += 1
        self._texts += n
        self._largest = max(self._largest, n)
        return batch

    def _run(self, batch: list[_Call]) -> None:
        try:
            vectors = np.asarray(self.wrapped.embed([t for call in batch for t in call.texts]), dtype=np.float32)
        except BaseException as exc:  # every caller of the pass gets the error
            for call in batch:
                call.error = exc
            return
        start = 0
        for call in batch:
            call.vectors = vectors[start:start + len(call.texts)].copy()
            start += len(call.texts)
