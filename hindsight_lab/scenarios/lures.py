"""The lexical-lure evaluation (issue target: where ``bm25`` ranks the lure first, hindsight ranks the right memory
first): each pair of :func:`~hindsight_lab.datasets.synthetic.generate` ``("lures")`` replayed on fresh systems.

Examples:
    >>> from hindsight_lab.datasets.synthetic import generate
    >>> pairs = lure_pairs(generate("lures", n=2, seed=0))
    >>> len(pairs), pairs[0].lure.task_type != pairs[0].query.task_type
    (2, True)
"""

from __future__ import annotations


from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..datasets.synthetic import generate  # noqa: F401  (the doctests below use it)
from ..trace import Episode


@dataclass(frozen=True)
class LurePair:
    """One lure pair: the query, the right memory, the lure, and the background stored with them."""

    query: Episode
    right: Episode
    lure: Episode
    background: tuple[Episode, ...]

    @property
    def memories(self) -> list[Episode]:
        """What the store holds before the query, in time order."""
        return sorted([*self.background, self.right, self.lure], key=lambda e: (e.started_at, e.episode_id))


def lure_pairs(episodes: Sequence[Episode]) -> list[LurePair]:
    """Regroup ``lures`` episodes (generated or read back from a fixture) into pairs.

    Examples:
        >>> pairs = lure_pairs(generate("lures", n=3, seed=0))
        >>> len(pairs), all(p.query.meta["right"] == p.right.episode_id for p in pairs)
        (3, True)
    """
    groups: dict[str, dict[str, Any]] = {}
    for ep in episodes:
        meta = ep.meta or {}
        if meta.get("scenario") != "lures":
            continue
        g = groups.setdefault(meta["group"], {"background": []})
        if meta["role"] == "background":
            g["background"].append(ep)
        else:
            g[meta["role"]] = ep
    return [LurePair(g["query"], g["right"], g["lure"], tuple(g["background"])) for g in groups.values()
            if {"query", "right", "lure"} <= g.keys()]


@dataclass
class LureReport:
    """Per pair and system: which of the right memory and the lure was injected first, and what ranked first.

    ``rows`` hold ``pair``, ``system``, ``query_type``, ``lure_type``, ``first`` (``right``, ``lure`` or
    ``neither``: the earlier of the two episode records in the injected list), ``top1`` (``right``, ``lure``,
    ``same_type``, ``other_type`` or ``empty``: the first injected record, judged by the ground-truth types of its
    source episodes), ``right_rank`` and ``lure_rank`` (1-based, None when not injected), ``top1_kind``, and
    ``intent_first`` (``intent``, ``lure`` or ``neither``: whether a memory of the query's intent — the right
    memory or any stored episode of the query's task type — was injected before the lure).
    """

    rows: list[dict[str, Any]] = field(default_factory=list)

    def first(self, system: str) -> dict[str, str]:
        return {r["pair"]: r["first"] for r in self.rows if r["system"] == system}

    def top1(self, system: str) -> dict[str, str]:
        return {r["pair"]: r["top1"] for r in self.rows if r["system"] == system}

    def summary(self, lured: str = "bm25", system: str = "hindsight") -> dict[str, Any]:
        """The target figures: on the pairs where ``lured`` injects the lure before the right memory, the share
        where ``system`` injects the right memory first; the same on the pairs where the lure is ``lured``'s
        top-1, with the share where ``system``'s top-1 is the right memory or another memory of its type."""
        lf, sf = self.first(lured), self.first(system)
        lt, st = self.top1(lured), self.top1(system)
        pairs = sorted(set(lf) & set(sf))
        base = [p for p in pairs if lf[p] == "lure"]
        top = [p for p in pairs if lt[p] == "lure"]

        def share(ps: list[str], ok: Callable[[str], bool]) -> float:
            return sum(ok(p) for p in ps) / len(ps) if ps else float("nan")

        intent = {r["pair"]: r.get("intent_first") for r in self.rows if r["system"] == system}
        return {"pairs": len(pairs), f"{lured}_lure_first": len(base),
                f"{system}_right_first": share(base, lambda p: sf[p] == "right"),
                f"{system}_intent_first": share(base, lambda p: intent.get(p) == "intent"),
                f"{system}_lure_first": share(base, lambda p: sf[p] == "lure"),
                f"{lured}_lure_top1": len(top),
                f"{system}_top1_right": share(top, lambda p: st[p] == "right"),
                f"{system}_top1_same_intent": share(top, lambda p: st[p] in ("right", "same_type")),
                f"{system}_right_first_all_pairs": share(pairs, lambda p: sf[p] == "right")}

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)


def classify_injected(injected: Sequence[Any], pair: LurePair, types: Mapping[str, str | None]) -> dict[str, Any]:
    """Where the right memory and the lure sit in one injected list (see :class:`LureReport`).

    ``injected`` items need ``kind`` and ``source_episode_ids`` (:class:`~hindsight_lab.replay.systems.Injected`);
    ``types`` maps episode ids to their ground-truth task types.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> pair = lure_pairs(generate("lures", n=1, seed=0))[0]
        >>> inj = [NS(kind="episode", source_episode_ids=(pair.lure.episode_id,)),
        ...        NS(kind="episode", source_episode_ids=(pair.right.episode_id,))]
        >>> c = classify_injected(inj, pair, {})
        >>> c["first"], c["top1"], c["right_rank"], c["lure_rank"]
        ('lure', 'lure', 2, 1)
    """
    def rank(eid: str) -> int | None:
        return next((i + 1 for i, x in enumerate(injected) if x.kind == "episode"
                     and tuple(x.source_episode_ids) == (eid,)), None)

    r, lu = rank(pair.right.episode_id), rank(pair.lure.episode_id)
    first = "neither" if r is None and lu is None else "right" if lu is None or (r is not None and r < lu) \
        else "lure"
    if not injected:
        top1, kind = "empty", None
    else:
        head = injected[0]
        srcs = tuple(head.source_episode_ids)
        kind = head.kind
        if head.kind == "episode" and srcs == (pair.right.episode_id,):
            top1 = "right"
        elif head.kind == "episode" and srcs == (pair.lure.episode_id,):
            top1 = "lure"
        else:
            same = sum(types.get(s) == pair.query.task_type for s in srcs)
            top1 = "same_type" if srcs and same * 2 > len(srcs) else "other_type"
    def of_intent(x: Any) -> bool:  # the right memory, or any other memory of the query's task type
        srcs = tuple(x.source_episode_ids)
        if srcs == (pair.lure.episode_id,):
            return False
        return bool(srcs) and sum(s == pair.right.episode_id or types.get(s) == pair.query.task_type
                                  for s in srcs) * 2 > len(srcs)

    intent = next((i + 1 for i, x in enumerate(injected) if of_intent(x)), None)
    intent_first = "neither" if intent is None and lu is None else "intent" if lu is None or (
        intent is not None and intent < lu) else "lure"
    return {"first": first, "top1": top1, "right_rank": r, "lure_rank": lu, "top1_kind": kind,
            "intent_first": intent_first}


def replay_pair(pair: LurePair, systems: Sequence[Any]) -> dict[str, list[Any]]:
    """The replay engine's loop for one pair, recalling only for the query: memories are observed in time order
    with ``maintain`` at each day boundary, then every system recalls the query. (Recalls for the memories
    themselves would change nothing that is stored: retrieval-driven effects are off in replays, DESIGN §6.)"""
    day = None
    for ep in [*pair.memories, pair.query]:
        now = ep.started_at
        if day is not None and now.date() != day:
            for s in systems:
                s.maintain(now)
        day = now.date()
        if ep is pair.query:
            return {s.name: s.recall(ep.instruction, now) for s in systems}
        for s in systems:
            s.observe(ep, now)
    return {}


def evaluate_lures(pairs: Sequence[LurePair], *, embedder: Any, systems: Sequence[str] = ("bm25", "hindsight"),
                   config: Any = None, top_k: int = 10, token_budget: int | None = None,
                   workdir: str | Path | None = None) -> LureReport:
    """Replay every pair on fresh systems (:func:`~hindsight_lab.replay.systems.build_systems`, real stores):
    the background, the right memory and the lure are written in time order, then the query is recalled; record
    where the right memory and the lure ranked for each system.

    Args:
        pairs: from :func:`lure_pairs`.
        embedder: the embedder shared by every system (the real MiniLM for meaningful figures). Texts known in
            advance (instructions, episode summaries) are embedded in one batch.
        systems: replay system names (``none``, ``dense``, ``bm25``, ``hindsight``).
        config: the hindsight :class:`~hindsight_lab.config.LabConfig` (default config when None).
        top_k: shared by every system.
        token_budget: shared (default: the config's ``retrieval.token_budget``).
        workdir: a folder for the hindsight stores, kept after (default: in memory, deleted when done).

    Examples:
        >>> report = evaluate_lures(lure_pairs(generate("lures", n=60, seed=0)), embedder=minilm)  # doctest: +SKIP
        >>> report.summary()["hindsight_right_first"]  # doctest: +SKIP
    """
    from ..config import LabConfig
    from ..replay.runner import prefetch
    from ..replay.systems import build_systems

    cfg = config or LabConfig()
    budget = token_budget or cfg.retrieval.token_budget
    emb, _ = prefetch(embedder, [e for p in pairs for e in (*p.memories, p.query)], (), cfg,
                      summaries="dense" in systems)
    report = LureReport()
    root = str(workdir) if workdir else None
    for pair in pairs:
        types = {e.episode_id: e.task_type for e in (*pair.memories, pair.query)}
        built = build_systems(systems, config=cfg, embedder=emb, top_k=top_k, token_budget=budget, root=root)
        try:
            injected = replay_pair(pair, built)
        finally:
            for s in built:
                s.close()
        for name, inj in injected.items():
            report.rows.append({"pair": (pair.query.meta or {}).get("group", pair.query.episode_id),
                                "system": name, "query_type": pair.query.task_type,
                                "lure_type": pair.lure.task_type, **classify_injected(inj, pair, types)})
    return report


def lure_table(systems: Sequence[str] = ("bm25", "hindsight"), *, seeds: Sequence[int] = (0,), n_pairs: int = 60,
               config: Any = None, embedder: Any = None, top_k: int = 10, lured: str = "bm25") -> Any:
    """:func:`evaluate_lures` on ``n_pairs`` generated pairs per seed: a DataFrame with one row per seed and system
    (other than ``lured``): ``pairs``, ``lured`` (pairs where ``lured`` injects the lure first) and, on those
    pairs, the shares where the system injects the right memory first (``right_first``), a memory of the query's
    intent first (``intent_first``) or the lure first (``lure_first``); ``right_first_all_pairs`` over every pair.
    With several seeds, one ``mean`` row per system.

    Examples:
        >>> lure_table(["bm25", "hindsight"], seeds=[0, 1], n_pairs=60)  # doctest: +SKIP
    """
    import pandas as pd

    from ..config import LabConfig
    from ..embed import embedder_for

    cfg = config or LabConfig()
    names = list(dict.fromkeys([lured, *systems]))
    if embedder is None:
        embedder = embedder_for(cfg.embedder)
    rows = []
    for seed in seeds:
        report = evaluate_lures(lure_pairs(generate("lures", n=n_pairs, seed=seed)), embedder=embedder,
                                systems=names, config=cfg, top_k=top_k)
        for system in names[1:]:
            s = report.summary(lured=lured, system=system)
            rows.append({"seed": seed, "system": system, "pairs": s["pairs"], "lured": s[f"{lured}_lure_first"],
                         "right_first": s[f"{system}_right_first"], "intent_first": s[f"{system}_intent_first"],
                         "lure_first": s[f"{system}_lure_first"],
                         "right_first_all_pairs": s[f"{system}_right_first_all_pairs"]})
    table = pd.DataFrame(rows)
    if len(seeds) > 1:
        mean = table.drop(columns="seed").groupby("system", sort=False).mean().reset_index()
        table = pd.concat([table, mean.assign(seed="mean")], ignore_index=True)
    return table
