"""Several trace files replayed as one history (a cross-agent replay), and what identifies the data replayed.

:func:`load_history` reads one file as its adapter does, or several files as one dataset, in the order given:

* **One clock that only moves forward.** A file keeps its own ``started_at`` times when every episode has one,
  they are not all equal and they never go back in the file's order; otherwise its episodes are one
  :data:`SPACING` apart. Each file is then shifted to start one step after the previous file's last episode
  (recorded files are not in time order across agents), and every episode carries its time in ``started_at``.
* **Task ids meet within one dataset family and domain.** Each task id is qualified as
  ``"<format>:<domain>:<task id>"`` (tau2-bench's adapter qualifies its own), so agent B's run of a task meets
  agent A's run of it, and a tau2 telecom task never meets a tau-bench one.
* **Sources.** Each episode's ``meta.source_file`` names the file it came from (unless it already names one: a
  concatenated export keeps its files), so a report can break metrics down by source. Episode ids that repeat
  across files are prefixed with their file's stem (``relevant_episode_ids`` follow). A file given twice is
  told apart by ``#k``, its position, after its name and stem.
* ``limit_tasks`` keeps the first N task ids of the combined history (every run of each, whichever file).

The result is the same episodes a single JSONL file of them would give: writing them with
:func:`~hindsight_lab.datasets.write_jsonl` and replaying that file gives the same metrics.

Examples:
    >>> episodes, info = load_history(["telecom_gpt-4.1.json", "telecom_sft-gpt-4.1.json"])  # doctest: +SKIP
    >>> info["files"][1]["name"], episodes[-1].meta["source_file"]  # doctest: +SKIP
    ('telecom_sft-gpt-4.1.json', 'telecom_sft-gpt-4.1.json')
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError
from ..trace import Episode

__all__ = ["ORDERS", "SPACING", "START", "file_sha256", "load_history"]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""Where a file without its own times starts (the first file of a history)."""
SPACING = timedelta(hours=1)
"""The step between episodes without their own times, and between one file's end and the next file's start."""
ORDERS = {"tau-bench": "by trial, then task_id", "tau2-bench": "by start time, then file order",
          "jsonl": "file order", "reflexion-hotpotqa": "by trial, then agent block",
          "locomo": "conversation by conversation, each in fresh stores: turns by session and turn, then the questions"}
"""Each adapter's documented episode order."""


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_history(paths: str | Path | Sequence[str | Path], *, format: str = "auto", strict: bool = True,
                 limit_tasks: int | None = None) -> tuple[list[Episode], dict[str, Any]]:
    """Episodes of one trace file, or of several as one history, and the ``dataset`` block that identifies them.

    The block holds ``name``, ``format``, ``sha256`` and ``order``; with several files also ``files`` (name,
    format, sha256 and episode count of each, in order), and its ``sha256`` is that of the files' hashes and names
    in order, so it changes when any file or the order does. When a lenient read (``strict=False``) skipped
    invalid lines, ``skipped`` counts them by reason. A single file is read exactly as before (its own
    ``sha256``; no qualifying, no shifting).

    Raises:
        ConfigError: no file, or a conversation dataset (LoCoMo) among several files.
        TraceFormatError: a file is invalid in its format.
    """
    from . import detect_format, load
    from ..jsonio.reading import check_limit

    check_limit(limit_tasks, "limit_tasks")
    files = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not files:
        raise ConfigError("no trace file to replay")
    fmts = [detect_format(p) if format == "auto" else format for p in files]
    if len(files) == 1:
        episodes, stats = load(files[0], format=fmts[0] or "auto", strict=strict, limit_tasks=limit_tasks)
        info = {"name": files[0].stem, "format": fmts[0], "sha256": file_sha256(files[0]),
                "order": ORDERS.get(fmts[0] or "", "file order")}
        return episodes, {**info, **_skipped([stats])}
    if "locomo" in fmts:
        raise ConfigError("LoCoMo is a conversation dataset, replayed one file at a time; it cannot join a "
                          "history of several files")
    reads = [load(p, format=f or "auto", strict=strict) for p, f in zip(files, fmts)]
    loaded = [eps for eps, _ in reads]
    episodes = _chain(files, fmts, loaded)
    if limit_tasks is not None:
        keep = set(list(dict.fromkeys(e.task_id or e.episode_id for e in episodes))[:limit_tasks])
        episodes = [e for e in episodes if (e.task_id or e.episode_id) in keep]
    shas = [file_sha256(p) for p in files]
    listing = [{"name": p.name, "format": f, "sha256": s, "episodes": len(eps)}
               for p, f, s, eps in zip(files, fmts, shas, loaded)]
    combined = hashlib.sha256("".join(f"{s}  {p.name}\n" for p, s in zip(files, shas)).encode()).hexdigest()
    return episodes, {"name": " + ".join(p.stem for p in files),
                      "format": fmts[0] if len(set(fmts)) == 1 else "mixed", "sha256": combined,
                      "order": "the files in the order given, each in its own order, on one clock",
                      "files": listing, **_skipped([stats for _, stats in reads])}


def _skipped(stats: Sequence[Any]) -> dict[str, Any]:
    """``{"skipped": {"lines": n, "by_reason": {...}}}`` over the JSONL reads that skipped invalid lines (lenient
    mode), else empty."""
    lines, reasons = 0, Counter()
    for st in stats:
        if st is not None and st.skipped:
            lines += st.skipped
            reasons.update(st.by_reason)
    return {"skipped": {"lines": lines, "by_reason": dict(reasons)}} if lines else {}


def _chain(files: Sequence[Path], fmts: Sequence[str | None], loaded: Sequence[list[Episode]]) -> list[Episode]:
    """The files' episodes on one forward clock, with qualified task ids and their source file."""
    ids = [ep.episode_id for eps in loaded for ep in eps]
    prefix_ids = len(ids) != len(set(ids))
    labels, names = _unique([p.stem for p in files]), _unique([p.name for p in files])
    out: list[Episode] = []
    end: datetime | None = None
    for name, label, fmt, eps in zip(names, labels, fmts, loaded):
        times = _own_times(eps) or [START + i * SPACING for i in range(len(eps))]
        shift = (end + SPACING - times[0]) if end is not None and times else timedelta(0)
        rename = {ep.episode_id: f"{label}/{ep.episode_id}" for ep in eps} if prefix_ids else {}
        for ep, at in zip(eps, times):
            out.append(_placed(ep, at + shift, fmt or "jsonl", name, rename))
        if eps:
            end = times[-1] + shift
    return out


def _unique(labels: Sequence[str]) -> list[str]:
    """The labels, each with ``#k`` (its position) when some label repeats (the same file given twice)."""
    return list(labels) if len(set(labels)) == len(labels) else [f"{x}#{k + 1}" for k, x in enumerate(labels)]


def _own_times(eps: Sequence[Episode]) -> list[datetime] | None:
    times = [ep.started_at for ep in eps]
    if not times or any(t is None for t in times) or len(set(times)) == 1:
        return None
    if any(b < a for a, b in zip(times, times[1:])):  # type: ignore[operator]
        return None
    return times  # type: ignore[return-value]


def _placed(ep: Episode, at: datetime, fmt: str, source: str, rename: dict[str, str]) -> Episode:
    update: dict[str, Any] = {"started_at": at, "meta": {"source_file": source, **(ep.meta or {})}}
    if ep.task_id is not None and not ep.task_id.startswith(_FAMILIES):
        update["task_id"] = f"{fmt}:{ep.domain or '-'}:{ep.task_id}"
    if rename:
        update["episode_id"] = rename[ep.episode_id]
        if ep.relevant_episode_ids is not None:
            update["relevant_episode_ids"] = [rename.get(i, i) for i in ep.relevant_episode_ids]
    return ep.model_copy(update=update)


_FAMILIES = tuple(f"{f}:" for f in ("jsonl", "tau-bench", "tau2-bench", "reflexion-hotpotqa"))
