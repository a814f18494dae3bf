"""The replay journal: an append-only JSONL file that lets a killed replay resume (``--resume``).

Layout: ``<out>/.replay-journal/journal.jsonl``. The first line is a header naming the replay (the dataset's
sha256 and format, the systems, ``top_k``, the token budget, ``limit``, the embedder and every config field); each
further line is one completed **unit**, written with one ``write``, flushed and fsynced before the next unit starts:

- episode datasets: one episode — every system's :class:`~hindsight_lab.replay.records.QueryRecord` for it (the
  ``stored`` lists delta-encoded against the system's previous one, so the file grows linearly), the memory counts
  and outcome rows, the reflector's answers during its write, and each hindsight system's reflection counters;
- conversation datasets (LoCoMo): one whole conversation, which runs in fresh stores and is skipped on resume.

A kill can leave a trailing partial line; it is ignored and cut off before the next append. Any other unreadable
line is an error. Resuming with a header that differs from the replay now asked for is an error naming what differs.

Examples:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> j = Journal.open(folder, {"params": {"top_k": 10}}, resume=False)
    >>> j.append({"unit": 0, "id": "e1"}); j.close()
    >>> Journal.open(folder, {"params": {"top_k": 10}}, resume=True).units
    [{'unit': 0, 'id': 'e1'}]
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import ConfigError, HindsightLabError

logger = logging.getLogger(__name__)

JOURNAL_DIR = ".replay-journal"
JOURNAL_FILE = "journal.jsonl"
VERSION = 1


def read_journal(path: str | Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]], int]:
    """Read a journal file: ``(header, units, valid_bytes)``.

    Only complete lines (ending in a newline) are read: a trailing partial line, which a kill during a write can
    leave, is ignored, and ``valid_bytes`` is where it starts. A missing or empty file gives ``(None, [], 0)``.

    Raises:
        HindsightLabError: a complete line is not a JSON object, or the first line is not a header.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, [], 0
    valid = data.rfind(b"\n") + 1
    rows = []
    for number, line in enumerate(data[:valid].split(b"\n")[:-1], 1):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HindsightLabError(f"{path}:{number}: unreadable journal line ({exc}); the journal is damaged: "
                                    "remove it and replay without --resume") from None
        if not isinstance(row, dict):
            raise HindsightLabError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    if not rows:
        return None, [], valid
    if rows[0].get("journal") != "hindsight-lab replay":
        raise HindsightLabError(f"{path}:1: not a replay journal header (keys {sorted(rows[0])})")
    return rows[0], rows[1:], valid


def header_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between a journal's header and the header of the replay now asked for, one phrase each.

    The dataset is compared by sha256 and format (not by name: a moved file resumes); ``params`` key by key, and
    ``params.config`` (``{system: LabConfig.flat()}``) field by field.
    """
    new = as_json(new)
    out = []
    if old.get("version") != new.get("version"):
        out.append(f"journal version {old.get('version')!r}, now {new.get('version')!r}")
    for key in ("sha256", "format"):
        a, b = (old.get("dataset") or {}).get(key), (new.get("dataset") or {}).get(key)
        if a != b:
            out.append(f"dataset {key}: journal {a!r}, now {b!r}")
    po, pn = old.get("params") or {}, new.get("params") or {}
    for key in sorted(set(po) | set(pn)):
        if key == "config":
            out.extend(_config_differences(po.get(key) or {}, pn.get(key) or {}))
        elif po.get(key) != pn.get(key):
            out.append(f"{key}: journal {po.get(key)!r}, now {pn.get(key)!r}")
    return out


def _config_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            out.append(f"config of {name!r}: {'only now' if name in new else 'only in the journal'}")
            continue
        for key in sorted(set(old[name]) | set(new[name])):
            if old[name].get(key) != new[name].get(key):
                out.append(f"config {name}.{key}: journal {old[name].get(key)!r}, now {new[name].get(key)!r}")
    return out


class Journal:
    """An open replay journal: the units already completed (on resume) and an append handle.

    Use :meth:`open`; the constructor only stores its arguments.

    Args:
        folder: the journal folder (``<out>/.replay-journal``).
        header: the header line.
        units: completed units read back on resume (empty on a fresh start).
    """

    def __init__(self, folder: str | Path, header: dict[str, Any], units: list[dict[str, Any]]) -> None:
        self.folder = Path(folder)
        self.header = header
        self.units = units
        self._fh: Any = None

    @property
    def path(self) -> Path:
        return self.folder / JOURNAL_FILE

    @classmethod
    def open(cls, folder: str | Path, header: Mapping[str, Any], *, resume: bool) -> "Journal":
        """Start a journal, or continue the one in ``folder`` when ``resume`` is set.

        Without ``resume`` an existing journal is replaced (a warning is logged). With ``resume`` and no journal
        (or only a partial header) the replay starts from scratch.

        Raises:
            ConfigError: ``resume`` and the journal was written for another replay; the message names what
                differs.
        """
        folder = Path(folder)
        header = {"journal": "hindsight-lab replay", "version": VERSION, **as_json(header)}
        path = folder / JOURNAL_FILE
        old, units, valid = read_journal(path) if resume else (None, [], 0)
        if not resume and path.exists():
            logger.warning("replacing the journal of an unfinished replay in %s (--resume continues one)", folder)
        if old is not None:
            diff = header_differences(old, header)
            if diff:
                raise ConfigError(f"--resume: the journal in {folder} belongs to another replay: " + "; ".join(diff)
                                  + ". Resume with the same arguments, or replay without --resume to start over")
            journal = cls(folder, old, units)
            journal._fh = path.open("r+b")
            journal._fh.truncate(valid)  # drop a trailing partial line left by a kill
            journal._fh.seek(valid)
            logger.info("resuming from %s: %d completed units", path, len(units))
            return journal
        folder.mkdir(parents=True, exist_ok=True)
        journal = cls(folder, header, [])
        journal._fh = path.open("wb")
        journal._write(header)
        _fsync_dir(folder)
        return journal

    def append(self, unit: Mapping[str, Any]) -> None:
        """Append one completed unit: one line, flushed and fsynced."""
        self._write(unit)

    def _write(self, row: Mapping[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=True) + "\n"
        self._fh.write(line.encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def remove(self) -> None:
        """Close and delete the journal folder (after the report is written)."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. platforms that cannot open a directory
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def as_json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, other objects strings)."""
    return json.loads(json.dumps(value, default=str))


# ---------------------------------------------------------------------- codecs of what a unit holds
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


class JournalingReflector:
    """Wraps a hindsight system's reflector: records its answers for the journal, and on resume answers from the
    journal instead of asking it again.

    So a resumed replay re-derives its stores from exactly the reflections the killed one got — which matters for a
    reflector that is not deterministic (an LLM) and costs nothing for the deterministic heuristic one. The replayed
    answers are checked against the episode they are for.

    Args:
        inner: the reflector (anything with ``reflect_batch``).
        name: the system's name, for messages.
    """

    def __init__(self, inner: Any, name: str) -> None:
        self.inner = inner
        self.name = name
        self.recorded: list[Any] = []
        self._queued: list[Any] | None = None  # a list while replaying a journaled unit

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def reflect(self, episode: Any, related: Sequence[Any]) -> Any:
        return self.reflect_batch([(episode, related)])[0]

    def reflect_batch(self, items: Sequence[tuple[Any, Sequence[Any]]]) -> list[Any]:
        if self._queued is None:
            answers = list(self.inner.reflect_batch(items))
            self.recorded.extend(answers)
            return answers
        if len(self._queued) < len(items):
            raise HindsightLabError(f"resume: system {self.name!r} asked for {len(items)} reflection(s) where the "
                                    f"journal holds {len(self._queued)}: the replay diverged from the journal")
        answers, self._queued = self._queued[:len(items)], self._queued[len(items):]
        for (episode, _), answer in zip(items, answers):
            got = getattr(answer, "episode_id", None)
            want = getattr(episode, "episode_id", None)
            if got is not None and want is not None and got != want:
                raise HindsightLabError(f"resume: system {self.name!r} asked for a reflection on {want!r}; the "
                                        f"journal holds one on {got!r}: the replay diverged from the journal")
        return answers

    def take(self) -> list[dict[str, Any]]:
        """The answers recorded since the last call, encoded, and forget them."""
        out = [encode_answer(a) for a in self.recorded]
        self.recorded.clear()
        return out

    def replay(self, answers: Iterable[Mapping[str, Any]]) -> None:
        """Answer the next requests from these journaled answers, in order, until :meth:`done_replaying`."""
        self._queued = [decode_answer(a) for a in answers]

    def done_replaying(self, episode_id: str) -> None:
        """Back to asking the reflector; every journaled answer must have been used."""
        left, self._queued = self._queued or [], None
        if left:
            raise HindsightLabError(f"resume: re-deriving {episode_id!r}, system {self.name!r} used fewer "
                                    f"reflections than the journal holds ({len(left)} left): the replay diverged "
                                    "from the journal")
