"""The rows the ``embedding`` task-type classifier is fitted on, and what a fit without a few of them needs.

Instance-blind typing (:mod:`.classify`) reads a query by a model fitted without the stored requests about the
query's instance. :class:`FitRows` holds the whole training set's rows — embeddings, labels, sample weights —
stacked once per change of the set, so such a model drops a few rows instead of stacking them all again; it tells
when dropping them would not move the whole set's solution at all (:meth:`FitRows.settles`), and
:func:`start_from` starts a fit from a neighbouring solution.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

C = 10.0
"""The logistic regression's inverse regularisation strength (weak: the types are few and far apart)."""


@dataclass(frozen=True)
class FitRows:
    """The rows an ``embedding`` model is fitted on: ``ids`` (a stored example's, or None for a type's tool
    description), their features, labels and sample weights. A model without a few examples fits on the same rows
    without theirs, so their embeddings are stacked once per change of the training set, not once per fit."""

    ids: list[str | None]
    features: Any
    labels: Any
    weights: Any

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {rid: i for i, rid in enumerate(self.ids) if rid is not None}

    @cached_property
    def _examples(self) -> dict[str, int]:
        """Type → number of its example rows."""
        counts: dict[str, int] = {}
        for rid, label in zip(self.ids, self.labels):
            if rid is not None:
                counts[str(label)] = counts.get(str(label), 0) + 1
        return counts

    @cached_property
    def _described(self) -> dict[str, int]:
        """Type → the row of its tool description."""
        return {str(label): i for i, (rid, label) in enumerate(zip(self.ids, self.labels)) if rid is None}

    def _dropped(self, left_out: frozenset[str]) -> tuple[list[int], dict[str, int]]:
        """The example rows of ``left_out``, and how many of each type's examples they are."""
        drop = [self._rows[rid] for rid in left_out if rid in self._rows]
        gone: dict[str, int] = {}
        for i in drop:
            gone[str(self.labels[i])] = gone.get(str(self.labels[i]), 0) + 1
        return drop, gone

    def settles(self, model: Any, left_out: frozenset[str]) -> bool:
        """Whether ``model``, fitted on every row, already solves the fit without ``left_out`` to the solver's own
        tolerance: the gradient of that fit's objective at ``model``'s solution is within ``model.tol``, where
        L-BFGS stops before its first step (a fit started from it returns it unchanged). A few rows out of
        thousands seldom move it; out of a few dozen they do. sklearn's objective: the weighted mean of the log
        losses plus ``|W|² / (2 C S)``, ``S`` the rows' total weight."""
        import numpy as np

        drop, gone = self._dropped(left_out)
        if not drop or any(n >= self._examples[label] for label, n in gone.items()):
            return False  # nothing left out, or a type left out whole: another set of classes
        weighted, grad_w, grad_b = self._sums(model)
        total = float(self.weights.sum() - self.weights[drop].sum())
        grad_w = (grad_w - weighted[drop].T @ self.features[drop] + model.coef_ / C) / total
        grad_b = (grad_b - weighted[drop].sum(axis=0)) / total
        return max(float(np.abs(grad_w).max()), float(np.abs(grad_b).max())) <= model.tol

    def _sums(self, model: Any) -> tuple[Any, Any, Any]:
        """Each row's predicted minus true probabilities times its weight (one column for two classes, as sklearn's
        binary fit parametrises them), and their sums over every row, times the features for the coefficients;
        computed once per model."""
        import numpy as np

        cached = self.__dict__.get("_sums_of")
        if cached is not None and cached[0] is model:
            return cached[1]
        truth = (self.labels[:, None] == np.asarray(model.classes_)[None, :]).astype(np.float64)
        residual = model.predict_proba(self.features) - truth
        weighted = (residual[:, 1:] if len(model.classes_) == 2 else residual) * self.weights[:, None]
        sums = (weighted, weighted.T @ self.features, weighted.sum(axis=0))
        object.__setattr__(self, "_sums_of", (model, sums))
        return sums

    def without(self, left_out: frozenset[str]) -> tuple[Any, Any, Any]:
        """Features, labels and weights without the rows of ``left_out``, and without the description of a type
        none of whose examples is kept (the rows otherwise in the same order as the whole set's)."""
        if not left_out:
            return self.features, self.labels, self.weights
        import numpy as np

        drop, gone = self._dropped(left_out)
        drop += [self._described[label] for label, n in gone.items()
                 if n == self._examples[label] and label in self._described]
        keep = np.ones(len(self.ids), dtype=bool)
        keep[drop] = False
        return self.features[keep], self.labels[keep], self.weights[keep]


def start_from(model: Any, start: Any, labels: Sequence[str], n_features: int) -> None:
    """Start ``model``'s solver from ``start``'s solution when both know the same types in the same embedding space:
    the model of the whole training set, for one without a few examples (instance-blind typing) or with a few more
    (a refit after a write). The loss is convex, so the optimum is the same; from a neighbouring one the solver needs
    a few iterations instead of hundreds."""
    if (start is None or list(getattr(start, "classes_", ())) != sorted(set(labels))
            or getattr(start, "n_features_in_", None) != n_features):
        return
    model.set_params(warm_start=True)
    model.coef_, model.intercept_ = start.coef_.copy(), start.intercept_.copy()
