"""Why a replayed query recalled what it did: every candidate its search saw, each rerank term, the total, what
the config injected, and the grade of each candidate under every judging mode the query belongs to.

A replay reports figures over all queries; tuning needs the reasons behind one of them. :func:`explain_queries`
replays an episode dataset through one ``hindsight`` system (the sweep's :func:`~.cache.capture`,
so the candidates are exactly those a replay on the same config sees) and, for each asked query, returns one table
row per candidate. Ranking, budget and grades come from the code the sweep's evaluator and the judging use, so the
``rank`` column is what a replay with the config injects.

Examples:
    >>> tables = explain_queries("tau-bench-airline-dev", ["tau-airline-t5-r0"])  # doctest: +SKIP
    >>> tables[0].frame[["rank", "kind", "semantic", "lexical", "score", "transfer"]]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..config import LabConfig
from ..errors import ConfigError
from ..retrieve.rerank import TERMS

if TYPE_CHECKING:
    import pandas as pd

    from ..retrieve.params import ParamBatch
    from .cache import CachedQuery, ReplayCache
    from .evaluate import FastEvaluator

#: The frame's name of each rerank term (``task_type`` is also the record's own column).
TERM_COLUMNS = tuple("task_type_match" if t == "task_type" else t for t in TERMS)
#: Columns of :attr:`QueryExplanation.frame`, the judging modes' grades after them.
COLUMNS = ["rank", "id", "kind", "paths", "forced", *TERM_COLUMNS, "score", "tokens", "task_type", "source", "text"]


@dataclass(frozen=True)
class QueryExplanation:
    """One query: its text, its task type as the search read it, and one row per candidate.

    ``frame`` columns: ``rank`` (1-based place in what the config injects, empty when not injected), the record's
    ``id``, ``kind`` and the recall ``paths`` that found it, ``forced`` (a triggered rule), each rerank term's
    feature in [0, 1] (``task_type_match`` is the ``task_type`` term), ``score`` (the weighted sum before the
    redundancy penalty), the line's ``tokens``, the record's stored ``task_type``, its first ``source`` episode,
    the start of its ``text``, then one grade column per judging mode of ``modes`` (0: not relevant, 1, 2).
    Rows are the injected ones in rank order, then the others by score.
    """

    query_id: str
    query: str
    task_type: str | None
    task_type_share: float
    modes: tuple[str, ...]
    frame: "pd.DataFrame"

    def __str__(self) -> str:
        import pandas as pd

        typed = f"{self.task_type} (share {self.task_type_share:.2f})" if self.task_type else "none (abstained)"
        head = (f"{self.query_id}: {self.query!r}\n  task type: {typed}; judged as: {', '.join(self.modes)}; "
                f"{len(self.frame)} candidates")
        with pd.option_context("display.width", 220, "display.max_columns", 30, "display.max_colwidth", 60):
            return head + "\n" + self.frame.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="")


def explain_queries(path: str | Path | Sequence[str | Path], query_ids: Sequence[str], *,
                    config: LabConfig | None = None, format: str = "auto", limit: int | None = None,
                    top_k: int = 10, embedder: Any = None, text_chars: int = 70) -> list[QueryExplanation]:
    """Replay ``path`` on ``config`` (default :class:`LabConfig`) and explain the queries ``query_ids`` (episode ids).

    Args:
        path: an episode dataset (not LoCoMo's conversations): a file, a registered name, or several as one history.
        query_ids: episode ids of queries of at least one judging mode (an episode that has an earlier run of its
            task or of its ground-truth task type).
        top_k: as the replay's ``--top-k``.
        text_chars: characters of each record's text shown.

    Raises:
        ConfigError: an id is no episode of the dataset, or no judging mode asks it as a query.
    """
    from ..datasets.registry import resolve
    from ..embed import embedder_for
    from ..retrieve.params import ParamBatch, RerankParams
    from .cache import capture, load_episode_data
    from .evaluate import FastEvaluator

    cfg = config or LabConfig()
    data = load_episode_data(resolve(path), format=format, limit=limit)
    _check_ids(query_ids, data)
    cache = capture(data, cfg, embedder=embedder or embedder_for(cfg.embedder), top_k=top_k)
    by_id = {q.query_id: q for q in cache.queries}
    texts = {ep.episode_id: ep.instruction for ep in data.episodes}
    ranker = FastEvaluator(cache)
    batch = ParamBatch.of(RerankParams.from_config(cache.config.retrieval))
    return [_explain(by_id[qid], texts[qid], cache, ranker, batch, text_chars) for qid in query_ids]


def _check_ids(query_ids: Sequence[str], data: Any) -> None:
    known = {ep.episode_id for ep in data.episodes}
    asked = {q for name in ("repeat", *data.modes) for q in data.mode(name).query_ids}
    for qid in query_ids:
        if qid not in known:
            sample = ", ".join(sorted(asked)[:3])
            raise ConfigError(f"explain: {qid!r} is no episode of {data.info.get('name', 'the dataset')} "
                              f"(queries look like: {sample})")
        if qid not in asked:
            raise ConfigError(f"explain: {qid!r} is a query of no judging mode: no earlier run of its task, and "
                              "none of its task type")


def _explain(query: "CachedQuery", text: str, cache: "ReplayCache", ranker: "FastEvaluator", batch: "ParamBatch",
             text_chars: int) -> QueryExplanation:
    import pandas as pd

    from ..retrieve.features import feature_matrix
    from ..retrieve.rerank import base_scores

    cs = query.candidates
    feats = feature_matrix(cs.raw, batch).reshape(len(cs), len(TERMS))
    score = base_scores(feats, batch.weight_matrix(TERMS))[0]
    injected = [int(i) for i in ranker.inject(query, batch)[0] if i >= 0] if len(cs) else []
    rank = {i: r for r, i in enumerate(injected, 1)}
    order = injected + sorted(set(range(len(cs))) - set(rank), key=lambda i: (-score[i], i))
    modes = tuple(query.judged)
    rows = []
    for i in order:
        rec = cs.records[i]
        row = {"rank": rank.get(i), "id": rec.id, "kind": rec.kind.value, "paths": "+".join(cs.paths[i]),
               "forced": bool(cs.forced[i]), **dict(zip(TERM_COLUMNS, feats[i].tolist())),
               "score": float(score[i]), "tokens": int(cs.line_tokens[i]), "task_type": rec.task_type,
               "source": rec.source_episode_ids[0] if rec.source_episode_ids else None,
               "text": " ".join((rec.key or rec.content).split())[:text_chars]}
        for mode in modes:
            row[mode] = cache.mode_judgements(mode).judge_list(query.query_id, [query.items[i]]).grades[0]
        rows.append(row)
    frame = pd.DataFrame(rows, columns=COLUMNS + list(modes))
    frame["rank"] = frame["rank"].astype("Int64")
    return QueryExplanation(query.query_id, text, cs.task_type, float(cs.task_type_share), modes, frame)
