"""The task-type classifier for queries that come without one (DESIGN §3, path 1).

A query's task type is guessed from the instructions of stored episodes, each labelled with the task type derived
from what its agent did. Instructions name people, places, order numbers and e-mail addresses; two tasks of
different types about the same customer share all of those, two tasks of the same type about different customers
share none. So the words that identify a thing are masked before anything is learnt (:func:`mask_entities`), and
a logistic regression over TF-IDF word unigrams and bigrams of the masked text learns the wording of each task
type. It abstains (``None``) when the best type's probability is not above ``min_share`` or the type has fewer
than ``min_votes`` stored examples.

The training set is the newest ``max_per_type`` episodes of every task type, kept in process and refitted lazily
at the first prediction after a change. ``scikit-learn`` is imported at the first fit.

Examples:
    >>> mask_entities("Refund order 4821 for Alice Chen (alice@example.com) in Denver.")
    'Refund order <num> for <name> <name> (<email>) in <name>.'
"""

from __future__ import annotations

import re
from typing import Any

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_WITH_DIGIT = re.compile(r"\b\w*\d\w*\b")
_WORD = re.compile(r"[A-Za-z][\w'’-]*")


def mask_entities(text: str) -> str:
    """Replace e-mail addresses, tokens with a digit (ids, amounts, dates) and capitalised words that do not start
    a sentence (names, places) by placeholders."""
    text = _WITH_DIGIT.sub("<num>", _EMAIL.sub("<email>", text))

    def name(m: re.Match[str]) -> str:
        word, before = m.group(), text[max(0, m.start() - 20):m.start()].rstrip()
        starts_sentence = (not before and m.start() < 20) or before[-1:] in (".", "!", "?", ":", ";", '"')
        return "<name>" if word[0].isupper() and not starts_sentence and word != "I" else word

    return _WORD.sub(name, text)


def learns_from(learn_from: str, outcome: str | None) -> bool:
    """Whether an episode with this outcome teaches the classifier (``retrieval.classifier.learn_from``: ``all``,
    or only ``successes``); for ``knn``, whether it votes."""
    return learn_from == "all" or outcome == "success"


class TaskTypeClassifier:
    """Logistic regression over masked instructions of the newest stored episodes of each task type.

    Args:
        max_per_type: newest episodes kept per task type for training.
        min_votes: abstain unless the predicted type has at least this many examples.
        min_share: abstain unless the predicted type's probability is above this.
    """

    def __init__(self, max_per_type: int = 50, min_votes: int = 2, min_share: float = 0.5) -> None:
        self.max_per_type, self.min_votes, self.min_share = max_per_type, min_votes, min_share
        self._by_type: dict[str, dict[str, tuple[float, str]]] = {}  # type → id → (created_at, masked text)
        self._type_of: dict[str, str] = {}
        self._model: Any = None
        self._dirty = False

    def __len__(self) -> int:
        return len(self._type_of)

    def add(self, record_id: str, text: str, task_type: str | None, created_at: float) -> None:
        """Learn from a stored episode; beyond ``max_per_type`` the oldest of its type is forgotten."""
        self.remove(record_id)
        if task_type is None:
            return
        examples = self._by_type.setdefault(task_type, {})
        examples[record_id] = (created_at, mask_entities(text))
        self._type_of[record_id] = task_type
        if len(examples) > self.max_per_type:
            oldest = min(examples, key=lambda rid: examples[rid][0])
            del examples[oldest], self._type_of[oldest]
        self._dirty = True

    def remove(self, record_id: str) -> None:
        task_type = self._type_of.pop(record_id, None)
        if task_type is not None:
            del self._by_type[task_type][record_id]
            if not self._by_type[task_type]:
                del self._by_type[task_type]
            self._dirty = True

    def predict(self, query: str) -> tuple[str | None, float]:
        """``(task_type, probability)``, or ``(None, probability of the best)`` when it abstains."""
        types = [t for t, ex in self._by_type.items() if ex]
        if not types:
            return None, 0.0
        if len(types) == 1:
            (only,) = types
            n = len(self._by_type[only])
            return (only if n >= self.min_votes else None), 1.0
        if self._dirty or self._model is None:
            self._fit()
            self._dirty = False
        probs = self._model.predict_proba([mask_entities(query)])[0]
        best = int(probs.argmax())
        label, share = str(self._model.classes_[best]), float(probs[best])
        if share <= self.min_share or len(self._by_type.get(label, ())) < self.min_votes:
            return None, share
        return label, share

    def _fit(self) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        texts, labels = [], []
        for task_type, examples in self._by_type.items():
            texts += [text for _, text in examples.values()]
            labels += [task_type] * len(examples)
        self._model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True),
                                    LogisticRegression(C=10.0, max_iter=1000)).fit(texts, labels)
