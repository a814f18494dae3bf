"""PrefetchedEmbedder: the same vectors as the wrapped embedder, computed ahead in batches."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_lab.embed import HashingEmbedder, PrefetchedEmbedder, TokenCounter

TEXTS = ["Cancel reservation ZFA04Y for Mia Li", "Book a one-way flight from New York to Seattle on May 20th",
         "Hi! I need to change my return flight from Texas to Newark.", "refund"]


def test_batched_vectors_equal_one_by_one_minilm(minilm):
    emb = PrefetchedEmbedder(minilm, TEXTS + TEXTS[:2])  # duplicates are embedded once
    assert emb.name() == minilm.name() and emb.dim == minilm.dim and emb.misses == 0
    one_by_one = np.stack([minilm.embed([t])[0] for t in TEXTS])
    assert emb.embed(TEXTS) == pytest.approx(one_by_one, abs=1e-5)  # padding in a batch changes nothing
    assert emb.embed_query(TEXTS[1]) == pytest.approx(one_by_one[1], abs=1e-5)
    assert emb.misses == 0
    new = "A rule nobody prefetched"
    assert emb.embed([new, TEXTS[0]]) == pytest.approx(np.stack([minilm.embed([new])[0], one_by_one[0]]), abs=1e-5)
    assert emb.misses == 1  # negative control: an unknown text goes to the wrapped model
    assert TokenCounter.for_embedder(emb).count(TEXTS[1]) == TokenCounter.for_embedder(minilm).count(TEXTS[1])


def test_returned_arrays_are_copies_and_inputs_are_checked():
    emb = PrefetchedEmbedder(HashingEmbedder(dim=32), TEXTS)
    out = emb.embed(TEXTS[:1])
    out[:] = 0
    assert emb.embed(TEXTS[:1]).any()  # the cached vector was not changed through the returned array
    assert emb.embed([]).shape == (0, 32)
    with pytest.raises(TypeError, match="single str"):
        emb.embed("one text")


def test_prefetching_again_keeps_the_vectors_and_embeds_only_new_texts():
    class Counting(HashingEmbedder):
        calls: list[int] = []

        def embed(self, texts):
            self.calls.append(len(texts))
            return super().embed(texts)

    inner = Counting(dim=32)
    first = PrefetchedEmbedder(inner, TEXTS)
    second = PrefetchedEmbedder(first, TEXTS[:2] + ["a new question"])
    assert inner.calls == [len(TEXTS), 1]  # only the new text was embedded the second time
    assert second.wrapped is inner  # no wrapper inside a wrapper
    assert np.array_equal(second.embed(TEXTS), inner.embed(TEXTS))
    second.embed(["asked later"])  # what either embeds, the other knows: one cache for several replays
    third = PrefetchedEmbedder(first, ["asked later", "a new question"])
    assert inner.calls == [len(TEXTS), 1, len(TEXTS), 1] and third.misses == 0
