"""The results table of README.md and docs/results.md is what scripts/results_table.py makes from the replays kept in
experiments/results/: no figure of it is typed by hand (issue 51), so a default that changes without the replays
being run again, or a table edited by hand, fails here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from support import REPO

SCRIPT = REPO / "scripts" / "results_table.py"
DATASETS = ("tau-bench-airline-dev", "tau2-telecom-cross-dev", "tau2-airline-cross-dev")


def _script():
    spec = importlib.util.spec_from_file_location("results_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kept_replays_are_the_dev_replays_of_the_default() -> None:
    for name in DATASETS:
        metrics = json.loads((REPO / "experiments" / "results" / name / "metrics.json").read_text())
        assert metrics["judging"]["queries"] > 0 and metrics["dataset"]["top_k"] == 10, name
        assert {"dense", "bm25", "dense+ok", "bm25+ok", "hindsight"} <= set(metrics["systems"]), name
    assert not list((REPO / "experiments" / "results").glob("*/*.csv"))  # only metrics.json is kept


def test_readme_and_results_page_hold_the_table_the_replays_give() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr  # names the stale file and the command that rewrites it
    table = _script().table()
    for target in ("README.md", "docs/results.md"):
        assert table in (REPO / target).read_text(), target
    rows = table.splitlines()[2:]
    assert len(rows) == 3 * len(DATASETS)  # every dataset has queries in all three judging modes
    assert all(row.count("|") == 8 for row in rows), rows


def test_a_hand_edited_table_is_refused(tmp_path) -> None:
    # The negative control: change one figure of the README's table and the check names the file.
    script = _script()
    text = (REPO / "README.md").read_text()
    body = script.table()
    first = body.splitlines()[2]
    edited = text.replace(first, first.replace("| repeat |", "| repeat | 0.999 |", 1), 1)
    assert edited != text and script.render(edited, body) != edited
    assert script.render(text, body) == text
    with pytest.raises(ValueError, match="expected one"):
        script.render("no markers here", body)


def test_the_table_follows_the_metrics_files(tmp_path) -> None:
    # A re-run replay with other figures changes the table: it is read from the files, not kept anywhere else.
    script = _script()
    results = tmp_path / "results"
    (results / "tau-bench-airline-dev").mkdir(parents=True)
    metrics = json.loads((REPO / "experiments" / "results" / "tau-bench-airline-dev" / "metrics.json").read_text())
    metrics["systems"]["hindsight"]["ndcg@5"] = 0.9876
    (results / "tau-bench-airline-dev" / "metrics.json").write_text(json.dumps(metrics))
    rows = script.rows(results)
    assert rows[0][:4] == ["`tau-bench-airline-dev`", "repeat", "90", rows[0][3]] and rows[0][3].startswith("0.988")
    assert rows[0][4].startswith("bm25 ") and rows[0][5] == f"{0.9876 - metrics['systems']['bm25']['ndcg@5']:+.3f}"
