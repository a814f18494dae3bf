"""The LoCoMo adapter (conversation-memory mode): a hand-written sample for each rule, then the real dev split."""

from __future__ import annotations

import json
import logging
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hindsight_lab.datasets import (
    LocomoConversation,
    describe_locomo,
    detect_format,
    load,
    read_locomo,
    turn_to_episode,
)
from hindsight_lab.datasets.locomo import CATEGORY_NAMES, normalise_evidence, parse_session_date
from hindsight_lab.errors import ConfigError, TraceFormatError
from hindsight_lab.trace import MessageStep

from support import shared_dataset

UTC = timezone.utc


def _sample(sample_id: str = "conv-1", qa: list[dict[str, Any]] | None = None, **conv: Any) -> dict[str, Any]:
    """A LoCoMo sample shaped like locomo10.json: session_10 listed before session_2, a date without a session."""
    conversation = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Look at my garden.",
             "img_url": ["https://example.org/x.jpg"], "blip_caption": "a photo of tomatoes", "query": "garden"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Lovely."},
        ],
        "session_10_date_time": "9:05 am on 2 July, 2023",
        "session_10": [{"speaker": "Bob", "dia_id": "D10:1", "text": "I moved to Leeds."}],
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I started painting."},
                      {"speaker": "Bob", "dia_id": "D2:2", "text": "Nice!"}],
        "session_11_date_time": "9:05 am on 9 July, 2023",  # a date with no session: ignored
        **conv,
    }
    if qa is None:
        qa = [
            {"question": "When did Ann start painting?", "answer": "June 2023", "evidence": ["D2:1"], "category": 2},
            {"question": "What does Bob grow?", "answer": "tomatoes", "evidence": ["D1:2; D10:1"], "category": 1},
            {"question": "Where did Bob move?", "answer": "Leeds", "evidence": ["D:10:1", "D", "D9:9"],
             "category": 4},
            {"question": "Is Ann an artist?", "answer": "Likely yes", "evidence": [], "category": 3},
            {"question": "What did Bob paint?", "adversarial_answer": "a garden", "evidence": ["D2:02"],
             "category": 5},
            {"question": "Which year?", "answer": 2023, "evidence": ["D02:001", "D2:1"], "category": 2},
        ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa, "observation": {},
            "session_summary": {}, "event_summary": {}}


def _write(tmp_path: Path, samples: Any, name: str = "locomo.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- reading rules
def test_turns_by_session_number_with_a_strict_clock(tmp_path):
    conv = read_locomo(_write(tmp_path, [_sample()]))[0]
    assert isinstance(conv, LocomoConversation) and conv.sample_id == "conv-1" and conv.speakers == ("Ann", "Bob")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D10:1"]
    assert [(t.session, t.turn) for t in conv.turns][3:] == [(2, 1), (2, 2), (10, 1)]
    t0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert [t.at for t in conv.turns[:3]] == [t0, t0 + timedelta(minutes=1), t0 + timedelta(minutes=2)]
    assert conv.turns[3].at == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert all(a.at < b.at for a, b in zip(conv.turns, conv.turns[1:]))
    assert conv.turns[1].image_caption == "a photo of tomatoes" and conv.turns[0].image_caption is None
    assert conv.turns[3].session_date == "10:37 am on 27 June, 2023" and conv.clock_inversions == []


def test_turn_to_episode_is_a_memory_not_a_query(tmp_path):
    conv = read_locomo(_write(tmp_path, [_sample()]))[0]
    ep = turn_to_episode(conv.turns[0])
    assert ep.episode_id == "conv-1:D1:1" and ep.instruction == "Ann: Hi Bob!"
    assert ep.steps == [MessageStep(role="user", content="Ann: Hi Bob!")]
    assert (ep.outcome, ep.task_id, ep.domain, ep.started_at) == ("success", None, "locomo", conv.turns[0].at)
    assert ep.meta == {"source": "locomo", "conversation_id": "conv-1", "dia_id": "D1:1", "session": 1, "turn": 1,
                       "speaker": "Ann", "session_date": "1:56 pm on 8 May, 2023"}
    photo = turn_to_episode(conv.turns[1])
    assert photo.instruction == "Bob: Look at my garden. [shares a photo of tomatoes]"
    assert turn_to_episode(conv.turns[1], image_captions=False).instruction == "Bob: Look at my garden."
    assert [e.episode_id for e in conv.episodes()] == [t.episode_id for t in conv.turns]
    # no question text reaches a memory
    assert not any("When did" in e.model_dump_json() for e in conv.episodes())


@pytest.mark.parametrize("raw,expected", [
    ("D1:3", ["D1:3"]),
    ("D8:6; D9:17", ["D8:6", "D9:17"]),
    ("D8:6,D9:17", ["D8:6", "D9:17"]),
    ("D:11:26", ["D11:26"]),
    ("D30:05", ["D30:5"]),
    ("D02:001", ["D2:1"]),
    ("D1:0", ["D1:0"]),
    ("D", []),
    ("", []),
])
def test_evidence_normalisation(raw, expected):
    assert normalise_evidence(raw) == expected


def test_evidence_kept_missing_counted_and_questions_without_evidence_flagged(tmp_path):
    conv = read_locomo(_write(tmp_path, [_sample()]))[0]
    qs = {q.index: q for q in conv.questions}
    assert sorted(qs) == [0, 1, 2, 3, 5]  # category 5 (index 4) skipped, indices stay those of the file
    assert qs[0].evidence == ("D2:1",) and qs[0].relevant_episode_ids == ["conv-1:D2:1"]
    assert qs[0].query_id == "conv-1#q0" and qs[0].category_name == "temporal"
    assert qs[1].evidence == ("D1:2", "D10:1") and qs[1].raw_evidence == ("D1:2; D10:1",)
    # 'D:10:1' is repaired; 'D' and 'D9:9' (no such turn) are kept and counted, never dropped silently
    assert qs[2].evidence == ("D10:1",) and qs[2].unmatched_evidence == ("D", "D9:9")
    assert qs[2].raw_evidence == ("D:10:1", "D", "D9:9")
    assert not qs[3].has_evidence and qs[3].raw_evidence == ()
    assert qs[5].evidence == ("D2:1",) and qs[5].answer == "2023"  # repeats merged; a numeric answer as text
    assert (conv.missing_evidence, conv.no_evidence, conv.skipped_category5) == (2, 1, 1)
    assert conv.qrels() == {"conv-1#q0": {"conv-1:D2:1": 2}, "conv-1#q1": {"conv-1:D1:2": 2, "conv-1:D10:1": 2},
                            "conv-1#q2": {"conv-1:D10:1": 2}, "conv-1#q5": {"conv-1:D2:1": 2}}


def test_category5_skipped_by_default_or_kept_and_marked(tmp_path):
    path = _write(tmp_path, [_sample()])
    assert not any(q.category == 5 for q in read_locomo(path)[0].questions)
    conv = read_locomo(path, include_category5=True)[0]
    adv = [q for q in conv.questions if q.adversarial]
    assert len(adv) == 1 and adv[0].index == 4 and adv[0].answer is None
    assert adv[0].adversarial_answer == "a garden" and adv[0].evidence == ("D2:2",)
    assert conv.skipped_category5 == 0 and CATEGORY_NAMES[5] == "adversarial"
    assert describe_locomo([conv]).by_category == {1: 1, 2: 2, 3: 1, 4: 1, 5: 1}


def test_file_order_and_limit_conversations(tmp_path):
    path = _write(tmp_path, [_sample("conv-9"), _sample("conv-2"), _sample("conv-5")])
    assert [c.sample_id for c in read_locomo(path)] == ["conv-9", "conv-2", "conv-5"]
    assert [c.sample_id for c in read_locomo(path, limit_conversations=2)] == ["conv-9", "conv-2"]
    assert read_locomo(path, limit_conversations=0) == []
    with pytest.raises(ConfigError, match=r"limit_conversations: expected a non-negative integer"):
        read_locomo(path, limit_conversations=-1)
    counts = describe_locomo(read_locomo(path))
    assert (counts.conversations, counts.turns, counts.sessions, counts.questions) == (3, 18, 9, 15)
    assert (counts.skipped_category5, counts.missing_evidence, counts.no_evidence) == (3, 6, 3)


def test_a_session_dated_before_the_one_before_is_reported(tmp_path, caplog):
    sample = _sample(session_2_date_time="1:00 pm on 1 May, 2023")
    with caplog.at_level(logging.WARNING, logger="hindsight_lab.datasets.locomo"):
        conv = read_locomo(_write(tmp_path, [sample]))[0]
    assert conv.clock_inversions == [2] and "session 2 is dated '1:00 pm on 1 May, 2023'" in caplog.text
    assert describe_locomo([conv]).clock_inversions == 1


def test_session_dates():
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_session_date(" 4:04 pm on 20 Jan, 2023") == datetime(2023, 1, 20, 16, 4, tzinfo=UTC)
    with pytest.raises(ValueError, match=r"unrecognised session date 'yesterday'"):
        parse_session_date("yesterday")


@pytest.mark.parametrize("samples,match", [
    ({"sample_id": "x"}, r"expected a JSON list of LoCoMo samples"),
    (["oops"], r"item 0: expected an object"),
    ([{"sample_id": "c", "conversation": {}}], r"item 0 \(c\): missing required field .*\(field 'qa'\)"),
    ([_sample(session_2_date_time="someday")], r"unrecognised session date 'someday' "
                                               r".*\(field 'conversation\.session_2_date_time'\)"),
    ([_sample(session_3=[{"speaker": "A", "dia_id": "D3:1", "text": "x"}])],
     r"missing session date \(field 'conversation\.session_3_date_time'\)"),
    ([_sample(session_2=[{"speaker": "A", "dia_id": "turn-1", "text": "x"}])],
     r"dia_id 'turn-1' is not of the form D<session>:<turn> \(field 'conversation\.session_2\.0\.dia_id'\)"),
    ([_sample(session_2=[{"speaker": "A", "dia_id": "D2:1"}])],
     r"missing or non-string text \(field 'conversation\.session_2\.0\.text'\)"),
    ([_sample(session_2=[{"speaker": "A", "dia_id": "D1:1", "text": "again"}])], r"dia_id 'D1:1' names more"),
    ([_sample(qa=[{"question": "q", "answer": "a", "evidence": []}])],
     r"missing or non-integer category \(field 'qa\.0\.category'\)"),
    ([_sample(qa=[{"question": "q", "answer": "a", "evidence": "D1:1", "category": 1}])],
     r"expected a list of dia_ids, got str \(field 'qa\.0\.evidence'\)"),
    ([_sample(), _sample()], r"item 1: duplicate sample_id 'conv-1' \(item 0\)"),
], ids=["not_a_list", "not_an_object", "no_qa", "bad_date", "no_date", "bad_dia_id", "no_text", "duplicate_dia_id",
        "no_category", "evidence_not_list", "duplicate_sample"])
def test_malformed_files_name_the_sample_and_field(tmp_path, samples, match):
    with pytest.raises(TraceFormatError, match=match) as info:
        read_locomo(_write(tmp_path, samples))
    assert "locomo.json" in str(info.value)


def test_detect_format_and_load_refuses_conversations(tmp_path):
    path = _write(tmp_path, [_sample()], name="qa.json")
    assert detect_format(path) == "locomo"
    for fmt in ("auto", "locomo"):
        with pytest.raises(ConfigError, match=r"LoCoMo, a conversation dataset .* read it with "
                                              r"hindsight_lab\.datasets\.read_locomo"):
            load(path, format=fmt)
    # negative control: a JSON list of plain QA items is not LoCoMo
    assert detect_format(_write(tmp_path, [{"sample_id": "x", "qa": []}], name="other.json")) is None


# ---------------------------------------------------------------------------------------------- real data
REAL = "locomo/locomo10.dev.json"


@pytest.fixture(scope="module")
def real() -> tuple[Path, list[LocomoConversation]]:
    path = shared_dataset(REAL)
    return path, read_locomo(path)


def test_real_counts(real):
    _, convs = real
    assert [c.sample_id for c in convs] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44"]
    c = describe_locomo(convs)
    assert (c.conversations, c.turns, c.sessions) == (6, 3435, 156)
    assert c.by_category == {1: 172, 2: 180, 3: 53, 4: 480} and c.questions == 885
    assert c.skipped_category5 == 272 and c.clock_inversions == 0
    assert [x.skipped_category5 for x in convs] == [47, 24, 41, 61, 64, 35]


def test_real_turns_in_strict_time_order(real):
    _, convs = real
    for conv in convs:
        assert all(a.at < b.at for a, b in zip(conv.turns, conv.turns[1:])), conv.sample_id
        assert all(t.dia_id == f"D{t.session}:{t.turn}" for t in conv.turns)
        assert len({t.episode_id for t in conv.turns}) == len(conv.turns)
    assert convs[0].turns[0].at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    # conv-26 lists dates for sessions 20-35 without turns: its last turn is in session 19
    assert convs[0].turns[-1].session == 19


def test_real_evidence(real):
    _, convs = real
    turn_ids = {c.sample_id: {t.episode_id for t in c.turns} for c in convs}
    for conv in convs:
        for q in conv.questions:
            assert set(q.relevant_episode_ids) <= turn_ids[conv.sample_id]
    unmatched = {q.query_id: q.unmatched_evidence for c in convs for q in c.questions if q.unmatched_evidence}
    # the known bad ids of this split: a turn that does not exist (session 10 of conv-42 has 16 turns) and a bare 'D'
    assert unmatched == {"conv-42#q58": ("D10:19",), "conv-42#q88": ("D",)}
    assert describe_locomo(convs).missing_evidence == 2
    # the two questions without evidence are conv-26's open-domain ones with an empty list in the file
    flagged = [(q.query_id, q.category, q.raw_evidence) for c in convs for q in c.questions if not q.has_evidence]
    assert flagged == [("conv-26#q30", 3, ()), ("conv-26#q46", 3, ())]
    by_id = {q.query_id: q for c in convs for q in c.questions}
    assert by_id["conv-26#q37"].evidence == ("D8:6", "D9:17")  # 'D8:6; D9:17'
    assert "D11:26" in by_id["conv-43#q18"].evidence and "D:11:26" in by_id["conv-43#q18"].raw_evidence


def test_real_category5_and_limit(real):
    path, convs = real
    with5 = read_locomo(path, include_category5=True)
    adv = [q for c in with5 for q in c.questions if q.adversarial]
    assert len(adv) == 272 and all(q.adversarial_answer for q in adv)
    assert sum(q.answer is not None for q in adv) == 2  # two carry both answers
    assert Counter(q.category for c in with5 for q in c.questions)[4] == 480
    two = read_locomo(path, limit_conversations=2)
    assert [c.sample_id for c in two] == ["conv-26", "conv-30"]
    assert [len(c.turns) for c in two] == [len(c.turns) for c in convs[:2]]
    assert detect_format(path) == "locomo"
