"""Compare two captures of the project's behaviour, field by field.

A capture is a folder holding replay outputs (``<dataset>/metrics.json`` and ``<dataset>/episodes.csv`` from
``hindsight-lab replay NAME --no-mlflow --out DIR``) and sweep outputs (``sweep/trials.csv``,
``sweep/comparison.csv`` from ``sweep_table.py``). Every JSON leaf and every CSV cell is compared; fields matching
``--ignore`` (regular expressions over ``file:path`` or ``file:column``; timings and latencies by default) are
skipped. Numbers are equal when they are identical, or within ``--tol`` when given.

    python experiments/behaviour/diff_runs.py BEFORE AFTER            # exit 1 if anything outside --ignore differs
    python experiments/behaviour/diff_runs.py RUN1 RUN2 --ignore none  # list everything that differs (e.g. run twice)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Iterator

#: What differs between two runs of the same code (measured: replays run twice): wall-clock times.
DEFAULT_IGNORE = [r"metrics\.json:timing\.", r"latency", r"_s$", r"\.seconds\."]


def leaves(data: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted path, value)`` of every leaf of a JSON document."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from leaves(value, f"{path}[{i}]")
    else:
        yield path, data


def same(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        try:
            a, b = float(a), float(b)
        except ValueError:
            return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or abs(a - b) <= tol
    return a == b


def compare_json(rel: str, a: Path, b: Path, tol: float) -> Iterator[tuple[str, Any, Any]]:
    left, right = dict(leaves(json.loads(a.read_text()))), dict(leaves(json.loads(b.read_text())))
    for key in sorted(set(left) | set(right)):
        if not same(left.get(key, "<missing>"), right.get(key, "<missing>"), tol):
            yield f"{rel}:{key}", left.get(key, "<missing>"), right.get(key, "<missing>")


def _rows(path: Path) -> list[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as fh:
        return list(csv.DictReader(fh))


def compare_csv(rel: str, a: Path, b: Path, tol: float) -> Iterator[tuple[str, Any, Any]]:
    left, right = _rows(a), _rows(b)
    if len(left) != len(right):
        yield f"{rel}:<rows>", len(left), len(right)
        return
    columns = list(dict.fromkeys([*(left[0] if left else {}), *(right[0] if right else {})]))
    for col in columns:
        diffs = [(i, ra.get(col), rb.get(col)) for i, (ra, rb) in enumerate(zip(left, right))
                 if not same(ra.get(col, "<missing>"), rb.get(col, "<missing>"), tol)]
        if diffs:
            i, x, y = diffs[0]
            yield f"{rel}:{col}", f"{len(diffs)} rows, first row {i}: {x}", y


def _files(root: Path) -> dict[str, Path]:
    """``{name without .gz: path}`` of the JSON and CSV files under ``root`` (a baseline keeps its CSVs gzipped)."""
    out = {}
    for p in root.rglob("*"):
        name = str(p.relative_to(root)).removesuffix(".gz")
        if name.endswith((".json", ".csv")):
            out[name] = p
    return out


def compare(before: Path, after: Path, ignore: list[str], tol: float) -> list[tuple[str, Any, Any]]:
    patterns = [re.compile(p) for p in ignore]
    out = []
    left, right = _files(before), _files(after)
    for rel in sorted(set(left) | set(right)):
        a, b = left.get(rel), right.get(rel)
        if a is None or b is None:
            out.append((rel, "present" if a else "missing", "present" if b else "missing"))
            continue
        found = compare_json(rel, a, b, tol) if rel.endswith(".json") else compare_csv(rel, a, b, tol)
        out += [d for d in found if not any(p.search(d[0]) for p in patterns)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore", nargs="*", default=DEFAULT_IGNORE,
                        help="regular expressions of fields not compared ('none': compare everything)")
    parser.add_argument("--tol", type=float, default=0.0, help="absolute tolerance on numbers (default: exact)")
    args = parser.parse_args(argv)
    ignore = [] if args.ignore == ["none"] else args.ignore
    diffs = compare(args.before, args.after, ignore, args.tol)
    for field, a, b in diffs:
        print(f"{field}: {a!r} -> {b!r}")
    print(f"{len(diffs)} field(s) differ" + (f" (ignored: {', '.join(ignore)})" if ignore else ""))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
