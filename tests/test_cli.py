"""The command line and the package's import cost."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from hindsight_lab.cli import main


def test_import_is_light():
    code = ("import hindsight_lab, sys, json; print(json.dumps([m for m in ('torch', 'chromadb', 'mlflow', "
            "'litellm', 'sentence_transformers', 'transformers', 'pandas') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


@pytest.mark.slow
def test_demo_tells_the_whole_story(tmp_path, capsys):
    assert main(["demo", "--store", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"demo-\d\d\s+episode\s+created", out)) == 9  # every episode: one L2 record
    assert "merged" in out and "confirmed" in out
    assert "True" in out.split("2. Search")[0]  # a promotion in the writes table
    assert "semantic" in out and "redundancy" in out and "[L3#" in out and "[L2#" in out
    assert "Injection block" in out
    # the store is real and persistent: the demo left episodes, candidates and rules in it
    assert "'episodes': 9" in out and "'rules': 2" in out


def test_demo_refuses_a_non_empty_store(tmp_path, capsys):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "x").write_text("keep me")
    assert main(["demo", "--store", str(tmp_path / "store")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "store" / "x").read_text() == "keep me"


def test_bad_override_is_reported(capsys, tmp_path):
    assert main(["demo", "--store", str(tmp_path / "s"), "--set", "retrieval.topk=3"]) == 2
    assert "retrieval.topk" in capsys.readouterr().err


def test_reembed_command_rebuilds_a_store_for_another_model(tmp_path, capsys):
    from hindsight_lab import EmbeddingModelMismatch, LabConfig, MemorySystem

    store = tmp_path / "store"
    assert main(["demo", "--store", str(store)]) == 0
    hashing = LabConfig().with_params({"store.path": str(store), "embedder.model": "hashing-64"})
    with pytest.raises(EmbeddingModelMismatch):
        MemorySystem(hashing).open()
    assert main(["reembed", "--store", str(store), "--set", "embedder.model=hashing-64"]) == 0
    assert "9 episode" in capsys.readouterr().out
    with MemorySystem(hashing) as mem:
        assert mem.stats()["episodes"] == 9 and mem.search("East China sales figures").hits


def test_replay_flags():
    from hindsight_lab.cli import _build_parser

    parse = _build_parser().parse_args
    args = parse(["replay", "traces.jsonl"])
    assert args.mlflow is True and args.mlflow_uri is None and args.resume is False and args.out is None
    args = parse(["replay", "traces.jsonl", "--no-mlflow", "--mlflow-uri", "sqlite:////x/m.db", "--resume",
                  "--out", "rep", "--limit", "3", "--skip-invalid"])
    assert (args.mlflow, args.mlflow_uri, args.resume, args.out, args.limit, args.skip_invalid) == (
        False, "sqlite:////x/m.db", True, "rep", 3, True)


def test_replay_resume_needs_an_out_folder(tmp_path, capsys):
    traces = tmp_path / "t.jsonl"
    traces.write_text("")
    assert main(["replay", str(traces), "--resume", "--no-mlflow"]) == 2
    assert "--out DIR" in capsys.readouterr().err


def test_nothing_to_do_ends_with_one_line_and_exit_3(tmp_path, capsys):
    # Regression (issue 16): the project's own demo file ended in a traceback "the replay has an empty query set";
    # reflect of a file with no valid line under --skip-invalid raised KeyError: 'reflect'.
    from hindsight_lab.scenarios.demo import demo_episodes_path

    assert main(["replay", str(demo_episodes_path()), "--no-mlflow"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing to do" in err and "empty query set" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n[1, 2]\n", encoding="utf-8")
    assert main(["reflect", str(bad), "--skip-invalid"]) == 3
    err = capsys.readouterr().err
    assert "no episode to reflect on" in err and "skipped 2 invalid lines (invalid_json: 1, not_object: 1)" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["replay", str(empty), "--no-mlflow"]) == 2
    assert "empty.jsonl: no episodes (the file is empty)" in capsys.readouterr().err
    assert main(["replay", str(empty), "--no-mlflow", "--skip-invalid"]) == 3
    assert "no episode to replay" in capsys.readouterr().err
