"""Every command and code block the README and the docs pages show runs on a checkout with nothing beside it.

The pages are README.md and every Markdown page under docs/ (PAGES). Each ``hindsight-lab`` command of their bash
blocks, and those written inline in the text, parses with the real command line and names only what exists. Then the
commands are run: each step of STEPS is a subprocess of the installed console script, with ``HINDSIGHT_LAB_HOME`` in
a temporary folder and a temporary work area as its current folder (a copy of ``experiments/``, and where the commands
write their files); each step's test checks its exit code and what it printed or wrote. README_MAP says, for every
command of the pages, which steps run it in its own words (placeholders in capitals filled in: ``RUN_ID`` from the
sweep, ``MEMORY_ID`` from ``memories list``, …) or, for a command that cannot run here — full-size data to download
first, minutes of work, a server that runs until stopped, an LLM or a file only the user has — why not, the tests that
hold the same code path, and its twin on the committed samples (the same subcommand on ``X-sample``) where there is
one. test_every_readme_command_runs_here_or_says_why checks that nothing is left out; OTHER_MAP does the same for the
pages' other commands (the install, servers, Docker). With the full-size data beside the checkout, the README's
``datasets fetch`` and ``datasets path`` also run on it.

The pages' other code blocks: every Python block compiles, and runs — the blocks of one page in order, in one
interpreter, in a temporary work area of their own — unless the line before it says ``<!-- docs-check: compile-only:
WHY -->`` (a server it needs, minutes of work); every YAML block parses (a config section validates as a
``LabConfig``), every JSON block parses; ``text`` blocks are output or pictures, not code. A block in any other
language, or none, fails the test.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import yaml

from hindsight_lab.cli import _build_parser
from hindsight_lab.datasets.registry import entries, groups
from hindsight_lab.replay.journal import JOURNAL_DIR, JOURNAL_FILE
from hindsight_lab.replay.runner import DEFAULT_SYSTEMS

from support import REPO, SHARED_DATASETS, cli_env, kill_midway, shared_dataset

README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES: dict[str, str] = {"README.md": README, **{
    str(path.relative_to(REPO)): path.read_text(encoding="utf-8")
    for path in sorted((REPO / "docs").glob("**/*.md"))
    if not {"hooks", "notebooks"} & set(path.relative_to(REPO / "docs").parts[:-1])}}  # docs/notebooks: ../notebooks
"""Every page whose commands and code blocks are checked: the README and the docs site's Markdown pages."""
TEXT = "\n\n".join(PAGES.values())
PROMPT = ".venv/bin/hindsight-lab "
README_MAX_LINES = 150


def _commands() -> list[str]:
    """Every ``hindsight-lab …`` command of the pages' bash blocks (continuations joined, comments dropped)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", TEXT, flags=re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            for part in re.split(r"&&|;", line):
                part = " ".join(part.split())
                if part.startswith(PROMPT):
                    out.append(part[len(PROMPT):])
    return out


COMMANDS = list(dict.fromkeys(_commands()))  # a command shown on several pages is one command
PLACEHOLDER = re.compile(r"^[A-Z_<]|\.\.\.|<")
CAPITALS = re.compile(r"[A-Z][A-Z0-9_]*")
"""A README word in capitals (NAME, KEY, FILE, S, RUN_ID, MEMORY_ID, TRACES) stands for the user's own value."""


def _forms(command: str) -> list[list[str]]:
    """The commands a README synopsis stands for, as words: ``[--x X]`` optional, ``a|b`` one of."""
    optional = re.findall(r"\[([^\]]*)\]", command)
    out = []
    for kept in itertools.product((False, True), repeat=len(optional)):
        parts = iter(kept)
        words = re.sub(r"\[([^\]]*)\]", lambda m: m[1] if next(parts) else "", command).split()
        out += [list(choice) for choice in itertools.product(*(w.split("|") for w in words))]
    return out


def _same(readme: list[str], run: list[str]) -> bool:
    """Whether a run is the README's command in its own words (a word in capitals matches any value)."""
    return len(readme) == len(run) and all(r == x or CAPITALS.fullmatch(r) for r, x in zip(readme, run))


def _inline_commands() -> list[str]:
    """``hindsight-lab …`` commands written inline in the text, less those that only name a command of a bash
    block (``hindsight-lab replay``, ``hindsight-lab serve --config``)."""
    text = re.sub(r"```.*?```", "", TEXT, flags=re.DOTALL)
    out = []
    for span in re.findall(r"`hindsight-lab ([^`]+)`", text):
        words = span.split()
        if not any(_same(words, c.split()[:len(words)]) for c in COMMANDS):
            out.append(" ".join(words))
    return out


INLINE = _inline_commands()


def _project_file(ref: str) -> Path | None:
    """A path the README names inside the project (``experiments/…``, ``datasets/…``), else None."""
    return REPO / ref if ref.startswith(("experiments/", "datasets/", "notebooks/")) else None


def _check_data(ref: str) -> None:
    if "/" in ref or Path(ref).suffix:
        path = _project_file(ref)
        assert path is None or path.is_file(), f"README names {ref}, which is not in the project"
    elif not PLACEHOLDER.search(ref):
        assert ref in entries() or ref in groups(), f"README names dataset {ref!r}, which is not registered"


def test_readme_has_commands() -> None:
    assert len(COMMANDS) >= 25 and README.startswith("# hindsight_lab")
    first = re.search(r"```bash\n(.*?)```", README, flags=re.DOTALL)
    assert first and "hindsight-lab demo" in first[1] and "pytest" in first[1]  # the two commands open it
    assert len(INLINE) >= 5, INLINE
    assert {"README.md", "docs/getting-started.md", "docs/operations.md"} <= set(PAGES), sorted(PAGES)


def test_readme_is_a_front_door() -> None:
    # Issue 51: the README had grown to 1,573 lines of measurements; it says what the toolkit is, the two commands,
    # one example, one generated table and where to read on, and the rest lives in docs/.
    lines = README.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines, more than {README_MAX_LINES}"
    first_screen = "\n".join(lines[:12])
    assert "pip install -e '.[dev]'" in first_screen and "hindsight-lab demo" in first_screen
    assert "python -m pytest" in first_screen
    for page in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (REPO / page).is_file(), f"README links {page}, which does not exist"


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_parses_and_names_what_exists(command: str) -> None:
    assert "../shared" not in command, "an outside user has no ../shared beside the checkout"
    argv = shlex.split(command)
    args = _build_parser().parse_args(argv)  # SystemExit (a failed test) on an unknown command or flag
    for name in ("dataset", "traces"):
        for ref in getattr(args, name, None) or []:
            _check_data(ref)
    for name in ("pairs", "sweep_dataset", "config", "spec"):
        ref = getattr(args, name, None)
        if isinstance(ref, str):
            _check_data(ref)
    if args.command == "datasets":
        for ref in getattr(args, "names", None) or []:
            _check_data(ref)


# ------------------------------------------------------------------ running them
@dataclass
class Ran:
    """What one step did: exit code, output, the files it wrote (as they were right after it), its folders."""

    argv: list[str]
    code: int
    out: str
    err: str
    seconds: float
    work: Path
    home: Path
    files: dict[str, bytes] = field(default_factory=dict)

    def file(self, name: str) -> bytes:
        assert name in self.files, f"`{shlex.join(self.argv)}` wrote no {name}"
        return self.files[name]


Check = Callable[[Ran, dict[str, Ran]], None]


@dataclass(frozen=True)
class Step:
    """One command, as typed after ``hindsight-lab``; ``{X}`` is a value an earlier step of its chain gave."""

    argv: str
    check: Check
    code: int = 0  # the documented exit code
    writes: tuple[str, ...] = ()  # files (in the work area) it must write; kept as they were right after it
    gives: Callable[[Ran], dict[str, str]] | None = None  # values for later steps
    kill_after: int = 0  # SIGKILL once the replay journal of its --out folder holds this many units


def _has(*needles: str) -> Check:
    def check(ran: Ran, runs: dict[str, Ran]) -> None:
        for needle in needles:
            assert needle in ran.out, f"expected {needle!r} in the output:\n{ran.out[-3000:]}"
    return check


def _explained(query_id: str) -> Check:
    """``--explain`` printed the query's table: its header, the term columns, and an injected retry of its task
    (rank 1, repeat grade 2) first."""
    def check(ran: Ran, runs: dict[str, Ran]) -> None:
        lines = ran.out.splitlines()
        assert lines[0].startswith(f"{query_id}: ") and "judged as: repeat" in lines[1], ran.out[-3000:]
        head, first = lines[2].split(), lines[3].split()
        assert head[:2] == ["rank", "id"] and "task_type_match" in head and head[-1] == "repeat", lines[2]
        assert first[0] == "1" and first[-1] == "2", lines[3]
    return check


def _all(*checks: Check) -> Check:
    def check(ran: Ran, runs: dict[str, Ran]) -> None:
        for c in checks:
            c(ran, runs)
    return check


def _table(ran: Ran) -> str:
    """The side-by-side table a replay prints (its header line and one row per system)."""
    lines = ran.out.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ndcg@5")), None)
    assert start is not None, f"no table in the output:\n{ran.out[-3000:]}"
    end = next(i for i, line in enumerate(lines + [""]) if i > start and (
        not line.strip() or line.startswith(("hindsight:", "timing", "by source", "by group"))))
    return "\n".join(lines[start:end])


def _replay(header: str, systems: str = " ".join(DEFAULT_SYSTEMS)) -> Check:
    """A replay printed its dataset line and one table row per system, and the recall of memory is not nil (the
    success-only baselines may find nothing: a sample can hold few earlier successes of the same task)."""
    def check(ran: Ran, runs: dict[str, Ran]) -> None:
        assert header in ran.out, f"expected {header!r}:\n{ran.out[-3000:]}"
        rows = {line.split()[0]: line.split()[1:] for line in _table(ran).splitlines()[1:] if line.strip()}
        assert list(rows) == systems.split(), _table(ran)
        for name, cells in rows.items():
            ndcg = float(cells[0])
            if name.endswith("+ok"):
                assert 0.0 <= ndcg <= 1.0, f"{name} nDCG@5 {ndcg}:\n{_table(ran)}"
            else:
                assert ndcg == 0.0 if name == "none" else ndcg > 0.3, f"{name} nDCG@5 {ndcg}:\n{_table(ran)}"
    return check


def _same_table_as(other: str) -> Check:
    def check(ran: Ran, runs: dict[str, Ran]) -> None:
        assert _table(ran) == _table(runs[other]), f"the table differs from that of `{other}`"
    return check


def _mlflow_run(ran: Ran, runs: dict[str, Ran]) -> None:
    assert re.search(r"MLflow run [0-9a-f]{32} in experiment 'hindsight-replay' at sqlite:///", ran.out), ran.out
    assert (ran.home / "mlflow.db").is_file()  # the default store, in the home folder


def _no_mlflow(ran: Ran, runs: dict[str, Ran]) -> None:
    assert "MLflow run" not in ran.out


def _jsonl(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines()]


def _demo(ran: Ran, runs: dict[str, Ran]) -> None:
    out = ran.out
    assert len(re.findall(r"demo-\d\d\s+episode\s+created", out)) == 9  # every episode: one L2 record
    assert "merged" in out and "confirmed" in out and "[L3#" in out and "[L2#" in out
    assert "Injection block" in out and "'episodes': 9" in out and "'rules': 2" in out


def _search_rows(out: str) -> int:
    """Rows (hits) of the demo's first search table."""
    part = out.split("2. Search")[1].split("Injection block")[0]
    return len(re.findall(r"^ +\d+ \[L[23]#[0-9a-f]{6}\] ", part, re.MULTILINE))


def _demo_with_config(ran: Ran, runs: dict[str, Ran]) -> None:
    _demo(ran, runs)
    # retrieval.top_k=10 over the file's 5: the first search keeps more hits than the default demo's
    assert _search_rows(ran.out) > _search_rows(runs["demo"].out) >= 1, (ran.out, runs["demo"].out)


def _exported(ran: Ran, runs: dict[str, Ran]) -> None:
    name = ran.argv[-1]
    cfg = yaml.safe_load(ran.file(name))
    assert re.search(rf"exported \d+ behaviour fields to {re.escape(name)}", ran.out), ran.out
    assert cfg["retrieval"]["top_k"] == 5 and cfg["provenance"]["package_version"], cfg.get("provenance")
    assert "path" not in cfg.get("store", {}) and "url" not in cfg.get("store", {})  # no store location


def _sweep(ran: Ran, runs: dict[str, Ran]) -> None:
    assert "top 5 of 8 trials (by ndcg@5, cross-validated by task on dev):" in ran.out, ran.out
    assert re.search(r"^chosen: (base|\d+) \(", ran.out, re.MULTILINE), ran.out  # the selection rule's choice
    assert re.search(r"best gain [+-]\d\.\d{4} against an optimism of [+-]\d\.\d{4}", ran.out), ran.out
    assert "base, chosen, best and baselines (test scored once, here):" in ran.out, ran.out
    assert re.search(r"^chosen config \(.+\) written to tuned\.yaml$", ran.out, re.MULTILINE), ran.out
    chosen = yaml.safe_load(ran.file("tuned.yaml"))
    prov = chosen["provenance"]
    assert prov["run_id"] and prov["metrics"] and "cv.optimism" in prov["metrics"], prov


def _sweep_ids(ran: Ran) -> dict[str, str]:
    found = re.search(r"MLflow parent run ([0-9a-f]{32}); chosen trial run ([0-9a-f]{32}|— \(the base\))", ran.out)
    assert found, ran.out
    return {"RUN_ID": found[1]}  # the parent logs the chosen config (best-config.yaml)


def _export_run(ran: Ran, runs: dict[str, Ran]) -> None:
    sweep = runs["sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml"]
    exported, best = yaml.safe_load(ran.file("tuned.yaml")), yaml.safe_load(sweep.file("tuned.yaml"))
    assert re.search(r"exported \d+ behaviour fields to tuned.yaml", ran.out), ran.out
    assert exported["retrieval"] == best["retrieval"]  # the sweep's chosen config, read back from its MLflow run
    assert exported["provenance"]["run_id"] in re.findall(r"run ([0-9a-f]{32})", sweep.out)


def _reflections(ran: Ran, runs: dict[str, Ran]) -> None:
    rows = _jsonl(ran.file("reflections.jsonl"))
    assert len(rows) == 20 and len({r["episode_id"] for r in rows}) == 20  # one line per episode of the sample
    rules = [r["reflection"]["reusable_rule"] for r in rows if r["reflection"]]
    assert rules and all(rules), rows
    assert re.search(r"^20 episodes, [1-9]\d* reflections \(trigger rate", ran.out, re.MULTILINE), ran.out


def _pairs(ran: Ran, runs: dict[str, Ran]) -> None:
    found = re.search(r"conflict-pairs-sample: (\d+) pairs, judge offline: precision ([\d.]+), recall ([\d.]+)",
                      ran.out)
    assert found and float(found[2]) >= 0.8 and float(found[3]) >= 0.8, ran.out
    predictions = _jsonl(ran.file("pred.jsonl"))
    assert len(predictions) == int(found[1]) >= 5


def _listing(ran: Ran, runs: dict[str, Ran]) -> None:
    samples = REPO / "datasets" / "samples"
    assert f"samples in {samples}" in ran.out, "the subprocess did not import this checkout"
    assert f"fetched datasets live in {ran.home / 'datasets'}" in ran.out
    header, *lines = [line for line in ran.out.splitlines() if line.strip()]
    present = header.index("present") + len("present")  # the column's right edge (pandas aligns right)
    rows = {line.split()[0]: line for line in lines}
    for name, entry in entries().items():
        assert name in rows, f"datasets list has no row for {name}"
        # a sample is in the checkout; a fresh home holds no development split
        assert rows[name][:present].split()[-1] == ("yes" if entry.is_sample else "no"), rows[name]
        assert (str(samples) in rows[name]) == entry.is_sample, rows[name]
    assert set(groups()) <= set(rows)


def _sample_path(ran: Ran, runs: dict[str, Ran]) -> None:
    assert ran.out.splitlines() == [str(REPO / "datasets" / "samples" / "tau-bench" / "gpt-4o-airline.sample.json")]
    assert Path(ran.out.strip()).is_file()


def _fetched_samples(*names: str) -> Check:
    def check(ran: Ran, runs: dict[str, Ran]) -> None:
        for name in names:
            found = re.search(rf"^{re.escape(name)}: sample (\S+) \(sha256 [0-9a-f]{{12}}… from project checkout\)$",
                              ran.out, re.MULTILINE)
            assert found and Path(found[1]).is_file(), ran.out
    return check


def _store_made(ran: Ran, runs: dict[str, Ran]) -> None:
    found = re.search(r"memory: 20 episodes, (\d+) candidates, 0 rules", ran.out)
    assert found and int(found[1]) >= 3, ran.out
    assert (ran.work / "memory-store").is_dir()


def _candidates(runs: dict[str, Ran]) -> int:
    """The candidate rules in the store that `reflect --store` made."""
    return int(re.search(r"memory: 20 episodes, (\d+) candidates",
                         runs["reflect tau-bench-airline-sample --store memory-store"].out)[1])


def _conflicts_scan(ran: Ran, runs: dict[str, Ran]) -> None:
    found = re.search(r"^(\d+) rules and candidates: \d+ clusters, \d+ noise; \d+ pairs compared", ran.out,
                      re.MULTILINE)
    assert found and int(found[1]) == _candidates(runs), ran.out
    assert "picture written to conflicts.png" in ran.out and ran.file("conflicts.png").startswith(b"\x89PNG")


def _maintained(ran: Ran, runs: dict[str, Ran]) -> None:
    n = _candidates(runs)
    assert "maintenance at 2024-01-02T00:00:00+00:00: 0 archived, 0 decayed" in ran.out, ran.out
    assert re.search(rf"conflict pass: {n} rules and candidates, \d+ clusters", ran.out), ran.out
    assert re.search(r"memory now: 20 episodes, \d+ candidates, 0 rules", ran.out), ran.out


def _candidate_rows(ran: Ran, runs: dict[str, Ran]) -> None:
    ids = re.findall(r"^(rule-[0-9a-f]{12})\s+L2 candidate\s", ran.out, re.MULTILINE)
    assert len(ids) == _candidates(runs) and f"{len(ids)} record(s)" in ran.out, ran.out


def _first_candidate(ran: Ran) -> dict[str, str]:
    return {"MEMORY_ID": re.search(r"^(rule-[0-9a-f]{12})\s", ran.out, re.MULTILINE)[1]}


def _inspected(ran: Ran, runs: dict[str, Ran]) -> None:
    memory_id = ran.argv[1]
    assert ran.out.startswith(f"{memory_id}  L2 candidate"), ran.out
    found = re.search(r"^provenance \((\d+) episode\(s\)\):\n  tau-airline-t\d+-r\d+: (success|failure|partial)",
                      ran.out, re.MULTILINE)
    assert found and int(found[1]) >= 1, ran.out


def _shown(ran: Ran, runs: dict[str, Ran]) -> None:
    record = json.loads(ran.out)
    assert record["id"] == ran.argv[2] and record["kind"] == "candidate" and record["content"], record


def _backed_up(ran: Ran, runs: dict[str, Ran]) -> None:
    records = _jsonl(ran.file("memory-store.jsonl"))
    assert f"exported {len(records)} record(s) to memory-store.jsonl" in ran.out, ran.out
    assert len(records) == 20 + _candidates(runs) and all(r.get("embedding") for r in records)


JOURNAL = f"reports/tau/{JOURNAL_DIR}/{JOURNAL_FILE}"


def _restored(ran: Ran, runs: dict[str, Ran]) -> None:
    n = len(_jsonl(runs["memories export --out memory-store.jsonl --store memory-store"].file("memory-store.jsonl")))
    assert f"imported {n} record(s) from memory-store.jsonl: {n} kept their vectors, 0 re-embedded" in ran.out, ran.out
    assert (ran.work / "restored-store").is_dir()


def _killed(ran: Ran, runs: dict[str, Ran]) -> None:
    held = int(re.fullmatch(r"killed with (\d+) units in the journal", ran.out)[1])
    assert 5 <= held < 20 and ran.file(JOURNAL).count(b"\n") == held + 1  # the header, one line per episode


def _resumed(ran: Ran, runs: dict[str, Ran]) -> None:
    held = re.search(r"^resumed: (\d+) units taken from the journal$", ran.out, re.MULTILINE)
    assert held and int(held[1]) >= 5 and "report written to reports/tau" in ran.out, ran.out
    assert json.loads(ran.file("reports/tau/metrics.json"))["modes"]["repeat"]["queries"] == 15
    assert not (ran.work / "reports" / "tau" / JOURNAL_DIR).exists()  # removed once the report is written


# The steps, in chains: a chain runs in order (a later step may use what an earlier one wrote or gave); two chains
# run at a time. Every step that logs to MLflow is in the first chain, so the default store has one writer at a time.
AIRLINE_HEADER = "gpt-4o-airline.sample (tau-bench): 20 episodes, 15 queries in 5 groups"
TELECOM_HEADER = " (tau2-bench): 10 episodes, 5 queries"
AIRLINE_AGENTS = ("gpt-4.1", "sft-gpt-4.1", "gpt-4.1-mini", "gpt-oss-120b", "claude-sonnet-4-5", "claude-opus-4-6")
"""The six files of ``tau2-airline-cross-sample``, in replay order (the same 5 tasks in each)."""
CHAINS: list[list[Step]] = [  # longest first (two run at a time)
    [  # the literal sample replay, and the sample twins of the development replays (no MLflow: see below)
        Step("replay tau-bench-airline-sample --no-mlflow", _all(_replay(AIRLINE_HEADER), _no_mlflow)),
        Step("replay tau2-telecom-cross-sample --no-mlflow",
             _all(_replay("telecom_gpt-4.1.sample + telecom_sft-gpt-4.1.sample" + TELECOM_HEADER),
                  _has("by source (queries of each file):", "telecom_sft-gpt-4.1.sample.json"))),
        Step("replay tau2-airline-cross-sample --systems dense,bm25 --baseline-key instruction --no-mlflow",
             _replay(" + ".join(f"airline_{agent}.sample" for agent in AIRLINE_AGENTS)
                     + " (tau2-bench): 30 episodes, 25 queries", "dense bm25")),
        Step("replay reflexion-hotpotqa-sample --no-mlflow",
             _replay("100_questions_7_trials.sample (reflexion-hotpotqa): 38 episodes, 32 queries")),
        Step("replay locomo-sample --limit 2 --no-mlflow", _replay("locomo10.sample (locomo): ")),
        Step("replay tau-bench-airline-sample --explain tau-airline-t1-r1 --set retrieval.weights.task_type=0.3",
             _explained("tau-airline-t1-r1")),
    ],
    [  # every step that logs to MLflow, so that the default store has one writer at a time
        # the twin of `replay tau-bench-airline-dev --out reports/tau`, killed midway; then resumed, as the README's
        # `--resume` line: it ends with the table of the uninterrupted replay, the report and an MLflow run
        Step("replay tau-bench-airline-sample --out reports/tau", _killed, code=-9, kill_after=5, writes=(JOURNAL,)),
        Step("replay tau-bench-airline-sample --out reports/tau --resume",
             _all(_replay(AIRLINE_HEADER), _same_table_as("replay tau-bench-airline-sample --no-mlflow"), _resumed,
                  _mlflow_run),
             writes=("reports/tau/metrics.json", "reports/tau/episodes.csv", "reports/tau/hits_over_time.png")),
        # the README's "your own files, in order": the two telecom agents' runs, written in the trace format; the
        # same metrics as the recorded files they came from
        Step("replay traces-agent-a.jsonl traces-agent-b.jsonl",
             _all(_replay("traces-agent-a + traces-agent-b (jsonl): 10 episodes, 5 queries"), _mlflow_run,
                  _has("by source (queries of each file):", "traces-agent-b.jsonl"),
                  _same_table_as("replay tau2-telecom-cross-sample --no-mlflow"))),
        Step("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml", _sweep,
             writes=("tuned.yaml",), gives=_sweep_ids),
        Step("export --run-id {RUN_ID} --out tuned.yaml", _export_run, writes=("tuned.yaml",)),
    ],
    [
        Step("demo", _demo),
        Step("export --config experiments/configs/default.yaml --out my.yaml", _exported, writes=("my.yaml",)),
        Step("demo --config my.yaml --set retrieval.top_k=10", _demo_with_config),
        Step("reflect tau-bench-airline-sample --out reflections.jsonl", _reflections, writes=("reflections.jsonl",)),
        Step("conflicts --pairs conflict-pairs-sample --predictions pred.jsonl", _pairs, writes=("pred.jsonl",)),
        Step("datasets list", _listing),
        Step("datasets path tau-bench-airline-sample", _sample_path),
        Step("datasets fetch tau-bench-airline-sample", _fetched_samples("tau-bench-airline-sample")),
        Step("datasets fetch tau2-telecom-cross-sample",
             _fetched_samples("tau2-telecom-gpt-4.1-sample", "tau2-telecom-sft-gpt-4.1-sample")),
    ],
    [  # a store made by `reflect --store`, then every command that works on it
        Step("reflect tau-bench-airline-sample --store memory-store", _store_made),
        Step("conflicts --store memory-store --png conflicts.png", _conflicts_scan, writes=("conflicts.png",)),
        Step("memories list --store memory-store --kind candidate", _candidate_rows, gives=_first_candidate),
        Step("inspect {MEMORY_ID} --store memory-store", _inspected),
        Step("memories show {MEMORY_ID} --store memory-store", _shown),
        Step("memories export --out memory-store.jsonl --store memory-store", _backed_up, writes=("memory-store.jsonl",)),
        Step("memories import memory-store.jsonl --store restored-store", _restored),  # docs/operations.md: a restore
        Step("maintain --store memory-store --now 2024-01-02", _maintained),
    ],
]
STEPS = {step.argv: step for chain in CHAINS for step in chain}


@dataclass(frozen=True)
class Instead:
    """A README command not run here in its own words: why, the tests that hold the same code path, and the steps
    that run its twin on the committed samples (or its forms, for a synopsis), if any."""

    why: str
    tests: tuple[str, ...]
    twins: tuple[str, ...] = ()


def _runs(*steps: str) -> tuple[str, ...]:
    """The steps that run a README command in its own words."""
    return steps


NETWORK = "downloads the public file (the fetch is tested against a local HTTP server)"
SAMPLE_TWIN = "full-size development split: `datasets fetch` downloads it first (its sample twin runs here)"
README_MAP: list[tuple[str, tuple[str, ...] | Instead]] = [
    # README command (a regular expression over its words) -> the steps that run it, or why it does not run here
    (r"demo", _runs("demo")),
    (r"demo --config my\.yaml --set retrieval\.top_k=10",
     _runs("demo --config my.yaml --set retrieval.top_k=10")),  # my.yaml: written by the export --config step
    (r"demo --set store\.url=http://127\.0\.0\.1:8000",
     Instead("needs the `chroma run` server of the line before it, which runs until stopped",
             ("tests/test_memory_chroma.py", "tests/store/test_contract.py", "tests/test_cli.py"), ("demo",))),
    (r"reflect tau-bench-airline-sample --out reflections\.jsonl",
     _runs("reflect tau-bench-airline-sample --out reflections.jsonl")),
    (r"reflect traces\.jsonl --reflector litellm .*",
     Instead("the user's own traces and a local Ollama model server",
             ("tests/reflect/test_llm_reflector.py", "tests/reflect/test_reflect_real.py"),
             ("reflect tau-bench-airline-sample --out reflections.jsonl",))),
    (r"reflect tau-bench-airline-sample --store memory-store",
     _runs("reflect tau-bench-airline-sample --store memory-store")),
    (r"datasets list", _runs("datasets list")),
    (r"datasets path tau-bench-airline-sample", _runs("datasets path tau-bench-airline-sample")),
    (r"datasets fetch tau-bench-airline-dev",  # --from DIR: test_readme_dataset_commands_on_the_development_data
     Instead(NETWORK, ("tests/datasets/test_fetch.py", "tests/test_readme.py"),
             ("datasets fetch tau-bench-airline-sample",))),
    (r"datasets fetch tau-bench-airline-dev --from DIR",  # docs/datasets.md
     Instead("a folder holding the development data, which an outside user does not have; "
             "test_readme_dataset_commands_on_the_development_data runs it on ../shared/datasets",
             ("tests/datasets/test_fetch.py", "tests/test_readme.py"), ("datasets fetch tau-bench-airline-sample",))),
    (r"datasets fetch NAME",  # docs/results.md: each dataset of the results table
     Instead(NETWORK, ("tests/datasets/test_fetch.py", "tests/test_readme.py"),
             ("datasets fetch tau-bench-airline-sample",))),
    (r"replay NAME --no-mlflow --out experiments/results/NAME",  # docs/results.md: the replays behind the table
     Instead(SAMPLE_TWIN + "; tests/test_results_table.py regenerates the table from the kept metrics.json",
             ("tests/test_results_table.py", "tests/replay/test_replay.py"),
             ("replay tau-bench-airline-sample --no-mlflow", "replay tau-bench-airline-sample --out reports/tau --resume"))),
    (r"memories import memory-store\.jsonl --store restored-store",
     _runs("memories import memory-store.jsonl --store restored-store")),
    (r"reembed --store S --config NEW\.yaml",
     Instead("the user's own store and a second embedding model; the suite re-embeds a store for another model",
             ("tests/test_cli.py", "tests/test_manage.py"))),
    (r"serve --config /app/experiments/configs/default\.yaml --store http://chroma:8000 --transport http "
     r"--host 0\.0\.0\.0 --port 8765",
     Instead("the compose memory service's command, inside its container (no Docker engine here); the suite "
             "parses it, finds its config in the repository and runs its health check against a real server",
             ("tests/test_compose.py",))),
    (r"serve --transport http",
     Instead("a server that runs until stopped; the suite starts one for its HTTP and compose tests",
             ("tests/server/test_serve_http.py", "tests/test_compose.py"))),
    (r"datasets fetch tau2-telecom-cross-dev",
     Instead(NETWORK, ("tests/datasets/test_fetch.py", "tests/test_readme.py"),
             ("datasets fetch tau2-telecom-cross-sample",))),
    (r"replay tau-bench-airline-sample --no-mlflow", _runs("replay tau-bench-airline-sample --no-mlflow")),
    (r"replay tau-bench-airline-dev --out reports/tau",
     Instead(SAMPLE_TWIN, ("tests/replay/test_replay.py",), ("replay tau-bench-airline-sample --out reports/tau",))),
    (r"replay tau-bench-airline-dev --out reports/tau --resume",
     Instead(SAMPLE_TWIN, ("tests/replay/test_resume.py",),
             ("replay tau-bench-airline-sample --out reports/tau --resume",))),
    (r"replay tau-bench-airline-dev --explain tau-airline-t1-r1 --set retrieval\.weights\.task_type=0\.3",
     Instead(SAMPLE_TWIN, ("tests/replay/test_explain.py",),
             ("replay tau-bench-airline-sample --explain tau-airline-t1-r1 --set retrieval.weights.task_type=0.3",))),
    (r"replay reflexion-hotpotqa-dev",
     Instead(SAMPLE_TWIN, ("tests/replay/test_replay.py",), ("replay reflexion-hotpotqa-sample --no-mlflow",))),
    (r"replay locomo-dev --limit 2",
     Instead(SAMPLE_TWIN, ("tests/replay/test_replay.py",), ("replay locomo-sample --limit 2 --no-mlflow",))),
    (r"replay tau2-telecom-cross-dev",
     Instead(SAMPLE_TWIN, ("tests/replay/test_cross_agent.py",), ("replay tau2-telecom-cross-sample --no-mlflow",))),
    (r"replay traces-agent-a\.jsonl traces-agent-b\.jsonl",
     _runs("replay traces-agent-a.jsonl traces-agent-b.jsonl")),  # the files: written by the readme_runs fixture
    (r"replay NAME --systems dense,bm25 --baseline-key KEY --no-mlflow",
     _runs("replay tau2-airline-cross-sample --systems dense,bm25 --baseline-key instruction --no-mlflow")),
    (r"replay TRACES --mlflow-uri http://127\.0\.0\.1:5000",
     Instead("logs to the MLflow server of the Docker compose set-up", ("tests/test_tracking.py",
                                                                        "tests/server/test_deploy.py"),
             ("replay tau-bench-airline-sample --out reports/tau --resume",))),
    (r"sweep experiments/rerank_weights\.yaml --trials 300 --out tuned\.yaml",
     Instead("300 trials on the full-size tau-bench split (its twin: the sample spec, 8 trials)",
             ("tests/sweep/test_sweep.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/rerank_weights\.yaml --workers 2 --no-mlflow",
     Instead("the full-size tau-bench split in two processes (its twins: the shared-study tests, on the samples)",
             ("tests/sweep/test_shared.py",),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/rerank_weights\.yaml --storage postgresql://hl@db\.internal/sweeps --study weights-1 "
     r"--workers 2 --mlflow-uri http://mlflow\.internal:5000",
     Instead("a PostgreSQL and an MLflow server on two machines the user runs; the suite shares a study in its own "
             "embedded PostgreSQL between processes", ("tests/sweep/test_shared.py",),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/default_selection_live\.yaml --no-mlflow",
     Instead("three full-size dev replays and about a hundred live runs, an hour or more (its twins: a list sweep "
             "with a live term on the sample, and the spec's own check)",
             ("tests/sweep/test_live_term.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/default_selection_live_30\.yaml --no-mlflow",
     Instead("three full-size dev replays and a few hundred live runs, one and a half hours or more (its twins: a list "
             "sweep with a live term on the sample, and the spec's own check)",
             ("tests/sweep/test_live_term.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/default_selection_lures\.yaml --no-mlflow",
     Instead("three full-size dev replays, a few hundred live runs and forty lure runs, an hour or more (its twins: "
             "list sweeps with a live and a lure term on the sample, and the spec's own check)",
             ("tests/sweep/test_live_term.py", "tests/sweep/test_lure_term.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/default_selection_contrast\.yaml --no-mlflow",
     Instead("three full-size dev replays and sixty lure runs, half an hour or more (its twins: a list sweep with a "
             "lure term on the sample, and the spec's own check)",
             ("tests/sweep/test_lure_term.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/default_selection_recall\.yaml --no-mlflow",
     Instead("three full-size dev replays and sixty lure runs, half an hour or more (its twins: a list sweep with a "
             "lure term on the sample, and the spec's own check)",
             ("tests/sweep/test_lure_term.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"sweep experiments/default_selection\.yaml --no-mlflow",
     Instead("three full-size dev replays and 11 configs, minutes (its twin: the sample spec)",
             ("tests/sweep/test_sweep.py", "tests/sweep/test_spec.py"),
             ("sweep experiments/rerank_weights_sample.yaml --trials 8 --out tuned.yaml",))),
    (r"fit experiments/fit_sample\.yaml --out fitted\.yaml --no-mlflow",
     Instead("minutes: each sample replayed once, a cross-validated fit, then the left-out replays",
             ("tests/fit/test_fit_run.py",))),
    (r"fit experiments/fit_default\.yaml --out fitted\.yaml",
     Instead("the full-size development replays and their lure pairs: many minutes (its twin: the sample fit's tests)",
             ("tests/fit/test_fit_run.py",))),
    (r"export --run-id RUN_ID --out tuned\.yaml", _runs("export --run-id {RUN_ID} --out tuned.yaml")),
    (r"export --config experiments/configs/default\.yaml --out my\.yaml",
     _runs("export --config experiments/configs/default.yaml --out my.yaml")),
    (r"live --systems none,dense,hindsight --seeds 0,1,2 \[--config FILE\]",
     Instead("minutes: 3 seeds × 240 tasks of the live environment", ("tests/scenarios/test_live.py",))),
    (r"lures --seeds 0,1,2 --systems hindsight --config experiments/configs/lure-resistant-intent\.yaml",
     Instead("minutes: 3 seeds × 60 lure pairs, each replayed in fresh stores", ("tests/scenarios/test_lures.py",))),
    (r"replay tau-bench-airline-dev --no-mlflow --config experiments/configs/lure-resistant-intent\.yaml",
     Instead("the full-size development split, fetched or beside the checkout; the suite replays the sample and "
             "tests the request typing", ("tests/replay/test_replay.py", "tests/retrieve/test_classify.py"))),
    (r"lures --seeds 0,1,2,3,4 --systems hindsight --config experiments/configs/lure-resistant-instance-blind\.yaml",
     Instead("minutes: 5 seeds × 60 lure pairs, each replayed in fresh stores",
             ("tests/scenarios/test_lures.py", "tests/retrieve/test_classify.py"))),
    (r"replay tau-bench-airline-dev --no-mlflow --config experiments/configs/lure-resistant-instance-blind\.yaml",
     Instead("the full-size development split, fetched or beside the checkout; the suite replays the sample and "
             "tests the instance-blind typing", ("tests/replay/test_replay.py", "tests/retrieve/test_classify.py"))),
    (r"live --systems hindsight --seeds 0,1,2,3,4,5,6,7,8,9 --config "
     r"experiments/configs/lure-resistant-instance-blind\.yaml",
     Instead("minutes: 10 seeds × 240 tasks of the live environment", ("tests/scenarios/test_live.py",))),
    (r"lures --seeds 0,1,2 \[--systems dense,hindsight\] \[--config FILE\]",
     Instead("minutes: 3 seeds × 60 lure pairs, each replayed in fresh stores", ("tests/scenarios/test_lures.py",))),
    (r"conflicts --store memory-store --png conflicts\.png",
     _runs("conflicts --store memory-store --png conflicts.png")),
    (r"maintain --store memory-store --now 2024-01-02", _runs("maintain --store memory-store --now 2024-01-02")),
    (r"conflicts --pairs conflict-pairs-sample --predictions pred\.jsonl",
     _runs("conflicts --pairs conflict-pairs-sample --predictions pred.jsonl")),
    (r"memories list --store memory-store --kind candidate",
     _runs("memories list --store memory-store --kind candidate")),
    (r"inspect MEMORY_ID --store memory-store", _runs("inspect {MEMORY_ID} --store memory-store")),
    (r"memories export --out memory-store\.jsonl --store memory-store",
     _runs("memories export --out memory-store.jsonl --store memory-store")),
    (r"memories list\|show\|delete\|export\|import --store S",
     Instead("a synopsis (each subcommand without its arguments): list, show and export run here on the store, "
             "delete and import in the tests",
             ("tests/test_manage.py",),
             ("memories list --store memory-store --kind candidate", "memories show {MEMORY_ID} --store memory-store",
              "memories export --out memory-store.jsonl --store memory-store"))),
    (r"memories export --out memory\.jsonl --store memory-store",
     Instead("the first half of a move to a PostgreSQL server the user runs; the suite moves a store from Chroma to "
             "its own embedded Postgres and back",
             ("tests/test_manage.py",), ("memories export --out memory-store.jsonl --store memory-store",))),
    (r"memories import memory\.jsonl --store postgresql://hindsight@127\.0\.0\.1:5432/hindsight",
     Instead("a PostgreSQL server with pgvector the user runs (the compose profile); the suite imports into its "
             "own embedded Postgres", ("tests/test_manage.py", "tests/store/test_postgres.py"))),
    (r"bench", Instead("10k and 100k episodes: many minutes", ("tests/test_bench.py",))),
    (r"bench --sizes 300 --write-n 1000",
     Instead("a thousand episodes written in batches, then 200 one at a time: minutes (the suite runs the same "
             "measures at a tiny size)", ("tests/test_bench.py",))),
    (r"bench --sizes 10000,100000 --queries 100 --write-n 500 --postgres postgresql\+embedded://pg-bench",
     Instead("10k and 100k episodes on Chroma and on Postgres: many minutes; the suite runs a tiny size on its own "
             "embedded Postgres", ("tests/test_bench.py",))),
    (r"bench --sizes 10000,100000 --queries 100 --write-n 500",
     Instead("10k and 100k episodes: many minutes (the suite runs the same measures at a tiny size)",
             ("tests/test_bench.py",))),
    (r"replay \.\./shared/datasets/tau-bench/gpt-4o-airline\.dev\.json --no-mlflow "
     r"--set store\.url=postgresql\+embedded://pg-replay",
     Instead("the full-size development split beside the checkout; the suite replays the sample on its own embedded "
             "Postgres and checks every figure against Chroma's", ("tests/store/test_postgres_writers.py",))),
    (r"bench --sizes 2000 --queries 50",
     Instead("embeds 2,000 episodes in a fresh home: minutes on 2 cores", ("tests/test_bench.py",))),
    (r"bench --sweep", Instead("replays the full-size tau-bench split", ("tests/sweep/test_bench_sweep.py",))),
    (r"bench --conflicts 5000", Instead("embeds and clusters 5,000 rules", ("tests/conflicts/test_pairs_and_cli.py",))),
    (r"bench --mcp", Instead("8 clients × 200 operations against a server",
                             ("tests/server/test_bench_mcp.py",))),
    (r"bench --mcp --compare --servers 2 --store postgresql\+embedded://pg-mcp"
     r"( --set server\.batch_embeddings=false)?",
     Instead("three setups of 8 clients × 200 operations on the real model, one after the other: minutes; the suite "
             "compares the three setups at a small size on its own embedded Postgres",
             ("tests/server/test_bench_mcp.py",))),
    (r"serve --config experiments/configs/default\.yaml --store memory-store",
     Instead("the stdio server runs until its client stops it", ("tests/server/test_serve_stdio.py",))),
    (r"serve --config experiments/configs/default\.yaml --store http://127\.0\.0\.1:8000 .*",
     Instead("a server that runs until stopped, on a `chroma run` server",
             ("tests/server/test_serve_http.py", "tests/server/test_faults.py"))),
    (r"serve --config experiments/configs/default\.yaml --store postgresql://\S+ --transport http --port 8765",
     Instead("a server that runs until stopped, on a PostgreSQL server the user runs; the suite serves its own "
             "embedded Postgres over HTTP", ("tests/server/test_serve_http.py", "tests/store/test_postgres.py"))),
]


def _entry(command: str) -> tuple[str, tuple[str, ...] | Instead]:
    found = [(pattern, entry) for pattern, entry in README_MAP if re.fullmatch(pattern, command)]
    assert len(found) == 1, f"README command `{command}` matches {len(found)} entries of README_MAP: " \
                            "add it (the steps that run it, or why it does not run here and what tests it)"
    return found[0]


def test_every_readme_command_runs_here_or_says_why() -> None:
    for command in dict.fromkeys(COMMANDS + INLINE):
        pattern, entry = _entry(command)
        if isinstance(entry, Instead):
            assert entry.why and entry.tests, command
            for test in entry.tests:
                assert (REPO / test).is_file(), f"{command}: {test} does not exist"
            steps = entry.twins
        else:  # run in its own words: every form of it is a step
            steps = entry
            for form in _forms(command):
                assert any(_same(form, step.split()) for step in steps), f"`{command}` is not run as written"
        for step in steps:
            assert step in STEPS, f"{command}: no step `{step}`"
    used = {pattern for pattern, _ in README_MAP}
    matched = {_entry(c)[0] for c in COMMANDS + INLINE}
    assert used == matched, f"README_MAP entries that match no README command: {sorted(used - matched)}"


def _other_commands() -> list[str]:
    """The pages' bash-block commands that are not ``hindsight-lab`` (the install, servers, Docker, scripts)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", TEXT, flags=re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split(" #")[0].split("&&"):
                part = " ".join(part.split())
                if part and not part.startswith(("#", PROMPT)):
                    out.append(part)
    return out


DOCKER = Instead("no Docker engine on the development machines (the README says so)", ("tests/server/test_deploy.py",))
OTHER_MAP: list[tuple[str, Instead]] = [
    (r"python3\.11 -m venv \.venv|\.venv/bin/pip install -e '\.\[dev\]'|\.venv/bin/python -m pytest",
     Instead("the install and the suite: .ci/run runs them in a fresh environment in a copy of the checkout with "
             "nothing beside it", (".ci/run",))),
    (r"\.venv/bin/mlflow ui .*", Instead("a web server that runs until stopped", ("tests/sweep/test_sweep.py",))),
    (r"\.venv/bin/chroma run .*", Instead("a server that runs until stopped; the suite starts it for its server tests",
                                         ("tests/conftest.py",))),
    (r"export (HINDSIGHT_MCP_TOKEN|DB_PASSWORD)=.*|(HINDSIGHT_CONFIG=\S+ )?docker compose .*", DOCKER),
    (r"\.venv/bin/pip install -e '\.\[dev,docs\]'|\.venv/bin/mkdocs build --strict",
     Instead("the docs site: .ci/run installs the docs extra and builds it with --strict in its full run",
             (".ci/run", "mkdocs.yml"))),
    (r"\.venv/bin/python scripts/results_table\.py( --write)?",
     Instead("the check runs in the suite (--write rewrites the tables the check compares)",
             ("tests/test_results_table.py",))),
    (r'export PGPASSWORD="\.\.\."',
     Instead("libpq's password variable for a PostgreSQL server the user runs; the suite's own server takes the "
             "password the same way", ("tests/store/test_postgres.py",))),
]


def test_every_other_readme_command_says_where_it_runs() -> None:
    others = _other_commands()
    assert len(others) >= 8, others
    for command in others:
        found = [entry for pattern, entry in OTHER_MAP if re.fullmatch(pattern, command)]
        assert len(found) == 1, f"README command `{command}` matches {len(found)} entries of OTHER_MAP"
        assert all((REPO / test).is_file() for test in found[0].tests), found[0]


def _cli() -> list[str]:
    """The installed console script, else the module (what the console script runs)."""
    script = Path(sys.executable).with_name("hindsight-lab")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "hindsight_lab.cli"]


def _own_traces(work: Path) -> None:
    """The README's "your own files": the two telecom agents' sample runs, each written as a JSONL trace file (as
    an agent of the user's would record them: without the name of the file the adapter read them from)."""
    from hindsight_lab.datasets import load, write_jsonl
    from hindsight_lab.datasets.registry import resolve

    for letter, path in zip("ab", resolve("tau2-telecom-cross-sample")):
        episodes, _ = load(path)
        own = [ep.model_copy(update={"meta": {k: v for k, v in ep.meta.items() if k != "source_file"}})
               for ep in episodes]
        write_jsonl(own, work / f"traces-agent-{letter}.jsonl")


def _run_chain(chain: list[Step], work: Path, home: Path) -> dict[str, Ran]:
    env = cli_env(HINDSIGHT_LAB_HOME=str(home))
    env.pop("MLFLOW_TRACKING_URI", None)
    values: dict[str, str] = {}
    done: dict[str, Ran] = {}
    for step in chain:
        try:
            argv = shlex.split(step.argv.format(**values))
        except KeyError as missing:
            done[step.argv] = Ran([step.argv], -1, "", f"no value for {missing}: an earlier step failed", 0.0,
                                  work, home)
            continue
        start = time.monotonic()
        try:
            if step.kill_after:
                journal = work / argv[argv.index("--out") + 1] / JOURNAL_DIR / JOURNAL_FILE
                held, err = kill_midway(_cli() + argv, journal, step.kill_after, env=env, cwd=work, timeout=1200)
                code, out = -9, f"killed with {held} units in the journal"
            else:
                proc = subprocess.run(_cli() + argv, cwd=work, env=env, capture_output=True, text=True,
                                      timeout=1800)
                code, out, err = proc.returncode, proc.stdout, proc.stderr
        except (AssertionError, subprocess.SubprocessError) as exc:  # ended before the kill, or hung
            code, out, err = -1, "", f"{type(exc).__name__}: {exc}"
        ran = Ran(argv, code, out, err, time.monotonic() - start, work, home)
        ran.files = {name: (work / name).read_bytes() for name in step.writes if (work / name).is_file()}
        if step.gives and ran.code == step.code:
            try:
                values.update(step.gives(ran))
            except (AttributeError, TypeError, AssertionError):  # not in the output: its test says so
                pass
        done[step.argv] = ran
    return done


@pytest.fixture(scope="module")
def readme_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Run every step, two chains at a time, in one work area and one home folder."""
    root = tmp_path_factory.mktemp("readme")
    work, home = root / "work", root / "home"
    work.mkdir()
    shutil.copytree(REPO / "experiments", work / "experiments")
    _own_traces(work)
    runs: dict[str, Ran] = {}
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        for done in pool.map(lambda chain: _run_chain(chain, work, home), CHAINS):
            runs.update(done)
    print("\nREADME steps (seconds): " + ", ".join(f"{r.seconds:.0f} {a}" for a, r in runs.items()))
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("argv", list(STEPS))
def test_readme_step_runs(argv: str, readme_runs: dict[str, Ran]) -> None:
    step, ran = STEPS[argv], readme_runs[argv]
    assert ran.code == step.code, f"`hindsight-lab {shlex.join(ran.argv)}` exited {ran.code}, expected " \
                                  f"{step.code}:\n{ran.err[-3000:]}"
    for name in step.writes:
        ran.file(name)
    step.check(ran, readme_runs)


# ------------------------------------------------------------------ the other code blocks
LANGUAGES = ("bash", "python", "yaml", "json", "text")
COMPILE_ONLY = re.compile(r"<!-- docs-check: compile-only: (.+?) -->\s*$")
"""The line before a Python block that is compiled, not run, and why (a server it needs, minutes of work)."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    compile_only: str | None  # why it is compiled and not run

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for page, text in PAGES.items():
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            fence = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
            if not fence:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            indent = len(fence[1])
            code = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
            before = COMPILE_ONLY.search(lines[i - 1]) if i else None
            out.append(Block(page, i + 1, fence[2], code, before[1] if before else None))
            i = end + 1
    return out


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def test_every_code_block_is_checked_by_its_language() -> None:
    for block in BLOCKS:
        assert block.lang in LANGUAGES, f"{block.id}: a ```{block.lang} block, which no test checks " \
                                        f"(one of {', '.join(LANGUAGES)})"
        assert block.compile_only is None or block.lang == "python", f"{block.id}: compile-only on a {block.lang} block"
    assert len(PYTHON) >= 8 and sum(b.compile_only is None for b in PYTHON) >= 6, [b.id for b in PYTHON]


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.id)
def test_python_block_compiles(block: Block) -> None:
    import ast

    compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # `async with` as in a notebook


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in ("yaml", "json")], ids=lambda b: b.id)
def test_yaml_and_json_blocks_parse(block: Block) -> None:
    from hindsight_lab import LabConfig

    data = yaml.safe_load(block.code) if block.lang == "yaml" else json.loads(block.code)
    assert isinstance(data, dict) and data, block.id
    if block.lang == "yaml" and set(data) <= set(LabConfig.model_fields):
        LabConfig.model_validate(data)  # a config (or a section of one) that LabConfig accepts


DRIVER = """
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns, results = {"__name__": "__main__"}, []
for block in blocks:
    try:
        exec(compile(block["code"], block["id"], "exec"), ns)
        results.append(None)
    except BaseException:
        results.append(traceback.format_exc())
        break  # the page's later blocks build on this one
json.dump(results, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def python_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    """Each page's runnable Python blocks, in order in one interpreter, in a work area of the page's own (a copy of
    ``experiments/``) with its own home folder: ``{block id: None, or the traceback}``; a block after a failed one
    of its page is missing."""
    root = tmp_path_factory.mktemp("python-blocks")
    (root / "driver.py").write_text(DRIVER)
    pages = {page: [b for b in PYTHON if b.page == page and b.compile_only is None] for page in PAGES}

    def run(page: str, blocks: list[Block]) -> dict[str, str | None]:
        work = root / re.sub(r"\W", "_", page)
        shutil.copytree(REPO / "experiments", work / "experiments")
        (work / "blocks.json").write_text(json.dumps([{"id": b.id, "code": b.code} for b in blocks]))
        env = cli_env(HINDSIGHT_LAB_HOME=str(work / "home"))
        env.pop("MLFLOW_TRACKING_URI", None)
        proc = subprocess.run([sys.executable, str(root / "driver.py"), "blocks.json", "results.json"], cwd=work,
                              env=env, capture_output=True, text=True, timeout=900)
        if not (work / "results.json").is_file():
            return {b.id: f"the interpreter exited {proc.returncode}:\n{proc.stderr[-3000:]}" for b in blocks}
        return dict(zip((b.id for b in blocks), json.loads((work / "results.json").read_text())))

    out: dict[str, str | None] = {}
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        for done in pool.map(lambda item: run(*item), [(p, bs) for p, bs in pages.items() if bs]):
            out.update(done)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in PYTHON if b.compile_only is None], ids=lambda b: b.id)
def test_python_block_runs(block: Block, python_runs: dict[str, str | None]) -> None:
    assert block.id in python_runs, f"{block.id} did not run: an earlier block of {block.page} failed"
    assert python_runs[block.id] is None, f"{block.id} failed:\n{python_runs[block.id]}"


@pytest.mark.slow
def test_readme_dataset_commands_on_the_development_data(tmp_path: Path) -> None:
    # The README's fetch and path commands on the full-size splits, taken from the data beside the checkout
    # (`--from DIR`) instead of the network; skips without it (fails under CI).
    shared_dataset("tau-bench/gpt-4o-airline.dev.json")
    for relative in ("tau2-bench/telecom_gpt-4.1.json", "tau2-bench/telecom_sft-gpt-4.1.json"):
        shared_dataset(relative)
    env = cli_env(HINDSIGHT_LAB_HOME=str(tmp_path / "home"))

    def cli(*argv: str) -> str:
        proc = subprocess.run(_cli() + list(argv), cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    out = cli("datasets", "fetch", "tau-bench-airline-dev", "--from", str(SHARED_DATASETS / "tau-bench"))
    assert out.startswith("tau-bench-airline-dev: fetched "), out
    out = cli("datasets", "fetch", "tau2-telecom-cross-dev", "--from", str(SHARED_DATASETS / "tau2-bench"))
    assert [line.split(":")[0] for line in out.splitlines()] == ["tau2-telecom-gpt-4.1-dev",
                                                                   "tau2-telecom-sft-gpt-4.1-dev"], out
    [path] = cli("datasets", "path", "tau-bench-airline-dev").splitlines()
    assert Path(path) == tmp_path / "home" / "datasets" / entries()["tau-bench-airline-dev"].filename
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == entries()["tau-bench-airline-dev"].sha256
