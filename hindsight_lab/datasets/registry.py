"""Datasets by name: the registry of what this project replays, where each file is on this machine, and how a
name given on the command line becomes files.

A name is a registered dataset (:mod:`.catalog`: development splits ``*-dev``, committed samples ``*-sample``)
or a group of them (several files replayed as one history, e.g. ``tau2-telecom-cross-dev``). A development split
is on this machine once ``hindsight-lab datasets fetch NAME`` has put it under ``$HINDSIGHT_LAB_HOME/datasets/``
(:func:`datasets_home`); a sample is always in the project checkout's ``datasets/samples/``.

Examples:
    >>> get("tau-bench-airline-sample").format
    'tau-bench'
    >>> [e.name for e in expand("tau2-telecom-cross-sample")]
    ['tau2-telecom-gpt-4.1-sample', 'tau2-telecom-sft-gpt-4.1-sample']
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from .._env import home
from ..errors import DatasetError
from .catalog import ENTRIES, GROUPS, SAMPLES
from .entry import DatasetEntry, Source

__all__ = ["DatasetEntry", "Picked", "Source", "datasets_home", "entries", "expand", "get", "groups", "list_rows",
           "local_path", "pick", "resolve", "samples_dir"]


def datasets_home() -> Path:
    """Where fetched datasets live: ``$HINDSIGHT_LAB_HOME/datasets`` (default ``~/.hindsight_lab/datasets``)."""
    return home() / "datasets"


def samples_dir() -> Path:
    """The project checkout's committed samples: ``datasets/samples/`` next to the package."""
    return Path(__file__).resolve().parents[2] / "datasets" / "samples"


def entries() -> dict[str, DatasetEntry]:
    """Every registered dataset by name, development splits first."""
    return {e.name: e for e in (*ENTRIES, *SAMPLES)}


def groups() -> dict[str, tuple[str, ...]]:
    """Names of several datasets replayed together, in order (a cross-agent replay)."""
    return dict(GROUPS)


def get(name: str) -> DatasetEntry:
    """The registered dataset ``name``.

    Raises:
        DatasetError: no dataset has that name (the message lists the closest names).
    """
    known = entries()
    if name in known:
        return known[name]
    close = difflib.get_close_matches(name, [*known, *groups()], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `hindsight-lab datasets list` shows them"
    raise DatasetError(f"no registered dataset {name!r}{hint}")


def expand(name: str) -> list[DatasetEntry]:
    """The datasets a name stands for: itself, or the members of a group."""
    members = groups().get(name)
    return [get(n) for n in members] if members else [get(name)]


def local_path(entry: DatasetEntry) -> Path | None:
    """Where the dataset's file is on this machine, or None when it is not (a split not fetched yet)."""
    path = (samples_dir() if entry.is_sample else datasets_home()) / entry.filename
    return path if path.is_file() else None


def resolve(refs: str | Path | Iterable[str | Path]) -> list[Path]:
    """Trace files from what a user typed: existing files as they are, dataset and group names as their files.

    Raises:
        DatasetError: a name that is neither a file nor a registered dataset, or a dataset not on this machine
            (the message says how to fetch it).
    """
    items: Sequence[str | Path] = [refs] if isinstance(refs, (str, Path)) else list(refs)
    paths: list[Path] = []
    for ref in items:
        if Path(ref).is_file():
            paths.append(Path(ref))
            continue
        name = str(ref)
        if name not in entries() and name not in groups():
            if Path(ref).suffix or "/" in name or "\\" in name:
                raise DatasetError(f"{ref}: no such trace file (and not a registered dataset name)")
            get(name)  # raises, naming the closest names
        for entry in expand(name):
            path = local_path(entry)
            if path is None:
                raise DatasetError(f"dataset {entry.name!r} is not on this machine; fetch it with "
                                   f"`hindsight-lab datasets fetch {entry.name}` (into {datasets_home()})")
            paths.append(path)
    return paths


@dataclass(frozen=True)
class Picked:
    """What :func:`pick` chose: the dataset (or group) name, its files, whether it is the full-size split, and one
    line that says which (no machine path in it, so a notebook's output can be committed)."""

    name: str
    paths: list[Path]
    full: bool
    note: str

    @property
    def path(self) -> Path:
        """The one file (a dataset of one file)."""
        if len(self.paths) != 1:
            raise DatasetError(f"{self.name} is {len(self.paths)} files; use .paths")
        return self.paths[0]


def pick(full: str, sample: str) -> Picked:
    """The full-size development data ``full`` when it is on this machine, else the committed ``sample``.

    Examples:
        >>> pick("tau-bench-airline-dev", "tau-bench-airline-sample").note  # doctest: +SKIP
        'sample tau-bench-airline-sample (tau-bench airline: tasks 0–4 …); `hindsight-lab datasets fetch …`'
    """
    members = [get(n) for n in (groups().get(full) or (full,))]
    if all(local_path(e) is not None for e in members):
        return Picked(full, resolve(full), True, f"full-size development data {full}")
    fallback = [get(n) for n in (groups().get(sample) or (sample,))]
    what = "; ".join(e.title for e in fallback)
    return Picked(sample, resolve(sample), False,
                  f"sample {sample} ({what}), committed with the project: the full-size data {full} is not on this "
                  f"machine (`hindsight-lab datasets fetch {full}` gets it)")


def list_rows() -> list[dict[str, Any]]:
    """One row per registered dataset and group: what ``hindsight-lab datasets list`` prints."""
    rows = []
    for e in entries().values():
        path = local_path(e)
        rows.append({"name": e.name, "format": e.format, "title": e.title,
                     "source": e.source.describe() if e.source else (f"sample of {e.sample_of}" if e.sample_of
                                                                    else "written for this project"),
                     "licence": e.licence, "split": e.split.describe(), "size": e.size, "sha256": e.sha256,
                     "present": path is not None, "where": str(path) if path else ""})
    for name, members in groups().items():
        present = all(local_path(get(m)) is not None for m in members)
        rows.append({"name": name, "format": "group", "title": "replayed in order: " + ", ".join(members),
                     "source": "", "licence": get(members[0]).licence, "split": "", "size":
                     sum(get(m).size for m in members), "sha256": "", "present": present, "where": ""})
    return rows
