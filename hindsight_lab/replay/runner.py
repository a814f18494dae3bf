"""One call from a dataset file to a judged side-by-side report: :func:`run_replay`."""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import LabConfig
from ..metrics import Judgements
from .engine import run_conversations, run_episodes
from .report import METRICS, ReplayReport, judge
from .systems import build_systems

DEFAULT_SYSTEMS = ("none", "dense", "bm25", "hindsight")
ORDERS = {"tau-bench": "by trial, then task_id", "jsonl": "file order",
          "reflexion-hotpotqa": "by trial, then agent block", "locomo": "conversation by conversation, "
          "each in fresh stores: turns by session and turn, then the questions"}


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def run_replay(path: str | Path, *, format: str = "auto", systems: Sequence[str] = DEFAULT_SYSTEMS,
               config: LabConfig | None = None, configs: Mapping[str, LabConfig] | None = None, top_k: int = 10,
               token_budget: int | None = None, limit: int | None = None, embedder: Any = None,
               metrics: Sequence[str] = METRICS, skip_invalid: bool = False, show_progress: bool = False,
               seed: int = 0, workdir: str | Path | None = None) -> ReplayReport:
    """Replay a recorded dataset through several systems side by side and judge them.

    Args:
        path: the dataset file.
        format: ``auto``, ``jsonl``, ``tau-bench``, ``reflexion-hotpotqa`` or ``locomo``.
        systems: names from ``none``, ``dense``, ``bm25``, ``hindsight`` and the keys of ``configs``.
        config: the ``hindsight`` config (default config when None); ``configs`` adds named variants.
        top_k: shared by every system (the largest k reported).
        token_budget: shared; default the config's ``retrieval.token_budget``.
        limit: keep the first N whole tasks (or conversations) — never cuts episodes.
        embedder: reuse a loaded embedder (default: the config's model).
        workdir: where the hindsight stores live (default a temporary folder, removed after).
    """
    from ..datasets import detect_format, load
    from ..embed import make_embedder

    cfg = config or LabConfig()
    path = Path(path)
    fmt = detect_format(path) if format == "auto" else format
    budget = token_budget or cfg.retrieval.token_budget
    if embedder is None:
        e = cfg.embedder
        embedder = make_embedder(e.model, device=e.device, batch_size=e.batch_size,
                                 query_cache_size=e.query_cache_size, threads=e.threads)
    dataset: dict[str, Any] = {"name": path.stem, "format": fmt, "sha256": file_sha256(path),
                               "order": ORDERS.get(fmt or "", "file order"), "top_k": top_k, "token_budget": budget,
                               "limit": limit, "retrieval_effects": "off (replay default)",
                               "task_type_known_at_start": False}
    t_load = time.perf_counter()
    embedder.embed(["warm up"])
    model_s = time.perf_counter() - t_load
    with tempfile.TemporaryDirectory(prefix="hindsight-replay-") as tmp:
        root = str(workdir or tmp)

        def make() -> list[Any]:
            return build_systems(systems, config=cfg, configs=configs, embedder=embedder, top_k=top_k,
                                 token_budget=budget, root=root)

        if fmt == "locomo":
            from ..datasets.locomo import read_locomo, turn_to_episode

            convs = read_locomo(path, limit_conversations=limit)
            qrels = {f"{c.sample_id}#q{q.index}": {f"{c.sample_id}:{d}": 2 for d in q.evidence}
                     for c in convs for q in c.questions}
            candidates = {f"{c.sample_id}#q{q.index}": [f"{c.sample_id}:{t.dia_id}" for t in c.turns]
                          for c in convs for q in c.questions}
            judgements = Judgements.from_qrels(qrels, candidates)
            dataset.update(n_episodes=sum(len(c.turns) for c in convs), conversations=len(convs),
                           questions=len(qrels), skipped_category5=sum(c.skipped_category5 for c in convs),
                           clock="session dates")
            run = run_conversations(convs, make, to_episode=turn_to_episode, show_progress=show_progress)
        else:
            episodes, _ = load(path, format=fmt or "auto", strict=not skip_invalid, limit_tasks=limit)
            judgements = Judgements.from_episodes(episodes)
            systems_now = make()
            try:
                run = run_episodes(episodes, systems_now, query_ids=set(judgements.query_ids),
                                   show_progress=show_progress)
            finally:
                for s in systems_now:
                    s.close()
            dataset.update(n_episodes=len(episodes), clock=run.clock)
    run.timing["model_load_s"] = model_s
    return judge(run, judgements, dataset, metrics=metrics, seed=seed)
