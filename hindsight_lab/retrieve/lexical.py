"""The keyword path: an incremental BM25 index over the text each record is matched by (DESIGN §3).

Dense similarity misses what only a keyword pins down (a reservation code, a name, a date); BM25 misses a
paraphrase. Search uses both: the index proposes candidates of its own (the ``keyword`` path) and gives every
candidate a ``lexical`` rerank feature, its BM25 score divided by the best score in the store for the query, or
(``retrieval.lexical_scale: query``) by the query's own score, :meth:`LexicalIndex.self_score`.

The index lives in process and is rebuilt from the store on open, like the task-type and trigger indexes. Records
are added and removed one at a time (a store grows by one episode at a time, so a static index such as ``bm25s``
would be rebuilt on every write). Scoring is Lucene's BM25 (as ``bm25s`` computes it, which a test checks):
``idf = ln(1 + (N − df + 0.5) / (df + 0.5))`` times ``tf / (tf + k1 · (1 − b + b · dl / avgdl))``. Tokens are
lower-cased alphanumeric runs without English stopwords (the list ``bm25s`` uses for its baseline).

Examples:
    >>> idx = LexicalIndex()
    >>> idx.add("a", "cancel reservation ZFA04Y for Mia", "episode")
    >>> idx.add("b", "book a flight from New York to Seattle", "episode")
    >>> [rid for rid, _ in idx.top(idx.scores("please cancel ZFA04Y"), 5)]
    ['a']
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from functools import lru_cache

import numpy as np

_TOKEN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without English stopwords.

    Examples:
        >>> tokenize("Cancel the reservation ZFA04Y, please!")
        ['cancel', 'reservation', 'zfa04y', 'please']
    """
    stop = _stopwords()
    return [t for t in _TOKEN.findall(text.casefold()) if t not in stop]


def _idf(n: int, df: int) -> float:
    """Lucene's BM25 idf of a term that ``df`` of ``n`` records have."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class LexicalIndex:
    """An incremental BM25 index of record ids (see module docstring).

    Postings are compact ``array`` columns (slot, term frequency) per term, and nothing else is kept per record but
    its id, bucket and length, so 100k records cost tens of MB. A removed record's slot is marked dead (it scores 0
    and counts in no statistic) until more than half the slots are dead and the postings are compacted.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._slot: dict[str, int] = {}  # record id → slot
        self._ids: list[str | None] = []  # slot → record id (None: removed)
        self._bucket: list[str] = []
        self._len = array("l")
        self._alive = array("b")
        self._postings: dict[str, tuple[array, array]] = {}  # term → (slots, tfs)
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._slot

    def add(self, record_id: str, text: str, bucket: str) -> None:
        """Index (or re-index) a record's text."""
        if record_id in self._slot:
            self.remove(record_id)
        terms = Counter(tokenize(text))
        slot = len(self._ids)
        self._slot[record_id] = slot
        self._ids.append(record_id)
        self._bucket.append(bucket)
        length = sum(terms.values())
        self._len.append(length)
        self._alive.append(1)
        self._total_len += length
        for term, tf in terms.items():
            slots, tfs = self._postings.setdefault(term, (array("l"), array("d")))
            slots.append(slot)
            tfs.append(tf)

    def remove(self, record_id: str) -> None:
        """Forget a record (archived or deleted); unknown ids are ignored."""
        slot = self._slot.pop(record_id, None)
        if slot is None:
            return
        self._total_len -= self._len[slot]
        self._ids[slot], self._alive[slot] = None, 0
        if len(self._ids) > 64 and len(self._slot) < len(self._ids) // 2:
            self._compact()

    def _compact(self) -> None:
        alive = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
        remap = np.cumsum(alive) - 1
        self._ids = [rid for rid in self._ids if rid is not None]
        self._bucket = [b for b, keep in zip(self._bucket, alive) if keep]
        self._len = array("l", (n for n, keep in zip(self._len, alive) if keep))
        self._alive = array("b", [1] * len(self._ids))
        self._slot = {rid: i for i, rid in enumerate(self._ids)}  # type: ignore[misc]
        for term in list(self._postings):
            slots = np.frombuffer(self._postings[term][0], dtype=np.int64)
            tfs = np.frombuffer(self._postings[term][1], dtype=np.float64)
            keep = alive[slots]
            if keep.any():
                self._postings[term] = (array("l", remap[slots[keep]].tolist()), array("d", tfs[keep].tolist()))
            else:
                del self._postings[term]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every slot for the query (dead slots score 0 and count in no document frequency)."""
        out = np.zeros(len(self._ids))
        n = len(self._slot)
        if not n:
            return out
        avgdl = self._total_len / n or 1.0
        lengths = np.frombuffer(self._len, dtype=np.int64)
        alive = np.frombuffer(self._alive, dtype=np.int8)
        complete = n == len(self._ids)
        for term in dict.fromkeys(tokenize(query)):  # query order: sums identical in every process
            if term not in self._postings:
                continue
            raw_slots, raw_tfs = self._postings[term]
            slots = np.frombuffer(raw_slots, dtype=np.int64)
            tf = np.frombuffer(raw_tfs, dtype=np.float64)
            if not complete:
                live = alive[slots].astype(bool)
                slots, tf = slots[live], tf[live]
            if not len(slots):
                continue
            out[slots] += _idf(n, len(slots)) * tf / (tf + self.k1 * (1 - self.b + self.b * lengths[slots] / avgdl))
            del slots, tf, raw_slots, raw_tfs  # release the buffers: the arrays grow again on the next add
        del lengths, alive
        return out

    def self_score(self, query: str) -> float:
        """The score a record whose text is the query would get, by the statistics of the records indexed now (a
        term no record has counts as the rarest there is): what :meth:`scores` results are divided by to read as
        "how much of the query a record matches". A query asking mostly for words no record has is matched little
        by every record.

        Examples:
            >>> idx = LexicalIndex()
            >>> idx.add("a", "cancel reservation ZFA04Y", "episode")
            >>> idx.add("b", "book a flight to Seattle", "episode")
            >>> s = idx.scores("cancel reservation ZFA04Y")
            >>> round(idx.score_of(s, "a") / idx.self_score("cancel reservation ZFA04Y"), 3)
            1.0
        """
        n = len(self._slot)
        terms = Counter(tokenize(query))
        if not n or not terms:
            return 0.0
        avgdl = self._total_len / n or 1.0
        norm = self.k1 * (1 - self.b + self.b * sum(terms.values()) / avgdl)
        alive = np.frombuffer(self._alive, dtype=np.int8)
        total = 0.0
        for term, tf in terms.items():  # query order, as in scores()
            df = 0
            if term in self._postings:
                slots = np.frombuffer(self._postings[term][0], dtype=np.int64)
                df = len(slots) if n == len(self._ids) else int(np.count_nonzero(alive[slots]))
                del slots
            total += _idf(n, df) * tf / (tf + norm)
        del alive
        return total

    def top(self, scores: np.ndarray, n: int) -> list[tuple[str, str]]:
        """``(record_id, bucket)`` of the ``n`` best-scoring records with a positive score, best first."""
        positive = np.flatnonzero(scores > 0)
        if not len(positive) or n <= 0:
            return []
        if len(positive) > n:  # the n best without sorting the rest (ties at the cut broken by slot)
            part = np.argpartition(-scores[positive], n - 1)[:n]
            positive = np.sort(positive[part])
        best = positive[np.argsort(-scores[positive], kind="stable")]
        return [(self._ids[s], self._bucket[s]) for s in best]  # type: ignore[misc]

    def score_of(self, scores: np.ndarray, record_id: str) -> float:
        """One record's score in a :meth:`scores` result (0 when it is not indexed)."""
        slot = self._slot.get(record_id)
        return float(scores[slot]) if slot is not None and slot < len(scores) else 0.0
