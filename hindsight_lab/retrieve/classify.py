"""The task-type classifier for queries that come without one (DESIGN §3, path 1).

A query's task type is guessed from the instructions of stored episodes, each labelled with the task type derived
from what its agent did. Instructions name people, places, order numbers and e-mail addresses; two tasks of
different types about the same customer share all of those, two tasks of the same type about different customers
share none. So the words that identify a thing are masked before anything is learnt (:func:`mask_entities`), and
a logistic regression learns the wording of each task type from the masked text. It abstains (``None``) when the
best type's probability is not above ``min_share`` or the type has fewer than ``min_votes`` stored examples.

Two feature sets (``retrieval.classifier.method``):

- ``logistic``: TF-IDF word unigrams and bigrams of the masked text.
- ``embedding``: the sentence embedding of the masked text, so that paraphrases ("wants the money back") land near
  the usual wording ("refund"). Each task type is also **described by its tools**: the words of the tool names its
  stored episodes called (``issue_refund`` → "issue refund"), embedded and added as one training example of weight
  ``describe_weight``. Tool names are the one part of a task type every run of it shares, whoever worded the
  request, so a query in words no stored instruction used can still land on its type.

**Instance-blind typing** (``instance_blind``): a stored request about the very instance a query names — the same
customer, order or booking, by the names, numbers and identifiers of the two requests
(:func:`~hindsight_lab.trace.summary.same_instance` of their :func:`~hindsight_lab.trace.summary.request_signature`)
— shares the query's words whatever it asked for: that is what makes a lexical lure. So the query is first read
without those requests, by the wording of other instances; each of them is read the same way, and those that ask
for something else than the query are left out when it is typed (a model fitted without them, memoised per set
left out; the whole set's model when leaving them out would not move its solution, :mod:`.fitrows`). Those that
ask what the query asks are kept: what that request came to for this very instance (a refusal where others got a
cancellation) is the best evidence there is. If the query cannot be read without them, all are left out.

**Contrastive reading** (``contrast``, with ``instance_blind``): two requests about one instance share its names and
its description ("order <num>, the green coffee grinder that <name> <name> bought in <name>"), and a sentence
embedding of the whole request weighs that description more than the few words that say what is asked ("set up an
exchange on" against "please cancel"). So the query is also read by its words that a stored request about its
instance does not say (:func:`contrast_text`), and a type must fit both readings: the two probabilities are
multiplied and renormalised. Only a stored request that asks something else counts: one whose own differing words
read, by the model without the instance, as its whole request does, while the query's read as another type, each
sure enough to answer (``min_share``, ``min_votes``). A retry in other words fails that test (its differing words are
scattered and read as no type, or as one its request is not), and the query is then read whole.

The training set is the newest ``max_per_type`` episodes of every task type, kept in process and refitted lazily
at the first prediction after a change. ``scikit-learn`` is imported at the first fit; embeddings of the masked
texts are memoised.

Examples:
    >>> mask_entities("Refund order 4821 for Alice Chen (alice@example.com) in Denver.")
    'Refund order <num> for <name> <name> (<email>) in <name>.'
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..trace.summary import request_signature, same_instance
from .fitrows import C, FitRows, start_from
from .wording import contrast_text, describe_tools, mask_entities

def _differ(a: str | None, b: str | None) -> bool:
    """Two readings that both name a type, and not the same one."""
    return a is not None and b is not None and a != b


def learns_from(learn_from: str, outcome: str | None, failure_cause: str | None = None) -> bool:
    """Whether an episode with this outcome (and, failed, this ``failure_cause``) teaches the classifier
    (``retrieval.classifier.learn_from``: ``all``, only ``successes``, or ``not_strategy``: the successes and the
    runs that failed from outside the agent); for ``knn``, whether it votes.

    Examples:
        >>> [learns_from(m, "failure", "external") for m in ("all", "successes", "not_strategy")]
        [True, False, True]
        >>> learns_from("not_strategy", "failure", "strategy"), learns_from("not_strategy", "partial", None)
        (False, False)
    """
    if learn_from == "all" or outcome == "success":
        return True
    return learn_from == "not_strategy" and failure_cause == "external"


class TaskTypeClassifier:
    """Logistic regression over masked instructions of the newest stored episodes of each task type.

    Args:
        max_per_type: newest episodes kept per task type for training.
        min_votes: abstain unless the predicted type has at least this many examples.
        min_share: abstain unless the predicted type's probability is above this.
        method: ``logistic`` (TF-IDF features) or ``embedding`` (sentence embeddings and tool descriptions).
        embed: texts → unit-norm embedding rows; required by ``embedding``.
        describe_weight: ``embedding``: sample weight of each task type's tool description (0: no descriptions).
        instance_blind: type a query without the stored requests about the same instance (module docstring).
        contrast: with ``instance_blind``, also read what the query says that those requests do not (module
            docstring).

    Examples:
        >>> import numpy as np
        >>> vocab = ["refund", "money", "cancel", "stop", "issue", "order"]
        >>> def embed(texts):  # a toy bag-of-words embedder
        ...     m = np.array([[w in t.lower() for w in vocab] for t in texts], dtype=float) + 1e-3
        ...     return m / np.linalg.norm(m, axis=1, keepdims=True)
        >>> clf = TaskTypeClassifier(min_votes=1, min_share=0.0, method="embedding", embed=embed)
        >>> clf.add("a", "Give Ana her money back", "issue_refund", 1.0, tools=["lookup_order", "issue_refund"])
        >>> clf.add("b", "Stop the parcel", "cancel_order", 2.0, tools=["lookup_order", "cancel_order"])
        >>> clf.predict("Refund order 42")[0]  # no stored instruction says "refund"; the tool name does
        'issue_refund'
    """

    def __init__(self, max_per_type: int = 50, min_votes: int = 2, min_share: float = 0.5, *,
                 method: str = "logistic", embed: Callable[[Sequence[str]], Any] | None = None,
                 describe_weight: float = 10.0, instance_blind: bool = False, contrast: bool = False) -> None:
        if method not in ("logistic", "embedding"):
            raise ValueError(f"method: must be 'logistic' or 'embedding' (got {method!r})")
        if method == "embedding" and embed is None:
            raise ValueError("method 'embedding' needs an embed function")
        self.max_per_type, self.min_votes, self.min_share = max_per_type, min_votes, min_share
        self.method, self._embed, self.describe_weight = method, embed, float(describe_weight)
        self.instance_blind, self.contrast = instance_blind, contrast
        self._by_type: dict[str, dict[str, tuple[float, str]]] = {}  # type → id → (created_at, masked text)
        self._tools: dict[str, tuple[str, ...]] = {}  # id → tools its episode called
        self._type_of: dict[str, str] = {}
        self._instance: dict[str, tuple[str, ...]] = {}  # id → signature of its request (``instance_blind``)
        self._naming: dict[str, set[str]] = {}  # an item of a signature → ids whose signature has it
        self._vectors: dict[str, Any] = {}  # masked text or description → embedding (``embedding``)
        self._asked: dict[str, Any] = {}  # masked text of a stored record asked about → embedding (:meth:`intents`)
        self._last_query: tuple[list[str], Any] = ([], None)  # the last masked query and its embedding
        self._model: Any = None
        self._blind: dict[frozenset[str], Any] = {}  # ids left out → model fitted without them (``instance_blind``)
        self._design: FitRows | None = None  # the rows of the last whole-set ``embedding`` fit
        self._dirty = False

    def __len__(self) -> int:
        return len(self._type_of)

    def add(self, record_id: str, text: str, task_type: str | None, created_at: float,
            tools: Sequence[str] = ()) -> None:
        """Learn from a stored episode's request ``text`` (``tools``: the tools it called); beyond ``max_per_type``
        the oldest of its type is forgotten."""
        self.remove(record_id)
        if task_type is None:
            return
        examples = self._by_type.setdefault(task_type, {})
        examples[record_id] = (created_at, mask_entities(text))
        self._type_of[record_id] = task_type
        self._tools[record_id] = tuple(tools)
        if self.instance_blind:
            self._instance[record_id] = request_signature(text)
            for item in self._instance[record_id]:
                self._naming.setdefault(item, set()).add(record_id)
        if len(examples) > self.max_per_type:
            oldest = min(examples, key=lambda rid: examples[rid][0])
            del examples[oldest], self._type_of[oldest], self._tools[oldest]
            self._forget_instance(oldest)
        self._dirty = True

    def remove(self, record_id: str) -> None:
        task_type = self._type_of.pop(record_id, None)
        if task_type is not None:
            del self._by_type[task_type][record_id], self._tools[record_id]
            self._forget_instance(record_id)
            if not self._by_type[task_type]:
                del self._by_type[task_type]
            self._dirty = True

    def _forget_instance(self, record_id: str) -> None:
        for item in self._instance.pop(record_id, ()):
            ids = self._naming[item]
            ids.discard(record_id)
            if not ids:
                del self._naming[item]

    def predict(self, query: str) -> tuple[str | None, float]:
        """``(task_type, probability)``, or ``(None, probability of the best)`` when it abstains."""
        label, share, _ = self.predict_with_probabilities(query)
        return label, share

    def predict_with_probabilities(self, query: str) -> tuple[str | None, float, dict[str, float]]:
        """:meth:`predict` and :meth:`probabilities` from one reading of ``query``."""
        probs, left_out = self._read(query)
        if not probs:
            return None, 0.0, {}
        label = self._decide(probs, left_out)
        return (label, probs[label], probs) if label is not None else (None, max(probs.values()), probs)

    def probabilities(self, query: str) -> dict[str, float]:
        """Every stored task type's probability for ``query`` (empty when nothing is stored); with
        ``instance_blind``, learnt without the stored requests about the query's instance, and with ``contrast``,
        joined with the reading of what the query says that they do not."""
        return self._read(query)[0]

    def left_out(self, query: str) -> frozenset[str]:
        """The ids of the stored examples ``query`` is typed without (``instance_blind``; module docstring)."""
        return self._read(query)[1]

    def _read(self, query: str) -> tuple[dict[str, float], frozenset[str]]:
        """The query's type probabilities and the stored examples they were learnt without."""
        same = self._same_instance(query)
        if not same:
            return self._probabilities(query, same), same
        contrast = self._contrast(mask_entities(query), same) if self.contrast else ""
        left_out = self._left_out(query, same, contrast)
        return self._joint(query, contrast, left_out), left_out

    def _contrast(self, masked: str, same: frozenset[str]) -> str:
        """The words by which ``masked`` (the query) differs from the stored requests about its instance that ask
        something else. A stored request asks something else when the words by which it differs from the query
        say what it asks — the model without the instance reads them as it reads the whole request — and the
        query's differing words read as another type; each reading sure enough to answer (``min_share``,
        ``min_votes``). A retry in other words fails this: its differing words are scattered and read as no type,
        or as one its whole request is not."""
        def reading(text: str) -> str | None:
            return self._decide(self._probabilities(text, same, memo=True, masked=True), same)

        sides = []  # (the stored request, its differing words, the query's), where both say something
        for rid in sorted(same):
            other = self._text(rid)
            mine, theirs = contrast_text(masked, [other]), contrast_text(other, [masked])
            if mine and theirs:
                sides.append((other, theirs, mine))
        if sides and self.method == "embedding" and len(self._by_type) > 1:  # the differing words of every side
            self._fitted()  # in one encoder pass, after the training set's (a stored request is embedded with it)
            self._vectorise(sorted({t for _, theirs, mine in sides for t in (theirs, mine)}), memo=True)
        apart = []
        for other, theirs, mine in sides:
            asks = reading(other)
            if asks is not None and reading(theirs) == asks and _differ(reading(mine), asks):
                apart.append(other)
        return contrast_text(masked, apart) if apart else ""

    def _joint(self, query: str, contrast: str, left_out: frozenset[str]) -> dict[str, float]:
        """``query``'s probabilities without ``left_out``, times its ``contrast``'s (renormalised) when there is one:
        a type must fit both the whole request and what sets it apart from the other requests of its instance."""
        probs = self._probabilities(query, left_out)
        if not contrast or len(probs) <= 1:
            return probs
        apart = self._probabilities(contrast, left_out, memo=True, masked=True)
        joint = {t: p * apart.get(t, 0.0) for t, p in probs.items()}
        total = sum(joint.values())
        return {t: p / total for t, p in joint.items()} if total > 0 else probs

    def _probabilities(self, query: str, left_out: frozenset[str], memo: bool = False,
                       masked: bool = False) -> dict[str, float]:
        """Every type's probability for ``query`` by the model without ``left_out`` (``memo``: keep the embedding
        of its masked text, a stored request's; ``masked``: ``query`` is masked already)."""
        types = [t for t, ex in self._by_type.items() if any(rid not in left_out for rid in ex)]
        if len(types) <= 1:
            return {t: 1.0 for t in types}
        model = self._model_without(left_out)
        masked_text = query if masked else mask_entities(query)
        probs = model.predict_proba(self._vectorise([masked_text], memo=memo) if self.method == "embedding"
                                    else [masked_text])[0]
        return {str(t): float(p) for t, p in zip(model.classes_, probs)}

    def query_text(self, query: str) -> str | None:
        """The text whose embedding typing ``query`` reads (its masked text), or None when it reads none (``logistic``,
        or fewer than two types stored). A caller that embeds the query can embed this in the same encoder pass
        and hand it over with :meth:`remember_query`."""
        if self.method != "embedding" or len(self._by_type) <= 1:
            return None
        return mask_entities(query)

    def remember_query(self, text: str, vector: Any) -> None:
        """Use ``vector`` as the embedding of :meth:`query_text`'s ``text`` at the next prediction."""
        import numpy as np

        self._last_query = ([text], np.asarray(vector, dtype=np.float64).reshape(1, -1))

    def _same_instance(self, query: str) -> frozenset[str]:
        """The stored examples about the instance ``query`` names (none unless ``instance_blind``)."""
        if not self.instance_blind or not self._instance:
            return frozenset()
        sig = request_signature(query)
        sharing = set().union(*(self._naming.get(item, ()) for item in sig))  # the others share nothing with it
        return frozenset(rid for rid in sharing if same_instance(sig, self._instance[rid]))

    def _left_out(self, query: str, same: frozenset[str], contrast: str = "") -> frozenset[str]:
        """The stored examples left out when ``query`` is typed: those about its instance (``same``), but for the
        ones that, read without that instance, ask what the query asks (the query read with its ``contrast``)."""
        asked = self._decide(self._joint(query, contrast, same), same)
        if asked is None:
            return same
        return frozenset(rid for rid in same
                         if self._decide(self._probabilities(self._text(rid), same, memo=True), same) != asked)

    def _decide(self, probs: dict[str, float], left_out: frozenset[str]) -> str | None:
        """The most probable type, None when it is not above ``min_share`` or has fewer than ``min_votes``
        examples besides ``left_out``."""
        if not probs:
            return None
        label = max(probs, key=lambda t: probs[t])
        known = sum(rid not in left_out for rid in self._by_type.get(label, ()))
        return label if probs[label] > self.min_share and known >= self.min_votes else None

    def _text(self, record_id: str) -> str:
        """The masked request a stored example was learnt from."""
        return self._by_type[self._type_of[record_id]][record_id][1]

    def intents(self, texts: Sequence[str]) -> list[str | None]:
        """The type the whole training set's model gives each text (None where it abstains), in one pass: a stored
        request is typed knowing itself, even with ``instance_blind`` (typed without its instance, a lure worded
        like the query would be read as the query is). The embeddings of the masked texts are memoised apart from
        the training set's (a stored record is asked again and again)."""
        import numpy as np

        types = [t for t, ex in self._by_type.items() if ex]
        if not texts or len(types) <= 1:
            return [types[0] if types and len(self._by_type[types[0]]) >= self.min_votes else None] * len(texts)
        model = self._fitted()
        masked = [mask_entities(t) for t in texts]
        if self.method == "embedding":
            new = sorted({m for m in masked if m not in self._asked})
            if len(self._asked) + len(new) > 20_000:
                self._asked.clear()
            if new:
                self._asked.update(zip(new, self._embed(new)))
            features: Any = np.stack([np.asarray(self._asked[m], dtype=np.float64) for m in masked])
        else:
            features = masked
        probs = model.predict_proba(features)
        out: list[str | None] = []
        for row in probs:
            best = int(np.argmax(row))
            label = str(model.classes_[best])
            ok = row[best] > self.min_share and len(self._by_type.get(label, ())) >= self.min_votes
            out.append(label if ok else None)
        return out

    def forget_vectors(self) -> None:
        """Drop the memoised embeddings (the embedding model changed); the next prediction refits."""
        self._vectors.clear()
        self._asked.clear()
        self._last_query = ([], None)
        self._design = None
        self._dirty = True

    def description(self, task_type: str) -> str:
        """The words of every tool that the stored examples of ``task_type`` called."""
        return describe_tools(t for rid in self._by_type.get(task_type, ()) for t in self._tools[rid])

    def _vectorise(self, texts: Sequence[str], memo: bool = True) -> Any:
        """Embeddings of ``texts``; training texts are memoised (``memo``), queries are not, but for the last one
        (instance-blind typing reads a query under two models)."""
        import numpy as np

        assert self._embed is not None
        if not memo:
            if self._last_query[0] != list(texts):
                self._last_query = (list(texts), np.asarray(self._embed(list(texts)), dtype=np.float64))
            return self._last_query[1]
        new = sorted({t for t in texts if t not in self._vectors})
        if new:
            self._vectors.update(zip(new, self._embed(new)))
        return np.stack([np.asarray(self._vectors[t], dtype=np.float64) for t in texts])

    def _fitted(self) -> Any:
        """The model of the whole training set, refitted after a change (which drops the instance-blind ones)."""
        if self._dirty or self._model is None:
            self._blind.clear()
            self._model = self._fit()
            self._dirty = False
        return self._model

    def _model_without(self, left_out: frozenset[str]) -> Any:
        """The model learnt without the examples ``left_out`` (the whole set's when none), memoised."""
        model = self._fitted()
        if not left_out:
            return model
        if left_out not in self._blind:
            if len(self._blind) >= 256:
                self._blind.clear()
            settled = self.method == "embedding" and self._design is not None and self._design.settles(model, left_out)
            self._blind[left_out] = model if settled else self._fit(left_out)
        return self._blind[left_out]

    def _fit(self, left_out: frozenset[str] = frozenset()) -> Any:
        """A model of the training set without the examples ``left_out``."""
        import warnings

        with warnings.catch_warnings():
            # a store with a few examples of many types is a classification all the same (sklearn warns otherwise)
            warnings.filterwarnings("ignore", message="The number of unique classes is greater", category=UserWarning)
            return self._fit_model(left_out)

    def _fit_model(self, left_out: frozenset[str]) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        if self.method == "embedding":
            if not left_out or self._design is None:
                self._design = self._embedded_design()
            features, labels, weights = self._design.without(left_out)
            model = LogisticRegression(C=C, max_iter=1000)
            start_from(model, self._model, labels, features.shape[1])
            return model.fit(features, labels, sample_weight=weights)
        texts, labels = [], []
        for task_type, examples in self._by_type.items():
            kept = [text for rid, (_, text) in examples.items() if rid not in left_out]
            texts += kept
            labels += [task_type] * len(kept)
        return make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True),
                             LogisticRegression(C=C, max_iter=1000)).fit(texts, labels)

    def _embedded_design(self) -> FitRows:
        """The whole training set's rows for ``embedding``: each stored example's masked text, then each type's tool
        description (weight ``describe_weight``); the embeddings of texts no longer trained on are forgotten."""
        import numpy as np

        ids: list[str | None] = []
        texts: list[str] = []
        labels: list[str] = []
        for task_type, examples in self._by_type.items():
            ids += list(examples)
            texts += [text for _, text in examples.values()]
            labels += [task_type] * len(examples)
        weights = [1.0] * len(texts)
        if self.describe_weight > 0:
            for task_type in self._by_type:
                described = self.description(task_type)
                if described:
                    ids.append(None)
                    texts.append(described)
                    labels.append(task_type)
                    weights.append(self.describe_weight)
        live = set(texts)
        self._vectors = {t: v for t, v in self._vectors.items() if t in live}
        return FitRows(ids, self._vectorise(texts), np.asarray(labels), np.asarray(weights))
