"""Judging a replay and reporting it: the replay's records judged by :func:`~hindsight_lab.evaluation.compare` (one
set of judgements for every system, per judging mode), the typed :class:`~hindsight_lab.evaluation.ReplayMetrics`
with the replay's own facts, the per-episode tables, plots, one HTML page of it all, and ``save(dir)``."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import NothingToDo
from ..evaluation import HEADLINE, METRICS, ReplayMetrics, compare, episodes_file
from ..evaluation.report import MODE_QUESTION, RIVALS
from ..metrics import Judgements
from .engine import ReplayRun
from .records import rules_injected

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation import Comparison, ModeReport

__all__ = ["EMPTY_QUERY_SET", "HEADLINE", "METRICS", "MODE_QUESTION", "PLOTS", "REPORT_FILES", "RIVALS",
           "ReplayReport", "judge"]

PLOTS: tuple[str, ...] = ("hits_over_time", "memory", "tokens", "success")
EMPTY_QUERY_SET = ("the replay has an empty query set: no episode has an earlier run of its task to recall (replay "
                   "a file with repeated tasks, or several agents' files of the same tasks together)")
#: The files :meth:`ReplayReport.save` writes (``report.html`` holds the others' tables and plots in one page).
REPORT_FILES: tuple[str, ...] = ("report.html", "metrics.json", "episodes.csv", *(f"{p}.png" for p in PLOTS))


@dataclass
class ReplayReport:
    """A judged replay: the typed :class:`~hindsight_lab.evaluation.ReplayMetrics` (``result``; ``metrics`` is its
    ``metrics.json`` mapping), the per-episode tables, and the raw run."""

    result: ReplayMetrics
    run: ReplayRun
    judgements: Judgements = field(repr=False)

    @property
    def comparison(self) -> "Comparison":
        return self.result.comparison

    @property
    def metrics(self) -> dict[str, Any]:
        """The ``metrics.json`` mapping (:data:`~hindsight_lab.evaluation.SCHEMA_VERSION`)."""
        return self.result.to_json()

    @property
    def systems(self) -> list[str]:
        return list(self.run.systems) if self.run is not None else self.result.systems

    def mode(self, name: str) -> "ModeReport":
        """The typed report of judging mode ``name`` (a clear error when it has no queries)."""
        return self.result.mode(name)

    @cached_property
    def per_episode(self) -> "pd.DataFrame":
        """The ``repeat`` mode's per-episode table: one row per system and query."""
        return self.result.comparison.modes["repeat"].frame()

    @cached_property
    def mode_episodes(self) -> dict[str, "pd.DataFrame"]:
        """The per-episode table of every other judging mode with queries (``transfer``, ``outcome``)."""
        return {m: self.result.comparison.modes[m].frame() for m in self.modes() if m != "repeat"}

    def source_table(self, metrics: Sequence[str] = HEADLINE, mode: str = "repeat") -> "pd.DataFrame":
        """(source, system) × metrics, plus ``tokens_median`` and the query count: the per-source breakdown of a
        replay of several files (empty when the queries come from one source)."""
        import pandas as pd

        rows = {(src, name): cell for src, systems in self.result.comparison.modes[mode].by_source.items()
                for name, cell in systems.items()}
        frame = pd.DataFrame.from_dict(rows, orient="index")
        if len(frame):
            frame.index.names = ["source", "system"]
            frame = frame[[*[m for m in metrics if m in frame], "tokens_median", "queries"]]
        return frame

    def modes(self) -> list[str]:
        """The judging modes with queries in this replay, ``repeat`` first."""
        return self.result.judged_modes()

    def table(self, metrics: Sequence[str] = HEADLINE, mode: str = "repeat") -> "pd.DataFrame":
        """Systems × metrics of a judging mode, each cell ``mean [low, high]`` where an interval was computed."""
        return self.mode(mode).table(metrics)

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
        return self.mode(mode).margins(metric, reference, baselines)

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

        return replay_page(self.result, questions=MODE_QUESTION, sources=self.source_table(),
                           pictures=self.pictures() if pictures is None else pictures)

    def save(self, folder: str | Path) -> Path:
        """Write ``metrics.json``, ``episodes.csv`` (the ``repeat`` queries; ``episodes_<mode>.csv`` for every other
        judging mode with queries), the four plots as PNG files and ``report.html`` (:meth:`html`), which holds
        the tables and the plots in one file."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "metrics.json").write_text(json.dumps(self.metrics, indent=2, default=str), encoding="utf-8")
        for mode in self.modes():
            self.result.comparison.modes[mode].frame().to_csv(folder / episodes_file(mode), index=False)
        pictures = self.pictures()
        for name, png in pictures.items():
            (folder / f"{name}.png").write_bytes(png)
        (folder / "report.html").write_text(self.html(pictures), encoding="utf-8")
        return folder


def judge(run: ReplayRun, judgements: Judgements | Mapping[str, Judgements], dataset: Mapping[str, Any], *,
          metrics: Sequence[str] = METRICS, reference: str = "hindsight", seed: int = 0,
          n_resamples: int = 2000, sources: Mapping[str, str] | None = None) -> ReplayReport:
    """Score every system's injected lists with the same judgements (:func:`~hindsight_lab.evaluation.compare`);
    intervals resample whole groups.

    ``judgements`` is one :class:`~hindsight_lab.metrics.Judgements` (the ``repeat`` mode), or one per judging mode
    (:mod:`hindsight_lab.metrics.modes`), ``repeat`` among them; a mode with no query on this dataset (or none
    judged: LoCoMo's explicit labels are ``repeat`` only) is n/a in the report.

    ``sources`` (episode id → the file it came from) adds a ``source`` column to the per-episode tables and, when
    the episodes come from more than one file, each mode's per-source figures (``by_source``): per file and
    system, the headline metrics and ``tokens_median`` over that file's queries, with the number of queries.
    """
    by_mode = {"repeat": judgements} if isinstance(judgements, Judgements) else dict(judgements)
    repeat = by_mode["repeat"]
    if not repeat.query_ids:
        raise NothingToDo(EMPTY_QUERY_SET)
    extra = {name: {"trigger_rate": refl["trigger_rate"], "reflections": refl["reflections"],
                    "promotions": refl["promotions"], "trigger_reasons": refl["decisions"],
                    "reuse_rate": _reuse_rate(run, name)} for name, refl in run.reflection.items()}
    comparison = compare(run.queries, by_mode, systems=run.systems, reference=reference, metrics=metrics, seed=seed,
                         n_resamples=n_resamples, sources=sources, extra=extra)
    result = ReplayMetrics(dict(dataset), comparison, run.timing, run.lift, run.rule_ceiling, run.lift_power)
    return ReplayReport(result, run, repeat)


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
