"""What a journal unit holds, as JSON (:mod:`.journal`): query records with their ``stored`` lists delta-encoded
per system (:class:`StoredCodec`), memory-count and outcome rows, and the reflector's answers."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any, Mapping, Sequence

__all__ = ["StoredCodec", "decode_answer", "decode_query", "decode_row", "encode_answer", "encode_query", "encode_row"]


class StoredCodec:
    """Delta-encodes each system's successive ``stored`` lists (``[(memory_id, source_episode_ids), ...]``).

    A unit records only what changed since that system's previous list (``set``: new or changed entries,
    ``drop``: ids gone), so a journal grows with the store, not with its square. Encoder and decoder keep the same
    state: decode the units in the order they were encoded.
    """

    def __init__(self) -> None:
        self._last: dict[str, dict[str, tuple[str, ...]]] = {}

    def encode(self, system: str, stored: Sequence[tuple[str, Sequence[str]]] | None) -> dict[str, Any] | None:
        if stored is None:
            return None
        now = {mid: tuple(src) for mid, src in stored}
        if len(now) != len(stored):  # duplicate ids: keep the list as it is
            self._last.pop(system, None)
            return {"full": [[mid, list(src)] for mid, src in stored]}
        prev = self._last.get(system, {})
        delta = {"set": [[mid, list(src)] for mid, src in now.items() if prev.get(mid) != src],
                 "drop": [mid for mid in prev if mid not in now]}
        self._last[system] = now
        return delta

    def decode(self, system: str, delta: Mapping[str, Any] | None) -> list[tuple[str, tuple[str, ...]]] | None:
        if delta is None:
            return None
        if "full" in delta:
            self._last.pop(system, None)
            return [(mid, tuple(src)) for mid, src in delta["full"]]
        cur = dict(self._last.get(system, {}))
        for mid in delta["drop"]:
            cur.pop(mid, None)
        for mid, src in delta["set"]:
            cur[mid] = tuple(src)
        self._last[system] = cur
        return list(cur.items())


def encode_query(rec: Any, codec: StoredCodec) -> dict[str, Any]:
    """A :class:`~hindsight_lab.replay.records.QueryRecord` as a JSON object."""
    return {"system": rec.system, "query_id": rec.query_id, "order": rec.order,
            "injected": [[i.memory_id, i.kind, list(i.source_episode_ids), i.tokens] for i in rec.injected],
            "stored": codec.encode(rec.system, rec.stored), "latency_s": rec.latency_s, "at": rec.at.isoformat(),
            "group": rec.group}


def decode_query(row: Mapping[str, Any], codec: StoredCodec) -> Any:
    """The inverse of :func:`encode_query`."""
    from .records import QueryRecord
    from .systems import Injected

    return QueryRecord(row["system"], row["query_id"], row["order"],
                       [Injected(m, k, tuple(s), t) for m, k, s, t in row["injected"]],
                       codec.decode(row["system"], row["stored"]), row["latency_s"],
                       datetime.fromisoformat(row["at"]), row["group"])


def encode_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A memory-count or outcome row (``at`` as ISO-8601)."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def decode_row(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: datetime.fromisoformat(v) if k == "at" and isinstance(v, str) else v for k, v in row.items()}


def encode_answer(answer: Any) -> dict[str, Any]:
    """A reflector answer (:class:`~hindsight_lab.reflect.schema.Reflection` or ``Rejection``) as JSON."""
    from ..reflect.schema import Reflection

    if isinstance(answer, Reflection):
        return {"reflection": answer.model_dump(mode="json")}
    return {"rejection": asdict(answer)}


def decode_answer(row: Mapping[str, Any]) -> Any:
    from ..reflect.schema import Reflection, Rejection

    if "reflection" in row:
        return Reflection.model_validate(row["reflection"])
    return Rejection(**row["rejection"])
