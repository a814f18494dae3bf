"""The ``lures`` scenario: lexical lures across task types, and the word overlap that makes a lure.

Per pair: background episodes (``background_per_type`` of every task type about the same kind of thing as the
query, one of every other), a **right** memory (the query's intent in other words, other entities) and a **lure**
(another task type about the very same order, account or booking, so it shares most of the query's words), then
the **query**, whose ``relevant_episode_ids`` is ``[right]``.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta

from ...trace import Episode
from .episodes import background, build_episode, by_time, minutes, phrase
from .names import draw_entities
from .tasks import TASK_TYPES

_STOP = frozenset("a an and are as at be by for from has have in is it its of on or so the that their them they "
                  "this to was were will with".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def content_tokens(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens of ``text`` without common English stopwords.

    Examples:
        >>> sorted(content_tokens("Refund order 42 for the BLUE jacket"))
        ['42', 'blue', 'jacket', 'order', 'refund']
    """
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


def shared_tokens(a: str, b: str) -> int:
    """How many content tokens two texts share (:func:`content_tokens`).

    Examples:
        >>> shared_tokens("Cancel order 42 for Maria", "Refund order 42 for Maria")
        3
    """
    return len(content_tokens(a) & content_tokens(b))


def lures(rng: random.Random, i: int, t0: datetime, *, background_per_type: int = 3) -> list[Episode]:
    """Group ``i`` of the scenario, starting at ``t0``."""
    group = f"lures-{i:03d}"
    contexts: dict[str, list[str]] = {}
    for name, t in TASK_TYPES.items():
        contexts.setdefault(t.context, []).append(name)
    q_name = rng.choice([n for n in TASK_TYPES if len(contexts[TASK_TYPES[n].context]) > 1])
    qt = TASK_TYPES[q_name]
    lt = TASK_TYPES[rng.choice([n for n in contexts[qt.context] if n != q_name])]
    ents = draw_entities(rng)
    query = phrase(rng, qt, ents, "canonical")
    lure = phrase(rng, lt, ents, "canonical")
    for _ in range(50):  # the right memory: other words, other entities, fewer shared tokens than the lure
        r_ents = draw_entities(rng)
        right = phrase(rng, qt, r_ents, "paraphrase")
        if shared_tokens(right, query) < shared_tokens(lure, query) and r_ents["city"] != ents["city"]:
            break
    span = 24.0 * 10
    near = contexts[qt.context]  # the task types the query could be confused with, then one run of every other
    bg = background(rng, group, t0, span, background_per_type, near) \
        + background(rng, group, t0, span, 1, [n for n in TASK_TYPES if n not in near])
    meta = {"scenario": "lures", "group": group}
    ids = {"right": f"{group}-right", "lure": f"{group}-lure", "query": f"{group}-query"}
    right_ep = build_episode(ids["right"], qt, right, r_ents, calls=qt.steps,
                             started_at=t0 + minutes(rng, span), meta={**meta, "role": "right"})
    lure_ep = build_episode(ids["lure"], lt, lure, ents, calls=lt.steps,
                            started_at=t0 + minutes(rng, span), meta={**meta, "role": "lure"})
    query_ep = build_episode(ids["query"], qt, query, ents, calls=qt.steps,
                             started_at=t0 + timedelta(hours=span + 1), relevant=[ids["right"]],
                             meta={**meta, "role": "query", "right": ids["right"], "lure": ids["lure"],
                                   "lure_type": lt.name})
    return by_time([*bg, right_ep, lure_ep]) + [query_ep]
