"""Finishing what a killed write left half done: a promotion is two store calls (the rule written to L3, then the
candidate deleted from L2), and a candidate's last confirmation and its promotion are two more. A process killed
between them leaves a candidate that is also a rule, or a candidate that qualifies and was never promoted.

:func:`finish_promotions` runs when a reflection run meets episodes that are already stored (it is a rerun over the
store of a run that stopped): it completes each such promotion exactly once, so the rerun ends as an uninterrupted
run would have (``tests/reflect/test_resume.py`` kills the process at each step with ``SIGKILL``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from ..types import Bucket
from .writes import Writes

logger = logging.getLogger(__name__)

PROMOTED_FROM = "promoted_from"
"""``attrs`` key of a rule that a promoted candidate merged into: ``{candidate id: promoted_at}``, so that a rerun
can tell that the merge happened (the candidate's own id is gone from it)."""


def finish_promotions(writes: Writes, now: datetime) -> int:
    """Complete every promotion a killed run left: a candidate whose rule is stored (under its id, or merged into
    another rule that lists it in ``attrs.promoted_from``) is deleted from L2; a candidate that qualifies is
    promoted at its last confirmation (when the uninterrupted run promoted it). Returns how many were finished."""
    store = writes.store
    candidates = list(store.scan(Bucket.CANDIDATE, with_embeddings=True))
    if not candidates:
        return 0
    rules = {rec.id: rec for rec in store.scan(Bucket.RULE)}
    merged = {cid for rec in rules.values() for cid in (rec.attrs or {}).get(PROMOTED_FROM, {})}
    finished = 0
    for cand, emb in sorted(candidates, key=lambda pair: pair[0].id):
        if cand.id in rules or cand.id in merged:
            store.delete(Bucket.CANDIDATE, [cand.id])
            if cand.id in rules:
                writes.track(rules[cand.id], Bucket.RULE)  # the id now names the rule alone
            else:
                writes.forget(cand.id)
        elif writes.promotable(cand):
            writes.promote(cand, emb, cand.last_confirmed_at or now)
        else:
            continue
        finished += 1
        logger.info("finished the promotion of %s that a stopped run left half done", cand.id)
    return finished
