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

What a unit holds is encoded by :mod:`.units`; a hindsight system's reflector is wrapped by
:class:`~hindsight_lab.replay.journal_reflector.JournalingReflector` to record (and on resume replay) its answers.
Both are re-exported here.

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
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, HindsightLabError
from .journal_reflector import JournalingReflector
from .units import StoredCodec, decode_answer, decode_query, decode_row, encode_answer, encode_query, encode_row

__all__ = ["JOURNAL_DIR", "JOURNAL_FILE", "Journal", "JournalingReflector", "StoredCodec", "as_json", "decode_answer",
           "decode_query", "decode_row", "encode_answer", "encode_query", "encode_row", "header_differences",
           "read_journal"]

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
