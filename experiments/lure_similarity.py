"""Which is nearer to a lure query by sentence embedding: the right memory or the lure — with the names, ids,
numbers and e-mail addresses of every text masked, and without.

A lure pair (``hindsight_lab.datasets.synthetic`` scenario ``lures``) holds a query, the right memory (the same kind
of task in other words, about someone else) and a lure (another kind of task about the very same customer, order or
booking). If masking the entities made the right memory the nearer one, a rerank feature on the similarity of the
masked texts would separate lures from right memories; this counts, per seed, the pairs where it does::

    python experiments/lure_similarity.py --seeds 0,1,2 [--pairs 60]

Measured (all-MiniLM-L6-v2, 60 pairs per seed): the right memory is nearer in 0 / 0 / 0 pairs unmasked and in
0 / 4 / 2 masked. What the lure shares with the query is more than its names: the thing it is about and the shape
of the request; only knowledge of the task types (the ``embedding`` classifier of ``lure-resistant.yaml``, which
also reads the tools' words) puts the right memory first.
"""

from __future__ import annotations

import argparse

import numpy as np

from hindsight_lab.config import LabConfig
from hindsight_lab.datasets.synthetic import generate
from hindsight_lab.embed import embedder_for
from hindsight_lab.scenarios.lures import lure_pairs
from hindsight_lab.retrieve.wording import mask_entities


def nearer_counts(seed: int, n_pairs: int, embedder) -> tuple[int, int, int]:
    """``(pairs, right nearer unmasked, right nearer masked)`` for one seed."""
    pairs = lure_pairs(generate("lures", n=n_pairs, seed=seed))
    plain = masked = 0
    for p in pairs:
        texts = [p.query.instruction, p.right.instruction, p.lure.instruction]
        for count, vecs in (("plain", embedder.embed(texts)), ("masked", embedder.embed([mask_entities(t)
                                                                                           for t in texts]))):
            v = np.asarray(vecs)
            if float(v[0] @ v[1]) > float(v[0] @ v[2]):
                plain, masked = (plain + 1, masked) if count == "plain" else (plain, masked + 1)
    return len(pairs), plain, masked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds of the lure generator")
    parser.add_argument("--pairs", type=int, default=60, help="lure pairs per seed")
    args = parser.parse_args()
    embedder = embedder_for(LabConfig().embedder)
    for seed in (int(s) for s in args.seeds.split(",")):
        n, plain, masked = nearer_counts(seed, args.pairs, embedder)
        print(f"seed {seed}: right memory nearer than the lure in {plain}/{n} pairs unmasked, {masked}/{n} masked")


if __name__ == "__main__":
    main()
