"""``hindsight-lab datasets fetch``: a registered split from its public source, verified, written atomically.

The source file is downloaded (standard library HTTP, no extra dependency) to ``<file>.source.part`` next to the
destination. An interrupted download keeps its part and the next fetch resumes it with an HTTP ``Range`` request
(a server that ignores ranges sends the whole file again, which is used instead). The split is then derived from
the complete source by the entry's rule (:mod:`.splits`) and its sha256 compared with the registry's: only a
split that matches is written, to a temporary file in the destination folder that is renamed into place, so the
destination is either absent, the previous verified file, or the new verified file — never partial. A mismatch
removes the part (the next fetch starts over) and writes nothing.

``from_dir`` takes the file from a local folder instead of the network — a mirror, or a copy of the development
data — and verifies it the same way: the folder holds the split under its registry file name (deriving a split
from itself gives it back) or the public source under its own file name.

Examples:
    >>> fetch("tau-bench-airline-dev")  # doctest: +SKIP
    FetchResult(name='tau-bench-airline-dev', path=PosixPath('.../datasets/tau-bench/gpt-4o-airline.dev.json'), ...)
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import DatasetError, TraceFormatError
from .registry import DatasetEntry, datasets_home, get, local_path

__all__ = ["FetchResult", "fetch"]

_CHUNK = 1 << 16
_USER_AGENT = "hindsight-lab datasets fetch"


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did: ``action`` is ``fetched``, ``present`` (already there and verified) or ``sample`` (a
    committed sample: nothing to fetch); ``origin`` is the URL or file it came from."""

    name: str
    path: Path
    action: str
    origin: str
    sha256: str
    resumed_at: int = 0


def fetch(dataset: str | DatasetEntry, *, from_dir: str | Path | None = None, url: str | None = None,
          root: str | Path | None = None, force: bool = False, timeout_s: float = 60.0) -> FetchResult:
    """Fetch one registered dataset into ``root`` (default ``$HINDSIGHT_LAB_HOME/datasets``).

    Args:
        dataset: a registered name, or an entry (tests build their own).
        from_dir: take the file from this folder instead of downloading it.
        url: download from here instead of the entry's source URL (a mirror).
        root: the datasets folder to write into.
        force: fetch again even when a verified file is there.
        timeout_s: socket timeout of the download.

    Raises:
        DatasetError: no source to fetch from, the network or server failed (the message names the URL and the
            cause; an interrupted download is resumed by the next call), or the split's checksum does not match.
    """
    entry = get(dataset) if isinstance(dataset, str) else dataset
    if entry.is_sample and root is None and url is None and from_dir is None:
        path = local_path(entry)
        if path is None:
            raise DatasetError(f"sample {entry.name!r} is missing from the project checkout (datasets/samples/"
                               f"{entry.filename}); it is committed with the project: restore the checkout")
        return FetchResult(entry.name, path, "sample", "project checkout", entry.sha256)
    dest = Path(root or datasets_home()) / entry.filename
    if dest.is_file() and not force and _sha256(dest.read_bytes()) == entry.sha256:
        return FetchResult(entry.name, dest, "present", str(dest), entry.sha256)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".source.part")
    if from_dir is not None:
        origin = _local_source(entry, Path(from_dir))
        raw, resumed = origin.read_bytes(), 0
    else:
        origin = url or (entry.source.url if entry.source else None)
        if origin is None:
            raise DatasetError(f"dataset {entry.name!r} has no source URL; give one with --url or a folder with "
                               "--from")
        resumed = _download(str(origin), part, timeout_s)
        raw = part.read_bytes()
    try:
        split = entry.split.derive(raw, source=str(origin))
    except TraceFormatError as exc:
        if from_dir is None:
            part.unlink(missing_ok=True)  # a complete download that is not the file: start over next time
        raise DatasetError(f"dataset {entry.name!r}: {exc}; nothing was written") from None
    got = _sha256(split)
    if got != entry.sha256:
        if from_dir is None:
            part.unlink(missing_ok=True)
        raise DatasetError(f"dataset {entry.name!r}: checksum mismatch for the split derived from {origin}: "
                           f"sha256 {got}, expected {entry.sha256}; nothing was written (is it the file of "
                           f"{entry.source.describe() if entry.source else entry.sample_of}?)")
    _write_atomically(dest, split)
    part.unlink(missing_ok=True)
    return FetchResult(entry.name, dest, "fetched", str(origin), got, resumed)


def _local_source(entry: DatasetEntry, folder: Path) -> Path:
    names = [entry.filename, Path(entry.filename).name]
    if entry.source is not None:
        names.append(Path(entry.source.path).name)
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise DatasetError(f"dataset {entry.name!r}: none of {names} is in {folder}")


def _download(url: str, part: Path, timeout_s: float) -> int:
    """Download ``url`` into ``part``, resuming what is there; return the byte offset resumed from."""
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the part already holds the whole file
            return have
        raise DatasetError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DatasetError(f"cannot reach {url}: {reason} (no network? fetch from a local copy with --from DIR)"
                           ) from None
    with response:
        resumed = have if response.status == 206 else 0
        expected = response.headers.get("Content-Length")
        total = resumed + int(expected) if expected and expected.isdigit() else None
        written = resumed
        try:
            with part.open("ab" if resumed else "wb") as fh:
                while chunk := response.read(_CHUNK):
                    fh.write(chunk)
                    written += len(chunk)
        except (http.client.IncompleteRead, OSError) as exc:
            raise DatasetError(_interrupted(url, written, total, exc)) from None
    if total is not None and written < total:
        raise DatasetError(_interrupted(url, written, total, "connection closed early"))
    return resumed


def _interrupted(url: str, written: int, total: int | None, cause: object) -> str:
    of = f" of {total:,}" if total else ""
    return (f"download of {url} interrupted after {written:,}{of} bytes ({cause}); run the same command again "
            "to resume it")


def _write_atomically(dest: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
