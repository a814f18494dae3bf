"""The resume journal: reading (partial last line, damage, header mismatch), its codecs, and resuming the engine
from it — in process, on the store-free baselines, so these are fast. The end-to-end kill test is test_resume.py."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from hindsight_lab import ConfigError, Episode, HindsightLabError, LabConfig
from hindsight_lab.embed import HashingEmbedder, TokenCounter
from hindsight_lab.reflect.schema import Reflection, Rejection
from hindsight_lab.replay.engine import run_conversations, run_episodes
from hindsight_lab.replay.journal import JOURNAL_FILE, Journal, JournalingReflector, StoredCodec, read_journal
from hindsight_lab.replay.systems import BM25TopK, DenseTopK, Hindsight, Injected, NoMemory
from support import episode

HEADER = {"dataset": {"name": "d", "format": "jsonl", "sha256": "a" * 64},
          "params": {"systems": ["none", "hindsight"], "top_k": 10, "token_budget": 600, "limit": None,
                     "config": {"hindsight": {"retrieval.weights.semantic": 0.2, "retrieval.top_k": 5}}}}


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


# ---------------------------------------------------------------------- the file
def test_a_trailing_partial_line_is_ignored_and_cut_before_the_next_append(tmp_path):
    j = Journal.open(tmp_path, HEADER, resume=False)
    for i in range(2):
        j.append({"unit": i, "id": f"e{i}"})
    j.close()
    path = tmp_path / JOURNAL_FILE
    complete = path.stat().st_size
    with path.open("ab") as fh:  # what a SIGKILL in the middle of a write leaves
        fh.write(b'{"unit": 2, "id": "e2", "queries": [{"sys')
    header, units, valid = read_journal(path)
    assert header["params"]["top_k"] == 10 and [u["id"] for u in units] == ["e0", "e1"] and valid == complete

    j = Journal.open(tmp_path, HEADER, resume=True)
    assert [u["id"] for u in j.units] == ["e0", "e1"]
    j.append({"unit": 2, "id": "e2"})
    j.close()
    assert [u["id"] for u in read_journal(path)[1]] == ["e0", "e1", "e2"]
    assert all(json.loads(line) for line in _lines(path)[:-1]) and _lines(path)[-1] == b""


def test_a_damaged_complete_line_is_an_error(tmp_path):
    j = Journal.open(tmp_path, HEADER, resume=False)
    j.append({"unit": 0, "id": "e0"})
    j.close()
    with (tmp_path / JOURNAL_FILE).open("ab") as fh:
        fh.write(b"not json\n" + json.dumps({"unit": 2}).encode() + b"\n")
    with pytest.raises(HindsightLabError, match=r"journal.jsonl:3: unreadable journal line"):
        read_journal(tmp_path / JOURNAL_FILE)


def test_resuming_another_replay_names_what_differs(tmp_path):
    Journal.open(tmp_path, HEADER, resume=False).close()
    other = json.loads(json.dumps(HEADER))
    other["dataset"]["sha256"] = "b" * 64
    other["dataset"]["name"] = "renamed"
    other["params"]["top_k"] = 5
    other["params"]["config"]["hindsight"]["retrieval.weights.semantic"] = 0.6
    with pytest.raises(ConfigError) as info:
        Journal.open(tmp_path, other, resume=True)
    msg = str(info.value)
    assert "dataset sha256: journal 'aaaa" in msg and "top_k: journal 10, now 5" in msg
    assert "config hindsight.retrieval.weights.semantic: journal 0.2, now 0.6" in msg
    assert "dataset name" not in msg  # negative control: a moved or renamed file resumes
    # the same header resumes (tuples and lists compare equal once written as JSON)
    same = json.loads(json.dumps(HEADER))
    same["params"]["systems"] = ("none", "hindsight")
    assert Journal.open(tmp_path, same, resume=True).units == []


def test_resume_without_a_journal_starts_from_scratch_and_a_fresh_start_replaces_one(tmp_path):
    j = Journal.open(tmp_path / "j", HEADER, resume=True)
    assert j.units == [] and read_journal(j.path)[0]["params"]["top_k"] == 10
    j.append({"unit": 0, "id": "e0"})
    j.close()
    j = Journal.open(tmp_path / "j", HEADER, resume=False)
    j.close()
    assert read_journal(j.path)[1] == []
    j.remove()
    assert not (tmp_path / "j").exists()


# ---------------------------------------------------------------------- codecs
def test_stored_lists_are_delta_encoded_and_decode_exactly():
    snapshots = [[], [("a", ("e1",))], [("a", ("e1",)), ("b", ("e2",))],
                 [("a", ("e1", "e3")), ("b", ("e2",)), ("c", ("e3",))],  # a merge changed a's sources
                 [("a", ("e1", "e3")), ("c", ("e3",))],  # b archived
                 [("x", ("e9",)), ("x", ("e9",))]]  # duplicate ids: kept as a full list
    enc, dec = StoredCodec(), StoredCodec()
    encoded = [json.loads(json.dumps(enc.encode("s", snap))) for snap in snapshots]
    assert encoded[3] == {"set": [["a", ["e1", "e3"]], ["c", ["e3"]]], "drop": []}
    assert encoded[4] == {"set": [], "drop": ["b"]}
    for snap, delta in zip(snapshots, encoded):
        assert sorted(dec.decode("s", delta)) == sorted(snap)
    assert enc.encode("s", None) is None and dec.decode("s", None) is None


def _reflection(eid: str) -> Reflection:
    return Reflection(task_type="refund", outcome="failure", key_decision="refunded first",
                      why_it_worked_or_failed="shipped orders cannot be refunded",
                      reusable_rule="Call lookup_order before issue_refund", confidence=0.8,
                      counter_examples=["digital goods"], trigger={"any": ["refund"]}, episode_id=eid)


class _Scripted:
    """A reflector that answers from a list, and counts its calls (a stand-in for a non-deterministic LLM)."""

    def __init__(self, answers):
        self.answers, self.calls = list(answers), 0

    def reflect_batch(self, items):
        self.calls += 1
        return [self.answers.pop(0) for _ in items]

    def describe(self):
        return {"name": "scripted", "args": {}}


def test_reflector_answers_are_journaled_and_replayed_without_asking_again():
    answers = [_reflection("e1"), Rejection("rule_too_generic", "too generic", "{}", "e2")]
    inner = _Scripted(answers)
    rec = JournalingReflector(inner, "hindsight")
    ep = lambda eid: SimpleNamespace(episode_id=eid)  # noqa: E731
    got = rec.reflect_batch([(ep("e1"), []), (ep("e2"), [])])
    journaled = json.loads(json.dumps(rec.take()))
    assert rec.take() == [] and inner.calls == 1

    again = JournalingReflector(_Scripted([]), "hindsight")
    again.replay(journaled)
    assert again.reflect_batch([(ep("e1"), []), (ep("e2"), [])]) == got  # equal objects, no reflector call
    again.done_replaying("e2")
    assert again.inner.calls == 0
    # divergence is caught: a reflection asked for another episode, or journaled answers left unused
    again.replay(journaled)
    with pytest.raises(HindsightLabError, match="asked for a reflection on 'e9'"):
        again.reflect_batch([(ep("e9"), [])])
    again.replay(journaled)
    with pytest.raises(HindsightLabError, match="fewer reflections than the journal holds"):
        again.done_replaying("e1")


# ---------------------------------------------------------------------- resuming the engine
def _episodes(n: int) -> list[Episode]:
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    tools = [["lookup_order", "issue_refund"], ["search_flights", "book_flight"], ["lookup_user", "update_address"]]
    asks = ["refund order {i}", "book a flight to city {i}", "change the address of user {i}"]
    return [Episode.model_validate(episode(f"e{i}", asks[i % 3].format(i=i % 5), tools[i % 3], task_id=f"t{i % 5}",
                                           started_at=(t0 + timedelta(hours=7 * i)).isoformat()))
            for i in range(n)]


def _baselines() -> list:
    emb = HashingEmbedder(dim=64)
    shared = dict(top_k=5, budget=600, count=TokenCounter.for_embedder(emb).count, summary_chars=400)
    return [NoMemory(), DenseTopK(emb, name="dense", **shared), BM25TopK(name="bm25", **shared)]


def _same_run(a, b) -> None:
    key = lambda r: (r.system, r.query_id, r.order, r.injected, sorted(r.stored or []), r.at, r.group)  # noqa: E731
    assert [key(r) for r in a.queries] == [key(r) for r in b.queries]
    assert a.memory == b.memory and a.outcomes == b.outcomes and a.reflection == b.reflection


def _cut(src: Path, dst: Path, units: int, partial: bool = True) -> None:
    """A copy of a journal as a kill after ``units`` units would have left it."""
    lines = _lines(src / JOURNAL_FILE)
    dst.mkdir(parents=True)
    text = b"\n".join(lines[:1 + units]) + b"\n" + (lines[1 + units][:40] if partial else b"")
    (dst / JOURNAL_FILE).write_bytes(text)


def test_a_resumed_episode_replay_equals_an_uninterrupted_one(tmp_path):
    episodes = _episodes(12)
    qids = {ep.episode_id for ep in episodes[5:]}
    journal = Journal.open(tmp_path / "full", HEADER, resume=False)
    full = run_episodes(episodes, _baselines(), query_ids=qids, journal=journal)
    journal.close()
    assert len(read_journal(tmp_path / "full" / JOURNAL_FILE)[1]) == 12

    for units in (0, 7, 12):  # nothing done, a kill halfway, a kill after the last unit (before the report)
        _cut(tmp_path / "full", tmp_path / f"cut{units}", units, partial=units < 12)
        systems = _baselines()
        resumed = run_episodes(episodes, systems, query_ids=qids,
                               journal=Journal.open(tmp_path / f"cut{units}", HEADER, resume=True))
        _same_run(full, resumed)
        assert resumed.timing["resumed_units"] == units
        # the stores were re-derived (all 12 episodes written), except when every unit came from the journal
        assert systems[1].counts()["L2"] == (0 if units == 12 else 12)


def test_the_journal_must_be_a_prefix_of_the_replay(tmp_path):
    journal = Journal.open(tmp_path / "j", HEADER, resume=False)
    run_episodes(_episodes(4), _baselines(), journal=journal)
    journal.close()
    reordered = list(reversed(_episodes(4)))
    with pytest.raises(HindsightLabError, match="journal unit 0 is 'e0', but this replay's unit there is 'e3'"):
        run_episodes(reordered, _baselines(), journal=Journal.open(tmp_path / "j", HEADER, resume=True))


class _Drifting(NoMemory):
    """A system whose recall changes state (so it is repeated on resume) and is not deterministic."""

    calls = 0  # across instances: a resumed replay's recalls differ from the killed one's

    def __init__(self) -> None:
        super().__init__("drifting")

    def recall_changes_state(self, span: timedelta) -> bool:
        return True

    def recall(self, query: str, now: datetime) -> list[Injected]:
        _Drifting.calls += 1
        return [Injected(f"m{self.calls}", "episode", (f"x{self.calls}",), 3)]


def test_a_recall_that_changes_state_is_repeated_on_resume_and_checked(tmp_path, caplog):
    episodes = _episodes(5)
    journal = Journal.open(tmp_path / "j", HEADER, resume=False)
    full = run_episodes(episodes, [_Drifting()], journal=journal)
    journal.close()
    _cut(tmp_path / "j", tmp_path / "cut", 3)
    before = _Drifting.calls
    resumed = run_episodes(episodes, [_Drifting()], journal=Journal.open(tmp_path / "cut", HEADER, resume=True))
    assert _Drifting.calls - before == 5  # 3 repeated for their side effects, 2 new
    assert [r.injected for r in resumed.queries[:3]] == [r.injected for r in full.queries[:3]]  # the journal's
    warned = [r.message for r in caplog.records if "recalled something else than the journal holds" in r.message]
    assert len(warned) == 3 and "'drifting'" in warned[0]


def test_re_derived_counts_are_checked_against_the_journal(tmp_path):
    episodes = _episodes(5)
    journal = Journal.open(tmp_path / "j", HEADER, resume=False)
    run_episodes(episodes, _baselines(), journal=journal)
    journal.close()
    _cut(tmp_path / "j", tmp_path / "cut", 3)
    path = tmp_path / "cut" / JOURNAL_FILE
    lines = _lines(path)
    unit = json.loads(lines[3])
    unit["memory"][1]["L2"] = 99  # as if the killed run's dense store had held something else
    lines[3] = json.dumps(unit).encode()
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(HindsightLabError, match=r"system 'dense' holds \{'L2': 3, 'L3': 0\}"):
        run_episodes(episodes, _baselines(), journal=Journal.open(tmp_path / "cut", HEADER, resume=True))


def test_a_resumed_conversation_replay_skips_the_journaled_conversations(tmp_path):
    t0 = datetime(2023, 5, 8, tzinfo=timezone.utc)

    def conversation(cid: str, n: int) -> SimpleNamespace:
        turns = [SimpleNamespace(id=f"{cid}:D1:{i}", text=f"{cid} says fact number {i} about hiking", at=t0
                                 + timedelta(minutes=i)) for i in range(n)]
        questions = [SimpleNamespace(index=q, question=f"what about fact number {q} hiking") for q in range(2)]
        return SimpleNamespace(sample_id=cid, turns=turns, questions=questions)

    def to_episode(turn) -> Episode:
        return Episode.model_validate(episode(turn.id, turn.text, [], started_at=turn.at.isoformat()))

    made = []

    def make():
        made.append(1)
        return _baselines()

    convs = [conversation("c1", 4), conversation("c2", 3), conversation("c3", 5)]
    journal = Journal.open(tmp_path / "full", HEADER, resume=False)
    full = run_conversations(convs, make, to_episode=to_episode, journal=journal)
    journal.close()
    _cut(tmp_path / "full", tmp_path / "cut", 2)
    made.clear()
    resumed = run_conversations(convs, make, to_episode=to_episode,
                                journal=Journal.open(tmp_path / "cut", HEADER, resume=True))
    assert len(made) == 1  # only the third conversation ran; the first two came from the journal
    _same_run(full, resumed)


def test_hindsight_recall_changes_state_only_where_it_can_matter():
    def system(**params) -> Hindsight:
        return Hindsight(SimpleNamespace(config_=LabConfig().with_params(params)))

    replay_defaults = {"decay.archive_unretrieved": False}
    # rule decay reads last_triggered_at (which a search sets) only once a rule can be 90 days old
    assert not system(**replay_defaults).recall_changes_state(timedelta(days=89))
    assert system(**replay_defaults).recall_changes_state(timedelta(days=90))
    assert not system(**replay_defaults, **{"retrieval.track_retrievals": False}).recall_changes_state(
        timedelta(days=400))
    # archiving what was not retrieved (a retrieval effect, off in replays by default) reads last_retrieved_at
    assert system(**{"decay.archive_unretrieved": True}).recall_changes_state(timedelta(days=1))
    assert not NoMemory().recall_changes_state(timedelta(days=400))
    assert not _baselines()[2].recall_changes_state(timedelta(days=400))
