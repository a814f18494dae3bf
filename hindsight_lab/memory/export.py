"""Export and import of a memory (backup, migration): the ``hindsight-lab memories export`` and ``import`` commands,
in :mod:`hindsight_lab.cli.memories`, call these.

**Export format** (JSONL, one record per line, archived ones included): every field of
:class:`~hindsight_lab.types.MemoryRecord` (times in ISO-8601 UTC, lists as lists), ``layer`` for reading, and
``embedding``: ``{"dtype": "float32", "dim": d, "b64": <little-endian float32 bytes, base64>}`` (exact) or null.

**Import** validates the whole file first (a bad line raises :class:`~hindsight_lab.errors.TraceFormatError` with
file, line and field, and nothing is written). A record whose ``embedding_model`` is the target's model keeps its
vector (so search results are the same); any other record is re-embedded with the target's model. Ids the target
already holds fail the import (``on_existing="fail"``, the default), are skipped or replaced.

Examples:
    >>> from hindsight_lab.types import Kind, MemoryRecord
    >>> row = record_to_json(MemoryRecord("rule-1", Kind.RULE, "Check the fare rules"))
    >>> row["layer"], row["embedding"]
    ('L3', None)
    >>> record_from_json(row, "x.jsonl", 1)[0].content
    'Check the fare rules'
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

import numpy as np
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from ..errors import MemoryNotFound, TraceFormatError, ValidationError
from ..jsonio.reading import dump_line, json_lines
from ..types import BUCKETS, Bucket, Kind, MemoryRecord, Trigger

if TYPE_CHECKING:
    from .system import MemorySystem

_TIMES = ("created_at", "last_confirmed_at", "last_retrieved_at", "last_triggered_at")


# ------------------------------------------------------------------------------------------------------ records
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class _Trigger(_Strict):
    any: list[str] = []
    all: list[str] = []
    task_types: list[str] = []


class _Embedding(_Strict):
    dtype: Literal["float32"] = "float32"
    dim: int = Field(ge=1)
    b64: str


class _Line(_Strict):
    """One exported record (validation of an import line)."""

    id: str = Field(min_length=1)
    kind: Literal["episode", "candidate", "rule"]
    layer: Literal["L2", "L3"] | None = None
    content: str
    task_type: str | None = None
    domain: str | None = None
    confidence: float = Field(0.5, ge=0, le=1)
    counter_examples: list[str] = []
    hit_count: int = Field(1, ge=1)
    outcome: Literal["success", "failure", "partial"] | None = None
    trigger: _Trigger | None = None
    source_episode_ids: list[str] = []
    task_id: str | None = None
    key: str | None = None
    created_at: AwareDatetime
    last_confirmed_at: AwareDatetime | None = None
    last_retrieved_at: AwareDatetime | None = None
    last_triggered_at: AwareDatetime | None = None
    ups: int = Field(0, ge=0)
    downs: int = Field(0, ge=0)
    feedback_notes: list[str] = []
    decay_steps: int = Field(0, ge=0)
    archived: bool = False
    embedding_model: str = ""
    debug_trace: list[dict[str, Any]] = []
    attrs: dict[str, Any] = {}
    embedding: _Embedding | None = None


def record_to_json(rec: MemoryRecord, embedding: np.ndarray | None = None) -> dict[str, Any]:
    """One export line (a plain dict) for a record and its vector."""
    out: dict[str, Any] = {"id": rec.id, "kind": rec.kind.value, "layer": rec.layer.value, "content": rec.content}
    for name in ("task_type", "domain", "confidence", "hit_count", "outcome", "task_id", "key", "ups", "downs",
                 "decay_steps", "archived", "embedding_model"):
        out[name] = getattr(rec, name)
    out["counter_examples"] = list(rec.counter_examples)
    out["trigger"] = rec.trigger.to_dict() if rec.trigger else None
    out["source_episode_ids"] = list(rec.source_episode_ids)
    out["feedback_notes"] = list(rec.feedback_notes)
    for name in _TIMES:
        value = getattr(rec, name)
        out[name] = value.isoformat() if value is not None else None
    out["debug_trace"] = [dict(e) for e in rec.debug_trace]
    out["attrs"] = dict(rec.attrs)
    if embedding is None:
        out["embedding"] = None
    else:
        vec = np.asarray(embedding, dtype="<f4")
        out["embedding"] = {"dtype": "float32", "dim": int(vec.shape[0]),
                            "b64": base64.b64encode(vec.tobytes()).decode("ascii")}
    return out


def record_from_json(data: Any, path: str, line: int) -> tuple[MemoryRecord, np.ndarray | None]:
    """Validate one export line; :class:`TraceFormatError` names the file, the line and the field."""
    if not isinstance(data, dict):
        raise TraceFormatError(f"expected a JSON object, got {type(data).__name__}", path=path, line=line)
    try:
        row = _Line.model_validate(data)
    except PydanticError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more problem(s) on this line)" if len(exc.errors()) > 1 else ""
        raise TraceFormatError(f"{msg} (got {err.get('input')!r}){more}", path=path, line=line, field=field) \
            from None
    if row.layer is not None and row.layer != Kind(row.kind).layer.value:
        raise TraceFormatError(f"layer {row.layer} does not match kind {row.kind!r}", path=path, line=line,
                               field="layer")
    emb = None
    if row.embedding is not None:
        try:
            raw = base64.b64decode(row.embedding.b64, validate=True)
        except ValueError:
            raise TraceFormatError("not valid base64", path=path, line=line, field="embedding.b64") from None
        if len(raw) != 4 * row.embedding.dim:
            raise TraceFormatError(f"{len(raw)} bytes, expected {4 * row.embedding.dim} for dim "
                                   f"{row.embedding.dim}", path=path, line=line, field="embedding.b64")
        emb = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        if not np.isfinite(emb).all():
            raise TraceFormatError("holds NaN or infinite values", path=path, line=line, field="embedding")
    kw = row.model_dump(exclude={"layer", "embedding", "trigger"})
    for name in ("counter_examples", "source_episode_ids", "feedback_notes", "debug_trace"):
        kw[name] = tuple(kw[name])
    kw["kind"] = Kind(row.kind)
    kw["trigger"] = Trigger.from_dict(row.trigger.model_dump()) if row.trigger else None
    return MemoryRecord(**kw), emb


# ------------------------------------------------------------------------------------------------------ export/import
def all_rows(mem: "MemorySystem", archived: bool = True) -> Iterable[tuple[MemoryRecord, np.ndarray]]:
    """Every record of every bucket (the archive too unless ``archived=False``) with its vector, by id, after a flush."""
    mem.ensure_open()
    mem.flush()
    for bucket in BUCKETS:
        if bucket is Bucket.ARCHIVE and not archived:
            continue
        rows = list(mem.store.scan(bucket, with_embeddings=True))
        yield from sorted(rows, key=lambda r: r[0].id)


def export_jsonl(mem: "MemorySystem", path: str | Path, *, archived: bool = True, embeddings: bool = True) -> int:
    """Write every record (archived ones too unless ``archived=False``) to ``path``; returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = path.with_name(path.name + ".part")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec, emb in all_rows(mem, archived):
            fh.write(dump_line(record_to_json(rec, emb if embeddings else None)) + "\n")
            n += 1
    tmp.replace(path)
    return n


def read_export(path: str | Path) -> list[tuple[MemoryRecord, np.ndarray | None, int]]:
    """Every record of an export file with its vector and line number; the whole file is validated."""
    path = Path(path)
    out = []
    seen: dict[str, int] = {}
    for n, data in json_lines(path, "export"):
        rec, emb = record_from_json(data, str(path), n)
        if rec.id in seen:
            raise TraceFormatError(f"duplicate id {rec.id!r} (first on line {seen[rec.id]})", path=str(path),
                                   line=n, field="id")
        seen[rec.id] = n
        out.append((rec, emb, n))
    return out


def import_jsonl(mem: "MemorySystem", path: str | Path, *,
                 on_existing: Literal["fail", "skip", "replace"] = "fail") -> dict[str, int]:
    """Import an export file into ``mem``: validate it all, re-embed what another model embedded, then write.

    Returns counts: ``imported``, ``kept_vectors``, ``reembedded``, ``skipped``, ``replaced``.

    Raises:
        TraceFormatError: a malformed line (file:line, field); nothing was written.
        ValidationError: ids the target already holds (``on_existing="fail"``), or vectors of the target's model
            with another dimension; nothing was written.
    """
    if on_existing not in ("fail", "skip", "replace"):
        raise ValidationError(f"import: on_existing: expected 'fail', 'skip' or 'replace' (got {on_existing!r})")
    rows = read_export(path)
    mem.ensure_open()
    existing = [rec.id for rec, _, _ in rows if holds(mem, rec.id)]
    if existing and on_existing == "fail":
        raise ValidationError(f"import {path}: the target already holds {len(existing)} of these ids (e.g. "
                              f"{existing[:3]}); pass on_existing='skip' or 'replace' (--skip-existing / "
                              "--replace-existing); nothing was written")
    skip = set(existing) if on_existing == "skip" else set()
    rows = [r for r in rows if r[0].id not in skip]
    model = mem.embedder.name()
    keep = [i for i, (rec, emb, _) in enumerate(rows) if emb is not None and rec.embedding_model == model]
    redo_set = set(range(len(rows))) - set(keep)
    redo = sorted(redo_set)
    vectors: dict[int, np.ndarray] = {i: rows[i][1] for i in keep}  # type: ignore[misc]
    if redo:
        fresh = mem.embedder.embed([rows[i][0].embed_text for i in redo])
        vectors.update({i: fresh[j] for j, i in enumerate(redo)})
    if rows:
        dim = len(vectors[redo[0]]) if redo else len(mem.embedder.embed_query("dimension probe"))
        bad = next((i for i in keep if len(vectors[i]) != dim), None)
        if bad is not None:
            raise ValidationError(f"import {path}:{rows[bad][2]}: embedding has {len(vectors[bad])} dimensions, the "
                                  f"target's model {model!r} makes {dim}; nothing was written")
    records = [replace(rec, embedding_model=model) if i in redo_set else rec for i, (rec, _, _) in enumerate(rows)]
    if on_existing == "replace":
        for rid in existing:
            mem.delete(rid)
    if records:
        mem.put_records(records, np.stack([vectors[i] for i in range(len(records))]))
    return {"imported": len(records), "kept_vectors": len(keep), "reembedded": len(redo), "skipped": len(skip),
            "replaced": len(existing) if on_existing == "replace" else 0}


def holds(mem: "MemorySystem", record_id: str) -> bool:
    """Whether the memory holds a record with this id (in any layer)."""
    try:
        mem.get(record_id)
    except MemoryNotFound:
        return False
    return True
