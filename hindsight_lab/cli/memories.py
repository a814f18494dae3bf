"""``hindsight-lab memories`` (list, show, delete, export, import) and ``hindsight-lab inspect``, over the library
functions of :mod:`hindsight_lab.memory.export` and :mod:`hindsight_lab.memory.listing`."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, MemoryNotFound
from .args import add_config, add_store, examples, existing_store, load_config, non_negative_int, out_file, store_params

if TYPE_CHECKING:
    from ..memory import MemorySystem


def add_parser(sub: Any) -> None:
    """Register ``memories`` (list, show, delete, export, import) and ``inspect`` on the CLI's subparsers."""
    mem_p = sub.add_parser("memories", help="list, show, delete, export or import the memories of a store",
                           epilog=examples("hindsight-lab memories list --store memory-store --kind rule",
                                           "hindsight-lab memories export --store memory-store --out backup.jsonl",
                                           "hindsight-lab memories import backup.jsonl --store new-store"))
    ops = mem_p.add_subparsers(dest="op", required=True)
    lst = ops.add_parser("list", help="records as a table, filtered",
                         epilog=examples("hindsight-lab memories list --store memory-store --layer L3",
                                         "hindsight-lab memories list --store memory-store --archived all --limit 20"))
    lst.add_argument("--layer", choices=["L2", "L3"])
    lst.add_argument("--kind", choices=["episode", "candidate", "rule"])
    lst.add_argument("--task-type")
    lst.add_argument("--archived", choices=["active", "archived", "all"], default="active")
    lst.add_argument("--limit", type=non_negative_int)
    show = ops.add_parser("show", help="one record in full (JSON)",
                          epilog=examples("hindsight-lab memories show MEMORY_ID --store memory-store"))
    show.add_argument("id")
    delete = ops.add_parser("delete", help="delete records by id (archived ones too)",
                            epilog=examples("hindsight-lab memories delete MEMORY_ID OTHER_ID --store memory-store"))
    delete.add_argument("ids", nargs="+")
    exp = ops.add_parser("export", help="write every record (and its vector) to a JSONL file",
                         epilog=examples("hindsight-lab memories export --store memory-store --out backup.jsonl",
                                         "hindsight-lab memories export --store memory-store --out small.jsonl "
                                         "--no-archived --no-embeddings"))
    exp.add_argument("--out", type=out_file, help="the JSONL file to write (required)")
    exp.add_argument("file", nargs="?", type=out_file, help=argparse.SUPPRESS)  # its place until issue 51
    exp.add_argument("--no-archived", action="store_true", help="leave archived records out")
    exp.add_argument("--no-embeddings", action="store_true", help="leave vectors out (the target re-embeds)")
    imp = ops.add_parser("import", help="import a JSONL export (validated whole first; re-embeds for another model)",
                         epilog=examples("hindsight-lab memories import backup.jsonl --store new-store",
                                         "hindsight-lab memories import backup.jsonl --store memory-store "
                                         "--skip-existing"))
    imp.add_argument("file", help="a JSONL file written by memories export")
    how = imp.add_mutually_exclusive_group()
    how.add_argument("--skip-existing", action="store_true", help="skip ids the target already holds")
    how.add_argument("--replace-existing", action="store_true", help="replace ids the target already holds")
    for p in (lst, show, delete, exp, imp):
        _store_args(p)
    mem_p.set_defaults(func=run_memories)
    ins = sub.add_parser("inspect", help="provenance, retrievals, outcomes, feedback and conflict links of a memory",
                         epilog=examples("hindsight-lab inspect MEMORY_ID --store memory-store",
                                         "hindsight-lab inspect MEMORY_ID --store memory-store --json"))
    ins.add_argument("memory_id")
    ins.add_argument("--json", action="store_true", help="print the whole inspection as JSON")
    _store_args(ins)
    ins.set_defaults(func=run_inspect)


def _store_args(p: argparse.ArgumentParser) -> None:
    add_store(p, required=True)
    add_config(p, "LabConfig YAML file (its embedder.model is the store's model)")


def _open(args: argparse.Namespace, *, create: bool = False, read_only: bool = False) -> "MemorySystem":
    """The ``--store`` memory; ``read_only`` takes no writer lock, so it works beside a running writer."""
    from ..memory import MemorySystem

    where = store_params(args.store) if create else existing_store(args.store)
    return MemorySystem(load_config(args).with_params({**where, "store.read_only": read_only})).open()


def run_memories(args: argparse.Namespace) -> int:
    from ..memory.export import read_export

    if args.op == "export":
        args.out = _export_file(args)
    if args.op == "import":
        read_export(args.file)  # a malformed file fails before the target store is even opened
    mem = _open(args, create=args.op == "import", read_only=args.op in ("list", "show", "export"))
    try:
        _OPS[args.op](mem, args)
    finally:
        mem.close()
    return 0


def _export_file(args: argparse.Namespace) -> str:
    """``memories export``'s file: ``--out``, or the positional of before issue 51 — one of them."""
    if args.out and args.file:
        raise ConfigError(f"memories export: give the file once, as --out (got --out {args.out} and {args.file})")
    if not (args.out or args.file):
        raise ConfigError("the following arguments are required: --out")
    return args.out or args.file


def _list(mem: "MemorySystem", args: argparse.Namespace) -> None:
    import pandas as pd

    from ..memory.listing import list_frame

    frame = list_frame(mem, layer=args.layer, kind=args.kind, task_type=args.task_type, archived=args.archived,
                       limit=args.limit)
    with pd.option_context("display.width", 220, "display.max_colwidth", 80, "display.max_rows", 1000):
        print(frame.to_string(index=False) if len(frame) else "(no records)")
    print(f"\n{len(frame)} record(s)")


def _show(mem: "MemorySystem", args: argparse.Namespace) -> None:
    from ..memory.export import record_to_json

    print(json.dumps(record_to_json(mem.get(args.id)), indent=2, ensure_ascii=False))


def _delete(mem: "MemorySystem", args: argparse.Namespace) -> None:
    from ..memory.export import holds

    missing = [i for i in args.ids if not holds(mem, i)]
    if missing:
        raise MemoryNotFound(f"no memory with id {missing[0]!r}; nothing was deleted")
    for rid in args.ids:
        rec = mem.delete(rid)
        print(f"deleted {rid} ({rec.layer.value} {rec.kind.value})")


def _export(mem: "MemorySystem", args: argparse.Namespace) -> None:
    from ..memory.export import export_jsonl

    n = export_jsonl(mem, args.out, archived=not args.no_archived, embeddings=not args.no_embeddings)
    print(f"exported {n} record(s) to {args.out} (embedding model {mem.embedder.name()})")


def _import(mem: "MemorySystem", args: argparse.Namespace) -> None:
    from ..memory.export import import_jsonl

    how = "skip" if args.skip_existing else "replace" if args.replace_existing else "fail"
    done = import_jsonl(mem, args.file, on_existing=how)
    print(f"imported {done['imported']} record(s) from {args.file}: {done['kept_vectors']} kept their "
          f"vectors, {done['reembedded']} re-embedded with {mem.embedder.name()}, {done['skipped']} "
          f"skipped, {done['replaced']} replaced")


_OPS = {"list": _list, "show": _show, "delete": _delete, "export": _export, "import": _import}


def run_inspect(args: argparse.Namespace) -> int:
    from ..memory.listing import inspect

    mem = _open(args, read_only=True)
    try:
        info = inspect(mem, args.memory_id)
    finally:
        mem.close()
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False, default=str))
        return 0
    _print_record(info["record"])
    _print_history(info)
    _print_links(info["conflicts"])
    return 0


def _print_record(r: dict[str, Any]) -> None:
    print(f"{r['id']}  {r['layer']} {r['kind']}{'  (archived)' if r['archived'] else ''}  task_type "
          f"{r['task_type'] or '-'}  confidence {r['confidence']:.3f}  hits {r['hit_count']}")
    print(f"  {r['content']}")
    if r["counter_examples"]:
        print("  does not hold when: " + "; ".join(r["counter_examples"]))
    print(f"  created {r['created_at']}, last confirmed {r['last_confirmed_at'] or '-'}, last retrieved "
          f"{r['last_retrieved_at'] or '-'}, embedding model {r['embedding_model']}")


def _print_history(info: dict[str, Any]) -> None:
    """Provenance, the last ten retrievals and outcomes, feedback."""
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


def _print_links(c: dict[str, Any]) -> None:
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
