"""Explicit feedback on a memory (DESIGN §2.5): up raises its confidence, down lowers it at once, and the
``feedback.delete_after_downs``-th down deletes it; a text is kept with the signal (``feedback_notes``)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from ..types import Bucket, MemoryRecord

logger = logging.getLogger(__name__)

#: Every accepted signal, by what it means.
SIGNALS = {"up": "up", "+1": "up", 1: "up", "down": "down", "-1": "down", -1: "down", "correction": "down"}


def apply_feedback(writes: Any, rec: MemoryRecord, bucket: Bucket, kind: str, text: str | None, cfg: Any
                   ) -> MemoryRecord | None:
    """Store the record as ``kind`` (``"up"`` or ``"down"``) changes it; None when the down deleted it."""
    notes = rec.feedback_notes + ((f"{kind}: {text}",) if text else ())
    if kind == "up":
        new = replace(rec, ups=rec.ups + 1, confidence=min(1.0, rec.confidence + cfg.up_step), feedback_notes=notes)
    elif rec.downs + 1 >= cfg.delete_after_downs:
        writes.delete(bucket, [rec.id])
        logger.info("deleted %s after %d downs", rec.id, rec.downs + 1)
        return None
    else:
        new = replace(rec, downs=rec.downs + 1, confidence=max(0.0, rec.confidence - cfg.down_step),
                      feedback_notes=notes)
    writes.annotate(bucket, [new])
    return new
