"""Labelled pair files (validation with file:line and field), and the ``conflicts``, ``maintain`` and
``bench --conflicts`` commands."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from hindsight_lab import LabConfig, MemorySystem, TraceFormatError
from hindsight_lab.cli import main
from hindsight_lab.datasets.conflict_pairs import load_pairs
from support import T0, shared_dataset

GOOD = {"id": "p1", "task_type": "t", "rule_a": "Call a_x before b_y.", "rule_b": "Call b_y first, then a_x.",
        "conflict": True, "kind": "order"}


def _write(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("rows, match", [
    ([GOOD, "{not json"], r"pairs.jsonl:2: invalid JSON"),
    ([GOOD, {**GOOD, "id": "p2", "conflict": "yes"}], r"pairs.jsonl:2: expected a boolean.*'conflict'"),
    ([{k: v for k, v in GOOD.items() if k != "rule_b"}], r"pairs.jsonl:1: missing required field \(field 'rule_b'\)"),
    ([GOOD, GOOD], r"pairs.jsonl:2: duplicate id 'p1' \(first on line 1\)"),
    ([{**GOOD, "rule_a": "  "}], r"pairs.jsonl:1: expected a non-empty string"),
    (["[1, 2]"], r"pairs.jsonl:1: expected a JSON object"),
    ([""], r"pairs.jsonl: no pairs"),
])
def test_bad_pair_files_name_file_line_and_field(tmp_path, rows, match):
    with pytest.raises(TraceFormatError, match=match):
        load_pairs(_write(tmp_path / "pairs.jsonl", rows))


def test_cli_judges_the_dev_pairs_and_writes_predictions(tmp_path, capsys):
    dev = shared_dataset("conflict-pairs/pairs.dev.jsonl")
    pred = tmp_path / "out" / "pred.jsonl"
    assert main(["conflicts", "--pairs", str(dev), "--predictions", str(pred)]) == 0
    out = capsys.readouterr().out
    p = float(out.split("precision ")[1].split(",")[0])
    r = float(out.split("recall ")[1].split(",")[0])
    assert p >= 0.8 and r >= 0.8, out
    rows = [json.loads(x) for x in pred.read_text().splitlines()]
    assert len(rows) == 40 and {"id", "label", "predicted", "predicted_kind", "reason", "source"} <= set(rows[0])
    assert sum(x["correct"] for x in rows) / 40 >= 0.8


def test_cli_pair_errors(tmp_path, capsys):
    bad = _write(tmp_path / "pairs.jsonl", [GOOD, "{oops"])
    assert main(["conflicts", "--pairs", str(bad)]) == 2
    assert "pairs.jsonl:2: invalid JSON" in capsys.readouterr().err
    assert main(["conflicts", "--pairs", str(_write(tmp_path / "ok.jsonl", [GOOD])), "--png", "x.png"]) == 2
    assert "--png goes with --store" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # --store and --pairs together
        main(["conflicts", "--pairs", "a", "--store", "b"])


@pytest.fixture
def store(tmp_path, minilm) -> Path:
    path = tmp_path / "store"
    with MemorySystem(LabConfig().with_params({"store.path": str(path)}), embedder=minilm) as mem:
        for i, (text, day, conf) in enumerate([
                ("For refund tasks, call lookup_order → verify_identity → issue_refund in this order.", 0, 0.6),
                ("For refund tasks, call lookup_order → issue_refund → verify_identity in this order.", 5, 0.9),
                ("For refund tasks, call lookup_order → issue_refund → verify_identity in this order.", 5, 0.9),
                ("For refund tasks, call lookup_order → issue_refund → verify_identity in this order.", 5, 0.9),
                ("For booking tasks, ask for the travel dates before searching flights.", 1, 0.7)]):
            mem.write(text, task_type=text.split()[1], confidence=conf, counter_examples=["x"],
                      source_episode_ids=[f"e{i}"], now=T0 + timedelta(days=day))
    return path


def test_cli_conflicts_on_a_store_is_read_only_and_draws_the_picture(store, tmp_path, capsys):
    png = tmp_path / "conflicts.png"
    assert main(["conflicts", "--store", str(store), "--png", str(png), "--out", str(tmp_path / "pairs.csv")]) == 0
    out = capsys.readouterr().out
    assert "3 rules and candidates" in out and "supersede 1" in out and "contradicting pairs:" in out
    assert "superseded by" in out and "order" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert (tmp_path / "pairs.csv").read_text().startswith("a,b,similarity")
    assert main(["memories", "list", "--store", str(store), "--archived", "archived"]) == 0
    assert "(no records)" in capsys.readouterr().out  # nothing was archived by looking


def test_cli_maintain_applies_the_pass_and_reports(store, tmp_path, capsys):
    now = (T0 + timedelta(days=6)).isoformat()
    assert main(["maintain", "--store", str(store), "--now", now, "--out", str(tmp_path / "report.csv")]) == 0
    out = capsys.readouterr().out
    assert "0 archived, 0 decayed, 0 merged, 1 superseded, 0 flagged pairs" in out
    assert "superseded" in (tmp_path / "report.csv").read_text()
    with pytest.raises(SystemExit) as refused:  # refused while parsing, in argparse's one line (exit 2)
        main(["maintain", "--store", str(store), "--now", "yesterday"])
    assert refused.value.code == 2
    assert "argument --now: expected an ISO-8601 time" in capsys.readouterr().err
    assert main(["maintain", "--store", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_bench_conflicts_prints_the_timing(capsys, tmp_path):
    assert main(["bench", "--conflicts", "40", "--model", "hashing-64", "--out", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "conflict pass on 40 rules" in out and "HDBSCAN clustering" in out and "target <= 10 s: met" in out
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["rules"] == 40 and data["cluster_s"] < 10 and data["met"] is True
