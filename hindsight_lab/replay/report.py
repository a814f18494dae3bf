"""Judging a replay and reporting it: one set of judgements for every system, metrics with bootstrap intervals and
paired randomization tests against ``hindsight``, a per-episode DataFrame, plots, one HTML page of it all, and
``save(dir)``."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..errors import NothingToDo
from ..metrics import Judgements, aggregate, bootstrap_ci, evaluate, hit_rate, paired_randomization_test
from ..metrics.modes import MODES
from .engine import ReplayRun
from .records import rules_injected

if TYPE_CHECKING:
    import pandas as pd

METRICS: tuple[str, ...] = ("ndcg@3", "ndcg@5", "ndcg@10", "hit@3", "hit@5", "hit@10", "recall@3", "recall@5",
                            "recall@10", "precision@5", "precision_filled@5", "mrr", "fill@10", "r_precision")
HEADLINE: tuple[str, ...] = ("ndcg@5", "hit@3", "hit@5", "recall@10")
PLOTS: tuple[str, ...] = ("hits_over_time", "memory", "tokens", "success")
EMPTY_QUERY_SET = ("the replay has an empty query set: no episode has an earlier run of its task to recall (replay "
                   "a file with repeated tasks, or several agents' files of the same tasks together)")
#: The baselines hindsight is compared with in each judging mode: in ``outcome`` the success-only ones too, since a
#: careful user would keep only what worked there (the better of all four is the one to beat).
RIVALS: dict[str, tuple[str, ...]] = {"repeat": ("dense", "bm25"), "transfer": ("dense", "bm25"),
                                      "outcome": ("dense", "bm25", "dense+ok", "bm25+ok")}
#: What each judging mode asks, as the tables' headings say it.
MODE_QUESTION: dict[str, str] = {"repeat": "queries whose task ran before",
                                 "transfer": "first runs of a task, judged by earlier runs of other tasks of its type",
                                 "outcome": "queries whose task succeeded before, judged by what worked"}
#: The files :meth:`ReplayReport.save` writes (``report.html`` holds the others' tables and plots in one page).
REPORT_FILES: tuple[str, ...] = ("report.html", "metrics.json", "episodes.csv", *(f"{p}.png" for p in PLOTS))


@dataclass
class ReplayReport:
    """Metrics (``metrics.json`` shape), the per-episode table, and the raw run."""

    metrics: dict[str, Any]
    per_episode: "pd.DataFrame"
    run: ReplayRun
    judgements: Judgements = field(repr=False)
    mode_episodes: dict[str, "pd.DataFrame"] = field(default_factory=dict, repr=False)
    """The per-episode table of every other judging mode with queries (``transfer``, ``outcome``)."""

    @property
    def systems(self) -> list[str]:
        return list(self.metrics["systems"])

    def source_table(self, metrics: Sequence[str] = HEADLINE) -> "pd.DataFrame":
        """(source, system) × metrics, plus ``tokens_median`` and the query count: the per-source breakdown of a
        replay of several files (empty when the queries come from one source)."""
        import pandas as pd

        rows = {(src, name): cell for src, systems in self.metrics.get("by_source", {}).items()
                for name, cell in systems.items()}
        frame = pd.DataFrame.from_dict(rows, orient="index")
        if len(frame):
            frame.index.names = ["source", "system"]
            frame = frame[[*[m for m in metrics if m in frame], "tokens_median", "queries"]]
        return frame

    def modes(self) -> list[str]:
        """The judging modes with queries in this replay, ``repeat`` first."""
        return ["repeat"] + [m for m, cell in self.metrics.get("modes", {}).items() if cell.get("queries")]

    def table(self, metrics: Sequence[str] = HEADLINE, mode: str = "repeat") -> "pd.DataFrame":
        """Systems × metrics of a judging mode, each cell ``mean [low, high]`` where an interval was computed."""
        import pandas as pd

        part = self.metrics if mode == "repeat" else self.metrics.get("modes", {}).get(mode, {})
        if "systems" not in part:
            raise ValueError(f"judging mode {mode!r} has no queries in this replay (modes with queries: "
                             f"{', '.join(self.modes())})")
        rows = {}
        for name, values in part["systems"].items():
            row = {}
            for m in metrics:
                ci = part["intervals"].get(name, {}).get(m)
                row[m] = f"{values[m]:.3f} [{ci[1]:.3f}, {ci[2]:.3f}]" if ci else f"{values[m]:.3f}"
            for extra in ("r_precision", "hit_rate", "oracle_hit@10", "tokens_median", "tokens_p95"):
                if extra in values:
                    row[extra] = round(values[extra], 3) if isinstance(values[extra], float) else values[extra]
            p = part["tests"].get(name, {}).get(metrics[0])
            if p is not None:
                row[f"p({metrics[0]} vs hindsight)"] = round(p, 4)
            rows[name] = row
        return pd.DataFrame.from_dict(rows, orient="index")

    def rivals(self, mode: str) -> list[str]:
        """The baselines hindsight is compared with in ``mode`` (:data:`RIVALS`) that this replay ran."""
        return [s for s in RIVALS[mode] if s in self.systems]

    def group_table(self, metric: str = "ndcg@5", mode: str = "repeat", reference: str = "hindsight",
                    baselines: Sequence[str] = ("dense", "bm25")) -> "pd.DataFrame":
        """How general a margin is: groups (tasks, conversations) × systems, each cell the group's mean ``metric``
        under judging ``mode``, then ``best_baseline`` (the best of ``baselines`` in that group) and ``margin``
        (``reference`` minus it).

        A margin over the pooled best baseline can come from the baselines taking turns: one wins some groups,
        the other the rest, and each pooled mean sits below the per-group best. ``margin`` compares with the
        better baseline of each group, so its minimum and spread (``.margin.describe()``) show what a new group
        can expect. Groups are weighted alike here; the pooled tables weigh queries alike.
        """
        frame = self.per_episode if mode == "repeat" else self.mode_episodes.get(mode)
        if frame is None:
            raise ValueError(f"judging mode {mode!r} has no queries in this replay (modes with queries: "
                             f"{', '.join(self.modes())})")
        if metric not in frame:
            raise ValueError(f"no metric {metric!r} in the per-episode table (have: "
                             f"{', '.join(m for m in METRICS if m in frame)})")
        missing = [s for s in (reference, *baselines) if s not in set(frame["system"])]
        if missing:
            raise ValueError(f"system(s) {', '.join(missing)} not in this replay (replayed: "
                             f"{', '.join(self.systems)})")
        table = frame.pivot_table(index="group", columns="system", values=metric, aggfunc="mean")
        table = table[[s for s in self.systems if s in table]]
        best = table[list(baselines)]
        table["best_baseline"] = best.idxmax(axis=1)
        table["margin"] = table[reference] - best.max(axis=1)
        table.columns.name = None
        return table

    # ------------------------------------------------------------------ plots
    def plot_hits_over_time(self, k: int = 5, window: int = 20, ax: Any = None) -> Any:
        import matplotlib.pyplot as plt

        ax = ax or plt.subplots(figsize=(8, 4))[1]
        col = f"hit@{k}"
        for name, frame in self.per_episode.groupby("system", sort=False):
            series = frame.sort_values("order")[col].rolling(window, min_periods=1).mean()
            ax.plot(frame.sort_values("order")["order"], series, label=name)
        ax.set(xlabel="query (replay order)", ylabel=f"{col}, rolling mean of {window}", title=f"{col} over time")
        ax.legend()
        return ax

    def plot_memory(self, ax: Any = None) -> Any:
        import matplotlib.pyplot as plt
        import pandas as pd

        ax = ax or plt.subplots(figsize=(8, 4))[1]
        mem = pd.DataFrame(self.run.memory)
        x = "order" if "order" in mem else None
        for name, frame in mem.groupby("system", sort=False):
            for layer in ("L2", "L3"):
                if layer in frame and frame[layer].any():
                    ax.plot(frame[x] if x else range(len(frame)), frame[layer], label=f"{name} {layer}")
        ax.set(xlabel="episode" if x else "conversation", ylabel="records", title="memory per layer over time")
        ax.legend()
        return ax

    def plot_tokens(self, ax: Any = None) -> Any:
        import matplotlib.pyplot as plt

        ax = ax or plt.subplots(figsize=(8, 4))[1]
        names = [n for n in self.systems if n != "none"]
        data = [self.per_episode.loc[self.per_episode["system"] == n, "tokens"] for n in names]
        ax.boxplot(data, tick_labels=names)
        ax.set(ylabel="injected tokens per query", title="injected-token distribution")
        return ax

    def plot_success(self, window: int = 20, ax: Any = None) -> Any:
        import matplotlib.pyplot as plt
        import pandas as pd

        ax = ax or plt.subplots(figsize=(8, 4))[1]
        out = pd.DataFrame(self.run.outcomes)
        if len(out):
            ax.plot(out["order"], (out["outcome"] == "success").rolling(window, min_periods=1).mean())
        ax.set(xlabel="episode", ylabel=f"success, rolling mean of {window}", title="recorded success trend")
        return ax

    def pictures(self) -> dict[str, bytes]:
        """The four plots as PNG bytes, by name (:data:`PLOTS`)."""
        from matplotlib.figure import Figure  # no pyplot: a notebook's backend and figures stay as they are

        out = {}
        for name in PLOTS:
            fig = Figure(figsize=(8, 4))
            getattr(self, f"plot_{name}")(ax=fig.subplots())
            fig.tight_layout()
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=110)
            out[name] = buffer.getvalue()
        return out

    def html(self, pictures: Mapping[str, bytes] | None = None) -> str:
        """The report as one HTML page that opens offline (``report.html``): the dataset, every judging mode's
        table with its intervals, the margins group by group, the per-source table, reflection and promotions, the
        lift, the rule ceiling and the power where the replay has them, timing, and the plots embedded
        (``pictures``, default :meth:`pictures`)."""
        from ..report.html import replay_page

        groups = {mode: (rivals, self.group_table("ndcg@5", mode, baselines=rivals)) for mode in self.modes()
                  if "hindsight" in self.systems and (rivals := self.rivals(mode))}
        return replay_page(self.metrics, tables={mode: self.table(mode=mode) for mode in self.modes()},
                           questions=MODE_QUESTION, groups=groups, sources=self.source_table(),
                           pictures=self.pictures() if pictures is None else pictures)

    def save(self, folder: str | Path) -> Path:
        """Write ``metrics.json``, ``episodes.csv`` (the ``repeat`` queries; ``episodes_<mode>.csv`` for every other
        judging mode with queries), the four plots as PNG files and ``report.html`` (:meth:`html`), which holds
        the tables and the plots in one file."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "metrics.json").write_text(json.dumps(self.metrics, indent=2, default=str), encoding="utf-8")
        self.per_episode.to_csv(folder / "episodes.csv", index=False)
        for mode, frame in self.mode_episodes.items():
            frame.to_csv(folder / f"episodes_{mode}.csv", index=False)
        pictures = self.pictures()
        for name, png in pictures.items():
            (folder / f"{name}.png").write_bytes(png)
        (folder / "report.html").write_text(self.html(pictures), encoding="utf-8")
        return folder


def judge(run: ReplayRun, judgements: Judgements | Mapping[str, Judgements], dataset: Mapping[str, Any], *,
          metrics: Sequence[str] = METRICS, reference: str = "hindsight", seed: int = 0,
          n_resamples: int = 2000, sources: Mapping[str, str] | None = None) -> ReplayReport:
    """Score every system's injected lists with the same judgements; intervals resample whole groups.

    ``judgements`` is one :class:`~hindsight_lab.metrics.Judgements` (the ``repeat`` mode), or one per judging mode
    (:mod:`hindsight_lab.metrics.modes`), ``repeat`` among them. The ``repeat`` figures are the top level of
    ``metrics`` (``systems``, ``intervals``, ``tests``), as always; every other mode's go to
    ``metrics["modes"][mode]``, or ``{"queries": 0, "status": "n/a"}`` when it has no query on this dataset (or
    none was judged: LoCoMo's explicit labels are ``repeat`` only).

    ``sources`` (episode id → the file it came from) adds a ``source`` column to the per-episode table and, when
    the episodes come from more than one file, ``metrics["by_source"]``: per file and system, the headline
    metrics and ``tokens_median`` over that file's queries, with the number of queries.
    """
    import pandas as pd

    by_mode = {"repeat": judgements} if isinstance(judgements, Judgements) else dict(judgements)
    repeat = by_mode.pop("repeat")
    if not repeat.query_ids:
        raise NothingToDo(EMPTY_QUERY_SET)
    args = dict(metrics=metrics, reference=reference, seed=seed, n_resamples=n_resamples)
    scored = _score(run, repeat, sources=sources, **args)
    metrics_json = {"dataset": dict(dataset), "systems": scored.systems, "intervals": scored.intervals,
                    "tests": scored.tests, "timing": run.timing, "reference": reference,
                    "judging": {"queries": len(scored.qset), "groups": len(set(scored.groups.values())),
                                "seed": seed, "n_resamples": n_resamples}}
    by_source = _by_source(scored.per_query, scored.qset, sources or {}, scored.rows)
    if by_source:
        metrics_json["by_source"] = by_source
    modes: dict[str, Any] = {}
    frames = {}
    for mode in MODES[1:]:
        judged = by_mode.get(mode)
        if judged is None or not judged.query_ids:
            modes[mode] = {"queries": 0, "status": "n/a"}
            continue
        other = _score(run, judged, sources=sources, **args)
        modes[mode] = {"queries": len(other.qset), "groups": len(set(other.groups.values())),
                       "systems": other.systems, "intervals": other.intervals, "tests": other.tests}
        frames[mode] = pd.DataFrame(other.rows)
    metrics_json["modes"] = modes
    if run.lift:
        metrics_json["lift"] = run.lift
    if run.rule_ceiling:
        metrics_json["rule_ceiling"] = run.rule_ceiling
    if run.lift_power:
        metrics_json["lift_power"] = run.lift_power
    return ReplayReport(metrics_json, pd.DataFrame(scored.rows), run, repeat, mode_episodes=frames)


@dataclass
class _Scored:
    """One judging mode's figures: per system, per query, the rows of the per-episode table."""

    qset: list[str]
    systems: dict[str, Any]
    per_query: dict[str, dict[str, dict[str, float]]]
    groups: dict[str, str]
    rows: list[dict[str, Any]]
    intervals: dict[str, Any]
    tests: dict[str, dict[str, float]]


def _score(run: ReplayRun, judgements: Judgements, *, metrics: Sequence[str], reference: str, seed: int,
           n_resamples: int, sources: Mapping[str, str] | None) -> _Scored:
    qset = list(judgements.query_ids)
    n_rel = {q: judgements.n_relevant(q) for q in qset}
    kmax = max(int(m.split("@")[1]) for m in metrics if "@" in m)
    ideals = {q: judgements.ideal(q, kmax) for q in qset}
    systems: dict[str, Any] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    groups: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    by_system: dict[str, list[Any]] = {}
    for rec in run.queries:
        by_system.setdefault(rec.system, []).append(rec)
    for name in run.systems:
        recs = [r for r in by_system.get(name, []) if r.query_id in n_rel]
        per_query[name], systems[name], tokens = _score_system(run, name, recs, judgements, qset, n_rel, ideals,
                                                               metrics)
        for r in recs:
            groups[r.query_id] = r.group or r.query_id
            row = {"system": name, "query_id": r.query_id, "order": r.order, "at": r.at, "group": r.group,
                   "injected": len(r.injected), "tokens": tokens[r.query_id], "latency_ms": r.latency_s * 1000,
                   "kinds": "+".join(i.kind for i in r.injected)}
            if sources:
                row["source"] = sources.get(r.query_id, "")
            row.update({m: per_query[name][m][r.query_id] for m in per_query[name]})
            rows.append(row)
    intervals = {name: {m: list(bootstrap_ci(per_query[name][m], groups, n_resamples=n_resamples, seed=seed))
                        for m in HEADLINE if m in per_query[name]} for name in per_query}
    tests: dict[str, dict[str, float]] = {}
    if reference in per_query:
        for name in per_query:
            if name != reference:
                tests[name] = {m: paired_randomization_test(per_query[name][m], per_query[reference][m], groups,
                                                            seed=seed)
                               for m in HEADLINE if m in per_query[name]}
    return _Scored(qset, systems, per_query, groups, rows, intervals, tests)


def _score_system(run: ReplayRun, name: str, recs: Sequence[Any], judgements: Judgements, qset: Sequence[str],
                  n_rel: Mapping[str, int], ideals: Mapping[str, list[int]], metrics: Sequence[str]
                  ) -> tuple[dict[str, dict[str, float]], dict[str, Any], dict[str, int]]:
    """One system's per-query values, its summary and its injected tokens per query."""
    grades, credits, store_rel, injected_grades, tokens, oracle = {}, {}, {}, {}, {}, {}
    for r in recs:
        judged = judgements.judge_list(r.query_id, r.injected)
        grades[r.query_id], credits[r.query_id] = list(judged.grades), list(judged.relevant_credits)
        injected_grades[r.query_id] = list(judged.grades)
        stored = r.stored or []
        store_rel[r.query_id] = judgements.n_store_relevant(r.query_id, stored)
        oracle[r.query_id] = float(store_rel[r.query_id] > 0)
        tokens[r.query_id] = sum(i.tokens for i in r.injected)
    values = evaluate(grades, ideals, n_rel, metrics, credits=credits, n_store_relevant=store_rel)
    values["oracle_hit@10"] = {q: oracle.get(q, 0.0) for q in qset}
    summary = aggregate(values)
    rate = hit_rate(injected_grades)
    tok = np.array([tokens.get(q, 0) for q in qset], dtype=float)
    summary.update(hit_rate=rate.rate, empty_queries=rate.empty_queries, queries=len(qset),
                   tokens_median=float(np.median(tok)), tokens_p95=float(np.percentile(tok, 95)),
                   latency_p50_ms=float(np.median([r.latency_s for r in recs]) * 1000) if recs else 0.0)
    if name in run.reflection:
        refl = run.reflection[name]
        summary.update(trigger_rate=refl["trigger_rate"], reflections=refl["reflections"],
                       promotions=refl["promotions"], trigger_reasons=refl["decisions"])
        summary["reuse_rate"] = _reuse_rate(run, name)
    bad = [m for m, v in summary.items() if isinstance(v, float) and math.isnan(v)]
    if bad:
        raise ValueError(f"system {name!r}: NaN metrics {bad}")
    return values, summary, tokens


def _by_source(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], qset: Sequence[str],
               sources: Mapping[str, str], rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{source: {system: {metric: mean, "tokens_median": …, "queries": n}}}`` for every source file of the
    replayed episodes (``sources`` maps every episode, queries or not), when there are several; a source none of
    whose episodes is a query has ``{"queries": 0}`` per system. Empty for one source."""
    by: dict[str, list[str]] = {src: [] for src in dict.fromkeys(sources.values())}
    if len(by) < 2:
        return {}
    for q in qset:
        by.setdefault(sources.get(q, ""), []).append(q)
    tokens = {(r["system"], r["query_id"]): r["tokens"] for r in rows}
    out: dict[str, dict[str, Any]] = {}
    for source, qs in by.items():
        out[source] = {}
        for name, values in per_query.items():
            cell: dict[str, Any] = {}
            if qs:
                cell = {m: float(np.mean([values[m][q] for q in qs])) for m in HEADLINE if m in values}
                cell["tokens_median"] = float(np.median([tokens.get((name, q), 0) for q in qs]))
            cell["queries"] = len(qs)
            out[source][name] = cell
    return out


def _reuse_rate(run: ReplayRun, name: str) -> float:
    """Share of the L3 rules in the final store that were injected at least once.

    A rule is known by the episode that first proposed it (its first source episode, which merges and promotion
    keep), not by its store id: store ids are random, so a resumed replay, whose stores were re-derived, gives
    the same rule another id than the killed run did.
    """
    injected = set().union(*rules_injected(run, name).values())
    last = [row for row in run.memory if row["system"] == name]
    rules = last[-1].get("rules", 0) if last else 0
    return min(1.0, len(injected) / rules) if rules else 0.0
