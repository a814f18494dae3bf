"""LoCoMo (snap-research ``locomo10.json``) in conversation-memory mode (DESIGN §5–§6).

LoCoMo is not a set of agent episodes: each sample is one very long two-person conversation plus questions about
it. So :func:`read_locomo` returns :class:`LocomoConversation` objects, not episodes, and a replay treats them one
conversation at a time, each in fresh stores, in file order:

* every turn is a memory, written as it comes (:func:`turn_to_episode` gives it the trace format, so it takes the
  memory system's ordinary write path); a turn is never a query;
* after the conversation, each question is asked (query id :attr:`LocomoQuestion.query_id`); questions are never
  written. The relevant memories of a question are its evidence turns
  (:attr:`LocomoQuestion.relevant_episode_ids`), graded 2; everything else is 0.

Reading rules:

* order: conversations in file order; turns by session number, then position in the session. ``at`` = the
  session's ``session_N_date_time`` (e.g. ``"1:56 pm on 8 May, 2023"``, naive, taken as UTC) plus one minute per
  turn before it in the session, so the clock is strict while session dates increase (a session dated before the
  end of the one before is logged as a warning and counted in ``clock_inversions``). A date with no session
  (conv-26 lists dates for sessions 20–35 that hold no turns) is ignored.
* a turn that shares an image keeps the image's ``blip_caption`` as ``image_caption``; :func:`turn_to_episode`
  appends it to the text as ``[shares <caption>]`` (as LoCoMo's own baselines do), since some questions are about
  the photo.
* evidence: each raw id is split on ``;`` and ``,`` and every piece is normalised with
  :data:`EVIDENCE_PATTERN` (``D(\\d+):0*(\\d+)``, also accepting a stray colon after the ``D``: ``'D:11:26'`` →
  ``D11:26``; ``'D30:05'`` → ``D30:5``). ``evidence`` keeps the normalised ids that name a turn of the conversation
  (in order, without repeats); ``raw_evidence`` keeps the file's list as is; the pieces that name no turn (or are
  not ids at all, such as ``'D'``) are listed in ``unmatched_evidence`` and counted in the conversation's
  ``missing_evidence`` — never silently dropped. A question left with no valid evidence is kept, flagged
  (``has_evidence`` false), and counted in ``no_evidence``: it cannot be judged and falls out of a query set.
* category 5 (adversarial: the answer is not in the conversation) is skipped by default and counted in
  ``skipped_category5``; ``include_category5=True`` keeps those questions (``adversarial`` true, their
  ``adversarial_answer`` kept). ``index`` is always the position in the file's ``qa`` list, so ids do not move.

Examples:
    >>> convs = read_locomo("../shared/datasets/locomo/locomo10.dev.json", limit_conversations=1)  # doctest: +SKIP
    >>> conv = convs[0]  # doctest: +SKIP
    >>> memories = [turn_to_episode(t) for t in conv.turns]  # doctest: +SKIP
    >>> conv.questions[0].query_id, conv.questions[0].relevant_episode_ids  # doctest: +SKIP
    ('conv-26#q0', ['conv-26:D1:3'])
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from ..jsonio.limits import DEFAULT_LIMITS, ReadLimits
from ..jsonio.reading import check_limit, read_json_list
from ..errors import TraceFormatError
from ..trace import Episode

logger = logging.getLogger(__name__)

DOMAIN = "locomo"
SOURCE = "locomo"
TURN_SPACING = timedelta(minutes=1)
"""A turn's time: its session's date plus this much per earlier turn of the session."""

EVIDENCE_PATTERN = re.compile(r"D\s*:?\s*(\d+)\s*:\s*0*(\d+)")
"""A dialogue id inside a raw evidence string; groups: session, turn (leading zeros dropped)."""
_EVIDENCE_SPLIT = re.compile(r"[;,]")

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
"""The usual reading of LoCoMo's ``category`` numbers in ``locomo10.json`` (category 2 questions ask "When…",
category 1 ones gather several turns, category 5 ones have an ``adversarial_answer``)."""

DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y", "%I:%M %p on %d %B %Y")
"""Formats tried, in order, for ``session_N_date_time`` (the file uses the first: ``1:56 pm on 8 May, 2023``)."""

_SESSION = re.compile(r"session_(\d+)$")


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    """One turn of a conversation: a memory, written as it comes.

    Attributes:
        conversation_id: the sample's ``sample_id``.
        session: the session number N (from ``session_N``).
        turn: 1-based position in the session.
        dia_id: the turn's id, ``D<session>:<turn>``.
        speaker: who speaks.
        text: what they say.
        at: session date plus one minute per earlier turn of the session (UTC).
        session_date: the session's date as the file writes it.
        image_caption: the ``blip_caption`` of an image shared with the turn, else None.
    """

    conversation_id: str
    session: int
    turn: int
    dia_id: str
    speaker: str
    text: str
    at: datetime
    session_date: str = ""
    image_caption: str | None = None

    @property
    def episode_id(self) -> str:
        """``<conversation_id>:<dia_id>``, the id of the turn's episode (and what evidence points at)."""
        return f"{self.conversation_id}:{self.dia_id}"


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """One question, asked after its conversation; never written to memory.

    Attributes:
        conversation_id: the sample's ``sample_id``.
        index: position in the file's ``qa`` list (stable whatever is skipped).
        question: the question text (the query).
        answer: the gold answer as text (None for most category-5 questions, which have only an adversarial one).
        category: LoCoMo's category number (see :data:`CATEGORY_NAMES`).
        evidence: normalised dia_ids of the evidence turns that exist in the conversation.
        raw_evidence: the evidence list as the file gives it.
        unmatched_evidence: the raw pieces that name no turn of the conversation (malformed or absent).
        adversarial_answer: the misleading answer of a category-5 question, else None.
    """

    conversation_id: str
    index: int
    question: str
    answer: str | None
    category: int
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...]
    unmatched_evidence: tuple[str, ...] = ()
    adversarial_answer: str | None = None

    @property
    def query_id(self) -> str:
        """``<conversation_id>#q<index>``, as the replay engine names the query."""
        return f"{self.conversation_id}#q{self.index}"

    @property
    def relevant_episode_ids(self) -> list[str]:
        """The episode ids of the evidence turns: the grade-2 memories of this query."""
        return [f"{self.conversation_id}:{d}" for d in self.evidence]

    @property
    def has_evidence(self) -> bool:
        return bool(self.evidence)

    @property
    def adversarial(self) -> bool:
        """A category-5 question (only read with ``include_category5=True``)."""
        return self.category == 5

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass
class LocomoConversation:
    """One sample: its turns in order and its questions.

    Attributes:
        sample_id: the file's ``sample_id``.
        turns: every turn, by session then position.
        questions: the questions read (category 5 only with ``include_category5=True``).
        skipped_category5: category-5 questions left out.
        missing_evidence: raw evidence pieces, over the questions read, that name no turn.
        no_evidence: questions read that are left with no valid evidence.
        speakers: ``(speaker_a, speaker_b)``.
        clock_inversions: sessions dated no later than the last turn of the session before.
    """

    sample_id: str
    turns: list[LocomoTurn]
    questions: list[LocomoQuestion]
    skipped_category5: int = 0
    missing_evidence: int = 0
    no_evidence: int = 0
    speakers: tuple[str, str] | None = None
    clock_inversions: list[int] = field(default_factory=list)

    def episodes(self) -> list[Episode]:
        """The turns as episodes, in order (:func:`turn_to_episode`)."""
        return [turn_to_episode(t) for t in self.turns]

    def qrels(self) -> dict[str, dict[str, int]]:
        """``{query_id: {episode_id: 2}}`` for the questions with evidence (the judging of DESIGN §6)."""
        return {q.query_id: {e: 2 for e in q.relevant_episode_ids} for q in self.questions if q.has_evidence}


def normalise_evidence(raw: str) -> list[str]:
    """The dialogue ids in one raw evidence string, normalised (``[]`` when it holds none).

    Examples:
        >>> normalise_evidence("D8:6; D9:17"), normalise_evidence("D:11:26"), normalise_evidence("D30:05")
        (['D8:6', 'D9:17'], ['D11:26'], ['D30:5'])
        >>> normalise_evidence("D")
        []
    """
    out = []
    for piece in _EVIDENCE_SPLIT.split(str(raw)):
        m = EVIDENCE_PATTERN.search(piece)
        if m:
            out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def parse_session_date(text: str) -> datetime:
    """A ``session_N_date_time`` value as a UTC datetime.

    Raises:
        ValueError: none of :data:`DATE_FORMATS` fits.

    Examples:
        >>> parse_session_date("1:56 pm on 8 May, 2023")
        datetime.datetime(2023, 5, 8, 13, 56, tzinfo=datetime.timezone.utc)
    """
    cleaned = " ".join(str(text).split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise ValueError(f"unrecognised session date {text!r} (expected e.g. '1:56 pm on 8 May, 2023')")


def turn_to_episode(turn: LocomoTurn, *, image_captions: bool = True) -> Episode:
    """A turn as a trace-format episode for the memory write path — a memory, never a query.

    ``episode_id`` ``<conversation_id>:<dia_id>``; ``instruction`` ``"<speaker>: <text>"`` (plus
    ``[shares <caption>]`` for a shared image, unless ``image_captions`` is false); one user message step with the
    same text; outcome success; no task_id; domain ``locomo``; ``started_at`` the turn's time; ``meta``
    ``{"source", "dia_id", "session", "turn", "speaker", "session_date", "conversation_id"}``.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = LocomoTurn("conv-1", 1, 2, "D1:2", "Mel", "Hi!", datetime(2023, 5, 8, tzinfo=timezone.utc))
        >>> turn_to_episode(t).instruction
        'Mel: Hi!'
    """
    text = f"{turn.speaker}: {turn.text}"
    if image_captions and turn.image_caption:
        text += f" [shares {turn.image_caption}]"
    return Episode.model_validate({
        "episode_id": turn.episode_id, "task_id": None, "domain": DOMAIN, "started_at": turn.at,
        "instruction": text, "steps": [{"type": "message", "role": "user", "content": text}],
        "outcome": "success",
        "meta": {"source": SOURCE, "conversation_id": turn.conversation_id, "dia_id": turn.dia_id,
                 "session": turn.session, "turn": turn.turn, "speaker": turn.speaker,
                 "session_date": turn.session_date},
    })


def _answer_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_locomo(path: str | Path, *, limit_conversations: int | None = None,
                include_category5: bool = False, limits: ReadLimits = DEFAULT_LIMITS) -> list[LocomoConversation]:
    """Read LoCoMo conversations in file order (see the module docstring for every rule).

    Args:
        path: the JSON file (a list of ``{sample_id, conversation, qa, …}``).
        limit_conversations: keep only the first N conversations, whole.
        include_category5: keep the adversarial questions (marked), instead of skipping and counting them.
        limits: nesting and size bounds of the file (:mod:`.limits`).

    Raises:
        TraceFormatError: the file is not LoCoMo JSON; the message names the sample and the field.
        ConfigError: ``limit_conversations`` is negative or not an integer.

    Examples:
        >>> convs = read_locomo("locomo10.json", limit_conversations=2)  # doctest: +SKIP
        >>> [c.sample_id for c in convs], convs[0].skipped_category5  # doctest: +SKIP
        (['conv-26', 'conv-30'], 47)
    """
    check_limit(limit_conversations, "limit_conversations")
    path = Path(path)
    data = read_json_list(path, "LoCoMo samples {sample_id, conversation, qa}", limits)
    if limit_conversations is not None:
        data = data[:limit_conversations]
    out: list[LocomoConversation] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(data):
        conv = _conversation(raw, i, str(path), include_category5)
        if conv.sample_id in seen:
            raise TraceFormatError(f"item {i}: duplicate sample_id {conv.sample_id!r} (item {seen[conv.sample_id]})",
                                   path=str(path), field="sample_id")
        seen[conv.sample_id] = i
        out.append(conv)
    return out


def _conversation(raw: Any, i: int, path: str, include_category5: bool) -> LocomoConversation:
    def fail(message: str, fld: str | None = None) -> TraceFormatError:
        sid = raw.get("sample_id") if isinstance(raw, dict) else None
        return TraceFormatError(f"item {i}{f' ({sid})' if sid else ''}: {message}", path=path, field=fld)

    if not isinstance(raw, dict):
        raise fail(f"expected an object {{sample_id, conversation, qa}}, got {type(raw).__name__}")
    sample_id = raw.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id:
        raise fail("missing or empty sample_id", "sample_id")
    conv = raw.get("conversation")
    if not isinstance(conv, dict):
        raise fail("missing required field (an object of session_N lists)", "conversation")
    qa = raw.get("qa")
    if not isinstance(qa, list):
        raise fail("missing required field (a list of questions)", "qa")
    turns, inversions = _turns(conv, sample_id, path, fail)
    questions, skipped, missing, no_evidence = _questions(qa, {t.dia_id for t in turns}, sample_id,
                                                          include_category5, fail)
    speakers = (conv.get("speaker_a"), conv.get("speaker_b"))
    return LocomoConversation(sample_id, turns, questions, skipped, missing, no_evidence,
                              speakers if all(isinstance(s, str) for s in speakers) else None,  # type: ignore[arg-type]
                              inversions)


def _turns(conv: dict[str, Any], sample_id: str, path: str, fail: Callable[..., TraceFormatError]
           ) -> tuple[list[LocomoTurn], list[int]]:
    """Every turn by session number, then position; and the sessions dated no later than the turn before them."""
    sessions = sorted(int(m.group(1)) for k in conv for m in [_SESSION.match(k)] if m)
    turns: list[LocomoTurn] = []
    inversions: list[int] = []
    for n in sessions:
        items = conv[f"session_{n}"]
        if not isinstance(items, list):
            raise fail(f"expected a list of turns, got {type(items).__name__}", f"conversation.session_{n}")
        if not items:
            continue
        date_text = conv.get(f"session_{n}_date_time")
        if not isinstance(date_text, str):
            raise fail("missing session date", f"conversation.session_{n}_date_time")
        try:
            date = parse_session_date(date_text)
        except ValueError as exc:
            raise fail(str(exc), f"conversation.session_{n}_date_time") from None
        if turns and date <= turns[-1].at:
            inversions.append(n)
            logger.warning("%s: %s: session %d is dated %r, not after the last turn of the session before",
                           path, sample_id, n, date_text)
        for j, t in enumerate(items):
            where = f"conversation.session_{n}.{j}"
            if not isinstance(t, dict):
                raise fail(f"expected a turn object, got {type(t).__name__}", where)
            for key in ("speaker", "dia_id", "text"):
                if not isinstance(t.get(key), str):
                    raise fail(f"missing or non-string {key}", f"{where}.{key}")
            ids = normalise_evidence(t["dia_id"])
            if ids != [t["dia_id"]]:
                raise fail(f"dia_id {t['dia_id']!r} is not of the form D<session>:<turn>", f"{where}.dia_id")
            caption = t.get("blip_caption")
            turns.append(LocomoTurn(sample_id, n, j + 1, t["dia_id"], t["speaker"], t["text"],
                                    date + j * TURN_SPACING, date_text,
                                    caption if isinstance(caption, str) and caption.strip() else None))
    if len({t.dia_id for t in turns}) != len(turns):
        dup = next(d for d, c in Counter(t.dia_id for t in turns).items() if c > 1)
        raise fail(f"dia_id {dup!r} names more than one turn", "conversation")
    return turns, inversions


def _questions(qa: list[Any], known: set[str], sample_id: str, include_category5: bool,
               fail: Callable[..., TraceFormatError]) -> tuple[list[LocomoQuestion], int, int, int]:
    """The questions read, and how many category-5 ones were skipped, evidence pieces named no turn and questions
    were left with no valid evidence."""
    questions: list[LocomoQuestion] = []
    skipped = missing = no_evidence = 0
    for k, q in enumerate(qa):
        where = f"qa.{k}"
        if not isinstance(q, dict):
            raise fail(f"expected a question object, got {type(q).__name__}", where)
        category = q.get("category")
        if isinstance(category, bool) or not isinstance(category, int):
            raise fail("missing or non-integer category", f"{where}.category")
        if category == 5 and not include_category5:
            skipped += 1
            continue
        text = q.get("question")
        if not isinstance(text, str) or not text.strip():
            raise fail("missing or empty question", f"{where}.question")
        raw_ev = q.get("evidence", [])
        if not isinstance(raw_ev, list):
            raise fail(f"expected a list of dia_ids, got {type(raw_ev).__name__}", f"{where}.evidence")
        evidence, unmatched = _evidence(raw_ev, known)
        missing += len(unmatched)
        no_evidence += not evidence
        questions.append(LocomoQuestion(
            sample_id, k, text, _answer_text(q.get("answer")), category, tuple(evidence),
            tuple(str(e) for e in raw_ev), tuple(unmatched), _answer_text(q.get("adversarial_answer"))))
    return questions, skipped, missing, no_evidence


def _evidence(raw_ev: list[Any], known: set[str]) -> tuple[list[str], list[str]]:
    """The normalised ids of the raw evidence that name a known turn (in order, no repeats), and the pieces that
    name none."""
    evidence: list[str] = []
    unmatched: list[str] = []
    for item in raw_ev:
        pieces = [p.strip() for p in _EVIDENCE_SPLIT.split(str(item)) if p.strip()] or [str(item)]
        for piece in pieces:
            ids = normalise_evidence(piece)
            if ids and ids[0] in known:
                if ids[0] not in evidence:
                    evidence.append(ids[0])
            else:
                unmatched.append(piece)
    return evidence, unmatched


__all__ = ["CATEGORY_NAMES", "EVIDENCE_PATTERN", "LocomoConversation", "LocomoQuestion", "LocomoTurn",
           "normalise_evidence", "parse_session_date", "read_locomo", "turn_to_episode"]
