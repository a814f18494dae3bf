"""Reflexion HotpotQA text logs (``--format reflexion-hotpotqa``) → episodes of the trace format (DESIGN §5).

The input is the text log of noahshinn/reflexion's ``hotpotqa_runs`` (e.g. ``100_questions_7_trials.txt``)::

    BEGIN TRIAL 1
    Trial summary: Correct: 15, Incorrect: 24, Halted: 10
    ------------- BEGIN CORRECT AGENTS -------------        (then INCORRECT, then HALTED)
    Question: <question>[You have attempted to answer following question before and failed. …]
    Reflections:                                            (from trial 2 on, for an agent that failed before)
    - <reflection>
    Thought 1: …
    Action 1: Search[…] | Lookup[…] | Finish[…]
    Observation 1: …                                        (may run over several lines)
    Correct answer: <gold answer>

Each agent block becomes one :class:`~hindsight_lab.trace.Episode`:

* order: by trial, then block (file order inside the trial: correct, incorrect, halted agents). ``started_at`` is
  synthetic, :data:`START` plus one hour per emitted episode in that order. ``limit_tasks`` keeps the first N
  questions (first appearance) with all their trials.
* ``instruction``: the question, with the appended "You have attempted to answer…" instruction and everything after
  it removed — never reflection text. ``task_id``: :func:`normalise_question` of it (casefolded, punctuation
  stripped, whitespace collapsed). ``episode_id``: ``hotpot-q{i}-t{trial}``, ``i`` the question's 0-based index of
  first appearance. ``domain``: ``"hotpotqa"``. ``relevant_episode_ids``: None (same task_id is grade 2).
* steps: ``Thought n`` → thought; ``Action n: Name[arg]`` → tool_call ``Name`` with ``{"query": arg}`` (Search),
  ``{"keyword": arg}`` (Lookup), ``{"answer": arg}`` (Finish), ``{"argument": arg}`` (any other name, e.g. the
  log's one ``Compare[…]``), id ``str(n)``; ``Observation n`` → tool_result with id ``str(n)``, whose ``error`` is
  its text when it starts ``Invalid Action``. A line that starts none of these continues the step before it
  (observations run over several lines); trailing spaces of each line are dropped.
* ``outcome``: success in the CORRECT section, failure in INCORRECT and HALTED; ``reward`` 1.0 / 0.0;
  ``final_answer``: the argument of the last ``Finish`` (None for a halted agent). The gold ``Correct answer`` is
  not copied anywhere: the agent never saw it.
* ``meta``: ``{"source", "trial", "section", "halted", "question_index", "line", "prompt_reflections",
  "reprinted_in"}`` — ``prompt_reflections`` is how many reflections the agent was shown in its prompt (they are
  hindsight of EARLIER attempts, so they are not steps of this one), ``reprinted_in`` the later trials whose block
  was a re-print of this episode (see below).

**Re-prints.** A block of a question that already had a block is a re-print, and gives no episode, when

1. it is identical to that question's previous block: same section, same question line, same reflections, same
   steps, line by line with whitespace collapsed (an agent that was not run again: a correct agent in the trials
   after its success, or an incorrect agent whose prompt never changed); or
2. it is in the CORRECT section with no step at all and the question already has a successful episode (from trial
   6 on the log re-prints earlier successes with an empty scratchpad).

A block with no step that is neither is an error. A block with new reflections or other steps is a new attempt,
even when the agent repeated itself word for word.

**Reflections.** The ``Reflections:`` list printed for an agent in trial n+1 holds the reflections written so far
(the log occasionally leaves an old one out). Those not yet attached to an earlier attempt of the same question (compared as a multiset of whitespace-collapsed
texts, so a reflection written twice is attached twice) are hindsight of the attempt just before: they become
reflection steps at the end of the question's latest episode before trial n+1 — its trial-n episode, or the episode
its trial-n block re-printed. They are written to memory after that episode and are never part of a query. In the
development log no trial-6 list grows, so the trial-5 attempts carry no reflection and the lists of trial 7 attach to
trial 6 (the log's own record; the reflections read as hindsight of the trial-6 attempts).

Examples:
    >>> eps = read_reflexion_hotpotqa("../shared/datasets/reflexion-hotpotqa/100_questions_7_trials.dev.txt")
    ... # doctest: +SKIP
    >>> describe_reflexion(eps).questions  # doctest: +SKIP
    49
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError as PydanticError

from ..errors import TraceFormatError
from ..trace import Episode
from ..jsonio.reading import check_limit, read_text

logger = logging.getLogger(__name__)

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""``started_at`` of the first episode; each next one (in trial, block order) is one hour later."""
SPACING = timedelta(hours=1)
DOMAIN = "hotpotqa"
SOURCE = "reflexion-hotpotqa"

RETRY_MARKER = "You have attempted to answer"
"""Start of the instruction Reflexion appends to the question of an agent that failed before."""

ARGUMENT_KEYS = {"Search": "query", "Lookup": "keyword", "Finish": "answer"}
"""The ``arguments`` key of each ReAct action; any other action name gets ``argument``."""

_TRIAL = re.compile(r"BEGIN TRIAL (\d+)\s*$")
_SUMMARY = re.compile(r"Trial summary: Correct: (\d+), Incorrect: (\d+), Halted: (\d+)\s*$")
_SECTION = re.compile(r"-+ BEGIN (CORRECT|INCORRECT|HALTED) AGENTS -+\s*$")
_STEP = re.compile(r"(Thought|Action|Observation) (\d+):(.*)$")
_ACTION = re.compile(r"(\w+)\[(.*)\]$", re.DOTALL)
_RULE = re.compile(r"#+\s*$")
_APOSTROPHES = frozenset("'\u2019\u02bc")


def normalise_question(question: str) -> str:
    """The task_id of a question: NFKC, casefolded, punctuation stripped, whitespace collapsed.

    Apostrophes are dropped (``it's`` → ``its``); any other punctuation separates words (``Russia-United`` →
    ``russia united``).

    Examples:
        >>> normalise_question("  Which of Jonny Craig and Pete Doherty has been a member of more bands ?")
        'which of jonny craig and pete doherty has been a member of more bands'
        >>> normalise_question("VIVA Media AG changed it's name: Russia-United Kingdom?")
        'viva media ag changed its name russia united kingdom'
    """
    text = unicodedata.normalize("NFKC", question).casefold()
    text = "".join("" if ch in _APOSTROPHES else " " if unicodedata.category(ch).startswith("P") else ch
                   for ch in text)
    return " ".join(text.split())


def strip_retry_instruction(line: str) -> str:
    """The question of a ``Question:`` line: the appended retry instruction and everything after it removed."""
    at = line.find(RETRY_MARKER)
    return (line if at < 0 else line[:at]).strip()


def _collapse(text: str) -> str:
    return " ".join(text.split())


@dataclass
class _Block:
    trial: int
    section: str  # correct | incorrect | halted
    line: int  # 1-based line of "Question:"
    question_line: str
    reflections: list[str] = field(default_factory=list)
    steps: list[list[Any]] = field(default_factory=list)  # [kind, n, text, line]
    closed: bool = False

    @property
    def question(self) -> str:
        return strip_retry_instruction(self.question_line)

    def signature(self) -> tuple[Any, ...]:
        """What decides "unchanged": section, question line, reflections and steps, whitespace collapsed."""
        return (self.section, _collapse(self.question_line), tuple(_collapse(r) for r in self.reflections),
                tuple((k, n, _collapse(t)) for k, n, t, _ in self.steps))


def _parse(path: Path) -> tuple[list[_Block], dict[int, tuple[int, int, int]]]:
    """The blocks of the log in file order, and the trial summaries ``{trial: (correct, incorrect, halted)}``."""
    name = str(path)
    text = read_text(path)
    blocks: list[_Block] = []
    summaries: dict[int, tuple[int, int, int]] = {}
    trial: int | None = None
    section: str | None = None
    cur: _Block | None = None
    in_reflections = False

    def fail(message: str, lineno: int) -> TraceFormatError:
        return TraceFormatError(message, path=name, line=lineno)

    def unclosed(block: _Block, lineno: int) -> TraceFormatError:
        return fail(f"the agent block that starts on line {block.line} has no 'Correct answer:' line", lineno)

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if cur is not None and not cur.closed:
            if line.startswith("Correct answer:"):
                cur.closed = True
                continue
            if line.startswith("Question:") or _TRIAL.match(line) or _SECTION.match(line):
                raise unclosed(cur, lineno)
            step = _STEP.match(line)
            if step:
                in_reflections = False
                cur.steps.append([step.group(1), int(step.group(2)), step.group(3).strip(), lineno])
            elif line == "Reflections:" and not cur.steps and not cur.reflections:
                in_reflections = True
            elif in_reflections and line.startswith("- "):
                cur.reflections.append(line[2:].strip())
            elif in_reflections and cur.reflections:
                cur.reflections[-1] += "\n" + line  # a reflection that runs over several lines
            elif cur.steps:
                cur.steps[-1][2] += "\n" + line  # an observation (or thought) over several lines
            elif line.strip():
                raise fail(f"unexpected line in the agent block that starts on line {cur.line}: expected "
                           f"'Reflections:', 'Thought 1:' or 'Correct answer:', got {line[:60]!r}", lineno)
            continue
        if not line.strip() or _RULE.match(line):
            continue
        m = _TRIAL.match(line)
        if m:
            trial, section = int(m.group(1)), None
            continue
        m = _SUMMARY.match(line)
        if m:
            if trial is None:
                raise fail("'Trial summary' before any 'BEGIN TRIAL n' line", lineno)
            summaries[trial] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        m = _SECTION.match(line)
        if m:
            if trial is None:
                raise fail("agent section before any 'BEGIN TRIAL n' line", lineno)
            section = m.group(1).lower()
            continue
        if line.startswith("Question:"):
            if trial is None or section is None:
                raise fail("'Question:' outside a 'BEGIN TRIAL n' / 'BEGIN … AGENTS' section", lineno)
            cur = _Block(trial, section, lineno, line[len("Question:"):])
            in_reflections = False
            blocks.append(cur)
            continue
        raise fail(f"unexpected line outside an agent block: {line[:60]!r} (expected 'BEGIN TRIAL n', "
                   "'Trial summary: …', '--- BEGIN CORRECT|INCORRECT|HALTED AGENTS ---' or 'Question: …')", lineno)
    if cur is not None and not cur.closed:
        raise unclosed(cur, len(text.splitlines()))
    if not blocks:
        raise TraceFormatError("no agent block ('Question: …' … 'Correct answer: …') in the file", path=name)
    return blocks, summaries


def _steps(block: _Block, path: str) -> tuple[list[dict[str, Any]], str | None]:
    steps: list[dict[str, Any]] = []
    final = None
    for kind, n, text, lineno in block.steps:
        content = text.rstrip()
        if kind == "Thought":
            steps.append({"type": "thought", "content": content})
        elif kind == "Action":
            m = _ACTION.match(content.strip())
            if m is None:
                raise TraceFormatError(f"Action {n}: expected Name[argument], got {content[:60]!r}", path=path,
                                       line=lineno)
            name, arg = m.group(1), m.group(2)
            steps.append({"type": "tool_call", "name": name, "arguments": {ARGUMENT_KEYS.get(name, "argument"): arg},
                          "id": str(n)})
            if name == "Finish":
                final = arg
        else:
            steps.append({"type": "tool_result", "id": str(n), "content": content,
                          "error": content if content.startswith("Invalid Action") else None})
    return steps, final


def read_reflexion_hotpotqa(path: str | Path, *, limit_tasks: int | None = None) -> list[Episode]:
    """Read a Reflexion HotpotQA log as episodes, ordered by trial then block (see the module docstring).

    Args:
        path: the text log.
        limit_tasks: keep only the first N questions (in order of first appearance), each with all its trials.

    Raises:
        TraceFormatError: the file is not such a log; the message names the line.
        ConfigError: ``limit_tasks`` is negative or not an integer.

    Examples:
        >>> eps = read_reflexion_hotpotqa("100_questions_7_trials.txt", limit_tasks=2)  # doctest: +SKIP
        >>> eps[0].episode_id, eps[0].tool_names()  # doctest: +SKIP
        ('hotpot-q0-t1', ['Search', 'Search', 'Finish'])
    """
    check_limit(limit_tasks, "limit_tasks")
    path = Path(path)
    name = str(path)
    blocks, summaries = _parse(path)
    _check_summaries(blocks, summaries, name)

    index: dict[str, int] = {}
    for b in blocks:
        index.setdefault(normalise_question(b.question), len(index))
    keep = None if limit_tasks is None else set(list(index)[:limit_tasks])
    return _episodes(_records(blocks, index, keep, name), name)


def _records(blocks: list[_Block], index: dict[str, int], keep: set[str] | None, path: str) -> list[dict[str, Any]]:
    """One episode record per block that is a new attempt (of a kept question), in block order; re-prints are
    noted on the attempt they repeat and reflections attached to the attempt they are hindsight of."""
    records: list[dict[str, Any]] = []
    latest: dict[str, dict[str, Any]] = {}  # task_id -> latest episode record
    last_block: dict[str, _Block] = {}
    attached: dict[str, Counter[str]] = {}  # task_id -> reflections (collapsed) already attached
    solved: set[str] = set()
    seen: dict[tuple[str, int], int] = {}
    for b in blocks:
        question = b.question
        task_id = normalise_question(question)
        if not question or not task_id:
            raise TraceFormatError("empty question", path=path, line=b.line)
        if (task_id, b.trial) in seen:
            raise TraceFormatError(f"the same question already has a block in trial {b.trial} (line "
                                   f"{seen[task_id, b.trial]})", path=path, line=b.line)
        seen[task_id, b.trial] = b.line
        if keep is not None and task_id not in keep:
            continue
        _attach_new_reflections(b, task_id, latest, attached, path)
        prev = last_block.get(task_id)
        last_block[task_id] = b
        reprint = prev is not None and (
            b.signature() == prev.signature()
            or (b.section == "correct" and not b.steps and task_id in solved))
        if reprint:
            latest[task_id]["meta"]["reprinted_in"].append(b.trial)
            continue
        if not b.steps:
            raise TraceFormatError(f"agent block without any step ({b.section} agents, trial {b.trial}) that "
                                   "re-prints no earlier correct attempt", path=path, line=b.line)
        rec = _record(b, task_id, index[task_id], path)
        if b.section == "correct":
            solved.add(task_id)
        latest[task_id] = rec
        records.append(rec)
    return records


def _record(b: _Block, task_id: str, question_index: int, path: str) -> dict[str, Any]:
    """The episode record of one attempt (``started_at`` comes later, from its place in trial order)."""
    steps, final = _steps(b, path)
    return {
        "episode_id": f"hotpot-q{question_index}-t{b.trial}", "task_id": task_id, "domain": DOMAIN,
        "instruction": b.question, "steps": steps,
        "outcome": "success" if b.section == "correct" else "failure",
        "reward": 1.0 if b.section == "correct" else 0.0, "final_answer": final,
        "meta": {"source": SOURCE, "trial": b.trial, "section": b.section, "halted": b.section == "halted",
                 "question_index": question_index, "line": b.line,
                 "prompt_reflections": len(b.reflections), "reprinted_in": []},
    }


def _episodes(records: list[dict[str, Any]], path: str) -> list[Episode]:
    """The records in trial order (block order kept within a trial), one hour apart from :data:`START`."""
    order = sorted(range(len(records)), key=lambda i: records[i]["meta"]["trial"])  # stable: block order kept
    episodes = []
    for n, i in enumerate(order):
        rec = records[i]
        rec["started_at"] = START + n * SPACING
        try:
            episodes.append(Episode.model_validate(rec))
        except PydanticError as exc:
            err = exc.errors()[0]
            raise TraceFormatError(f"cannot build an episode: {err['msg']}", path=path, line=rec["meta"]["line"],
                                   field=".".join(str(p) for p in err["loc"]) or None) from None
    return episodes


def _attach_new_reflections(b: _Block, task_id: str, latest: dict[str, dict[str, Any]],
                            attached: dict[str, Counter[str]], path: str) -> None:
    """Attach the reflections this block shows for the first time to the question's latest earlier episode."""
    done = attached.setdefault(task_id, Counter())
    shown = Counter(_collapse(r) for r in b.reflections)
    new: list[str] = []
    extra = shown - done
    for r in b.reflections:
        key = _collapse(r)
        if extra[key] > 0:
            extra[key] -= 1
            new.append(r.strip())
    if not new:
        return
    target = latest.get(task_id)
    if target is None or target["meta"]["trial"] >= b.trial:
        logger.warning("%s:%d: %d reflection(s) with no earlier attempt of the question to attach them to; "
                       "dropped", path, b.line, len(new))
        return
    target["steps"].extend({"type": "reflection", "content": r} for r in new)
    done.update(_collapse(r) for r in new)


def _check_summaries(blocks: list[_Block], summaries: dict[int, tuple[int, int, int]], path: str) -> None:
    counts: dict[int, Counter[str]] = {}
    for b in blocks:
        counts.setdefault(b.trial, Counter())[b.section] += 1
    for trial, stated in summaries.items():
        c = counts.get(trial, Counter())
        found = (c["correct"], c["incorrect"], c["halted"])
        if found != stated:
            logger.warning("%s: trial %d: the summary says correct/incorrect/halted %s, the blocks give %s",
                           path, trial, stated, found)


@dataclass(frozen=True)
class ReflexionCounts:
    """What :func:`describe_reflexion` found.

    Attributes:
        questions: distinct questions (task_ids).
        trials: the trial numbers seen, in order.
        episodes: episodes (after de-duplication).
        blocks: agent blocks in the log (``episodes + duplicates_removed``).
        duplicates_removed: re-printed blocks that gave no episode.
        reflections_attached: reflection steps, all episodes together.
        episodes_with_reflections: episodes that carry at least one.
        retried_questions: questions with more than one episode.
        solved_questions: questions with a successful episode; ``solved_after_retry`` of them not at first try.
        outcomes: episodes per section (``correct``, ``incorrect``, ``halted``).
    """

    questions: int
    trials: tuple[int, ...]
    episodes: int
    blocks: int
    duplicates_removed: int
    reflections_attached: int
    episodes_with_reflections: int
    retried_questions: int
    solved_questions: int
    solved_after_retry: int
    outcomes: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for a run log or a report."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def describe_reflexion(episodes: Iterable[Episode]) -> ReflexionCounts:
    """Counts of a Reflexion read: questions, trials, episodes, re-prints removed, reflections, retries.

    Examples:
        >>> describe_reflexion(read_reflexion_hotpotqa("log.txt")).duplicates_removed  # doctest: +SKIP
        123
    """
    eps = list(episodes)
    per_task: dict[str, list[Episode]] = {}
    for ep in eps:
        per_task.setdefault(ep.task_id or ep.episode_id, []).append(ep)
    meta = [ep.meta or {} for ep in eps]
    removed = sum(len(m.get("reprinted_in", [])) for m in meta)
    solved = [t for t, es in per_task.items() if any(e.outcome == "success" for e in es)]
    after_retry = [t for t in solved if per_task[t][0].outcome != "success"]
    return ReflexionCounts(
        questions=len(per_task),
        trials=tuple(sorted({m["trial"] for m in meta if "trial" in m}
                            | {t for m in meta for t in m.get("reprinted_in", [])})),
        episodes=len(eps), blocks=len(eps) + removed, duplicates_removed=removed,
        reflections_attached=sum(len(ep.reflections()) for ep in eps),
        episodes_with_reflections=sum(1 for ep in eps if ep.reflections()),
        retried_questions=sum(1 for es in per_task.values() if len(es) > 1),
        solved_questions=len(solved), solved_after_retry=len(after_retry),
        outcomes=dict(Counter(m.get("section", "?") for m in meta)),
    )


__all__ = ["ARGUMENT_KEYS", "RETRY_MARKER", "START", "ReflexionCounts", "describe_reflexion", "normalise_question",
           "read_reflexion_hotpotqa", "strip_retry_instruction"]
