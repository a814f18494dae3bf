"""The Reflexion HotpotQA adapter: hand-written logs for each parsing rule, then the real development log."""

from __future__ import annotations

import logging
import re
from collections import Counter
from datetime import timedelta
from typing import Sequence

import pytest
from support import shared_dataset

from hindsight_lab.datasets import describe_reflexion, detect_format, load, read_reflexion_hotpotqa
from hindsight_lab.datasets.reflexion import START, normalise_question, strip_retry_instruction
from hindsight_lab.errors import ConfigError, TraceFormatError
from hindsight_lab.trace import ReflectionStep, ThoughtStep, ToolCallStep, ToolResultStep

RETRY = ("You have attempted to answer following question before and failed. The following reflection(s) give a "
         "plan to avoid failing to answer the question in the same way you did previously. Use them to improve "
         "your strategy of correctly answering the given question.")

# one trial, one agent per section, as the real log prints them (a multi-line observation, a double space after
# "Question:", an invalid action, a halted agent without Finish)
ONE_TRIAL = """
########################################
BEGIN TRIAL 1
Trial summary: Correct: 1, Incorrect: 1, Halted: 1
#######################################
------------- BEGIN CORRECT AGENTS -------------

Question:  Who wrote "Hamlet"?
Thought 1: I need to search Hamlet.
Action 1: Search[Hamlet]
Observation 1: Hamlet is a tragedy by William Shakespeare. 
It was written around 1600.
Thought 2: The author is William Shakespeare.
Action 2: Finish[William Shakespeare]
Observation 2: Answer is CORRECT
Correct answer: William Shakespeare

------------- BEGIN INCORRECT AGENTS -----------

Question: What river flows through Paris?
Thought 1: I should look up river on the Paris page.
Action 1: Lookup[river]
Observation 1: (Result 1/1) Paris lies on the Seine.
Thought 2: The river is the Loire.
Action 2: Finish[Loire]
Observation 2: Answer is INCORRECT
Correct answer: Seine

------------- BEGIN HALTED AGENTS --------------

Question: How tall is Mount Kilimanjaro?
Thought 1: I need to search Kilimanjaro.
Action 1: Search[Kilimanjaro]
Observation 1: Could not find [Kilimanjaro]. Similar: ['Mount Kilimanjaro']
Thought 2: I will compare heights.
Action 2: Compare[heights]
Observation 2: Invalid Action. Valid Actions are Lookup[<topic>] Search[<topic>] and Finish[<answer>].
Correct answer: 5,895 metres
"""


def _block(question: str, steps: list[str], answer: str = "A", reflections: list[str] | None = None) -> str:
    """One agent block; ``reflections`` (even empty) adds the retry instruction to the question line."""
    lines = [f"Question: {question}" + (RETRY if reflections is not None else "")]
    if reflections:
        lines += ["Reflections:", *(f"- {r}" for r in reflections)]
    return "\n".join([*lines, *steps, f"Correct answer: {answer}"]) + "\n"


def _trial(n: int, correct: Sequence[str] = (), incorrect: Sequence[str] = (), halted: Sequence[str] = ()) -> str:
    """One trial as the log prints it: header, summary, then the three sections."""
    out = ["#" * 40, f"BEGIN TRIAL {n}",
           f"Trial summary: Correct: {len(correct)}, Incorrect: {len(incorrect)}, Halted: {len(halted)}", "#" * 39]
    for name, blocks in (("CORRECT", correct), ("INCORRECT", incorrect), ("HALTED", halted)):
        out.append(f"------------- BEGIN {name} AGENTS -------------\n")
        out += list(blocks)
    return "\n".join(out) + "\n"


def _steps(answer: str, query: str = "X") -> list[str]:
    return [f"Thought 1: search {query}", f"Action 1: Search[{query}]", "Observation 1: something",
            "Thought 2: answer", f"Action 2: Finish[{answer}]",
            f"Observation 2: Answer is {'CORRECT' if answer == 'A' else 'INCORRECT'}"]


def _halted(query: str = "X") -> list[str]:
    return [f"Thought 1: search {query}", f"Action 1: Search[{query}]", "Observation 1: nothing"]


def _write(tmp_path, text: str, name: str = "log.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- mapping rules
def test_steps_outcomes_ids_and_clock_of_one_trial(tmp_path):
    eps = read_reflexion_hotpotqa(_write(tmp_path, ONE_TRIAL))
    assert [e.episode_id for e in eps] == ["hotpot-q0-t1", "hotpot-q1-t1", "hotpot-q2-t1"]
    assert [e.started_at for e in eps] == [START + timedelta(hours=i) for i in range(3)]
    hamlet, paris, kili = eps
    assert hamlet.instruction == 'Who wrote "Hamlet"?' and hamlet.task_id == "who wrote hamlet"
    assert [type(s) for s in hamlet.steps] == [ThoughtStep, ToolCallStep, ToolResultStep] * 2
    assert hamlet.steps[1] == ToolCallStep(name="Search", arguments={"query": "Hamlet"}, id="1")
    # an observation over several lines is one result, its lines joined (trailing spaces dropped)
    assert hamlet.steps[2].content == "Hamlet is a tragedy by William Shakespeare.\nIt was written around 1600."
    assert hamlet.steps[2].id == "1" and hamlet.steps[2].error is None
    assert hamlet.final_answer == "William Shakespeare"
    assert hamlet.steps[4].arguments == {"answer": "William Shakespeare"}
    assert (hamlet.outcome, hamlet.reward, hamlet.domain) == ("success", 1.0, "hotpotqa")
    assert paris.tool_calls()[0].arguments == {"keyword": "river"} and paris.final_answer == "Loire"
    assert (paris.outcome, paris.meta["halted"], paris.meta["section"]) == ("failure", False, "incorrect")
    assert (kili.outcome, kili.meta["halted"], kili.final_answer) == ("failure", True, None)
    assert kili.tool_calls()[1] == ToolCallStep(name="Compare", arguments={"argument": "heights"}, id="2")
    assert kili.errors() == [(5, "Invalid Action. Valid Actions are Lookup[<topic>] Search[<topic>] and "
                                 "Finish[<answer>].")]
    assert hamlet.meta == {"source": "reflexion-hotpotqa", "trial": 1, "section": "correct", "halted": False,
                           "question_index": 0, "line": 8, "prompt_reflections": 0, "reprinted_in": []}
    # the gold answer is never copied into the episode: the agent never saw it
    assert "5,895" not in kili.model_dump_json() and "Seine" not in paris.final_answer


def test_question_normalisation_and_retry_instruction():
    assert normalise_question("  Which of Jonny Craig and Pete Doherty has been a member of more bands ?") == \
        "which of jonny craig and pete doherty has been a member of more bands"
    assert normalise_question("VIVA Media AG changed it's name in 2004.") == \
        normalise_question("viva media ag changed its  name in 2004")
    assert normalise_question("Russia-United Kingdom relations?") == "russia united kingdom relations"
    assert strip_retry_instruction("Where is X?" + RETRY + " trailing") == "Where is X?"
    assert strip_retry_instruction("  Where is X?  ") == "Where is X?"


def test_reflections_go_to_the_attempt_before_never_to_the_query(tmp_path):
    text = (_trial(1, incorrect=[_block("Q one?", _steps("B"))])
            + _trial(2, incorrect=[_block("Q one?", _steps("C"), reflections=["I guessed B. Search first."])])
            + _trial(3, correct=[_block("Q one?", _steps("A"), reflections=["I guessed B. Search first.",
                                                                             "I guessed C. Read the page."])]))
    eps = read_reflexion_hotpotqa(_write(tmp_path, text))
    assert [e.episode_id for e in eps] == ["hotpot-q0-t1", "hotpot-q0-t2", "hotpot-q0-t3"]
    assert all(e.instruction == "Q one?" for e in eps)  # never the retry instruction, never a reflection
    assert [e.reflections() for e in eps] == [["I guessed B. Search first."], ["I guessed C. Read the page."], []]
    assert isinstance(eps[0].steps[-1], ReflectionStep)  # at the end, after the attempt
    assert [e.meta["prompt_reflections"] for e in eps] == [0, 1, 2]
    assert eps[2].outcome == "success"


def test_new_reflections_are_a_multiset_difference(tmp_path):
    # trial 3 shows two new reflections at once (both hindsight of trial 2); the text "Same." is written twice
    # (after trials 2 and 3) and attached twice; in trial 5 the list drops an old one and adds one: only the
    # added one is new
    q = "Q?"
    text = (_trial(1, incorrect=[_block(q, _steps("B", "a"))])
            + _trial(2, incorrect=[_block(q, _steps("B", "b"), reflections=["R1"])])
            + _trial(3, incorrect=[_block(q, _steps("B", "c"), reflections=["R1", "Same.", "Plan."])])
            + _trial(4, incorrect=[_block(q, _steps("B", "d"), reflections=["R1", "Same.", "Plan.", "Same. "])])
            + _trial(5, halted=[_block(q, _halted("e"), reflections=["R1", "Same.", "Same.", "R5"])]))
    eps = read_reflexion_hotpotqa(_write(tmp_path, text))
    assert [e.reflections() for e in eps] == [["R1"], ["Same.", "Plan."], ["Same."], ["R5"], []]
    assert describe_reflexion(eps).reflections_attached == 5


def test_reprints_are_removed_and_new_attempts_kept(tmp_path):
    hamlet = _block("Who wrote Hamlet?", _steps("A"))
    stuck = _block("Stuck question?", _steps("B", "s"))
    text = (_trial(1, correct=[hamlet], incorrect=[_block("Q2?", _steps("B")), stuck])
            + _trial(2, correct=[hamlet], incorrect=[stuck, _block("Q2?", _steps("B"), reflections=["R"])])
            + _trial(3, correct=[_block("Who wrote Hamlet?", []), _block("Q2?", _steps("A"), reflections=["R", "S"])],
                     incorrect=[stuck])
            + _trial(4, correct=[_block("Who wrote Hamlet?", []), _block("Q2?", [], reflections=["R", "S"])],
                     incorrect=[_block("Stuck question?", _steps("B", "other"))]))
    eps = read_reflexion_hotpotqa(_write(tmp_path, text))
    ids = [e.episode_id for e in eps]
    # Hamlet: identical re-print in trial 2, empty-scratchpad re-print of a success in trials 3 and 4
    assert ids.count("hotpot-q0-t1") == 1 and not any(i.startswith("hotpot-q0-t") and i != "hotpot-q0-t1"
                                                      for i in ids)
    assert eps[0].meta["reprinted_in"] == [2, 3, 4]
    # the agent whose prompt never changed is re-printed identically: one episode until its steps change
    assert [e.episode_id for e in eps if e.task_id == "stuck question"] == ["hotpot-q2-t1", "hotpot-q2-t4"]
    # negative control: the same steps with a new reflection in the prompt are a new attempt
    assert [e.episode_id for e in eps if e.task_id == "q2"] == ["hotpot-q1-t1", "hotpot-q1-t2", "hotpot-q1-t3"]
    assert describe_reflexion(eps).duplicates_removed == 6  # Hamlet 3, the stuck agent 2, Q2 in trial 4
    assert describe_reflexion(eps).blocks == 12


def test_an_empty_block_that_reprints_no_success_is_an_error(tmp_path):
    text = _trial(1, incorrect=[_block("Q?", _steps("B"))]) + _trial(2, correct=[_block("Q?", [])])
    with pytest.raises(TraceFormatError, match=r"log\.txt:\d+: agent block without any step \(correct agents, "
                                               r"trial 2\) that re-prints no earlier correct attempt"):
        read_reflexion_hotpotqa(_write(tmp_path, text))


def test_order_is_trial_then_block_and_limit_keeps_whole_questions(tmp_path):
    text = (_trial(1, correct=[_block("C?", _steps("A"))], incorrect=[_block("B?", _steps("B"))],
                   halted=[_block("A?", _halted())])
            + _trial(2, correct=[_block("C?", _steps("A")), _block("A?", _steps("A"), reflections=["ra"])],
                     incorrect=[_block("B?", _steps("B", "y"), reflections=["rb"])]))
    path = _write(tmp_path, text)
    eps = read_reflexion_hotpotqa(path)
    assert [e.episode_id for e in eps] == ["hotpot-q0-t1", "hotpot-q1-t1", "hotpot-q2-t1", "hotpot-q2-t2",
                                          "hotpot-q1-t2"]
    assert [e.started_at for e in eps] == [START + timedelta(hours=i) for i in range(5)]
    two = read_reflexion_hotpotqa(path, limit_tasks=2)
    assert [e.episode_id for e in two] == ["hotpot-q0-t1", "hotpot-q1-t1", "hotpot-q1-t2"]
    assert two[1].reflections() == ["rb"] and two[-1].started_at == START + timedelta(hours=2)
    assert read_reflexion_hotpotqa(path, limit_tasks=0) == []
    with pytest.raises(ConfigError, match=r"limit_tasks: expected a non-negative integer"):
        read_reflexion_hotpotqa(path, limit_tasks=-1)


def test_describe_counts(tmp_path):
    text = (_trial(1, correct=[_block("C?", _steps("A"))], incorrect=[_block("B?", _steps("B"))])
            + _trial(2, correct=[_block("C?", _steps("A")), _block("B?", _steps("A"), reflections=["rb"])]))
    c = describe_reflexion(read_reflexion_hotpotqa(_write(tmp_path, text)))
    assert (c.questions, c.trials, c.episodes, c.blocks, c.duplicates_removed) == (2, (1, 2), 3, 4, 1)
    assert (c.reflections_attached, c.episodes_with_reflections, c.retried_questions) == (1, 1, 1)
    assert (c.solved_questions, c.solved_after_retry) == (2, 1)
    assert c.outcomes == {"correct": 2, "incorrect": 1} and c.to_dict()["trials"] == [1, 2]


def test_a_wrong_trial_summary_is_logged(tmp_path, caplog):
    text = _trial(1, correct=[_block("C?", _steps("A"))]).replace("Correct: 1", "Correct: 2")
    with caplog.at_level(logging.WARNING, logger="hindsight_lab.datasets.reflexion"):
        read_reflexion_hotpotqa(_write(tmp_path, text))
    assert "trial 1: the summary says correct/incorrect/halted (2, 0, 0), the blocks give (1, 0, 0)" in caplog.text


@pytest.mark.parametrize("text,match", [
    ("Question: Q?\nThought 1: t\n", r"log\.txt:1: 'Question:' outside a 'BEGIN TRIAL n'"),
    (_trial(1, correct=[_block("Q?", _steps("A"))]).replace("Correct answer: A", ""),
     r"log\.txt:\d+: the agent block that starts on line 7 has no 'Correct answer:' line"),
    (_trial(1, correct=[_block("Q?", _steps("A")), "Question: R?\nThought 1: t\nQuestion: S?\n"]),
     r"log\.txt:18: the agent block that starts on line 16 has no 'Correct answer:' line"),
    (_trial(1, correct=[_block("Q?", _steps("A"))]) + "stray text\n", r"log\.txt:\d+: unexpected line outside an "
                                                                       r"agent block: 'stray text'"),
    (_trial(1, correct=[_block("Q?", ["Some preamble", *_steps("A")])]),
     r"log\.txt:8: unexpected line in the agent block that starts on line 7: expected 'Reflections:'"),
    (_trial(1, correct=[_block("Q?", ["Thought 1: t", "Action 1: Search Paris", "Observation 1: o"])]),
     r"log\.txt:9: Action 1: expected Name\[argument\], got 'Search Paris'"),
    (_trial(1, correct=[_block("Q?", _steps("A"))], incorrect=[_block("q", _steps("B"))]),
     r"log\.txt:\d+: the same question already has a block in trial 1 \(line 7\)"),
    ("nothing here\n", r"log\.txt:1: unexpected line outside an agent block"),
    ("BEGIN TRIAL 1\n\n", r"log\.txt: no agent block"),
], ids=["question_before_trial", "unclosed_at_eof", "unclosed_block", "stray_line", "junk_before_steps",
        "bad_action", "duplicate_in_trial", "not_a_log", "empty_log"])
def test_malformed_logs_name_the_line(tmp_path, text, match):
    with pytest.raises(TraceFormatError, match=match):
        read_reflexion_hotpotqa(_write(tmp_path, text))


def test_non_utf8(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"BEGIN TRIAL 1\nQuestion: caf\xe9\n")
    with pytest.raises(TraceFormatError, match=r"log\.txt: not UTF-8"):
        read_reflexion_hotpotqa(path)


def test_detect_format_and_load_dispatch(tmp_path):
    path = _write(tmp_path, ONE_TRIAL, name="run.log")
    assert detect_format(path) == "reflexion-hotpotqa"
    eps, stats = load(path, limit_tasks=2)
    assert stats is None and [e.episode_id for e in eps] == ["hotpot-q0-t1", "hotpot-q1-t1"]
    assert load(path, format="reflexion_hotpotqa")[0] == read_reflexion_hotpotqa(path)
    # "BEGIN TRIAL" must be a line of its own near the start (negative control)
    assert detect_format(_write(tmp_path, "notes: we BEGIN TRIAL 1 tomorrow\n", name="notes.txt")) is None
    assert detect_format(_write(tmp_path, "x\n" * 5000 + "BEGIN TRIAL 1\n", name="late.txt")) is None


# ---------------------------------------------------------------------------------------------- real data
REAL = "reflexion-hotpotqa/100_questions_7_trials.dev.txt"


@pytest.fixture(scope="module")
def real():
    path = shared_dataset(REAL)
    return path, read_reflexion_hotpotqa(path)


def _without_reflections(ep):
    return [s for s in ep.steps if not isinstance(s, ReflectionStep)]


def test_real_counts(real):
    _, eps = real
    c = describe_reflexion(eps)
    assert (c.questions, c.trials, c.blocks) == (49, (1, 2, 3, 4, 5, 6, 7), 340)
    assert (c.episodes, c.duplicates_removed) == (207, 133)
    assert (c.reflections_attached, c.episodes_with_reflections, c.retried_questions) == (137, 133, 34)
    assert (c.solved_questions, c.solved_after_retry) == (24, 9)
    assert c.outcomes == {"correct": 24, "incorrect": 151, "halted": 32}
    assert len({e.episode_id for e in eps}) == len(eps)


def test_real_instructions_are_clean_questions(real):
    _, eps = real
    for ep in eps:
        assert "You have attempted" not in ep.instruction and "Reflection" not in ep.instruction
        assert "\n" not in ep.instruction and ep.instruction == ep.instruction.strip()
        assert ep.task_id == normalise_question(ep.instruction)
    # one instruction per question, whatever the trial
    per_task = {}
    for ep in eps:
        per_task.setdefault(ep.task_id, set()).add(ep.instruction)
    assert all(len(v) == 1 for v in per_task.values())


def test_real_deduplication(real):
    _, eps = real
    by_task: dict[str, list] = {}
    for ep in eps:
        by_task.setdefault(ep.task_id, []).append(ep)
    for task, runs in by_task.items():
        # "unchanged" = same section, same reflections in the prompt, same steps; no two consecutive attempts of
        # a question are unchanged
        for a, b in zip(runs, runs[1:]):
            assert (a.meta["section"], a.meta["prompt_reflections"], _without_reflections(a)) != \
                (b.meta["section"], b.meta["prompt_reflections"], _without_reflections(b)), task
        # a question stops at its first success: the re-prints of trials 2-7 give no episode
        assert sum(e.outcome == "success" for e in runs) <= 1
        assert all(e.outcome == "failure" for e in runs[:-1])
    assert all(ep.steps for ep in eps)  # the empty re-prints of trials 6-7 are gone
    # the 15 questions solved in trial 1 have exactly one episode each
    first = [runs for runs in by_task.values() if runs[0].outcome == "success"]
    assert len(first) == 15 and all(len(r) == 1 and r[0].meta["reprinted_in"] == [2, 3, 4, 5, 6, 7] for r in first)


def test_real_reflections_sit_on_failed_attempts_that_were_retried(real):
    path, eps = real
    next_trial: dict[str, list[int]] = {}
    for ep in eps:
        next_trial.setdefault(ep.task_id, []).append(ep.meta["trial"])
    for ep in eps:
        if ep.reflections():
            assert ep.outcome == "failure"
            assert isinstance(ep.steps[-1], ReflectionStep)
            later = [t for t in next_trial[ep.task_id] if t > ep.meta["trial"]]
            assert later, f"{ep.episode_id}: reflection on the last attempt"
    # the file's quirk: no failed agent's list grows in trial 6, so the trial-5 attempts carry no reflection
    assert not any(ep.reflections() for ep in eps if ep.meta["trial"] == 5)
    # every distinct reflection the log prints is attached exactly once (independent count from the raw text:
    # per question, the most times each text appears in one of its lists)
    text = path.read_text(encoding="utf-8")
    most: dict[str, Counter] = {}
    for m in re.finditer(r"^Question: (.*)\nReflections:\n((?:- .*\n)+)", text, re.MULTILINE):
        q = normalise_question(strip_retry_instruction(m.group(1)))
        shown = Counter(" ".join(r[2:].split()) for r in m.group(2).splitlines())
        most[q] = most.get(q, Counter()) | shown
    attached: dict[str, Counter] = {}
    for ep in eps:
        attached.setdefault(ep.task_id, Counter()).update(" ".join(r.split()) for r in ep.reflections())
    assert {k: v for k, v in attached.items() if v} == most


def test_real_answers_order_and_clock(real):
    _, eps = real
    assert eps[0].episode_id == "hotpot-q0-t1" and eps[0].final_answer == "Jonny Craig"
    for ep in eps:
        finishes = [s.arguments["answer"] for s in ep.tool_calls() if s.name == "Finish"]
        assert ep.final_answer == (finishes[-1] if finishes else None)
        assert (ep.meta["halted"] and not finishes) or (not ep.meta["halted"] and finishes)
    keys = [(e.meta["trial"], e.meta["line"]) for e in eps]
    assert keys == sorted(keys)
    assert [e.started_at for e in eps] == [START + timedelta(hours=i) for i in range(len(eps))]
    # the one question missing from trials 5-7 (the log has 48 agents there)
    scat = [e for e in eps if "scat" in e.task_id]
    assert [e.meta["trial"] for e in scat] == [1, 2, 3, 4]


def test_real_summaries_agree_and_limit(real, caplog):
    path, eps = real
    with caplog.at_level(logging.WARNING, logger="hindsight_lab.datasets.reflexion"):
        few = read_reflexion_hotpotqa(path, limit_tasks=20)
    assert "summary says" not in caplog.text and "dropped" not in caplog.text
    assert {e.meta["question_index"] for e in few} == set(range(20))
    assert [e.episode_id for e in few] == [e.episode_id for e in eps if e.meta["question_index"] < 20]
    assert detect_format(path) == "reflexion-hotpotqa"
