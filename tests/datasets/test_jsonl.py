"""The JSONL trace reader and writer: strict and lenient modes on every malformed kind, bounded lines, round trips,
and "nothing written" on a real embedded Chroma store."""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.datasets import ReadStats, detect_format, load, load_episodes, read_jsonl, write_jsonl
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import ConfigError, TraceFormatError, ValidationError
from hindsight_lab.trace import Episode

from support import REPO, episode


def _line(data: Any) -> bytes:
    return json.dumps(data).encode() + b"\n"


def _ep(eid: str, **extra: Any) -> dict[str, Any]:
    return episode(eid, f"instruction of {eid}", ["get_order", "refund_order"], **extra)


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


_TEN_MB = 10 * 1024 * 1024

# (kind, line 3 of a file whose lines 1, 2 and 4 are valid, reason counted in lenient mode, field, message part)
MALFORMED = [
    ("truncated_json", b'{"episode_id": "e3", "instruction": "x", "steps": [\n', "invalid_json", None,
     "invalid JSON: Expecting value at the end of the line (truncated?)"),
    ("not_an_object", b'["e3", "refund order 42"]\n', "not_object", None, "expected a JSON object"),
    ("missing_required_field", _line(_without(_ep("e3"), "instruction")), "missing_field", "instruction",
     "missing required field"),
    ("wrong_types", _line({**_ep("e3"), "steps": [{"type": "message", "role": "user", "content": "hi"},
                                                  {"type": "tool_call", "name": 42}]}),
     "wrong_type", "steps.1.name", "valid string"),
    ("unknown_outcome", _line(_ep("e3", outcome="win")), "invalid_value", "outcome", "'win'"),
    ("non_utf8_bytes", b'{"episode_id": "e3", "instruction": "caf\xe9", "steps": [], "outcome": "success"}\n',
     "not_utf8", None, "not UTF-8"),
    ("ten_mb_field", _line(_ep("e3", final_answer="x" * _TEN_MB)), "line_too_long", None, "line too long"),
    ("duplicate_episode_id", _line(_ep("e1")), "duplicate_episode_id", "episode_id", "first on line 1"),
    ("steps_not_a_list", _line({**_ep("e3"), "steps": "get_order then refund_order"}), "wrong_type", "steps",
     "valid list"),
    ("bad_timestamp", _line(_ep("e3", started_at="yesterday at noon")), "invalid_value", "started_at",
     "valid datetime"),
]


def _file(tmp_path: Path, bad: bytes, name: str = "traces.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(_line(_ep("e1")) + _line(_ep("e2")) + bad + _line(_ep("e4")))
    return path


@pytest.mark.parametrize("kind,bad,reason,field,what", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_strict_raises_naming_file_line_and_field(tmp_path, kind, bad, reason, field, what):
    path = _file(tmp_path, bad)
    with pytest.raises(TraceFormatError, match=r"traces\.jsonl:3: ") as info:
        load_episodes(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 3, field)
    assert what in str(err)
    if field:
        assert f"(field '{field}')" in str(err)
    # streaming: the lines before the bad one were yielded, then the error, nothing after it
    seen = []
    with pytest.raises(TraceFormatError, match=r"traces\.jsonl:3: "):
        for ep in read_jsonl(path):
            seen.append(ep.episode_id)
    assert seen == ["e1", "e2"]


@pytest.mark.parametrize("kind,bad,reason,field,what", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_lenient_skips_and_counts_by_reason(tmp_path, kind, bad, reason, field, what):
    episodes, stats = load_episodes(_file(tmp_path, bad), strict=False)
    assert [e.episode_id for e in episodes] == ["e1", "e2", "e4"]
    assert (stats.read, stats.skipped, stats.blank, stats.lines) == (3, 1, 0, 4)
    assert stats.by_reason == Counter({reason: 1})
    assert len(stats.errors) == 1 and "traces.jsonl:3: " in stats.errors[0] and what in stats.errors[0]
    assert f"skipped 1 invalid line ({reason}: 1)" in stats.summary()


def test_lenient_counts_every_reason_in_one_file(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_line(_ep("e1")) + b"".join(m[1] for m in MALFORMED) + b"\n" + _line(_ep("e2")))
    stats = ReadStats()
    got = [e.episode_id for e in read_jsonl(path, strict=False, stats=stats)]
    assert got == ["e1", "e2"]
    assert stats.by_reason == Counter(m[2] for m in MALFORMED)
    assert (stats.skipped, stats.blank, stats.read) == (len(MALFORMED), 1, 2)


@pytest.mark.parametrize("content,what", [(b"", "the file is empty"), (b"\n  \n\t\r\n", "only 3 blank lines")],
                         ids=["empty", "blank_only"])
def test_empty_file(tmp_path, content, what):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=r"empty\.jsonl: no episodes") as info:
        load_episodes(path)
    assert what in str(info.value) and info.value.line is None
    episodes, stats = load_episodes(path, strict=False)
    assert episodes == [] and stats.empty and stats.skipped == 0
    assert "empty.jsonl: no episodes" in stats.summary()


def test_blank_lines_alone_are_skipped_and_counted_not_an_error(tmp_path):
    path = tmp_path / "blanks.jsonl"
    path.write_bytes(b"\n" + _line(_ep("e1")) + b"   \n\r\n" + _line(_ep("e2")) + b"\n")
    for strict in (True, False):
        episodes, stats = load_episodes(path, strict=strict)
        assert [e.episode_id for e in episodes] == ["e1", "e2"]
        assert (stats.blank, stats.skipped, stats.lines) == (4, 0, 6) and not stats.by_reason
    assert stats.summary() == f"{path}: read 2 episodes, 4 blank lines"


def test_line_numbers_stay_right_after_a_long_line(tmp_path):
    # guards: skipping the rest of a long line must not shift the line numbers of the lines after it
    path = tmp_path / "long.jsonl"
    path.write_bytes(_line(_ep("e1", final_answer="y" * 5000)) + _line(_ep("e2")) + _line(_ep("e2")))
    with pytest.raises(TraceFormatError, match=r"long\.jsonl:1: line too long: more than 1000 bytes"):
        load_episodes(path, max_line_bytes=1000)
    _, stats = load_episodes(path, strict=False, max_line_bytes=1000)
    assert stats.errors[1].startswith(f"{path}:3: duplicate episode_id 'e2' (first on line 2)")


def test_max_line_bytes_boundary(tmp_path):
    line = _line(_ep("e1"))
    path = tmp_path / "edge.jsonl"
    path.write_bytes(line + line.replace(b'"e1"', b'"e2"'))  # no newline counted: the limit is on the content
    limit = len(line) - 1
    assert [e.episode_id for e in read_jsonl(path, max_line_bytes=limit)] == ["e1", "e2"]
    with pytest.raises(TraceFormatError, match=r"edge\.jsonl:1: line too long"):
        list(read_jsonl(path, max_line_bytes=limit - 1))
    path.write_bytes(line + line.replace(b'"e1"', b'"e2"').rstrip(b"\n"))  # last line without a newline
    assert [e.episode_id for e in read_jsonl(path, max_line_bytes=limit)] == ["e1", "e2"]


def test_a_long_line_is_never_held_in_memory_whole(tmp_path):
    path = _file(tmp_path, MALFORMED[6][1])  # a 10 MB line
    tracemalloc.start()
    try:
        episodes, stats = load_episodes(path, strict=False, max_line_bytes=1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stats.by_reason == Counter(line_too_long=1) and len(episodes) == 3
    assert peak < 4 * 1024 * 1024  # a plain readline() would hold the whole 10 MB line


def test_pydantic_locations_become_json_paths(tmp_path):
    bad = _line({**_ep("e3"), "steps": [{"type": "thought", "content": "x"}, {"type": "refund"}]})
    with pytest.raises(TraceFormatError, match=r"traces\.jsonl:3: .*'refund'.*\(field 'steps\.1'\)"):
        load_episodes(_file(tmp_path, bad))
    bad = _line({**_ep("e3"), "surprise": 1})
    with pytest.raises(TraceFormatError, match=r"unknown field \(got 1\) \(field 'surprise'\)"):
        load_episodes(_file(tmp_path, bad))
    bad = _line({**_ep("e3"), "outcome": "win", "reward": "high"})
    with pytest.raises(TraceFormatError, match=r"\[\+1 more problem on this line\]"):
        load_episodes(_file(tmp_path, bad))


def test_utf8_bom_and_crlf_are_accepted(tmp_path):
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _line(_ep("e1")).replace(b"\n", b"\r\n") + _line(_ep("e2")))
    assert [e.episode_id for e in read_jsonl(path)] == ["e1", "e2"]


def test_stats_are_filled_as_the_reader_goes(tmp_path):
    stats = ReadStats()
    it = read_jsonl(_file(tmp_path, _line(_ep("e3"))), stats=stats)
    next(it)
    assert (stats.read, stats.lines) == (1, 1)
    list(it)
    assert stats.read == 4 and stats.to_dict()["by_reason"] == {}


# ---------------------------------------------------------------------------------------------- round trips
def _rich() -> list[dict[str, Any]]:
    return [
        {"episode_id": "r1", "task_id": "t1", "task_type": "refund_order", "domain": "retail",
         "started_at": "2026-01-01T09:00:00", "instruction": "Rembourser la commande n° 42 — vite ✈",
         "steps": [{"type": "message", "role": "user", "content": "hi\nthere"},
                   {"type": "tool_call", "name": "refund", "arguments": {"order": 42, "why": None, "nested": [1.5]}},
                   {"type": "tool_result", "id": "c1", "content": "", "error": "Error: too late"},
                   {"type": "thought", "content": "hm"}, {"type": "reflection", "content": "check dates"}],
         "outcome": "partial", "reward": 0.5, "failure_cause": "strategy",
         "feedback": [{"signal": "correction", "text": "wrong order"}], "final_answer": "done",
         "relevant_episode_ids": ["r0"], "meta": {"a": None, "b": {"c": [None, 1]}}},
        {"episode_id": "r2", "instruction": "x", "steps": [], "outcome": "failure",
         "started_at": "2026-01-01T10:00:00+02:00", "reward": 1},
    ]


def test_read_write_read_gives_equal_episodes(tmp_path):
    src = tmp_path / "src.jsonl"
    src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in _rich()), encoding="utf-8")
    first, _ = load_episodes(src)
    assert write_jsonl(first, tmp_path / "out.jsonl") == 2
    again, _ = load_episodes(tmp_path / "out.jsonl")
    assert again == first
    assert again[0].meta == {"a": None, "b": {"c": [None, 1]}}  # nulls inside meta survive exclude_none
    assert again[0].steps[1].arguments["why"] is None


def test_write_read_write_gives_identical_bytes(tmp_path):
    eps = [Episode.model_validate(d) for d in _rich()]
    write_jsonl(eps, tmp_path / "a.jsonl")
    write_jsonl(read_jsonl(tmp_path / "a.jsonl"), tmp_path / "b.jsonl")
    a = (tmp_path / "a.jsonl").read_bytes()
    assert a == (tmp_path / "b.jsonl").read_bytes()
    lines = a.decode("utf-8").splitlines()
    assert len(lines) == 2 and ": " not in lines[1] and "null" not in lines[1]  # compact, no null fields
    assert "✈" in lines[0]  # UTF-8, not \u escapes


def test_demo_dataset_round_trips(tmp_path):
    demo, _ = load_episodes(REPO / "datasets" / "demo" / "episodes.jsonl")
    write_jsonl(demo, tmp_path / "demo.jsonl")
    assert load_episodes(tmp_path / "demo.jsonl")[0] == demo


def test_write_refuses_invalid_or_duplicate_episodes_and_keeps_the_old_file(tmp_path):
    out = tmp_path / "out.jsonl"
    write_jsonl([_ep("e1")], out)
    before = out.read_bytes()
    with pytest.raises(ValidationError, match=r"episodes\[1\]: episode_id: duplicate 'e1'"):
        write_jsonl([_ep("e1"), _ep("e1")], out)
    with pytest.raises(ValidationError, match=r"episodes\[0\].*outcome"):
        write_jsonl([_ep("e9", outcome="win")], out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left behind


# ---------------------------------------------------------------------------------------------- format dispatch
def test_detect_and_load_jsonl(tmp_path):
    path = _file(tmp_path, _line(_ep("e3")))
    assert detect_format(path) == "jsonl"
    episodes, stats = load(path)
    assert len(episodes) == 4 and stats is not None and stats.read == 4
    other = tmp_path / "notes.jsonl"
    other.write_text('{"text": "no episode_id"}\n')
    assert detect_format(other) is None
    txt = tmp_path / "notes.txt"
    txt.write_text("hello\n")
    assert detect_format(txt) is None
    with pytest.raises(TraceFormatError, match=r"notes\.txt: cannot tell the trace format"):
        load(txt)
    with pytest.raises(ConfigError, match=r"unknown trace format 'csv'"):
        load(path, format="csv")


def test_auto_reads_a_jsonl_whose_first_line_is_bad_with_the_jsonl_reader(tmp_path):
    path = tmp_path / "bad_first.jsonl"
    path.write_bytes(b'{"episode_id" "e0"}\n' + _line(_ep("e1")))
    assert detect_format(path) is None
    with pytest.raises(TraceFormatError,
                       match=r"bad_first\.jsonl:1: invalid JSON: Expecting ':' delimiter at column 15"):
        load(path)
    episodes, stats = load(path, strict=False)
    assert [e.episode_id for e in episodes] == ["e1"] and stats.by_reason == Counter(invalid_json=1)


# ---------------------------------------------------------------------------------------------- nothing written
def _records(mem: MemorySystem) -> list[tuple[Any, ...]]:
    return sorted((r.id, r.content, r.source_episode_ids, r.task_type, r.created_at) for r in mem.records())


def test_invalid_line_3_leaves_the_chroma_store_unchanged(tmp_path):
    cfg = LabConfig().with_params({"store.path": str(tmp_path / "s")})
    first = tmp_path / "first.jsonl"
    first.write_bytes(_line(_ep("a1")) + _line(_ep("a2")))
    bad = tmp_path / "second.jsonl"
    bad.write_bytes(_line(_ep("b1")) + _line(_ep("b2")) + _line(_ep("b3", outcome="win")) + _line(_ep("b4")))

    with MemorySystem(cfg, embedder=HashingEmbedder(dim=64)) as mem:
        mem.write_episodes(load_episodes(first)[0])
        before, records = mem.stats(), _records(mem)
        assert before["episodes"] == 2
        with pytest.raises(TraceFormatError, match=r"second\.jsonl:3: .*\(field 'outcome'\)"):
            episodes, _ = load_episodes(bad)
            mem.write_episodes(episodes)
        assert mem.stats() == before and _records(mem) == records
    with MemorySystem(cfg, embedder=HashingEmbedder(dim=64)) as mem:  # and on disk
        assert mem.stats() == before and _records(mem) == records
        # negative control: writing while streaming would have stored lines 1 and 2 before the error
        with pytest.raises(TraceFormatError):
            for ep in read_jsonl(bad):
                mem.write_episode(ep)
        assert mem.stats()["episodes"] == 4
