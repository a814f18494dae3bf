"""Judging rules of DESIGN §6: grades, the query set, ideals, majority grades of derived records and crediting."""

from __future__ import annotations

import itertools
import random

import pytest

from hindsight_lab.metrics.judging import JudgedEpisode, Judgements, grade, majority_grade
from hindsight_lab.trace import Episode


def _ep(eid: str, task_id: str | None = None, task_type: str | None = None, order: int = 0,
        relevant: list[str] | None = None) -> JudgedEpisode:
    return JudgedEpisode(eid, task_id, task_type, None if relevant is None else frozenset(relevant), order)


def _episodes(specs: list[tuple]) -> list[JudgedEpisode]:
    """``(episode_id, task_id, task_type[, relevant_ids])`` in replay order."""
    return [_ep(s[0], s[1], s[2], i, s[3] if len(s) > 3 else None) for i, s in enumerate(specs)]


# -- grade ------------------------------------------------------------------------------------------------------
def test_grade_same_task_id_is_2_even_with_other_task_type():
    assert grade(_ep("q", "t1", "x", 5), _ep("e", "t1", "y", 0)) == 2


def test_grade_same_task_type_is_1():
    assert grade(_ep("q", "t1", "x", 5), _ep("e", "t2", "x", 0)) == 1


def test_grade_unrelated_is_0():
    assert grade(_ep("q", "t1", "x", 5), _ep("e", "t2", "y", 0)) == 0


def test_null_never_matches_null():
    # negative control: both task_id and task_type null on both sides -> 0, not 2
    assert grade(_ep("q", None, None, 5), _ep("e", None, None, 0)) == 0
    assert grade(_ep("q", None, "x", 5), _ep("e", None, "x", 0)) == 1
    assert grade(_ep("q", "t", None, 5), _ep("e", "u", None, 0)) == 0


def test_relevant_episode_ids_override_the_rule():
    q = _ep("q", "t1", "x", 5, relevant=["b"])
    assert grade(q, _ep("a", "t1", "x", 0)) == 0  # same task_id, but not listed
    assert grade(q, _ep("b", "t9", "z", 1)) == 2  # listed, unrelated otherwise
    # an explicit empty list means nothing is relevant
    assert grade(_ep("q", "t1", "x", 5, relevant=[]), _ep("a", "t1", "x", 0)) == 0


def test_from_episode_reads_the_pydantic_episode():
    ep = Episode(episode_id="e1", task_id="t", task_type=None, instruction="do", steps=[], outcome="success",
                 relevant_episode_ids=["e0"])
    je = JudgedEpisode.from_episode(ep, 7)
    assert je == JudgedEpisode("e1", "t", None, frozenset({"e0"}), 7, "success")  # the outcome mode reads it


# -- Judgements --------------------------------------------------------------------------------------------------
def _replay() -> Judgements:
    return Judgements.from_episodes(_episodes([
        ("a", "t1", "x"),          # 0
        ("b", "t2", "x"),          # 1
        ("c", "t1", "y"),          # 2: a=2, b=0
        ("d", None, "x"),          # 3: a=1, b=1, c=0  (no grade-2 -> not a query)
        ("e", "t1", "x"),          # 4: a=2, b=1, c=2, d=1
        ("f", "t3", "z", ["b"]),   # 5: override: b=2
        ("g", "t4", "z", ["h"]),   # 6: lists a LATER episode -> nothing earlier is relevant
        ("h", "t3", "z"),          # 7: f=2 (same task), g=1 (same type)
    ]))


def test_grades_of_earlier_episodes_only():
    j = _replay()
    assert j.grades("a") == {}
    assert j.grades("c") == {"a": 2}
    assert j.grades("d") == {"a": 1, "b": 1}
    assert j.grades("e") == {"a": 2, "b": 1, "c": 2, "d": 1}
    assert j.grades("f") == {"b": 2}
    assert j.grades("g") == {}
    assert j.grades("h") == {"f": 2, "g": 1}


def test_query_set_is_every_episode_with_an_earlier_grade_2():
    assert _replay().query_ids == ("c", "e", "f", "h")


def test_ideal_and_counts():
    j = _replay()
    assert j.ideal("e", 3) == [2, 2, 1]
    assert j.ideal("e", 10) == [2, 2, 1, 1]      # only 4 earlier episodes: padded to 4, not 10
    assert j.ideal("c", 5) == [2, 0]             # two earlier episodes, one relevant
    assert j.n_relevant("e") == 2 and j.n_candidates("e") == 4
    with pytest.raises(ValueError, match="k must be"):
        j.ideal("e", 0)


def test_unknown_query_raises_keyerror():
    with pytest.raises(KeyError, match="no judgements for query 'zz'"):
        _replay().grade_list("zz", [])


def test_duplicate_ids_and_orders_rejected():
    with pytest.raises(ValueError, match="unique"):
        Judgements.from_episodes([_ep("a", order=0), _ep("a", order=1)])
    with pytest.raises(ValueError, match="distinct"):
        Judgements.from_episodes([_ep("a", order=0), _ep("b", order=0)])


def test_from_episodes_accepts_episodes_in_order():
    eps = [Episode(episode_id=f"e{i}", task_id="t" if i != 1 else None, instruction="x", steps=[],
                   outcome="success") for i in range(3)]
    j = Judgements.from_episodes(eps)
    assert j.query_ids == ("e2",) and j.grades("e2") == {"e0": 2}


def test_explicit_order_wins_over_position():
    # given out of position, "earlier" follows JudgedEpisode.order
    j = Judgements.from_episodes([_ep("late", "t", None, 9), _ep("early", "t", None, 1)])
    assert j.query_ids == ("late",) and j.grades("early") == {}


def test_fast_index_matches_brute_force_grade():
    # the indexed builder must agree with the pairwise rule on random replays
    rng = random.Random(3)
    for _ in range(20):
        n = rng.randint(1, 25)
        eps = []
        for i in range(n):
            rel = None
            if rng.random() < 0.2:
                rel = frozenset(f"e{rng.randrange(n)}" for _ in range(rng.randint(0, 3)))
            eps.append(JudgedEpisode(f"e{i}", rng.choice([None, "t1", "t2", "t3"]),
                                     rng.choice([None, "x", "y"]), rel, i))
        j = Judgements.from_episodes(eps)
        for q in eps:
            expected = {e.episode_id: grade(q, e) for e in eps if e.order < q.order and grade(q, e)}
            assert j.grades(q.episode_id) == expected


# -- from_qrels (LoCoMo) ------------------------------------------------------------------------------------------
def test_from_qrels_query_set_and_dropped_evidence(caplog):
    qrels = {"q1": {"D1:3": 2, "D1:9": 2}, "q2": {"D1:1": 0}, "q3": {"D9:9": 2}}
    cands = {"q1": ["D1:1", "D1:2", "D1:3"], "q2": ["D1:1"], "q3": ["D1:1"], "q4": ["D1:1"]}
    j = Judgements.from_qrels(qrels, cands)
    # D1:9 and D9:9 are not candidates -> dropped; q3 has no evidence left; q2, q4 have none
    assert j.query_ids == ("q1",)
    assert j.grades("q1") == {"D1:3": 2} and j.n_relevant("q1") == 1
    assert j.ideal("q1", 5) == [2, 0, 0]
    assert j.grades("q4") == {}
    assert "dropped 2 labelled sources" in caplog.text
    assert j.grade_list("q1", [("m1", ("D1:1",)), ("m2", ("D1:3",))]) == [0, 2]


def test_from_qrels_without_candidates_and_errors():
    j = Judgements.from_qrels({"q": {"a": 2, "b": 1, "c": 0}})
    assert j.ideal("q", 5) == [2, 1, 0]
    with pytest.raises(ValueError, match="expected a grade"):
        Judgements.from_qrels({"q": {"a": 3}})
    with pytest.raises(ValueError, match="not in candidates_per_query"):
        Judgements.from_qrels({"q": {"a": 2}}, {})


def test_to_qrels_round_trip():
    j = _replay()
    assert j.to_qrels() == {"c": {"a": 2}, "e": {"a": 2, "b": 1, "c": 2, "d": 1}, "f": {"b": 2},
                            "h": {"f": 2, "g": 1}}


# -- majority grade of derived records ----------------------------------------------------------------------------
@pytest.mark.parametrize("sources, expected", [
    ([], 0),
    ([2], 2), ([1], 1), ([0], 0),
    ([2, 0], 0),          # tie: half are >= 2, half are 0 -> rounds down to 0
    ([2, 1], 1),          # >= 1 for both, >= 2 for only half -> 1
    ([2, 2, 0], 2),       # 2 of 3 are >= 2
    ([2, 0, 0], 0),
    ([1, 2, 0], 1),       # 2 of 3 are >= 1
    ([2, 2, 1, 1], 1),    # tie at 2 rounds down to 1
    ([2, 2, 2, 0, 0], 2),
])
def test_majority_grade(sources, expected):
    assert majority_grade(sources) == expected


def test_majority_grade_matches_definition():
    # independent re-implementation of "largest g with strictly more than half of the sources >= g"
    for n in range(1, 6):
        for combo in itertools.product((0, 1, 2), repeat=n):
            ref = max(g for g in (0, 1, 2) if g == 0 or sum(s >= g for s in combo) > n / 2)
            assert majority_grade(combo) == ref


def test_rule_merged_from_many_tasks_is_not_relevant():
    # DESIGN: "a rule merged from twenty tasks is not relevant to twenty queries"
    specs = [(f"e{i}", f"t{i}", None) for i in range(20)] + [("q", "t0", None)]
    j = Judgements.from_episodes(_episodes(specs))
    rule = ("rule-1", tuple(f"e{i}" for i in range(20)))
    assert j.grade_list("q", [rule]) == [0]


# -- grading a list: crediting ------------------------------------------------------------------------------------
def test_episode_record_has_its_episode_grade():
    j = _replay()
    assert j.grade_list("e", [("m1", ("b",)), ("m2", ("c",)), ("m3", ("z",))]) == [1, 2, 0]


def test_each_source_credited_once():
    j = _replay()
    # the same episode injected twice: the second earns nothing
    assert j.grade_list("e", [("m1", ("a",)), ("m1-dup", ("a",))]) == [2, 0]
    # a rule whose relevant sources were already injected as episodes earns nothing
    assert j.grade_list("e", [("m1", ("a",)), ("m2", ("c",)), ("r", ("a", "c"))]) == [2, 2, 0]
    # negative control: the same rule first in the list is relevant, and the episodes after it are not
    assert j.grade_list("e", [("r", ("a", "c")), ("m1", ("a",)), ("m2", ("c",))]) == [2, 0, 0]


def test_credited_source_counts_as_zero_but_stays_in_the_majority():
    j = _replay()  # toward e: a=2, b=1, c=2, d=1
    # rule (a, c, b): 2 of 3 are >= 2 -> 2. After a is credited, (a->0, c=2, b=1): >= 1 for 2 of 3 -> 1
    assert j.grade_list("e", [("r", ("a", "c", "b"))]) == [2]
    assert j.grade_list("e", [("m", ("a",)), ("r", ("a", "c", "b"))]) == [2, 1]


def test_grade_1_record_consumes_its_majority_sources():
    j = _replay()  # toward e: a=2, b=1, c=2, d=1
    # rule (a, b, x): >= 2 for 1 of 3, >= 1 for 2 of 3 -> grade 1; a and b (grade >= 1) are credited,
    # so the episode record of a after it earns 0 -- but c, untouched, still earns 2
    jl = j.judge_list("e", [("r", ("a", "b", "x")), ("ma", ("a",)), ("mc", ("c",))])
    assert jl.grades == (1, 0, 2)
    assert jl.relevant_credits == (0, 0, 1)  # a grade-1 record is no recall credit


def test_relevant_credits_count_distinct_grade_2_sources():
    j = _replay()  # toward e: a=2, b=1, c=2, d=1
    # rule (a, c, d) -> 2 (2 of 3 are >= 2): credits a and c (d is grade 1 < 2 and stays free)
    jl = j.judge_list("e", [("r", ("a", "c", "d")), ("md", ("d",)), ("mc", ("c",))])
    assert jl.grades == (2, 1, 0)
    assert jl.relevant_credits == (2, 0, 0)


def test_unknown_later_and_self_sources_count_as_zero():
    j = _replay()  # c: a=2, b=0; d, e are later than c
    assert j.grade_list("c", [("m1", ("nope",)), ("m2", ("e",)), ("m3", ("c",)), ("r", ("a", "zz"))]) == \
        [0, 0, 0, 0]  # (a=2, zz=0) is a tie -> 0
    assert j.grade_list("c", [("r", ("a", "a", "zz", "a"))]) == [0]  # duplicates within a record count once
    assert j.grade_list("c", [("empty", ())]) == [0]


def test_accepts_injected_like_objects():
    from types import SimpleNamespace as NS

    j = _replay()
    items = [NS(memory_id="m1", kind="episode", source_episode_ids=("a",), tokens=5),
             NS(record=NS(source_episode_ids=("c",)), id="m2")]
    assert j.grade_list("e", items) == [2, 2]
    with pytest.raises(TypeError, match="source_episode_ids"):
        j.grade_list("e", [object()])
    # regression guard: a bare string would otherwise be read as one source per character
    with pytest.raises(TypeError, match="must be a tuple of ids"):
        j.grade_list("e", [("m1", "a")])


def test_store_has_relevant_and_count():
    j = _replay()
    stored = [("m1", ("b",)), ("r", ("a", "b")), ("r2", ("a", "c", "d"))]
    assert j.store_has_relevant("e", stored) is True       # r2: 2 of 3 >= 2
    assert j.n_store_relevant("e", stored) == 1
    assert j.store_has_relevant("e", stored[:2]) is False  # (a, b) is a tie at 2 -> 1
