"""The keyword path's incremental BM25 index, cross-checked against ``bm25s`` (an independent implementation)."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from hindsight_lab.retrieve.lexical import LexicalIndex, tokenize

CORPUS = [
    "Cancel reservation ZFA04Y for Mia Li and refund to the original payment",
    "Book a one-way flight from New York to Seattle on May 20th",
    "Change the return flight from Texas to Newark to a later flight",
    "Add a checked bag to reservation H9ZU1C",
    "Cancel my flight to Seattle, the trip is off",
    "Remove passenger Ethan from reservation H9ZU1C",
]
QUERIES = ["cancel reservation H9ZU1C", "flight to Seattle", "refund Mia", "nothing matches xyzzy"]


def _bm25s_scores(docs: list[str], query: str) -> np.ndarray:
    ref = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    ref.index([tokenize(d) for d in docs], show_progress=False)
    words = [t for t in tokenize(query) if any(t in tokenize(d) for d in docs)]
    return np.asarray(ref.get_scores(words)) if words else np.zeros(len(docs))


def _index(docs: list[str]) -> LexicalIndex:
    idx = LexicalIndex()
    for i, d in enumerate(docs):
        idx.add(f"r{i}", d, "episode")
    return idx


@pytest.mark.parametrize("query", QUERIES)
def test_scores_equal_bm25s_lucene(query):
    want = _bm25s_scores(CORPUS, query)
    assert _index(CORPUS).scores(query) == pytest.approx(want, rel=1e-6, abs=1e-9)  # bm25s scores are float32


def test_top_keeps_positive_scores_best_first_with_buckets():
    idx = _index(CORPUS)
    idx.add("rule-1", "Before cancel_reservation check the fare class", "rule")
    top = idx.top(idx.scores("cancel reservation H9ZU1C"), 3)
    assert top[0] in {("r3", "episode"), ("r5", "episode")} and len(top) == 3
    assert idx.top(idx.scores("xyzzy"), 3) == []  # negative control: no shared word, no candidate


def test_remove_and_reindex_equal_a_fresh_index():
    idx = _index(CORPUS)
    idx.remove("r1")
    idx.remove("unknown")  # ignored
    idx.add("r2", "Change the return flight to Chicago", "episode")  # re-index with new text
    fresh_docs = [CORPUS[0], CORPUS[3], CORPUS[4], CORPUS[5], "Change the return flight to Chicago"]
    fresh = LexicalIndex()
    for rid, text in zip(["r0", "r3", "r4", "r5", "r2"], fresh_docs):
        fresh.add(rid, text, "episode")
    for query in QUERIES + ["return flight Chicago", "New York"]:
        got, want = idx.scores(query), fresh.scores(query)
        for rid in ("r0", "r2", "r3", "r4", "r5"):
            assert idx.score_of(got, rid) == pytest.approx(fresh.score_of(want, rid))
        assert idx.score_of(got, "r1") == 0.0 and "r1" not in idx


def test_compaction_keeps_scores():
    idx = LexicalIndex()
    docs = {f"d{i}": f"reservation {i} to city{i % 7} with bag {i % 3}" for i in range(200)}
    for rid, text in docs.items():
        idx.add(rid, text, "episode")
    for i in range(150):  # more than half removed: slots are compacted
        idx.remove(f"d{i}")
    assert len(idx) == 50 and len(idx._ids) < 100  # compacted at least once
    kept = {rid: text for rid, text in docs.items() if int(rid[1:]) >= 150}
    fresh = _index(list(kept.values()))
    got, want = idx.scores("city3 bag 1"), fresh.scores("city3 bag 1")
    for i, rid in enumerate(kept):
        assert idx.score_of(got, rid) == pytest.approx(fresh.score_of(want, f"r{i}"))


def test_tokenize_drops_stopwords_and_punctuation():
    assert tokenize("Cancel the reservation ZFA04Y, please!") == ["cancel", "reservation", "zfa04y", "please"]


@pytest.mark.parametrize("query", CORPUS)
def test_self_score_is_the_score_of_the_query_as_a_record(query):
    """``self_score`` is what a record whose text is the query scores among the records indexed."""
    idx = _index(CORPUS)
    assert idx.self_score(query) == pytest.approx(idx.score_of(idx.scores(query), f"r{CORPUS.index(query)}"))


def test_self_score_counts_unknown_terms_as_the_rarest():
    idx = _index(CORPUS)
    known = idx.self_score("cancel reservation")
    n = len(CORPUS)
    rarest = np.log(1 + (n + 0.5) / 0.5)
    assert idx.self_score("cancel reservation xyzzy") > known + 0.5 * rarest / (1 + 1.5)  # a third, rarest term
    assert idx.self_score("nothing matches xyzzy") > 0 == max(idx.scores("nothing matches xyzzy"))


def test_self_score_counts_live_records_only():
    idx = _index(CORPUS)
    idx.remove("r0")
    fresh = _index(CORPUS[1:])
    for query in QUERIES:
        assert idx.self_score(query) == pytest.approx(fresh.self_score(query))
    assert LexicalIndex().self_score("cancel") == 0.0 and idx.self_score("the of") == 0.0  # nothing, stopwords


def test_a_weak_match_scores_little_of_the_query():
    """Divided by the query's own score, a record that shares one common word of a long query scores little, where
    divided by the best score in the store it would score 1 (it is the best there is)."""
    idx = _index(CORPUS)
    query = "Upgrade my seat to business class on the Seattle flight"
    scores = idx.scores(query)
    best = max(scores)
    weak = idx.score_of(scores, "r4")  # "Cancel my flight to Seattle": two words of six
    assert weak == pytest.approx(best)
    assert weak / idx.self_score(query) < 0.5
