"""The live run: every task, in order, for every system side by side (:func:`run_live`), once per seed
(:func:`live_table`); and the rendering of what a system injected into the text its agent reads
(:func:`injected_text`)."""

from __future__ import annotations


from pathlib import Path
from typing import Any, Sequence

from ...datasets.synthetic import TASK_TYPES
from ...types import Kind
from .agent import plan_calls
from .env import LiveEnv, LiveTask
from .report import LiveReport


def injected_records(system: Any, injected: Sequence[Any]) -> list[Any]:
    """The memory records behind a system's injected list, in its order.

    :class:`~hindsight_lab.replay.systems.Injected` carries ids, not text, so the records are looked up in the
    system itself: a ``hindsight`` system's memory (``system.mem.get_many``), a store-everything baseline's
    ``records``; a system without memory injects nothing.
    """
    if not injected:
        return []
    mem = getattr(system, "mem", None)
    if mem is not None:
        return mem.get_many([i.memory_id for i in injected])
    by_id = {r.id: r for r in getattr(system, "records", [])}
    return [by_id[i.memory_id] for i in injected]


def injected_text(system: Any, injected: Sequence[Any], count: Any) -> str:
    """The injection block exactly as the systems render it (:func:`~hindsight_lab.retrieve.inject.render`):
    rules as general rules first, then similar past tasks, each line with its tag."""
    from ...retrieve.inject import render

    records = injected_records(system, injected)
    if not records:
        return ""
    return render(records, count, [i.tokens for i in injected]).text


def _retired(system: Any) -> list[str]:
    """Episode ids of the successes the system retired after later refusals (:mod:`hindsight_lab.evidence`)."""
    mem = getattr(system, "mem", None)
    return [] if mem is None else sorted(r.source_episode_ids[0] for r in mem.records(archived=True)
                                         if (r.attrs or {}).get("retired_by") and r.source_episode_ids)


def _lucky_sources(system: Any, lucky: set[str], kind: Kind) -> dict[str, list[str]]:
    mem = getattr(system, "mem", None)
    if mem is None or not lucky:
        return {}
    return {r.id: sorted(set(r.source_episode_ids) & lucky) for r in mem.records(kind)
            if set(r.source_episode_ids) & lucky}


def run_live(systems_names: Sequence[str], *, n_tasks: int, seed: int = 0, config: Any = None,
             embedder: Any = None, top_k: int = 10, token_budget: int | None = None,
             workdir: str | Path | None = None, show_progress: bool = False, **env_options: Any) -> LiveReport:
    """Run the live environment with every system side by side (each with its own agent and store).

    Args:
        systems_names: replay system names (``none``, ``dense``, ``bm25``, ``hindsight``, …).
        n_tasks: tasks in the stream (retries come on top).
        seed: the environment's seed (:class:`LiveEnv`).
        config: the hindsight :class:`~hindsight_lab.config.LabConfig` (default config when None).
        embedder: shared by every system (default: the config's model).
        top_k: shared by every system; token_budget: shared (default: the config's).
        workdir: a folder for the hindsight stores, kept after (default: in memory, deleted when done).
        show_progress: a tqdm bar over tasks.
        **env_options: passed to :class:`LiveEnv` (``p_explore``, ``p_lucky``, ``policy_change_at`` …).

    Examples:
        >>> report = run_live(["none", "hindsight"], n_tasks=40, seed=0, embedder=minilm)  # doctest: +SKIP
        >>> report.summary()["hindsight"]["final_window"]  # doctest: +SKIP
    """
    from ...config import LabConfig
    from ...embed import TokenCounter, embedder_for
    from ...replay.systems import build_systems

    cfg = config or LabConfig()
    if embedder is None:
        embedder = embedder_for(cfg.embedder)
    budget = token_budget or cfg.retrieval.token_budget
    env = LiveEnv(n_tasks=n_tasks, seed=seed, **env_options)
    count = TokenCounter.for_embedder(embedder).count
    report = LiveReport(env={"n_tasks": n_tasks, "seed": seed, "policy_changed": env.policy_changed,
                             **{k: getattr(env, k) for k in ("p_explore", "p_lucky", "p_retry", "max_retries",
                                                              "tasks_per_day", "types")}})
    tasks = env.tasks()
    systems = build_systems(systems_names, config=cfg, embedder=embedder, top_k=top_k, token_budget=budget,
                            root=str(workdir) if workdir else None)
    try:
        day = None
        for task in _progress(tasks, show_progress):
            if day is not None and task.at.date() != day:
                for s in systems:
                    s.maintain(task.at)
            day = task.at.date()
            for s in systems:
                _run_task(env, s, task, count, report)
                report.memory.append({"system": s.name, "task": task.index, "at": task.at, **s.counts()})
        for s in systems:
            report.retired[s.name] = _retired(s)
            lucky = set(report.lucky_ids.get(s.name, []))
            report.lucky_in_l3[s.name] = _lucky_sources(s, lucky, Kind.RULE)
            report.lucky_in_l2[s.name] = _lucky_sources(s, lucky, Kind.CANDIDATE)
    finally:
        for s in systems:
            s.close()
    return report


def live_table(systems_names: Sequence[str], *, seeds: Sequence[int], n_tasks: int, config: Any = None,
               embedder: Any = None, top_k: int = 10, show_progress: bool = False, **env_options: Any) -> Any:
    """:func:`run_live` once per seed: a DataFrame with one row per seed and system (first-attempt success overall,
    in the first and the final quarter, all-attempt success, L3 rules at the end, lucky successes, lucky L3 rules,
    successes retired by later refusals) and, with several seeds, one ``mean`` row per system."""
    import pandas as pd

    from ...config import LabConfig
    from ...embed import embedder_for

    cfg = config or LabConfig()
    if embedder is None:
        embedder = embedder_for(cfg.embedder)
    rows = []
    for seed in seeds:
        report = run_live(systems_names, n_tasks=n_tasks, seed=seed, config=cfg, embedder=embedder, top_k=top_k,
                          show_progress=show_progress, **env_options)
        for system, v in report.summary().items():
            rows.append({"seed": seed, "system": system, "success": v["success"], "first_quarter": v["first_window"],
                         "final_quarter": v["final_window"], "all_attempts": v["success_all_attempts"],
                         "L3": v["L3_final"], "lucky": v["lucky_successes"], "lucky_in_L3": v["lucky_rules_in_L3"],
                         "retired": v["retired"]})
    table = pd.DataFrame(rows)
    if len(seeds) > 1:
        mean = table.drop(columns="seed").groupby("system", sort=False).mean().reset_index()
        table = pd.concat([table, mean.assign(seed="mean")], ignore_index=True)
    return table


def _run_task(env: LiveEnv, system: Any, task: LiveTask, count: Any, report: LiveReport) -> None:
    """Every attempt of one task for one system: recall → read → act → observe, until success or patience ends."""
    for attempt in range(task.patience + 1):
        at = env.time(task, attempt)
        injected = system.recall(env.instruction(task, attempt), at)
        text = injected_text(system, injected, count)
        draws = env.draws(task.index, attempt)
        plan = plan_calls(TASK_TYPES[task.task_type], text, explore=draws.explore, order_draw=draws.order)
        eid = f"{system.name}-t{task.index:04d}-a{attempt}"
        episode, lucky = env.execute(task, attempt, plan, eid, draws)
        system.observe(episode, at)
        if lucky:
            report.lucky_ids.setdefault(system.name, []).append(eid)
        ok = episode.outcome == "success"
        report.attempts.append({"system": system.name, "task": task.index, "attempt": attempt,
                                "task_type": task.task_type, "at": at, "plan": plan.source,
                                "hint": tuple(plan.hint) if plan.hint else None, "calls": plan.calls,
                                "success": ok, "lucky": lucky, "episode_id": eid, "injected": len(injected)})
        if ok:
            return


def _progress(items: list[Any], show: bool) -> Any:
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc="live", leave=False)
