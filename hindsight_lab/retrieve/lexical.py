"""The keyword path: an incremental BM25 index over the text each record is matched by (DESIGN §3).

Dense similarity misses what only a keyword pins down (a reservation code, a name, a date); BM25 misses a
paraphrase. Search uses both: the index proposes candidates of its own (the ``keyword`` path) and gives every
candidate a ``lexical`` rerank feature, its BM25 score divided by the best score in the store for the query.

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


class LexicalIndex:
    """An incremental BM25 index of record ids (see module docstring).

    Postings are compact ``array`` columns (slot, term frequency) per term, so 100k records with a few dozen
    terms each cost tens of MB, not hundreds; a removed record leaves its slot empty until a compaction.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._slot: dict[str, int] = {}  # record id → slot
        self._ids: list[str | None] = []  # slot → record id (None: removed)
        self._bucket: list[str] = []
        self._terms: list[tuple[str, ...]] = []  # slot → its distinct terms (for removal)
        self._len = array("l")
        self._postings: dict[str, tuple[array, array]] = {}  # term → (slots, tfs)
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._slot

    def bucket(self, record_id: str) -> str | None:
        slot = self._slot.get(record_id)
        return None if slot is None else self._bucket[slot]

    def add(self, record_id: str, text: str, bucket: str) -> None:
        """Index (or re-index) a record's text."""
        if record_id in self._slot:
            self.remove(record_id)
        terms = Counter(tokenize(text))
        slot = len(self._ids)
        self._slot[record_id] = slot
        self._ids.append(record_id)
        self._bucket.append(bucket)
        self._terms.append(tuple(terms))
        length = sum(terms.values())
        self._len.append(length)
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
        for term in self._terms[slot]:
            slots, tfs = self._postings[term]
            at = slots.index(slot)
            del slots[at], tfs[at]
            if not slots:
                del self._postings[term]
        self._total_len -= self._len[slot]
        self._ids[slot], self._terms[slot], self._len[slot] = None, (), 0
        if len(self._ids) > 64 and len(self._slot) < len(self._ids) // 2:
            self._compact()

    def _compact(self) -> None:
        old_ids, old_bucket, old_len = self._ids, self._bucket, self._len
        remap = {old: new for new, old in enumerate(s for s, rid in enumerate(old_ids) if rid is not None)}
        self._ids = [rid for rid in old_ids if rid is not None]
        self._bucket = [old_bucket[s] for s in remap]
        self._terms = [self._terms[s] for s in remap]
        self._len = array("l", (old_len[s] for s in remap))
        self._slot = {rid: i for i, rid in enumerate(self._ids)}  # type: ignore[misc]
        for slots, _ in self._postings.values():
            for i, s in enumerate(slots):
                slots[i] = remap[s]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every slot for the query (empty slots score 0)."""
        out = np.zeros(len(self._ids))
        n = len(self._slot)
        if not n:
            return out
        avgdl = self._total_len / n or 1.0
        lengths = np.frombuffer(self._len, dtype=np.int64) if len(self._len) else np.zeros(0, dtype=np.int64)
        for term in set(tokenize(query)):
            if term not in self._postings:
                continue
            raw_slots, raw_tfs = self._postings[term]
            slots = np.frombuffer(raw_slots, dtype=np.int64)
            tf = np.frombuffer(raw_tfs, dtype=np.float64)
            idf = math.log(1.0 + (n - len(slots) + 0.5) / (len(slots) + 0.5))
            out[slots] += idf * tf / (tf + self.k1 * (1 - self.b + self.b * lengths[slots] / avgdl))
            del slots, tf  # release the buffers: the arrays grow again on the next add
        del lengths
        return out

    def top(self, scores: np.ndarray, n: int) -> list[tuple[str, str]]:
        """``(record_id, bucket)`` of the ``n`` best-scoring records with a positive score, best first."""
        positive = np.flatnonzero(scores > 0)
        if not len(positive) or n <= 0:
            return []
        best = positive[np.argsort(-scores[positive], kind="stable")[:n]]
        return [(self._ids[s], self._bucket[s]) for s in best]  # type: ignore[misc]

    def score_of(self, scores: np.ndarray, record_id: str) -> float:
        """One record's score in a :meth:`scores` result (0 when it is not indexed)."""
        slot = self._slot.get(record_id)
        return float(scores[slot]) if slot is not None and slot < len(scores) else 0.0
