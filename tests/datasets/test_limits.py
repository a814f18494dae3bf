"""Hostile input to every reader: JSON nested 10,000 deep, an oversize instruction, a JSON array in a .jsonl file.

Regression tests for the fault report of issue 16: a line nested 10,000 deep crashed `reflect`, `replay` (with
`--skip-invalid` too) and `memories import` with a RecursionError traceback; a 6 MB instruction was accepted and cost
1.43 GB to embed; a JSON array in a `.jsonl` file was reported as "truncated?".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_lab.cli import main
from hindsight_lab.datasets.conflict_pairs import load_pairs
from hindsight_lab.datasets import detect_format, load, read_locomo
from hindsight_lab.datasets.jsonl import ReadStats, load_episodes
from hindsight_lab.jsonio.limits import ReadLimits, check_value, loads
from hindsight_lab.errors import TraceFormatError

from support import episode

DEEP = 10_000


def _deep(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _good(eid: str = "e1") -> str:
    return json.dumps(episode(eid, "refund order 7", ["refund"]))


def test_loads_bounds_depth_and_strings() -> None:
    with pytest.raises(TraceFormatError, match="nested deeper than 100 levels") as err:
        loads(_deep(), path="x.json")
    assert err.value.reason == "too_deep"
    with pytest.raises(TraceFormatError, match=r"nested deeper than 3 levels \(field 'a.0.0'\)"):
        loads('{"a": [[[1]]]}', ReadLimits(max_depth=3))
    loads('{"a": [[1]]}', ReadLimits(max_depth=3))  # exactly at the limit: fine
    with pytest.raises(TraceFormatError, match="a string of 11 characters is over the limit of 10") as err:
        check_value({"steps": [{"content": "x" * 11}]}, ReadLimits(max_string_chars=10))
    assert err.value.field == "steps.0.content" and err.value.reason == "too_large"


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
def test_jsonl_reader_refuses_deep_and_oversize_lines(tmp_path: Path, strict: bool) -> None:
    big = json.dumps(episode("e3", "x" * 30_000, ["refund"]))
    path = _jsonl(tmp_path / "t.jsonl", [_good("e1"), _deep(), big, _good("e4")])
    if strict:
        with pytest.raises(TraceFormatError, match=r"t.jsonl:2: nested deeper than 100 levels"):
            load_episodes(path)
        return
    episodes, stats = load_episodes(path, strict=False)
    assert [e.episode_id for e in episodes] == ["e1", "e4"]
    assert stats.by_reason == {"too_deep": 1, "too_large": 1}
    assert stats.errors[1].endswith(
        "t.jsonl:3: an instruction of 30,000 characters is over the limit of 20,000 (field 'instruction')")


def test_a_json_array_in_a_jsonl_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps([episode("e1", "x", ["a"])], indent=2), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="runs.jsonl:1: a JSON list opens here, not one episode object per line"):
        load(path)


def test_whole_file_adapters_refuse_deep_json(tmp_path: Path) -> None:
    tau = tmp_path / "gpt-4o-airline.json"
    tau.write_text('[{"task_id": 0, "trial": 0, "reward": 1.0, "info": {"task": ' + _deep() + '}, "traj": []}]')
    with pytest.raises(TraceFormatError, match="nested deeper than"):
        load(tau)  # detect_format parses the first item: it stops there too
    with pytest.raises(TraceFormatError, match="nested deeper than 100 levels"):
        load(tau, format="tau-bench")
    tau2 = tmp_path / "telecom.json"
    tau2.write_text('{"info": {}, "tasks": [], "simulations": ' + _deep() + "}")
    with pytest.raises(TraceFormatError, match="nested deeper than"):
        detect_format(tau2)
    with pytest.raises(TraceFormatError, match="nested deeper than 100 levels"):
        load(tau2, format="tau2-bench")
    locomo = tmp_path / "locomo.json"
    locomo.write_text('[{"sample_id": "c", "conversation": ' + _deep() + ', "qa": []}]')
    with pytest.raises(TraceFormatError, match="nested deeper than"):
        read_locomo(locomo)
    pairs = _jsonl(tmp_path / "pairs.jsonl", [_deep()])
    with pytest.raises(TraceFormatError, match=r"pairs.jsonl:1: nested deeper than 100 levels"):
        load_pairs(pairs)


def test_tau_bench_run_without_its_task_is_invalid(tmp_path: Path) -> None:
    run = {"task_id": 0, "trial": 0, "reward": 1.0, "info": {},
           "traj": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps([run]))
    with pytest.raises(TraceFormatError, match=r"item 0 .*missing required field \(field 'info.task'\)"):
        load(path)


def test_cli_commands_report_deep_input_as_invalid_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path / "t.jsonl", [_good("e1"), _deep()])
    export = _jsonl(tmp_path / "export.jsonl", [_deep()])
    for argv, where in ((["reflect", str(path)], "t.jsonl:2"), (["replay", str(path), "--no-mlflow"], "t.jsonl:2"),
                        (["memories", "import", str(export), "--store", str(tmp_path / "store")], "export.jsonl:1")):
        code, err = main(argv), capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and f"{where}: nested deeper than 100 levels" in err, (argv, err)
    # lenient: the deep line is skipped and counted on screen; what is left is reflected on, or is nothing to replay
    assert main(["reflect", str(path), "--skip-invalid"]) == 0
    assert "skipped 1 invalid line (too_deep: 1)" in capsys.readouterr().err
    assert main(["replay", str(path), "--no-mlflow", "--skip-invalid"]) == 3
    err = capsys.readouterr().err
    assert "nothing to do:" in err and "empty query set" in err and "1 invalid line(s) skipped (too_deep: 1)" in err


def test_read_stats_count_the_new_reasons() -> None:
    stats = ReadStats()
    stats._skip(TraceFormatError("x", reason="too_deep"), "too_deep")
    assert "too_deep: 1" in stats.summary()
