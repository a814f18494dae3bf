"""``hindsight-lab bench --conflicts N``: how long the conflict pass takes on N rules (target: clustering 5,000
rules in at most 10 s on the 2-core development machine).

The rules come from :func:`~hindsight_lab.datasets.synthetic.rules.planted_rules` (N / 4 groups), embedded with the
bench's ``--model`` (timed apart: embedding is not part of the pass). Reported (:func:`run_conflict_bench`, rendered
by :func:`format_conflict_bench`): HDBSCAN clustering, pairing, judging and the whole pass. (Precision and recall
are measured on small sets, where topics do not repeat: see ``tests/conflicts`` and
``notebooks/05_conflicts.ipynb``; at this size the generator's topics repeat, so many extra contradictions are real
but unlabelled.)
"""

from __future__ import annotations

import time
from typing import Any

from ..types import Bucket

TARGET_CLUSTER_S = 10.0


def run_conflict_bench(n: int, *, model: str = "all-MiniLM-L6-v2", seed: int = 0) -> dict[str, Any]:
    """Time the conflict pass on ``n`` generated rules (rounded to whole groups of four)."""
    from ..config import LabConfig
    from ..conflicts.scan import scan
    from ..datasets.synthetic.rules import planted_rules
    from ..embed import make_embedder

    records, _ = planted_rules(max(1, n // 4), seed=seed)
    embedder = make_embedder(model)
    t0 = time.perf_counter()
    x = embedder.embed([r.content for r in records])
    embed_s = time.perf_counter() - t0
    plan = scan(records, [Bucket.RULE] * len(records), x, LabConfig())
    summary = plan.summary()
    return {"rules": len(records), "model": embedder.name(), "embed_s": embed_s, **{f"{k}_s": v for k, v in
            summary["seconds"].items()}, "clusters": summary["clusters"], "noise": summary["noise"],
            "pairs": summary["pairs"], "conflicts": summary["conflicts"],
            "target_cluster_s": TARGET_CLUSTER_S, "met": summary["seconds"]["cluster"] <= TARGET_CLUSTER_S}


def format_conflict_bench(out: dict[str, Any]) -> str:
    """The figures of :func:`run_conflict_bench` as the text ``bench --conflicts`` prints."""
    return (f"conflict pass on {out['rules']} rules ({out['model']}; embedding took {out['embed_s']:.1f} s, not "
            f"counted):\n"
            f"  HDBSCAN clustering  {out['cluster_s']:7.2f} s   (target <= {TARGET_CLUSTER_S:.0f} s: "
            f"{'met' if out['met'] else 'NOT met'})\n"
            f"  pairing             {out['pairs_s']:7.2f} s   ({out['pairs']} pairs)\n"
            f"  judging             {out['judge_s']:7.2f} s   ({out['conflicts']} contradicting)\n"
            f"  whole pass          {out['total_s']:7.2f} s\n"
            f"  {out['clusters']} clusters, {out['noise']} rules labelled noise")
