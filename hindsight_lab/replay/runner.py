"""One call from a dataset — a file, several files replayed as one history, or a registered name — to a judged
side-by-side report: :func:`run_replay`."""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..config import LabConfig
from ..datasets.combine import ORDERS, file_sha256
from ..jsonio.reading import check_limit
from ..errors import ConfigError, NothingToDo
from ..metrics import Judgements
from ..metrics.modes import MODES, judge_mode
from ..redact import mask_data
from ..rule_stats.ceiling import Bar, rule_ceiling
from .engine import ReplayRun, run_conversations, run_episodes
from .journal import JOURNAL_DIR, Journal
from ..rule_stats.lift import lift_report, runs_of
from ..rule_stats.power import lift_power
from .records import rules_injected
from .report import EMPTY_QUERY_SET, METRICS, ReplayReport, judge
from .systems import BASELINE_KEY, CONVERSATION_BASELINE_KEY, build_systems, check_systems

DEFAULT_SYSTEMS = ("none", "dense", "bm25", "dense+ok", "bm25+ok", "hindsight")


def run_replay(path: str | Path | Sequence[str | Path], *, format: str = "auto",
               systems: Sequence[str] = DEFAULT_SYSTEMS, config: LabConfig | None = None,
               configs: Mapping[str, LabConfig] | None = None, top_k: int = 10, token_budget: int | None = None,
               limit: int | None = None, embedder: Any = None,
               metrics: Sequence[str] = METRICS, skip_invalid: bool = False, show_progress: bool = False,
               seed: int = 0, workdir: str | Path | None = None, out: str | Path | None = None,
               resume: bool = False, baseline_key: str | None = None) -> ReplayReport:
    """Replay a recorded dataset through several systems side by side and judge them.

    With ``out``, every completed unit (an episode, or a LoCoMo conversation) is journaled under
    ``out/.replay-journal/`` as it completes (:mod:`hindsight_lab.replay.journal`); at the end the report is saved
    to ``out`` (``metrics.json``, ``episodes.csv``, plots) and the journal removed. A replay killed on the way is
    continued by calling again with the same arguments and ``resume=True``: it ends with the same
    systems' summaries (but ``latency_p50_ms``), intervals and tests in every judging mode as an uninterrupted one; timing
    figures differ. Record ids come from a seeded sequence per system (:class:`~hindsight_lab.types.SeededIds`), so
    the ``[L2#…]`` tags, their token counts and what fits the budget are the same in every run.

    Resuming re-derives the stores by writing the journaled episodes again without recalling (DESIGN §6: what a
    replay stores does not depend on what was recalled), the reflector answering from the journal. So a
    non-deterministic reflector (an LLM) is not asked again about journaled episodes, and a resumed replay gets
    exactly the reflections the killed one got; the deterministic heuristic reflector would give the same answers
    anyway. Re-derived memory counts and reflection counters are checked against the journal.

    Every text the replay will embed one at a time (instructions, stored episode texts, questions) is embedded
    ahead in batches (:class:`~hindsight_lab.embed.PrefetchedEmbedder`); ``timing["prefetch_s"]`` is that time and
    is included in ``timing["total_s"]``.

    Several files are replayed as one history, in the order given (:func:`~hindsight_lab.datasets.combine.
    load_history`: one forward clock, task ids shared within a dataset family and domain, each episode's source
    file kept), and the report breaks each mode's metrics down by source file (``ModeReport.by_source``).

    Args:
        path: a trace file, a registered dataset or group name (:mod:`hindsight_lab.datasets.registry`), or a
            sequence of them replayed as one history.
        format: ``auto``, ``jsonl``, ``tau-bench``, ``tau2-bench``, ``reflexion-hotpotqa`` or ``locomo``.
        systems: names from ``none``, ``dense``, ``bm25``, ``dense+ok``, ``bm25+ok``, ``hindsight`` and the keys of
            ``configs``.
        config: the ``hindsight`` config (default config when None); ``configs`` adds named variants.
        top_k: shared by every system (the largest k reported).
        token_budget: shared; default the config's ``retrieval.token_budget``.
        limit: keep the first N whole tasks (or conversations) — never cuts episodes.
        embedder: reuse a loaded embedder (default: the config's model).
        workdir: a folder for the hindsight stores, kept after (default: in memory, deleted when done).
        out: folder for the report and the resume journal (default: neither is written).
        resume: continue the journal in ``out`` (none there: start from scratch).
        baseline_key: the text the ``dense`` and ``bm25`` baselines index (an ``episode.key`` value; default
            :data:`~hindsight_lab.replay.systems.BASELINE_KEY`, for LoCoMo's turns ``CONVERSATION_BASELINE_KEY``).

    Raises:
        ConfigError: an unknown system, a ``limit`` or ``top_k`` that is not a count, ``out`` a file, ``resume``
            without ``out``, or the journal in ``out`` was written for another replay (the
            message names what differs).
        NothingToDo: no episode (every line invalid and skipped), or an empty query set: no episode has an
            earlier run of its task.
    """
    from ..datasets import detect_format
    from ..datasets.registry import resolve
    from ..embed import embedder_for

    _check_arguments(systems, configs, limit=limit, top_k=top_k, out=out, resume=resume)
    cfg = config or LabConfig()
    paths = resolve(path)
    fmt = (detect_format(paths[0]) if format == "auto" else format) if len(paths) == 1 else format
    budget = token_budget or cfg.retrieval.token_budget
    data, dataset, baseline_key = _load(paths, format, fmt, top_k=top_k, budget=budget, limit=limit,
                                        skip_invalid=skip_invalid, baseline_key=baseline_key)
    if embedder is None:
        embedder = embedder_for(cfg.embedder)
    header = None if out is None else journal_header(dataset, systems=systems, config=cfg, configs=configs,
                                                     skip_invalid=skip_invalid, embedder=embedder.name(),
                                                     baseline_key=baseline_key)
    with _journal(out, header, resume=resume) as journal:
        report = _replay_and_judge(data, dataset, systems=systems, config=cfg, configs=configs, top_k=top_k,
                                   budget=budget, limit=limit, embedder=embedder, show_progress=show_progress,
                                   workdir=workdir, journal=journal, baseline_key=baseline_key, metrics=metrics,
                                   seed=seed)
        if out is not None:
            report.save(out)
    return report


def _check_arguments(systems: Sequence[str], configs: Mapping[str, LabConfig] | None, *, limit: int | None,
                     top_k: int, out: str | Path | None, resume: bool) -> None:
    """Every argument of :func:`run_replay` that can be wrong, checked before the data is read or a model loads."""
    if resume and out is None:
        raise ConfigError("resume needs the folder of the replay to continue (out=..., --out DIR)")
    check_systems(systems, configs)
    check_limit(limit, "limit")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ConfigError(f"top_k: expected a whole number of 1 or more (got {top_k!r})")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"out: {out} is a file; expected a folder (it is created when missing)")


@contextmanager
def _journal(out: str | Path | None, header: dict[str, Any] | None, *, resume: bool) -> Iterator[Journal | None]:
    """The replay's journal under ``out`` (None without ``out``): closed whatever happens, removed once the body
    has finished (the report is written: nothing left to resume)."""
    if out is None or header is None:
        yield None
        return
    journal = Journal.open(Path(out) / JOURNAL_DIR, header, resume=resume)
    try:
        yield journal
    finally:
        journal.close()
    journal.remove()


def _load(paths: list[Path], format: str, fmt: str | None, *, top_k: int, budget: int, limit: int | None,
          skip_invalid: bool, baseline_key: str | None) -> tuple[Path | list[Any], dict[str, Any], str]:
    """What to replay (a LoCoMo file's path, or the loaded episodes), the report's ``dataset`` section, and the
    text the baselines index.

    Raises:
        NothingToDo: no episode, or an empty query set (:func:`_check_something_to_do`).
    """
    from ..datasets.combine import load_history

    dataset: dict[str, Any] = {"name": paths[0].stem, "format": fmt, "sha256": "", "order": "", "top_k": top_k,
                               "token_budget": budget, "limit": limit, "retrieval_effects": "off (replay default)",
                               "task_type_known_at_start": False}
    if fmt == "locomo":
        data: Path | list[Any] = paths[0]
        dataset.update(sha256=file_sha256(paths[0]), order=ORDERS["locomo"])
        baseline_key = baseline_key or CONVERSATION_BASELINE_KEY
    else:
        data, info = load_history(paths, format=format, strict=not skip_invalid, limit_tasks=limit)
        dataset.update(info)
        _check_something_to_do(data, dataset)
        baseline_key = baseline_key or BASELINE_KEY
    dataset["baselines_index"] = baseline_key
    return data, dataset, baseline_key


def _replay_and_judge(data: Path | list[Any], dataset: dict[str, Any], *, systems: Sequence[str], config: LabConfig,
                      configs: Mapping[str, LabConfig] | None, top_k: int, budget: int, limit: int | None,
                      embedder: Any, show_progress: bool, workdir: str | Path | None, journal: Journal | None,
                      baseline_key: str, metrics: Sequence[str], seed: int) -> ReplayReport:
    """Warm the model up, replay, add the prefetch to the total time, and judge."""
    t_load = time.perf_counter()
    embedder.embed(["warm up"])
    model_s = time.perf_counter() - t_load
    run, judgements, sources = _replay(data, dataset, systems=systems, config=config, configs=configs,
                                       top_k=top_k, budget=budget, limit=limit, embedder=embedder,
                                       show_progress=show_progress, workdir=workdir, journal=journal,
                                       baseline_key=baseline_key)
    run.timing["total_s"] = run.timing.get("total_s", 0.0) + run.timing.get("prefetch_s", 0.0)
    run.timing["model_load_s"] = model_s
    return judge(run, judgements, dataset, metrics=metrics, seed=seed, sources=sources)


def _check_something_to_do(episodes: Sequence[Any], dataset: Mapping[str, Any]) -> None:
    """Refuse, before any system runs, a replay with no episode or with an empty query set.

    Raises:
        NothingToDo: the message says which, with the invalid lines a lenient read skipped.
    """
    skipped = dataset.get("skipped")
    reasons = ", ".join(f"{r}: {n}" for r, n in (skipped or {}).get("by_reason", {}).items())
    note = f"; {skipped['lines']} invalid line(s) skipped ({reasons})" if skipped else ""
    if not episodes:
        raise NothingToDo(f"{dataset['name']}: no episode to replay{note}")
    if not Judgements.from_episodes(episodes).query_ids:
        raise NothingToDo(f"{dataset['name']} ({len(episodes)} episodes): {EMPTY_QUERY_SET}{note}")


def journal_header(dataset: Mapping[str, Any], *, systems: Sequence[str], config: LabConfig,
                   configs: Mapping[str, LabConfig] | None, skip_invalid: bool, embedder: str,
                   baseline_key: str | None = None) -> dict[str, Any]:
    """What a resumed replay must share with the journal it continues: the dataset (sha256, format), the systems,
    ``top_k``, budget, ``limit``, ``skip_invalid``, the embedder and every field of every hindsight config."""
    flat = {"hindsight": config.flat(), **{name: c.flat() for name, c in (configs or {}).items()}}
    flat_json = json.dumps(mask_data(flat), sort_keys=True, default=str)  # no password reaches the journal
    return {"dataset": {k: dataset[k] for k in ("name", "format", "sha256")},
            "params": {"systems": list(systems), "top_k": dataset["top_k"], "token_budget": dataset["token_budget"],
                       "limit": dataset["limit"], "skip_invalid": skip_invalid, "embedder": embedder,
                       **({"baseline_key": baseline_key} if baseline_key else {}),
                       "config_sha256": hashlib.sha256(flat_json.encode("utf-8")).hexdigest(),
                       "config": json.loads(flat_json)}}


def _replay(data: Path | Sequence[Any], dataset: dict[str, Any], *, systems: Sequence[str], config: LabConfig,
            configs: Mapping[str, LabConfig] | None, top_k: int, budget: int, limit: int | None, embedder: Any,
            show_progress: bool, workdir: str | Path | None, journal: Journal | None,
            baseline_key: str = BASELINE_KEY) -> tuple[ReplayRun, dict[str, Judgements], dict[str, str]]:
    """Replay a LoCoMo file (``data`` a path) or loaded episodes; also return each episode's source file (for the
    per-source breakdown; empty when the data names no sources)."""
    sources: dict[str, str] = {}
    root = str(workdir) if workdir else None

    def make() -> list[Any]:
        return build_systems(systems, config=config, configs=configs, embedder=embedder, top_k=top_k,
                             token_budget=budget, root=root, baseline_key=baseline_key)

    if isinstance(data, Path):
        from ..datasets.locomo import read_locomo, turn_to_episode

        convs = read_locomo(data, limit_conversations=limit)
        qrels = {f"{c.sample_id}#q{q.index}": {f"{c.sample_id}:{d}": 2 for d in q.evidence}
                 for c in convs for q in c.questions}
        candidates = {f"{c.sample_id}#q{q.index}": [f"{c.sample_id}:{t.dia_id}" for t in c.turns]
                      for c in convs for q in c.questions}
        judgements = {"repeat": Judgements.from_qrels(qrels, candidates)}
        turns = [turn_to_episode(t) for c in convs for t in c.turns]
        embedder, prefetch_s = prefetch(embedder, turns, [q.question for c in convs for q in c.questions],
                                         config)
        dataset.update(n_episodes=sum(len(c.turns) for c in convs), conversations=len(convs),
                       questions=len(qrels), skipped_category5=sum(c.skipped_category5 for c in convs),
                       clock="session dates")
        run = run_conversations(convs, make, to_episode=turn_to_episode, show_progress=show_progress,
                                journal=journal)
        run.timing["prefetch_s"] = prefetch_s
    else:
        episodes = list(data)
        judgements = {mode: judge_mode(episodes, mode) for mode in MODES}
        sources = {ep.episode_id: ep.meta["source_file"] for ep in episodes
                   if ep.meta and isinstance(ep.meta.get("source_file"), str)}
        embedder, prefetch_s = prefetch(embedder, episodes, [], config, keys=(baseline_key,))
        systems_now = make()
        try:
            asked = {q for j in judgements.values() for q in j.query_ids}  # every mode's queries
            run = run_episodes(episodes, systems_now, query_ids=asked,
                               show_progress=show_progress, journal=journal)
        finally:
            for s in systems_now:
                s.close()
        run.timing["prefetch_s"] = prefetch_s
        dataset.update(n_episodes=len(episodes), clock=run.clock)
        times = [o["at"] for o in sorted(run.outcomes, key=lambda o: o["order"])]
        run.lift = {name: lift_report(rules, episodes, times, injected=rules_injected(run, name),
                                      overlap=config.promotion.same_task_overlap)
                    for name, rules in run.rules.items()}
        if run.rules:
            bar = Bar.of(config.promotion)
            run.rule_ceiling = rule_ceiling(episodes, bar)
            run.lift_power = lift_power(runs_of(episodes, outside_failures=False), bar,
                                        evidence=config.promotion.evidence)
    return run, judgements, sources


def prefetch(embedder: Any, episodes: Sequence[Any], queries: Sequence[str], config: LabConfig,
             keys: Sequence[str] = (), *, summaries: bool = True) -> tuple[Any, float]:
    """Embed ahead, in batches, the texts the systems will embed one by one: each episode's instruction (the
    query), the key hindsight finds it by and the baselines' (``keys``: ``episode.key`` values), its stored
    summary (when a baseline embeds it, ``summaries``, or it is hindsight's key), and the questions; vectors an
    earlier replay encoded come from the disk cache (``embedder.disk_cache``, :mod:`hindsight_lab.embed.cache`)."""
    from ..embed import PrefetchedEmbedder
    from ..embed.cache import disk_cache
    from ..trace.summary import episode_key, summarise

    start = time.perf_counter()
    texts = [ep.instruction for ep in episodes] + list(queries)
    if summaries or "summary" in (config.episode.key, *keys):
        texts += [summarise(ep, config.episode.summary_max_chars) for ep in episodes]
    for key in dict.fromkeys((config.episode.key, *keys)):
        if key not in ("instruction", "summary"):
            texts += [episode_key(ep, key) or "" for ep in episodes]
    if config.retrieval.classifier.method == "embedding":  # the classifier reads requests masked
        from ..retrieve.wording import mask_entities

        texts += [mask_entities(t) for t in [ep.instruction for ep in episodes] + list(queries)]
    cache = disk_cache(embedder) if config.embedder.disk_cache else None
    try:
        return PrefetchedEmbedder(embedder, texts, cache=cache), time.perf_counter() - start
    finally:
        if cache is not None:
            cache.close()
