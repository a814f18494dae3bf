"""Memory management: list, show, delete, export, import, inspect — and the ``hindsight-lab memories`` and
``hindsight-lab inspect`` commands.

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

import argparse
import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

import numpy as np
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from .datasets._io import json_lines
from .errors import HindsightLabError, MemoryNotFound, TraceFormatError, ValidationError
from .protocols import BUCKETS
from .types import Kind, MemoryRecord, Trigger

if TYPE_CHECKING:
    import pandas as pd

    from .memory import MemorySystem

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
def _all_rows(mem: "MemorySystem", archived: bool = True) -> Iterable[tuple[MemoryRecord, np.ndarray]]:
    mem._ready()
    mem.flush()
    for bucket in BUCKETS:
        if bucket == "archive" and not archived:
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
        for rec, emb in _all_rows(mem, archived):
            fh.write(json.dumps(record_to_json(rec, emb if embeddings else None), ensure_ascii=False) + "\n")
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
    mem._ready()
    existing = [rec.id for rec, _, _ in rows if _exists(mem, rec.id)]
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


def _exists(mem: "MemorySystem", record_id: str) -> bool:
    try:
        mem.get(record_id)
    except MemoryNotFound:
        return False
    return True


# ------------------------------------------------------------------------------------------------------ list / inspect
def list_frame(mem: "MemorySystem", *, layer: str | None = None, kind: str | None = None,
               task_type: str | None = None, archived: str = "active", limit: int | None = None
               ) -> "pd.DataFrame":
    """Records filtered by layer (L2/L3), kind, task_type; ``archived``: ``active``, ``archived`` or ``all``."""
    import pandas as pd

    if layer is not None and layer not in ("L2", "L3"):
        raise ValidationError(f"list: layer: expected L2 or L3 (got {layer!r}); L1 working memory is not stored")
    if kind is not None and kind not in ("episode", "candidate", "rule"):
        raise ValidationError(f"list: kind: expected episode, candidate or rule (got {kind!r})")
    recs = [rec for rec, _ in _all_rows(mem, archived != "active")
            if (archived != "archived" or rec.archived) and (archived != "active" or not rec.archived)]
    recs = [r for r in recs if (layer is None or r.layer.value == layer) and (kind is None or r.kind.value == kind)
            and (task_type is None or r.task_type == task_type)]
    rows = [{"id": r.id, "layer": r.layer.value, "kind": r.kind.value, "task_type": r.task_type,
             "confidence": round(r.confidence, 3), "hits": r.hit_count, "archived": r.archived,
             "created_at": r.created_at.strftime("%Y-%m-%d %H:%M"), "flags": _flags(r),
             "content": " ".join(r.content.split())[:80]} for r in recs[:limit]]
    return pd.DataFrame(rows, columns=["id", "layer", "kind", "task_type", "confidence", "hits", "archived",
                                       "created_at", "flags", "content"])


def _flags(rec: MemoryRecord) -> str:
    out = []
    if rec.attrs.get("conflicts_with"):
        out.append(f"conflicts:{len(rec.attrs['conflicts_with'])}")
    if rec.attrs.get("superseded_by"):
        out.append("superseded")
    if rec.attrs.get("merged_from"):
        out.append(f"merged:{len(rec.attrs['merged_from'])}")
    return ",".join(out)


def inspect(mem: "MemorySystem", memory_id: str) -> dict[str, Any]:
    """Everything known about one memory: the record, its provenance (source episodes and how they ended), the
    retrievals and the outcomes of the tasks that used it, feedback, and conflict links (successor chain)."""
    rec = mem.get(memory_id)
    sources = []
    episodes = {r.source_episode_ids[0]: r for r in mem.records(Kind.EPISODE) if r.source_episode_ids}
    episodes.update({r.source_episode_ids[0]: r for r in mem.records(Kind.EPISODE, archived=True)
                     if r.source_episode_ids})
    for eid in rec.source_episode_ids:
        ep = episodes.get(eid)
        sources.append({"episode_id": eid, "memory_id": ep.id if ep else None, "outcome": ep.outcome if ep else None,
                        "task_type": ep.task_type if ep else None,
                        "instruction": " ".join((ep.key or ep.content).split())[:120] if ep else None})
    trace = [dict(e) for e in rec.debug_trace]
    chain, seen, cur = [], {rec.id}, rec
    while cur.attrs.get("superseded_by") and cur.attrs["superseded_by"] not in seen:
        nxt = cur.attrs["superseded_by"]
        seen.add(nxt)
        try:
            cur = mem.get(nxt)
        except MemoryNotFound:
            chain.append({"id": nxt, "state": "deleted"})
            break
        chain.append({"id": cur.id, "state": "archived" if cur.archived else "active",
                      "content": " ".join(cur.content.split())[:120]})
    return {"record": record_to_json(rec),
            "provenance": sources,
            "retrievals": [e for e in trace if e.get("event") == "retrieved"],
            "outcomes": [e for e in trace if e.get("event") == "outcome"],
            "feedback": {"ups": rec.ups, "downs": rec.downs, "notes": list(rec.feedback_notes)},
            "conflicts": {"conflicts_with": list(rec.attrs.get("conflicts_with", [])),
                          "superseded_by": rec.attrs.get("superseded_by"), "successor_chain": chain,
                          "supersedes": list(rec.attrs.get("supersedes", [])),
                          "merged_from": list(rec.attrs.get("merged_from", []))}}


# ------------------------------------------------------------------------------------------------------ CLI
def add_commands(sub: Any) -> None:
    """Register ``memories`` (list, show, delete, export, import) and ``inspect`` on the CLI's subparsers."""
    mem_p = sub.add_parser("memories", help="list, show, delete, export or import the memories of a store")
    ops = mem_p.add_subparsers(dest="op", required=True)
    lst = ops.add_parser("list", help="records as a table, filtered")
    lst.add_argument("--layer", choices=["L2", "L3"])
    lst.add_argument("--kind", choices=["episode", "candidate", "rule"])
    lst.add_argument("--task-type")
    lst.add_argument("--archived", choices=["active", "archived", "all"], default="active")
    lst.add_argument("--limit", type=int)
    show = ops.add_parser("show", help="one record in full (JSON)")
    show.add_argument("id")
    delete = ops.add_parser("delete", help="delete records by id (archived ones too)")
    delete.add_argument("ids", nargs="+")
    exp = ops.add_parser("export", help="write every record (and its vector) to a JSONL file")
    exp.add_argument("file")
    exp.add_argument("--no-archived", action="store_true", help="leave archived records out")
    exp.add_argument("--no-embeddings", action="store_true", help="leave vectors out (the target re-embeds)")
    imp = ops.add_parser("import", help="import a JSONL export (validated whole first; re-embeds for another model)")
    imp.add_argument("file")
    how = imp.add_mutually_exclusive_group()
    how.add_argument("--skip-existing", action="store_true", help="skip ids the target already holds")
    how.add_argument("--replace-existing", action="store_true", help="replace ids the target already holds")
    for p in (lst, show, delete, exp, imp):
        _store_args(p)
    mem_p.set_defaults(func=cmd_memories)
    ins = sub.add_parser("inspect", help="provenance, retrievals, outcomes, feedback and conflict links of a memory")
    ins.add_argument("memory_id")
    ins.add_argument("--json", action="store_true", help="print the whole inspection as JSON")
    _store_args(ins)
    ins.set_defaults(func=cmd_inspect)


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="folder of an embedded store, a Chroma server URL, or a Postgres "
                   "URL (postgresql://…, postgresql+embedded:///FOLDER)")
    p.add_argument("--config", help="LabConfig YAML file (its embedder.model is the store's model)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted config override (repeatable)")


def _open(args: argparse.Namespace, *, create: bool = False, read_only: bool = False) -> "MemorySystem":
    """The ``--store`` memory; ``read_only`` takes no writer lock, so it works beside a running writer."""
    from .cliargs import load_config, store_params
    from .memory import MemorySystem

    where = store_params(args.store)
    if "store.path" in where and not create and not Path(args.store).is_dir():
        raise HindsightLabError(f"--store {args.store}: no such folder")
    return MemorySystem(load_config(args).with_params({**where, "store.read_only": read_only})).open()


def cmd_memories(args: argparse.Namespace) -> int:
    import pandas as pd

    if args.op == "import":
        read_export(args.file)  # a malformed file fails before the target store is even opened
    mem = _open(args, create=args.op == "import", read_only=args.op in ("list", "show", "export"))
    try:
        if args.op == "list":
            frame = list_frame(mem, layer=args.layer, kind=args.kind, task_type=args.task_type,
                               archived=args.archived, limit=args.limit)
            with pd.option_context("display.width", 220, "display.max_colwidth", 80, "display.max_rows", 1000):
                print(frame.to_string(index=False) if len(frame) else "(no records)")
            print(f"\n{len(frame)} record(s)")
        elif args.op == "show":
            print(json.dumps(record_to_json(mem.get(args.id)), indent=2, ensure_ascii=False))
        elif args.op == "delete":
            missing = [i for i in args.ids if not _exists(mem, i)]
            if missing:
                raise MemoryNotFound(f"no memory with id {missing[0]!r}; nothing was deleted")
            for rid in args.ids:
                rec = mem.delete(rid)
                print(f"deleted {rid} ({rec.layer.value} {rec.kind.value})")
        elif args.op == "export":
            n = export_jsonl(mem, args.file, archived=not args.no_archived, embeddings=not args.no_embeddings)
            print(f"exported {n} record(s) to {args.file} (embedding model {mem.embedder.name()})")
        else:
            how = "skip" if args.skip_existing else "replace" if args.replace_existing else "fail"
            done = import_jsonl(mem, args.file, on_existing=how)
            print(f"imported {done['imported']} record(s) from {args.file}: {done['kept_vectors']} kept their "
                  f"vectors, {done['reembedded']} re-embedded with {mem.embedder.name()}, {done['skipped']} "
                  f"skipped, {done['replaced']} replaced")
    finally:
        mem.close()
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    mem = _open(args, read_only=True)
    try:
        info = inspect(mem, args.memory_id)
    finally:
        mem.close()
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False, default=str))
        return 0
    r = info["record"]
    print(f"{r['id']}  {r['layer']} {r['kind']}{'  (archived)' if r['archived'] else ''}  task_type "
          f"{r['task_type'] or '-'}  confidence {r['confidence']:.3f}  hits {r['hit_count']}")
    print(f"  {r['content']}")
    if r["counter_examples"]:
        print("  does not hold when: " + "; ".join(r["counter_examples"]))
    print(f"  created {r['created_at']}, last confirmed {r['last_confirmed_at'] or '-'}, last retrieved "
          f"{r['last_retrieved_at'] or '-'}, embedding model {r['embedding_model']}")
    print(f"\nprovenance ({len(info['provenance'])} episode(s)):")
    for s in info["provenance"]:
        print(f"  {s['episode_id']}: {s['outcome'] or 'not stored'}  {s['instruction'] or ''}")
    print(f"\nretrievals ({len(info['retrievals'])}):")
    for e in info["retrievals"][-10:]:
        print(f"  {e.get('at')} rank {e.get('rank')} task {e.get('task_id') or '-'}: {e.get('query')}")
    print(f"\noutcomes of tasks that used it ({len(info['outcomes'])}):")
    for e in info["outcomes"][-10:]:
        print(f"  {e.get('at')} task {e.get('task_id') or '-'}: {e.get('outcome')}")
    fb = info["feedback"]
    print(f"\nfeedback: {fb['ups']} up, {fb['downs']} down" + (": " + "; ".join(fb["notes"]) if fb["notes"] else ""))
    c = info["conflicts"]
    print("\nconflicts:")
    for link in c["conflicts_with"]:
        print(f"  flagged with {link.get('id')} ({link.get('kind')}): {link.get('content')}")
    if c["superseded_by"]:
        print("  superseded by " + " → ".join(f"{x['id']} ({x['state']})" for x in c["successor_chain"]))
    if c["supersedes"]:
        print(f"  supersedes {', '.join(c['supersedes'])}")
    if c["merged_from"]:
        print(f"  merged from {', '.join(c['merged_from'])}")
    if not any((c["conflicts_with"], c["superseded_by"], c["supersedes"], c["merged_from"])):
        print("  none")
    return 0

