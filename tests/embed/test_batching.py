"""Concurrent calls share model passes (hindsight_lab.embed.batching): the server's embedder under load."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.embed.batching import BatchingEmbedder


class SlowModel(HashingEmbedder):
    """A model whose every pass takes a while, so that calls arrive while it is busy; it records its passes."""

    def __init__(self, seconds: float = 0.2, fail_on: str | None = None) -> None:
        super().__init__(dim=32)
        self.seconds, self.fail_on, self.passes = seconds, fail_on, []

    def embed(self, texts):
        self.passes.append(list(texts))
        time.sleep(self.seconds)
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        return super().embed(texts)


def _concurrently(fn, args):
    out, errors = {}, {}

    def run(a):
        try:
            out[a] = fn(a)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            errors[a] = exc

    threads = [threading.Thread(target=run, args=(a,)) for a in args]
    for t in threads:
        t.start()
        time.sleep(0.01)  # the first call starts a pass; the others arrive while it runs
    for t in threads:
        t.join(timeout=30)
    return out, errors


def test_calls_arriving_while_the_model_is_busy_share_the_next_pass():
    model = SlowModel()
    emb = BatchingEmbedder(model)
    texts = [f"query number {i}" for i in range(8)]
    out, errors = _concurrently(lambda t: emb.embed_query(t), texts)
    assert not errors
    for t in texts:  # each caller gets its own text's vector
        assert np.array_equal(out[t], HashingEmbedder(dim=32).embed([t])[0])
    assert len(model.passes) == 2 and model.passes[0] == [texts[0]]  # a lone first call, then the other seven
    assert sorted(model.passes[1]) == sorted(texts[1:])
    assert emb.stats() == {"calls": 8, "passes": 2, "texts": 8, "largest": 7, "mean_batch": 4.0}


def test_one_caller_at_a_time_runs_one_pass_each_without_waiting():
    model = SlowModel(seconds=0.0)
    emb = BatchingEmbedder(model)
    for i in range(5):
        emb.embed([f"text {i}", f"other {i}"])
    assert [len(p) for p in model.passes] == [2] * 5


def test_a_pass_holds_at_most_max_batch_texts():
    model = SlowModel()
    emb = BatchingEmbedder(model, max_batch=3)
    out, errors = _concurrently(lambda t: emb.embed([t]), [f"t{i}" for i in range(8)])
    assert not errors and len(out) == 8
    assert max(len(p) for p in model.passes) <= 3 and sum(len(p) for p in model.passes) == 8


def test_a_failed_pass_fails_every_call_in_it_and_the_next_calls_work():
    model = SlowModel(fail_on="bad")
    emb = BatchingEmbedder(model)
    out, errors = _concurrently(lambda t: emb.embed([t]), ["first", "bad", "good"])
    assert "first" in out  # its own pass, before the failing one
    assert set(errors) == {"bad", "good"} and all(str(e) == "model failed" for e in errors.values())
    assert emb.embed(["again"]).shape == (1, 32)


def test_it_reports_the_wrapped_model():
    inner = HashingEmbedder(dim=16)
    emb = BatchingEmbedder(inner)
    assert (emb.name(), emb.dim, emb.query_cache_size) == (inner.name(), 16, inner.query_cache_size)
    assert emb.embed([]).shape == (0, 16)
    with pytest.raises(TypeError):
        emb.embed([3])
