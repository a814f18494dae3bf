"""The results table of README.md and docs/results.md, made from the replays kept in the repository.

Reads ``experiments/results/<dataset>/metrics.json`` (any version of its layout, through
``hindsight_lab.evaluation.load_metrics``; what ``hindsight-lab replay <dataset> --no-mlflow --out
experiments/results/<dataset>`` writes; only metrics.json is kept) and writes one markdown table: for each dataset
and judging mode with queries, hindsight's nDCG@5 with its bootstrap 95 % interval, the best of the baselines that
mode compares it with (``hindsight_lab.evaluation.report.RIVALS``), the margin and the paired randomization test's
p-value. The table sits between the two marker lines in each target file. No figure is typed by hand: re-run the
replays, then this script with ``--write``.

Usage::

    python scripts/results_table.py            # check: exit 1, naming the file, when a target differs
    python scripts/results_table.py --write    # rewrite the table in README.md and docs/results.md
    python scripts/results_table.py --print    # print the table
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results"
TARGETS = (REPO / "README.md", REPO / "docs" / "results.md")
START = "<!-- results-table:start (scripts/results_table.py writes this table; do not edit) -->"
END = "<!-- results-table:end -->"
METRIC = "ndcg@5"


def _load(path: Path):
    sys.path.insert(0, str(REPO))
    from hindsight_lab.evaluation import load_metrics  # every version of metrics.json

    return load_metrics(path)


def rows(results: Path = RESULTS) -> list[list[str]]:
    """One row per dataset (by folder name) and judging mode with queries."""
    out = []
    for path in sorted(results.glob("*/metrics.json")):
        result = _load(path)
        for mode in result.judged_modes():
            block = result.mode(mode)
            best = max(block.rivals(), key=lambda r: block.value(r, METRIC))
            ours, theirs = block.value("hindsight", METRIC), block.value(best, METRIC)
            low, high = block.interval("hindsight", METRIC)[1:]
            p = block.p_value(best, METRIC)
            out.append([f"`{path.parent.name}`", mode, str(block.queries), f"{ours:.3f} [{low:.3f}, {high:.3f}]",
                        f"{best} {theirs:.3f}", f"{ours - theirs:+.3f}", f"{p:.3f}"])
    return out


def table(results: Path = RESULTS) -> str:
    head = ["dataset", "judging mode", "queries", "hindsight nDCG@5 [95 % CI]", "best baseline", "margin", "p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(results)]
    return "\n".join(lines)


def render(text: str, body: str) -> str:
    """``text`` with the block between the markers replaced by ``body``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"expected one {START!r} line followed by one {END!r} line")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{START}\n{body}\n{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in README.md and docs/results.md")
    parser.add_argument("--print", action="store_true", dest="show", help="print the table")
    args = parser.parse_args(argv)
    body = table()
    if args.show:
        print(body)
    stale = []
    for target in TARGETS:
        text = target.read_text(encoding="utf-8")
        new = render(text, body)
        if new != text:
            if args.write:
                target.write_text(new, encoding="utf-8")
                print(f"rewrote the table in {target.relative_to(REPO)}")
            else:
                stale.append(target.relative_to(REPO))
    for target in stale:
        print(f"{target}: the results table differs from experiments/results/*/metrics.json; run "
              "python scripts/results_table.py --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
