"""Issue 51.4, "the first hour": every ``--help`` ends with examples that parse; one flag vocabulary across the
subcommands (``--config``, ``--set``, ``--out``, ``--store``; the old ``--limit-tasks``, ``-o/--output`` and the
positional of ``memories export`` still accepted, not shown); ``serve`` without ``--config`` runs the packaged
default and says so; a bad config is refused in one short line naming the field, before any model loads; the
notebooks' extra."""

from __future__ import annotations

import argparse
import logging
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Iterator

import pytest

from hindsight_lab import LabConfig
from hindsight_lab.cli import _build_parser, main
from support import REPO, cli_env

# ------------------------------------------------------------------ help: examples that parse


def _subparsers(parser: argparse.ArgumentParser, prefix: str = "hindsight-lab"
                ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(command, parser)`` for every subcommand and sub-subcommand (``memories list``, ``datasets fetch``)."""
    for action in parser._actions:  # argparse keeps its subparsers here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from _subparsers(sub, f"{prefix} {name}")


COMMANDS = dict(_subparsers(_build_parser()))
_EXAMPLES = re.compile(r"\n(?:Example|Examples):\n((?:  hindsight-lab .*\n?)+)$")


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    found = _EXAMPLES.search(parser.format_help())
    return [line.strip() for line in found.group(1).splitlines()] if found else []


def test_every_subcommand_is_walked() -> None:
    assert {"hindsight-lab serve", "hindsight-lab memories list", "hindsight-lab datasets fetch",
            "hindsight-lab export", "hindsight-lab lures"} <= set(COMMANDS)
    assert len(COMMANDS) >= 23  # 15 commands, 5 memories and 3 datasets actions (when this test was written)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_ends_with_examples_that_the_real_parser_accepts(command: str, monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # the examples' --config files are the repo's own
    examples = _examples(COMMANDS[command])
    assert examples, f"{command} --help does not end with an example:\n{COMMANDS[command].format_help()[-400:]}"
    for line in examples:
        argv = shlex.split(line)
        assert argv[0] == "hindsight-lab" and " ".join(argv[1:]).startswith(command.split(" ", 1)[1]), line
        args = _build_parser().parse_args(argv[1:])  # exits 2 (SystemExit) on any slip
        assert callable(args.func), line


def test_the_top_level_help_ends_with_first_steps(monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    examples = _examples(_build_parser())
    assert "hindsight-lab demo" in examples and any(e.startswith("hindsight-lab serve") for e in examples)
    for line in examples:
        _build_parser().parse_args(shlex.split(line)[1:])


def test_a_help_without_examples_is_caught() -> None:  # negative control of the check above
    bare = argparse.ArgumentParser(prog="hindsight-lab bare", epilog="exit codes: 0 done")
    assert _examples(bare) == []
    prose = argparse.ArgumentParser(prog="hindsight-lab x", epilog="Examples:\n  run it twice")
    assert _examples(prose) == []


# ------------------------------------------------------------------ one flag vocabulary
#: Every command that writes an output file or folder it is told of; ``--out`` names it in each.
WRITES = {"reflect", "replay", "live", "lures", "sweep", "export", "bench", "maintain", "conflicts",
          "memories export"}


def test_one_vocabulary_in_every_help() -> None:
    for command, parser in COMMANDS.items():
        text = parser.format_help()
        assert "--output" not in text and "--limit-tasks" not in text and not re.search(r"(^|\s)-o\b", text), \
            command
        if command.removeprefix("hindsight-lab ") in WRITES:
            assert "--out " in text or "--out\n" in text, f"{command} writes an output but has no --out"
        strings = {s for a in parser._actions for s in a.option_strings}
        for flag, dest in (("--config", "config"), ("--set", "set"), ("--store", "store"), ("--out", "out")):
            if flag in strings:
                action = next(a for a in parser._actions if flag in a.option_strings)
                assert action.dest == dest, (command, flag)
        if "--config" in strings:
            assert "--set" in strings, f"{command}: --config without --set"


def test_the_shared_flags_take_the_shared_types(tmp_path: Path) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    for command, parser in COMMANDS.items():
        for action in parser._actions:
            if "--store" in action.option_strings:
                assert action.type.__name__ == "store_location", command
            if "--config" in action.option_strings:
                assert action.type.__name__ == "config_file", command
            if "--out" in action.option_strings:
                assert action.type.__name__ in ("out_file", "out_folder"), command


@pytest.mark.parametrize("spelling", ["--limit", "--limit-tasks"])
def test_reflect_takes_limit_and_its_old_name(spelling: str) -> None:
    assert _build_parser().parse_args(["reflect", "t.jsonl", spelling, "3"]).limit == 3
    assert _build_parser().parse_args(["reflect", "t.jsonl"]).limit is None


@pytest.mark.parametrize("spelling", ["--out", "--output", "-o"])
def test_export_takes_out_and_its_old_names(spelling: str, tmp_path: Path, capsys) -> None:
    target = tmp_path / f"{spelling.strip('-')}.yaml"
    assert main(["export", "--config", str(REPO / "experiments/configs/default.yaml"), spelling, str(target)]) == 0
    assert LabConfig.from_yaml(target).retrieval == LabConfig().retrieval
    assert f"to {target}" in capsys.readouterr().out


def test_export_without_out_is_refused_in_one_line(capsys) -> None:
    assert main(["export", "--config", str(REPO / "experiments/configs/default.yaml")]) == 2
    assert capsys.readouterr().err == "hindsight-lab export: error: the following arguments are required: --out\n"


def test_memories_export_takes_out_and_the_old_positional() -> None:
    parse = _build_parser().parse_args
    assert parse(["memories", "export", "--store", "s", "--out", "b.jsonl"]).out == "b.jsonl"
    old = parse(["memories", "export", "b.jsonl", "--store", "s"])
    assert (old.file, old.out) == ("b.jsonl", None)


def test_memories_export_needs_one_file(capsys, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    assert main(["memories", "export", "--store", str(store)]) == 2
    assert "required: --out" in capsys.readouterr().err
    assert main(["memories", "export", "a.jsonl", "--store", str(store), "--out", "b.jsonl"]) == 2
    assert "give the file once" in capsys.readouterr().err


def test_list_and_time_flags_are_parsed_while_parsing() -> None:
    args = _build_parser().parse_args(["live", "--seeds", "0,2", "--systems", "bm25,hindsight"])
    assert (args.seeds, args.systems) == ([0, 2], ["bm25", "hindsight"])
    assert _build_parser().parse_args(["lures"]).seeds == [0]  # the default string goes through the type too
    now = _build_parser().parse_args(["maintain", "--store", "s", "--now", "2024-01-02"]).now
    assert now.isoformat() == "2024-01-02T00:00:00+00:00"
    assert _build_parser().parse_args(["bench", "--sizes", "10,20"]).sizes == [10, 20]


# ------------------------------------------------------------------ serve: the packaged default config
def test_serve_runs_the_packaged_default_config_without_config_and_says_so(tmp_path: Path, caplog) -> None:
    # Regression (issue 51): `hindsight-lab serve --store DIR` stopped with "the following arguments are required:
    # --config", though a default config ships with the package.
    from hindsight_lab.cli.serve import DEFAULT_CONFIG_NOTE, served_config

    store = str(tmp_path / "memory-store")
    args = _build_parser().parse_args(["serve", "--store", store, "--set", "server.tool_prefix=team_"])
    with caplog.at_level(logging.INFO, logger="hindsight_lab.cli.serve"):
        cfg, settings = served_config(args)
    assert cfg == LabConfig().with_params({"store.path": store}) and settings.tool_prefix == "team_"
    assert [r.getMessage() for r in caplog.records] == [DEFAULT_CONFIG_NOTE]
    assert "packaged default config" in DEFAULT_CONFIG_NOTE
    # the packaged default is the file the repo ships
    assert LabConfig.from_yaml(REPO / "experiments/configs/default.yaml") == LabConfig()


def test_serve_with_a_config_does_not_claim_the_default(tmp_path: Path, caplog) -> None:  # negative control
    from hindsight_lab.cli.serve import served_config

    tuned = tmp_path / "tuned.yaml"
    LabConfig().with_params({"retrieval.top_k": 3}).to_yaml(tuned)
    args = _build_parser().parse_args(["serve", "--config", str(tuned), "--store", str(tmp_path / "s")])
    with caplog.at_level(logging.INFO, logger="hindsight_lab.cli.serve"):
        cfg, _ = served_config(args)
    assert cfg.retrieval.top_k == 3 and not caplog.records


def test_serve_still_needs_a_store(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        _build_parser().parse_args(["serve"])
    assert done.value.code == 2 and "required: --store" in capsys.readouterr().err


# ------------------------------------------------------------------ a bad config: one short line, no model loaded
_PARSE_ONLY = """
import sys
from hindsight_lab.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("torch", "sentence_transformers", "chromadb", "mlflow") if m in sys.modules)
print("loaded:", ",".join(heavy) or "-")
sys.exit(code)
"""
ZERO = ["semantic", "lexical", "task_type", "confidence", "recency"]


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PARSE_ONLY, *argv], capture_output=True, text=True, timeout=120,
                          env=cli_env(), cwd=REPO)


def _config_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    zero = tmp_path / "zero.yaml"
    zero.write_text("retrieval:\n  weights: {" + ", ".join(f"{w}: 0" for w in ZERO) + "}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("retrieval:\n  top_k: -3\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("retrieval: [\n")
    sets = [a for w in ZERO for a in ("--set", f"retrieval.weights.{w}=0")]
    sample = ["replay", "tau-bench-airline-sample", "--limit", "1", "--no-mlflow"]
    return [
        ([*sample, *sets], r"--set: invalid config: retrieval\.weights: at least one positive term weight"),
        ([*sample, "--config", str(zero)], r"zero\.yaml: invalid config: retrieval\.weights: at least one"),
        ([*sample, "--config", str(bad)], r"bad\.yaml: invalid config: retrieval\.top_k: .*greater than .*\(got -3\)"),
        ([*sample, "--config", str(broken)], r"broken\.yaml:2:1: not valid YAML"),
        ([*sample, "--config", str(tmp_path / "missing.yaml")], r"argument --config: .*missing\.yaml: no such file"),
        ([*sample, "--set", "retrieval.topk=3"], r"--set: unknown config key 'retrieval\.topk'"),
        ([*sample, "--set", "retrieval.top_k=" + "9x" * 2000], r"retrieval\.top_k: .*\(got '9x9x.*…\)"),
        (["reflect", "tau-bench-airline-sample", "--config", str(zero)], r"zero\.yaml: .*retrieval\.weights"),
        (["serve", "--store", str(tmp_path / "s"), "--config", str(zero)], r"zero\.yaml: .*retrieval\.weights"),
        (["serve", "--store", str(tmp_path / "s"), "--set", "server.max_top_k=0"],
         r"--set: invalid config: server\.max_top_k"),
        (["memories", "list", "--store", str(tmp_path), "--set", "retrieval.weights.semantic=-1"],
         r"--set: invalid config: retrieval\.weights\.semantic: .*\(got -1\)"),
    ]


@pytest.mark.slow
def test_a_bad_config_is_one_short_line_naming_the_field_before_any_model_loads(tmp_path: Path) -> None:
    # Regression (issue 51): a config with every weight 0 answered with a 3,694-character dump of the config.
    for argv, message in _config_cases(tmp_path):
        done = _cli(*argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert "Traceback" not in done.stderr, (argv, done.stderr)
        errors = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1 and re.search(message, errors[0]), (argv, done.stderr)
        assert len(errors[0]) < 300, (argv, len(errors[0]), errors[0])
        assert "'schema_version'" not in done.stderr and "embedder" not in done.stderr, argv  # no dump
        assert "loaded: -" in done.stdout or not done.stdout, (argv, done.stdout)


def test_the_message_builder_counts_errors_past_three_and_cuts_long_values() -> None:
    from hindsight_lab.config.base import SHOWN_VALUE_CHARS
    from hindsight_lab.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        LabConfig.from_dict({"retrieval": {"top_k": 0, "path_depth": 0, "token_budget": -1, "min_similarity": "x" * 500,
                                           "what": 1}})
    text = str(caught.value)
    assert "\n" not in text and text.count(";") == 3 and text.endswith("and 2 more error(s)"), text
    assert "x" * SHOWN_VALUE_CHARS not in text
    one = LabConfig().with_params  # negative control: a valid override is not an error
    assert one({"retrieval.weights.semantic": 0}).retrieval.weights.semantic == 0


# ------------------------------------------------------------------ notebooks
def test_the_notebooks_extra_and_the_line_that_opens_them() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["notebooks"] == ["jupyterlab==4.6.6"]
    readme = (REPO / "notebooks" / "README.md").read_text()
    assert "pip install -e '.[notebooks]' && jupyter lab notebooks/" in readme
