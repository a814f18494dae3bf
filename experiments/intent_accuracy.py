"""How well a query's task type can be read from its request: the ceiling of any task-type term in the rerank.

On the synthetic lures a task-type match is what puts the right memory before the lure, and on tau-bench it is what
costs the same-task retries their place when the guess is wrong. Both depend on how often the classifier's guess is
right. This trains the classifiers of ``hindsight_lab.retrieve.classify`` on what a memory would hold when each
query comes (the pair's stored runs for a lure query; every earlier run for a tau-bench query), each run labelled
with the task type derived from its own tools, and counts how often the guess is the query's type::

    python experiments/intent_accuracy.py --seeds 0,1,2 [--tau PATH]

For a lure query the type to guess is the one its own run derives; for a tau-bench query, the dataset's
ground-truth type (what the task needed). ``prequential`` is the classifier's accuracy on each stored run just
before it learns from it (predict, then learn), a figure a memory could compute for itself.

Measured (all-MiniLM-L6-v2; lures 60 pairs per seed, seeds 0-2; tau-bench airline dev, the 90 queries after the
first trial; ``--tau`` the airline dev split; 40 s on a 2-core machine):

| classifier | right | right where p > 0.3 | right where p > 0.5 |
|---|---|---|---|
| lures, embedding | 156/180 | 155/178 | 122/134 |
| lures, embedding, no tool words | 116/180 | 115/177 | 65/81 |
| lures, logistic (TF-IDF) | 111/180 | 107/171 | 73/103 |
| lures, embedding, instance-blind | 167/180 | 165/178 | 135/146 |
| lures, embedding, instance-blind, contrast (the default) | 175/180 | 174/179 | 165/170 |
| tau-bench, embedding | 38/90 | 36/81 | 28/50 |
| tau-bench, embedding, no tool words | 40/90 | 38/83 | 26/46 |
| tau-bench, logistic (TF-IDF) | 34/90 | 33/87 | 22/55 |
| tau-bench, embedding, instance-blind | 35/90 | 33/78 | 27/48 |
| tau-bench, embedding, instance-blind, contrast (the default) | 36/90 | 34/78 | 27/50 |

Prequential accuracy: lures 1256/1483 = 0.847, tau-bench 49/93 = 0.527. So on the lures the whole request's guess
is right for 0.87 of the queries it answers (a task-type term cannot put the right memory first more often than
that), and on tau-bench, whose first messages rarely say what is to be done, for under half: a weight that wins the
lures hands tau-bench's ranking to a wrong guess. The default's reading (``retrieval.classifier.instance_blind`` and
``contrast``, with its ``min_share`` and ``min_votes``) is right for 0.97 of the lure queries and leaves tau-bench
about where it was (36 of 90 against 38): it reads what sets a query apart from the other requests about its
instance, and a tau-bench query has few of those.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

READ_ONLY = ("get", "search", "list", "find", "lookup", "read", "fetch", "query", "calculate", "think", "check",
             "verify", "quote", "view", "show", "transfer", "finish", "answer", "respond")


def _unit(embedder):
    cache: dict[str, np.ndarray] = {}

    def embed(texts):
        texts = list(texts)
        new = [t for t in texts if t not in cache]
        if new:
            m = np.asarray(embedder.embed(new), dtype=np.float64)
            cache.update(zip(new, m / np.linalg.norm(m, axis=1, keepdims=True)))
        return np.stack([cache[t] for t in texts])
    return embed


def _classifier(method: str, embed, describe_weight: float, reading: str = "whole"):
    """``reading``: ``whole`` (the query read alone), ``instance-blind`` or ``contrast`` (the default's reading, with
    the default's ``min_share`` and ``min_votes``, which decide which stored requests about the instance count)."""
    from hindsight_lab.config import LabConfig
    from hindsight_lab.retrieve.classify import TaskTypeClassifier

    if reading == "whole":
        return TaskTypeClassifier(min_votes=1, min_share=0.0, method=method, embed=embed,
                                  describe_weight=describe_weight)
    c = LabConfig().retrieval.classifier
    return TaskTypeClassifier(min_votes=c.min_votes, min_share=c.min_share, method=method, embed=embed,
                              describe_weight=describe_weight, instance_blind=True, contrast=reading == "contrast")


VARIANTS = {"embedding": ("embedding", 10.0, "whole"), "embedding, no tool words": ("embedding", 0.0, "whole"),
            "logistic (TF-IDF)": ("logistic", 10.0, "whole"),
            "embedding, instance-blind": ("embedding", 10.0, "instance-blind"),
            "embedding, instance-blind, contrast (the default)": ("embedding", 10.0, "contrast")}


def guess(memory, query: str, variant: str, embed) -> tuple[str | None, float]:
    """The best type and its probability for ``query`` after learning ``memory`` (episodes in time order)."""
    from hindsight_lab.trace.summary import derive_task_type

    method, weight, reading = VARIANTS[variant]
    clf = _classifier(method, embed, weight, reading)
    for j, e in enumerate(memory):
        clf.add(str(j), e.instruction, derive_task_type(e, READ_ONLY), float(j), tools=e.tool_names())
    probs = clf.probabilities(query)
    if not probs:
        return None, 0.0
    best = max(probs, key=probs.get)
    return best, probs[best]


def prequential(memory, embed) -> tuple[int, int]:
    """(right, asked): each stored run's type guessed from the runs before it, once its type has been seen."""
    from hindsight_lab.trace.summary import derive_task_type

    clf = _classifier("embedding", embed, 10.0)
    right = asked = 0
    seen: set[str] = set()
    for j, e in enumerate(memory):
        t = derive_task_type(e, READ_ONLY)
        if t and t in seen and len(seen) > 1:
            probs = clf.probabilities(e.instruction)
            asked += 1
            right += max(probs, key=probs.get) == t
        if t:
            clf.add(str(j), e.instruction, t, float(j), tools=e.tool_names())
            seen.add(t)
    return right, asked


def _row(name: str, guesses: list[tuple[bool, float]]) -> str:
    out = [name, f"{sum(ok for ok, _ in guesses)}/{len(guesses)}"]
    for floor in (0.3, 0.5):
        used = [ok for ok, p in guesses if p > floor]
        out.append(f"{sum(used)}/{len(used)}")
    return "| " + " | ".join(out) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--tau", type=Path, help="a tau-bench trace file (e.g. the airline dev split)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from hindsight_lab.datasets import load
    from hindsight_lab.datasets.synthetic import generate
    from hindsight_lab.embed import make_embedder
    from hindsight_lab.scenarios.lures import lure_pairs
    from hindsight_lab.trace.summary import derive_task_type

    embed = _unit(make_embedder("all-MiniLM-L6-v2"))
    print("| classifier | right | right where p > 0.3 | right where p > 0.5 |\n|---|---|---|---|")
    pairs = [p for s in args.seeds.split(",") for p in lure_pairs(generate("lures", n=args.pairs, seed=int(s)))]
    for variant in VARIANTS:
        g = []
        for p in pairs:
            t, prob = guess(p.memories, p.query.instruction, variant, embed)
            g.append((t == derive_task_type(p.query, READ_ONLY), prob))
        print(_row(f"lures, {variant}", g))
    right, asked = map(sum, zip(*(prequential(p.memories, embed) for p in pairs)))
    print(f"lures: prequential accuracy {right}/{asked} = {right / max(asked, 1):.3f}")
    if args.tau:
        eps, _ = load(args.tau)
        first = len({e.task_id for e in eps})
        for variant in VARIANTS:
            g = []
            for i in range(first, len(eps)):
                t, prob = guess(eps[:i], eps[i].instruction, variant, embed)
                g.append((t == eps[i].task_type, prob))
            print(_row(f"tau-bench, {variant}", g))
        right, asked = prequential(eps, embed)
        print(f"tau-bench: prequential accuracy {right}/{asked} = {right / max(asked, 1):.3f}")


if __name__ == "__main__":
    main()
