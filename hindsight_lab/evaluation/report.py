"""The typed results of a replay: one :class:`ModeReport` per judging mode, gathered in a :class:`Comparison`
(what :func:`~hindsight_lab.evaluation.compare` returns), and :class:`ReplayMetrics`, that comparison with the
facts of the replay it judged (the dataset, timing, the promoted rules' lift, the rule ceiling, the lift test's
power): what ``metrics.json`` holds.

``metrics.json`` is versioned (:data:`SCHEMA_VERSION`, docs/replay.md "metrics.json"). Version 2 keeps every judging
mode alike under ``modes``::

    {"schema_version": 2, "dataset": {...}, "reference": "hindsight", "judging": {"seed": 0, "n_resamples": 2000},
     "modes": {"repeat": {"queries": 15, "groups": 5, "systems": {...}, "intervals": {...}, "tests": {...},
                          "by_source": {...}},
               "transfer": {"queries": 0, "status": "n/a"}, ...},
     "timing": {...}, "lift": {...}, "rule_ceiling": {...}, "lift_power": {...}}

Version 1 (no ``schema_version``) had the ``repeat`` mode's ``systems``, ``intervals``, ``tests`` and ``by_source``
at the top level, its query and group counts in ``judging``, and the other modes under ``modes``;
:meth:`ReplayMetrics.from_json` reads both, so runs saved before still load (:func:`load_metrics`).

Examples:
    >>> mode = ModeReport("repeat", queries=2, groups=1, systems={"bm25": {"ndcg@5": 0.5}, "hindsight": {"ndcg@5": 1.0}},
    ...                   intervals={"hindsight": {"ndcg@5": (1.0, 1.0, 1.0)}}, tests={"bm25": {"ndcg@5": 0.5}})
    >>> mode.value("hindsight", "ndcg@5"), mode.interval("hindsight", "ndcg@5"), mode.p_value("bm25", "ndcg@5")
    (1.0, (1.0, 1.0, 1.0), 0.5)
    >>> old = {"dataset": {"name": "d"}, "systems": mode.systems, "intervals": {}, "tests": {}, "reference": "hindsight",
    ...        "judging": {"queries": 2, "groups": 1, "seed": 0, "n_resamples": 10}, "modes": {}, "timing": {}}
    >>> m = ReplayMetrics.from_json(old)                          # a version-1 file
    >>> m.mode("repeat").queries, m.to_json()["schema_version"], m.judged_modes()
    (2, 2, ['repeat'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..config.base import plain
from ..metrics.modes import MODES

if TYPE_CHECKING:
    import pandas as pd

#: The layout of ``metrics.json`` that :meth:`ReplayMetrics.to_json` writes.
SCHEMA_VERSION = 2
#: The metrics a mode's table shows by default (the replay's headline).
HEADLINE: tuple[str, ...] = ("ndcg@5", "hit@3", "hit@5", "recall@10")
#: The baselines hindsight is compared with in each judging mode: in ``outcome`` the success-only ones too, since a
#: careful user would keep only what worked there (the better of all four is the one to beat).
RIVALS: dict[str, tuple[str, ...]] = {"repeat": ("dense", "bm25"), "transfer": ("dense", "bm25"),
                                      "outcome": ("dense", "bm25", "dense+ok", "bm25+ok")}
#: What each judging mode asks, as the tables' headings say it.
MODE_QUESTION: dict[str, str] = {"repeat": "queries whose task ran before",
                                 "transfer": "first runs of a task, judged by earlier runs of other tasks of its type",
                                 "outcome": "queries whose task succeeded before, judged by what worked"}
#: The per-system figures a mode's table adds after the chosen metrics, when the replay has them.
TABLE_EXTRAS: tuple[str, ...] = ("r_precision", "hit_rate", "oracle_hit@10", "tokens_median", "tokens_p95")


#: The figures of a system's summary that are wall-clock times (they differ between two runs of the same replay).
WALL_CLOCK: tuple[str, ...] = ("latency_p50_ms",)


class NoQueriesError(ValueError):
    """A judging mode has no queries in this replay (a ``ValueError``, as before the typed report)."""


@dataclass(frozen=True)
class ModeReport:
    """One judging mode's figures for every system of a replay.

    ``systems``: system → its summary (every metric's mean over the mode's queries, ``hit_rate``, tokens, latency,
    and a reflecting system's reflection figures). ``intervals``: system → metric → (mean, low, high), the 95%
    bootstrap interval over whole groups. ``tests``: system → metric → the p-value of a paired randomization test
    against the reference. ``by_source``: source file → system → headline means, ``tokens_median`` and ``queries``
    (empty for one source). ``rows``: the per-episode table's rows (not in ``metrics.json``: ``episodes*.csv``).
    A mode with no query has ``queries == 0`` and nothing else.
    """

    mode: str
    queries: int = 0
    groups: int = 0
    systems: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    intervals: Mapping[str, Mapping[str, tuple[float, float, float]]] = field(default_factory=dict)
    tests: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    by_source: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    rows: Sequence[Mapping[str, Any]] = field(default=(), repr=False, compare=False)

    @property
    def judged(self) -> bool:
        return self.queries > 0

    def rivals(self) -> list[str]:
        """The baselines hindsight is compared with in this mode (:data:`RIVALS`) that the replay ran."""
        return [s for s in RIVALS.get(self.mode, ()) if s in self.systems]

    def value(self, system: str, metric: str) -> Any:
        """``system``'s ``metric`` (a mean over the mode's queries, or a summary figure such as ``tokens_median``)."""
        try:
            return self.systems[system][metric]
        except KeyError:
            where = "system" if system not in self.systems else "metric"
            have = list(self.systems) if where == "system" else list(self.systems[system])
            raise KeyError(f"{self.mode}: no {where} {system if where == 'system' else metric!r} "
                           f"(have: {', '.join(map(str, have))})") from None

    def interval(self, system: str, metric: str) -> tuple[float, float, float] | None:
        """(mean, low, high) of ``metric`` for ``system``, or None where no interval was computed."""
        found = self.intervals.get(system, {}).get(metric)
        return tuple(found) if found else None  # type: ignore[return-value]

    def p_value(self, system: str, metric: str) -> float | None:
        """The p-value of ``system`` against the reference on ``metric``, or None (the reference itself)."""
        return self.tests.get(system, {}).get(metric)

    def frame(self) -> "pd.DataFrame":
        """The per-episode table: one row per system and query."""
        import pandas as pd

        return pd.DataFrame(list(self.rows))

    def table(self, metrics: Sequence[str] = HEADLINE) -> "pd.DataFrame":
        """Systems × metrics, each cell ``mean [low, high]`` where an interval was computed, then the extras of
        :data:`TABLE_EXTRAS` and the p-value of the first metric against the reference."""
        import pandas as pd

        self._require_queries()
        rows = {}
        for name, values in self.systems.items():
            row = {}
            for m in metrics:
                ci = self.interval(name, m)
                row[m] = f"{values[m]:.3f} [{ci[1]:.3f}, {ci[2]:.3f}]" if ci else f"{values[m]:.3f}"
            for extra in TABLE_EXTRAS:
                if extra in values:
                    row[extra] = round(values[extra], 3) if isinstance(values[extra], float) else values[extra]
            p = self.p_value(name, metrics[0])
            if p is not None:
                row[f"p({metrics[0]} vs hindsight)"] = round(p, 4)
            rows[name] = row
        return pd.DataFrame.from_dict(rows, orient="index")

    def margins(self, metric: str = "ndcg@5", reference: str = "hindsight",
                baselines: Sequence[str] = ("dense", "bm25")) -> "pd.DataFrame":
        """Groups (tasks, conversations) × systems, each cell the group's mean ``metric``, then ``best_baseline``
        (the best of ``baselines`` in that group) and ``margin`` (``reference`` minus it): how general a margin
        is (see :meth:`hindsight_lab.replay.report.ReplayReport.group_table`). Needs the per-episode rows."""
        self._require_queries()
        frame = self.frame()
        if not len(frame):
            raise ValueError(f"{self.mode}: no per-episode rows (a report read from metrics.json alone; "
                             "load_metrics(folder) reads them from episodes*.csv)")
        if metric not in frame:
            raise ValueError(f"no metric {metric!r} in the per-episode table (have: "
                             f"{', '.join(c for c in frame.columns if '@' in c or c in ('mrr', 'r_precision'))})")
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

    def _require_queries(self) -> None:
        if not self.judged:
            raise NoQueriesError(f"judging mode {self.mode!r} has no queries in this replay")

    def to_json(self) -> dict[str, Any]:
        if not self.judged:
            return {"queries": 0, "status": "n/a"}
        out: dict[str, Any] = {"queries": self.queries, "groups": self.groups, "systems": plain(self.systems),
                               "intervals": plain(self.intervals), "tests": plain(self.tests)}
        if self.by_source:
            out["by_source"] = plain(self.by_source)
        return out

    @classmethod
    def from_json(cls, mode: str, data: Mapping[str, Any], rows: Sequence[Mapping[str, Any]] = ()) -> "ModeReport":
        if not data.get("queries"):
            return cls(mode)
        return cls(mode, int(data["queries"]), int(data.get("groups", 0)), data.get("systems", {}),
                   {s: {m: tuple(v) for m, v in per.items()} for s, per in data.get("intervals", {}).items()},
                   data.get("tests", {}), data.get("by_source", {}), rows)


@dataclass(frozen=True)
class Comparison:
    """Every judging mode's :class:`ModeReport` (all of :data:`~hindsight_lab.metrics.modes.MODES`, in that order;
    a mode without queries is n/a), the reference system the tests compare with, and the resampling's seed and
    size."""

    modes: Mapping[str, ModeReport]
    reference: str = "hindsight"
    seed: int = 0
    n_resamples: int = 2000

    def mode(self, name: str) -> ModeReport:
        """The report of judging mode ``name``; a clear error when it has no queries or is unknown."""
        if name not in self.modes:
            raise ValueError(f"unknown judging mode {name!r}; expected one of {', '.join(MODES)}")
        report = self.modes[name]
        if not report.judged:
            raise NoQueriesError(f"judging mode {name!r} has no queries in this replay (modes with queries: "
                                 f"{', '.join(self.judged_modes())})")
        return report

    def judged_modes(self) -> list[str]:
        """The modes with queries, in :data:`~hindsight_lab.metrics.modes.MODES` order."""
        return [m for m, r in self.modes.items() if r.judged]

    def absent_modes(self) -> list[str]:
        """The modes without queries."""
        return [m for m, r in self.modes.items() if not r.judged]

    def figures(self, timing: Sequence[str] = WALL_CLOCK) -> dict[str, Any]:
        """Every mode's figures as in ``metrics.json``, without the wall-clock ones (``timing``): what two runs of
        the same replay share, to compare a resumed, re-run or refactored replay with another."""
        out = {m: r.to_json() for m, r in self.modes.items()}
        for cell in out.values():
            for values in cell.get("systems", {}).values():
                for key in timing:
                    values.pop(key, None)
        return out

    @property
    def systems(self) -> list[str]:
        """The systems compared, in replay order."""
        first = next((r for r in self.modes.values() if r.judged), None)
        return list(first.systems) if first else []


@dataclass(frozen=True)
class ReplayMetrics:
    """A replay's :class:`Comparison` with the facts of the run it judged: what ``metrics.json`` holds.

    ``dataset``: what was replayed (name, format, sha256, episode count, order, clock, top_k, budget, ...);
    ``timing``: seconds per phase and system; ``lift``: per reflecting system, its promoted rules' lift on later
    runs; ``rule_ceiling`` and ``lift_power``: what rules the traces support and whether a lift of this shape can
    be shown (empty where the replay has none).
    """

    dataset: Mapping[str, Any]
    comparison: Comparison
    timing: Mapping[str, Any] = field(default_factory=dict)
    lift: Mapping[str, Any] = field(default_factory=dict)
    rule_ceiling: Mapping[str, Any] = field(default_factory=dict)
    lift_power: Mapping[str, Any] = field(default_factory=dict)

    def mode(self, name: str) -> ModeReport:
        return self.comparison.mode(name)

    def judged_modes(self) -> list[str]:
        return self.comparison.judged_modes()

    @property
    def systems(self) -> list[str]:
        return self.comparison.systems

    @property
    def reference(self) -> str:
        return self.comparison.reference

    def to_json(self) -> dict[str, Any]:
        """The ``metrics.json`` mapping, version :data:`SCHEMA_VERSION`."""
        c = self.comparison
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "dataset": plain(self.dataset),
                               "reference": c.reference, "judging": {"seed": c.seed, "n_resamples": c.n_resamples},
                               "modes": {m: r.to_json() for m, r in c.modes.items()}, "timing": plain(self.timing)}
        for name in ("lift", "rule_ceiling", "lift_power"):
            if getattr(self, name):
                out[name] = plain(getattr(self, name))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any],
                  rows: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> "ReplayMetrics":
        """Read a ``metrics.json`` mapping of either version (``rows``: per mode, the per-episode rows)."""
        version = data.get("schema_version", 1)
        if version not in (1, SCHEMA_VERSION):
            raise ValueError(f"metrics.json: schema_version {version!r} is not one this version reads "
                             f"(1 or {SCHEMA_VERSION}); upgrade hindsight-lab")
        modes_in = dict(data.get("modes", {}))
        if version == 1:  # the repeat mode at the top level
            judging = data.get("judging", {})
            modes_in["repeat"] = {"queries": judging.get("queries", 0), "groups": judging.get("groups", 0),
                                  **{k: data[k] for k in ("systems", "intervals", "tests", "by_source") if k in data}}
        rows = rows or {}
        modes = {m: ModeReport.from_json(m, modes_in.get(m, {}), rows.get(m, ())) for m in MODES}
        judging = data.get("judging", {})
        comparison = Comparison(modes, data.get("reference", "hindsight"), int(judging.get("seed", 0)),
                                int(judging.get("n_resamples", 0)))
        return cls(data.get("dataset", {}), comparison, data.get("timing", {}), data.get("lift", {}),
                   data.get("rule_ceiling", {}), data.get("lift_power", {}))


def episodes_file(mode: str) -> str:
    """The per-episode table a saved report writes for ``mode`` (``episodes.csv`` for ``repeat``)."""
    return "episodes.csv" if mode == "repeat" else f"episodes_{mode}.csv"


def load_metrics(path: str | Path) -> ReplayMetrics:
    """A saved replay's :class:`ReplayMetrics`: ``path`` is its folder (``metrics.json``, and the per-episode
    tables ``episodes*.csv`` when present, so margins can be computed) or a ``metrics.json`` file. Reads every
    version of the layout (module docstring).

    Examples:
        >>> load_metrics("experiments/results/tau2-airline-cross-dev").mode("repeat").value("hindsight", "ndcg@5")  # doctest: +SKIP
    """
    path = Path(path)
    folder, file = (path, path / "metrics.json") if path.is_dir() else (path.parent, path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{file}: no metrics.json here (a replay's --out folder holds one)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{file}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    rows: dict[str, list[dict[str, Any]]] = {}
    for mode in MODES:
        csv = folder / episodes_file(mode)
        if csv.is_file():
            import pandas as pd

            rows[mode] = pd.read_csv(csv).to_dict("records")
    try:
        return ReplayMetrics.from_json(data, rows)
    except ValueError as exc:
        raise ValueError(f"{file}: {exc}") from None

