"""What a search returns: the ranked hits with their score breakdown, and the rendered injection block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..types import Hit, MemoryRecord
from .inject import Injection
from .rerank import COLUMNS

if TYPE_CHECKING:
    import pandas as pd


#: The frame's name of a score term whose name is also a record column (the record's own ``task_type``).
_TERM_COLUMN = {"task_type": "task_type_match"}
FRAME_COLUMNS = ["rank", "id", "tag", "layer", "kind", "paths", "forced", *(_TERM_COLUMN.get(c, c) for c in COLUMNS),
                 "tokens", "task_type", "content"]


@dataclass(frozen=True, slots=True)
class CandidateSet:
    """Everything the rerank and the budget saw for one search (``search(..., explain=True)``): what the sweep's
    evaluator caches per query to score other weights without searching again.

    ``raw`` holds each feature's raw column by name (:func:`~hindsight_lab.retrieve.features.feature_matrix`
    turns them into the rerank's features under any config), ``similarity`` is the candidates' pairwise cosine,
    ``forced`` marks triggered rules, ``line_tokens`` and ``sections`` (codes of
    :data:`~hindsight_lab.retrieve.inject.SECTIONS`) are what the budget charges; ``task_type`` and
    ``task_type_share`` are the query's (given or inferred; None when the classifier abstained).
    """

    records: list[MemoryRecord]
    paths: list[tuple[str, ...]]
    raw: Mapping[str, np.ndarray]
    similarity: np.ndarray
    forced: np.ndarray
    line_tokens: np.ndarray
    sections: np.ndarray
    task_type: str | None = None
    task_type_share: float = 0.0

    def __len__(self) -> int:
        return len(self.records)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Ranked hits (best first), the query's task_type and where it came from, and the injection block.

    ``task_type_source`` is ``"given"``, ``"inferred"`` (by the classifier, with ``task_type_share``), or
    ``"abstained"``/``"off"`` (then ``task_type`` is None and the task-type term is 0 for every record).
    """

    query: str
    task_type: str | None
    task_type_source: str
    task_type_share: float
    hits: list[Hit]
    injection: Injection
    working: list[MemoryRecord] = field(default_factory=list)
    n_candidates: int = 0
    candidates: CandidateSet | None = None
    """Only with ``search(..., explain=True)``."""

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]

    @property
    def tokens(self) -> int:
        return self.injection.tokens

    def to_frame(self) -> "pd.DataFrame":
        """One row per hit (columns :data:`FRAME_COLUMNS`): id, layer, kind, paths, each score term, total."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for rank, h in enumerate(self.hits, 1):
            terms = {_TERM_COLUMN.get(name, name): value for name, value in h.scores.items()}
            rows.append({"rank": rank, "id": h.id, "tag": h.record.tag, "layer": h.record.layer.value,
                         "kind": h.record.kind.value, "paths": "+".join(h.paths), "forced": h.forced,
                         **terms, "tokens": h.tokens, "task_type": h.record.task_type,
                         "content": h.record.content})
        return pd.DataFrame(rows, columns=FRAME_COLUMNS)

    def _repr_html_(self) -> str:  # Jupyter
        frame = self.to_frame()
        head = (f"<b>query</b>: {self.query!r} &nbsp; <b>task_type</b>: {self.task_type} "
                f"({self.task_type_source}) &nbsp; <b>tokens</b>: {self.tokens}")
        return head + frame.drop(columns=["content"], errors="ignore").to_html(index=False, float_format="%.3f") \
            + f"<pre>{self.injection.text}</pre>"
