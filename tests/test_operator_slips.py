"""Issue 49: backups that restore, secrets that stay secret, and operator slips that get a one-line message.

Each test names the defect it guards: (1) an export holding a Unicode line break could not be imported again; (2) a
password inside a URL reached exports, MLflow params, the logged config.yaml and the replay journal; (3) a blank
instruction passed the reader and failed the replay 12 s later with no file or line; (4) negative limits on JSONL
silently dropped tasks; (5) bad --systems, --store and --out ended in tracebacks; (6) auto-detection hid the real
error of a broken tau2 file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_lab import Kind, LabConfig, MemorySystem
from hindsight_lab.cli import main
from hindsight_lab.datasets import load
from hindsight_lab.jsonio.reading import dump_line, json_lines
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import ConfigError, HindsightLabWarning, StoreError, TraceFormatError
from hindsight_lab.tracking.export import export_config
from hindsight_lab.memory.export import export_jsonl, import_jsonl
from hindsight_lab.redact import mask_secrets
from hindsight_lab.store.memory import InMemoryStore
from support import REPO

# Every character str.splitlines() breaks at: the ones JSON escapes anyway and the three it may write raw.
LINE_BREAKS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
SECRET = "pl4nted-s3cret"
SECRET_URL = f"http://alice:{SECRET}@127.0.0.1:9/v1"
EPISODE = {"task_id": "t1", "steps": [], "outcome": "success"}


def _memory() -> MemorySystem:
    return MemorySystem(LabConfig(), store=InMemoryStore(), embedder=HashingEmbedder(dim=64)).open()


# ------------------------------------------------------------------ (1) backups that restore
@pytest.mark.parametrize("brk", LINE_BREAKS, ids=[f"U+{ord(c[-1]):04X}" for c in LINE_BREAKS])
def test_an_export_round_trips_a_memory_holding_any_unicode_line_break(brk: str, tmp_path: Path) -> None:
    source = _memory()
    texts = [f"Ask for the booking code{brk}then cancel", f"Check the fare{brk}{brk}rules first"]
    for text in texts:
        source.write(text, counter_examples=[f"not when{brk}the fare is flexible"], source_episode_ids=["e1"])
    backup = tmp_path / "backup.jsonl"
    assert export_jsonl(source, backup) == 2
    assert len(backup.read_text(encoding="utf-8").splitlines()) == 2  # one line each, for every reader
    target = _memory()
    assert import_jsonl(target, backup)["imported"] == 2
    assert sorted(r.content for r in target.records(Kind.CANDIDATE)) == sorted(texts)
    assert {c for r in target.records(Kind.CANDIDATE) for c in r.counter_examples} == {
        f"not when{brk}the fare is flexible"}


def test_the_reader_splits_on_newline_only_even_in_a_file_another_tool_wrote_raw(tmp_path: Path) -> None:
    path = tmp_path / "raw.jsonl"
    # another tool's export: the three characters JSON allows raw inside a string, written raw
    path.write_text('{"a": "x\u2028y\u2029z\x85w"}\r\n{"b": 1}\n', encoding="utf-8")
    assert list(json_lines(path, "export")) == [(1, {"a": "x\u2028y\u2029z\x85w"}), (2, {"b": 1})]
    assert dump_line({"a": "x\u2028y"}) == '{"a": "x\\u2028y"}'


# ------------------------------------------------------------------ (2) secrets
def test_one_masking_function_hides_url_passwords_and_secret_parameters() -> None:
    assert mask_secrets(SECRET_URL) == "http://alice:***@127.0.0.1:9/v1"
    assert SECRET not in mask_secrets(f"postgresql://app:{SECRET}@db:5432/mem?sslmode=require")
    assert SECRET not in mask_secrets(f"host=db password={SECRET} dbname=mem")
    assert SECRET not in mask_secrets(f"http://h/v1?api_key={SECRET}&x=1")
    # negative controls: a port, a plain URL, an e-mail address are not secrets
    for text in ("http://127.0.0.1:8000/api", "contact alice@example.com", "chroma at localhost:8000"):
        assert mask_secrets(text) == text


def test_an_error_message_never_shows_a_password() -> None:
    err = StoreError(f"cannot reach {SECRET_URL}: connection refused")
    assert SECRET not in str(err) and "alice:***@127.0.0.1" in str(err)


def test_export_writes_a_url_password_as_stars_and_warns(tmp_path: Path) -> None:
    cfg = LabConfig().with_params({"reflect.llm.api_base": SECRET_URL})
    with pytest.warns(HindsightLabWarning, match=r"reflect\.llm\.api_base held a secret"):
        text = export_config(cfg, tmp_path / "prod.yaml")
    assert SECRET not in text and SECRET not in (tmp_path / "prod.yaml").read_text()
    assert LabConfig.from_yaml(tmp_path / "prod.yaml").reflect.llm.api_base == "http://alice:***@127.0.0.1:9/v1"


@pytest.mark.slow
def test_a_planted_secret_reaches_no_mlflow_param_tag_artifact_or_journal(tmp_path: Path) -> None:
    cfg_file = tmp_path / "secret.yaml"
    LabConfig().with_params({"reflect.llm.api_base": SECRET_URL, "embedder.model": "hashing-64"}).to_yaml(cfg_file)
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    out = tmp_path / "out"
    assert main(["replay", "tau-bench-airline-sample", "--limit", "2", "--systems", "dense,hindsight", "--config",
                 str(cfg_file), "--out", str(out), "--mlflow-uri", uri]) == 0
    con = sqlite3.connect(db)
    rows = [str(v) for table in ("params", "tags", "runs") for row in con.execute(f"SELECT * FROM {table}")
            for v in row]
    assert any("api_base" in r for r in rows)  # the field was logged ...
    assert not [r for r in rows if SECRET in r]  # ... masked
    artifacts = [p for p in tmp_path.rglob("*") if p.is_file() and p != db and p != cfg_file]
    assert any(p.name == "config.yaml" for p in artifacts)
    leaked = [p for p in artifacts if SECRET.encode() in p.read_bytes()]
    assert not leaked, leaked


def test_the_replay_journal_keeps_no_password() -> None:
    from hindsight_lab.replay.runner import journal_header

    cfg = LabConfig().with_params({"reflect.llm.api_base": SECRET_URL})
    header = journal_header({"name": "d", "format": "jsonl", "sha256": "0", "top_k": 10, "token_budget": 600,
                             "limit": None}, systems=["hindsight"], config=cfg, configs=None, skip_invalid=False,
                            embedder="hashing-64")
    text = json.dumps(header)
    assert SECRET not in text and "reflect.llm.api_base" in text


# ------------------------------------------------------------------ (3) blank instructions
def test_a_blank_instruction_is_refused_by_the_reader_with_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps({**EPISODE, "episode_id": f"e{i}", "instruction": text}) + "\n"
                            for i, text in enumerate(["refund order 42", " \t ", "refund order 42 again"])))
    with pytest.raises(TraceFormatError, match=r"traces\.jsonl:2: must not be empty or whitespace .*'instruction'"):
        load(path)
    episodes, stats = load(path, strict=False)  # --skip-invalid skips and counts it
    assert [e.episode_id for e in episodes] == ["e0", "e2"] and stats.by_reason == {"invalid_value": 1}


def test_reflect_and_replay_refuse_a_blank_instruction_before_writing_anything(tmp_path: Path, capsys) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps({**EPISODE, "episode_id": "e0", "instruction": "   "}) + "\n")
    store, out = tmp_path / "store", tmp_path / "out"
    assert main(["reflect", str(path), "--store", str(store)]) == 2
    assert main(["replay", str(path), "--out", str(out), "--no-mlflow"]) == 2
    err = capsys.readouterr().err
    assert err.count("traces.jsonl:1: must not be empty or whitespace") == 2, err
    assert not store.exists() and not out.exists()  # no store, no journal left behind


# ------------------------------------------------------------------ (4) limits
@pytest.mark.parametrize("limit", [-1, -2, True, 1.5])
def test_a_limit_that_is_not_a_count_is_refused_for_every_format(limit, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**EPISODE, "episode_id": "e0", "instruction": "hi"}) + "\n")
    samples = REPO / "datasets" / "samples"
    for trace in (path, samples / "tau2-bench" / "airline_gpt-4.1.sample.json",
                  samples / "tau-bench" / "gpt-4o-airline.sample.json"):
        with pytest.raises(ConfigError, match=r"limit_tasks: expected a non-negative integer"):
            load(trace, limit_tasks=limit)


# ------------------------------------------------------------------ (5) argument errors before any model loads
_PARSE_ONLY = """
import sys
from hindsight_lab.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("torch", "sentence_transformers", "chromadb", "mlflow") if m in sys.modules)
print("loaded:", ",".join(heavy) or "-")
sys.exit(code)
"""


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PARSE_ONLY, *argv], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_argument_slips_get_one_argparse_line_naming_the_flag_before_any_model_loads(tmp_path: Path) -> None:
    traces = REPO / "datasets" / "demo" / "episodes.jsonl"
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("x")
    cases = [
        (["replay", str(traces), "--systems", "dense,hindsigth"],
         r"argument --systems: unknown system 'hindsigth' \(did you mean 'hindsight'\?\)"),
        (["replay", str(traces), "--systems", "bogus"], r"argument --systems: unknown system 'bogus'"),
        (["replay", str(traces), "--limit", "-1"], r"argument --limit: expected 0 or more \(got -1\)"),
        (["replay", str(traces), "--top-k", "0"], r"argument --top-k: expected 1 or more"),
        (["replay", str(traces), "--out", str(a_file)], r"argument --out: .*a-file\.txt is a file; expected a folder"),
        (["reflect", str(traces), "--limit-tasks", "-2"], r"argument --limit-tasks: expected 0 or more \(got -2\)"),
        (["reflect", str(traces), "--store", str(a_file)], r"argument --store: .*a-file\.txt is a file"),
        (["memories", "list", "--store", str(a_file)], r"argument --store: .*a-file\.txt is a file"),
        (["reflect", str(traces), "--out", str(tmp_path)], r"argument --out: .* is a folder; expected a file name"),
    ]
    import re

    for argv, message in cases:
        done = _cli(*argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert "Traceback" not in done.stderr, (argv, done.stderr)
        error_lines = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(error_lines) == 1 and re.search(message, error_lines[0]), (argv, done.stderr)
        assert "loaded: -" in done.stdout or not done.stdout, (argv, done.stdout)


# ------------------------------------------------------------------ (6) the likeliest format's own error
@pytest.fixture
def tau2_sample() -> Path:
    return REPO / "datasets" / "samples" / "tau2-bench" / "airline_gpt-4.1.sample.json"


def test_auto_detection_reports_the_likeliest_formats_own_error(tau2_sample: Path, tmp_path: Path) -> None:
    raw = tau2_sample.read_bytes()
    data = json.loads(raw)
    broken = {
        "truncated": (raw[:50_000], r"truncated\.json:\d+: .*read as tau2-bench.*invalid JSON.*truncated"),
        "latin": (raw[:3000] + b"\xe9\xff" + raw[3000:], r"read as tau2-bench.*not UTF-8.* at byte 3000"),
        "no-simulations": (json.dumps({k: v for k, v in data.items() if k != "simulations"}).encode(),
                           r"read as tau2-bench.*missing required field simulations"),
        "no-tasks": (json.dumps({k: v for k, v in data.items() if k != "tasks"}).encode(),
                     r"read as tau2-bench.*missing required field tasks"),
    }
    for name, (body, message) in broken.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(body)
        with pytest.raises(TraceFormatError, match=message) as caught:
            load(path)
        assert "cannot tell the trace format" not in str(caught.value)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\xff\xfe not a trace")
    with pytest.raises(TraceFormatError, match=r"blob\.bin: not UTF-8: .* at byte 1"):
        load(binary)
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    with pytest.raises(TraceFormatError, match=r"notes\.txt: cannot tell the trace format"):  # nothing likelier
        load(text)
