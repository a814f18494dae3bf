"""The scenario generator: ``n`` seeded groups of a scenario as episodes in replay order."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any, Callable

from ...trace import Episode
from .episodes import START
from .floods import floods
from .lures import lures
from .order import lucky, policy
from .strategic import strategic

SCENARIOS: tuple[str, ...] = ("lures", "floods", "lucky", "policy", "strategic")
"""Scenario names accepted by :func:`generate`."""

GROUP_DAYS = 14
"""Days between the starts of two groups of a scenario."""

_GENERATORS: dict[str, Callable[..., list[Episode]]] = {
    "lures": lures, "floods": floods, "lucky": lucky, "policy": policy, "strategic": strategic}


def generate(scenario: str, *, n: int, seed: int, **options: Any) -> list[Episode]:
    """``n`` groups of a scenario as episodes in replay order (their own ``started_at`` clock).

    Args:
        scenario: one of :data:`SCENARIOS`.
        n: groups (lure pairs, floods, …); each gets its own span of :data:`GROUP_DAYS` days.
        seed: everything is a pure function of ``(scenario, n, seed, options)``.
        **options: ``lures``: ``background_per_type`` (3); ``floods``: ``retries`` (15).

    Raises:
        ValueError: an unknown scenario or ``n < 1``.

    Examples:
        >>> [e.meta["role"] for e in generate("lucky", n=1, seed=1)][-5:]
        ['lucky', 'repeat', 'repeat', 'repeat', 'query']
    """
    if scenario not in _GENERATORS:
        raise ValueError(f"unknown synthetic scenario {scenario!r}; expected one of {list(SCENARIOS)}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer (got {n!r})")
    rng = random.Random(f"hindsight-synthetic/{scenario}/{seed}")
    out: list[Episode] = []
    for i in range(n):
        out.extend(_GENERATORS[scenario](rng, i, START + timedelta(days=GROUP_DAYS * i), **options))
    return out
