"""Orderings a rule states: which action comes before which.

Cues: ``X before Y``, ``Before Y, X``, ``X after Y``, ``X, then Y``, ``X first`` (before every other action of the
rule), ``Y afterwards`` / ``at the end`` (after every other), ``X must come after Y``, ``X must precede Y``, ``X
followed by Y``, tool chains ``A → B → C``, and orders stated through conditions: ``only after X may you Y``
(English subject-auxiliary inversion after a fronted *only*), ``once X`` / ``as soon as X`` (read as *after X*),
``do not Y until X`` (a negated *until*: Y only after X), ``Y must wait for X`` / ``wait for X before Y``, ``X is a
precondition / prerequisite for Y``, ``Y upon X``, ``Y without waiting for X`` (Y first), ``Y without X-ing`` (X
before Y, denied), ``Y only when / only if X`` (a necessary condition comes first),
``Y while X is pending`` (Y before X), ``Y immediately`` / ``upfront`` / ``right away`` / ``as the first step``
(before the rule's other actions, unless an order marker follows; *first* before any other noun is an adjective:
"during the first visit"), ``Y eventually`` / ``subsequently`` / ``later`` / ``the following week`` (after them,
also when said in Y's purpose: "ask the manager to sign off on it later"), ``postpone / hold off / defer Y until X``
(like ``do not Y until X``), and a trailing ``…, ahead of X`` / ``…, before X`` clause (the clause it follows
comes first). An ordering is negative
in a clause that is negated or says the action failed ("T failed when called after P"); a chain in such a clause
claims nothing (it reports a path, not which step was wrong).

Examples:
    >>> from hindsight_lab.conflicts.text import sentences
    >>> [(sorted(o.first.stems), sorted(o.then.stems), o.positive)
    ...  for o in orders(sentences("Do not ship the parcel until the payment clears."))]
    [(['clear', 'pay'], ['parcel', 'ship'], True)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .lexicon import FAILURE, NEGATION, failed_clause, is_verb, negative
from .text import Token, clauses, content, ident_parts

_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "its", "their", "our", "your", "any", "each", "all",
                          "every", "some"})
_LAST = frozenset({"afterwards", "afterward", "later", "finally", "eventually", "subsequently", "retroactively",
                   "tomorrow"})
#: "the following week", "next day": a later time, so a later step.
_LATER_TIMES = frozenset({"following", "next"})
_TIME_UNITS = frozenset({"day", "days", "week", "weeks", "month", "months", "morning", "shift", "visit", "call",
                         "session", "cycle", "run", "business"})
#: Nouns for a place in a sequence: "the first step", "should be the first call".
_STEP_NOUNS = frozenset({"step", "steps", "call", "calls", "action", "actions", "thing", "move", "priority", "stage"})
_PRONOUNS = frozenset({"it", "that", "this", "them", "those", "these", "which"})
_FIRST = frozenset({"immediately", "upfront", "beforehand"})
_FIRST_PAIRS = (("right", "away"), ("straight", "away"), ("at", "once"), ("in", "advance"), ("up", "front"))
#: States of a step not done yet: "ship while the payment is pending" ships before the payment.
_PENDING = frozenset({"pending", "outstanding", "unpaid", "unconfirmed", "unapproved", "unverified", "unsigned",
                      "incomplete", "unresolved", "ongoing", "yet", "progress"})
_WAIT = frozenset({"wait", "waits", "await", "awaits"})
#: Verbs of putting off (WordNet's *postpone, prorogue, hold over, put over, table, shelve, set back, defer, remit,
#: put off*, and *delay*, *hold off*), as the tokenizer writes them.
_POSTPONE = frozenset({"postpone", "postpones", "defer", "defers", "delay", "delays", "hold", "holdoff", "putoff",
                       "shelve", "table"})
_PRECONDITION = frozenset({"precondition", "preconditions", "prerequisite", "prerequisites"})
#: Verbs whose *that* clause states a precondition of their subject ("X requires that Y has been done").
_REQUIRE = frozenset({"require", "requires", "required", "presuppose", "presupposes"})
_RELATIVE = frozenset({"whose", "who", "which", "that", "whom"})


@dataclass(frozen=True, slots=True)
class Event:
    """An action, as content stems; ``ident`` when it is exactly one tool identifier."""

    stems: frozenset[str]
    ident: str | None = None


@dataclass(frozen=True, slots=True)
class Order:
    """``first`` happens before ``then`` (``positive``), or that order is negated or ``failed`` (not ``positive``;
    ``failed``: a run that did it failed — evidence against the order, not only advice)."""

    first: Event
    then: Event
    positive: bool
    failed: bool = False


def _event(tokens: list[Token]) -> Event | None:
    idents = [t.text for t in tokens if t.kind == "ident"]
    stems = content([t for t in tokens if t.text not in NEGATION and t.text not in FAILURE and t.text != "end"])
    if not stems:
        return None
    only = idents[0] if len(idents) == 1 and stems <= {idents[0]} | ident_parts(idents[0]) else None
    return Event(stems, only)


def _chain(tokens: list[Token]) -> list[Event]:
    """The tools of the first arrow chain ``A → B → C`` in ``tokens`` (empty without arrows)."""
    elements: list[Token] = []
    for i, t in enumerate(tokens):
        if t.kind != "arrow":
            if elements and (i == 0 or tokens[i - 1].kind != "arrow"):
                break  # the chain ended
            continue
        if not elements and i > 0:
            elements.append(tokens[i - 1])
        if i + 1 < len(tokens):
            elements.append(tokens[i + 1])
    events = [_event([t]) for t in elements]
    return [e for e in events if e is not None]


# ---------------------------------------------------------------------------------------------------- orderings
@dataclass
class _Seg:
    tokens: list[Token]
    positive: bool
    failed: bool = False
    boundary: str = ""  # what separates this segment from the previous one
    cond: bool = False
    clause: int = 0

    def event(self, side: str) -> Event | None:
        """The event of this segment; in a chain, the element next to the marker on ``side``."""
        chain = _chain(self.tokens)
        if chain:
            return chain[0] if side == "start" else chain[-1]
        return _event(self.tokens)


def _segments(sentence: list[Token]) -> list[_Seg]:
    """Split a sentence at order markers, commas, purposes (*to* + verb) and conditions (``cond`` segments)."""
    segs: list[_Seg] = []
    for ci, cl in enumerate(clauses(sentence)):
        head = directive(cl.main)  # "search X only after Y returns nothing" is a positive directive
        failed = failed_clause(head)
        # "do not ship until it is paid": ship only after it is paid, a positive order
        # "hold off on refunds until X", "postpone the refund until X": a verb of postponing says "not before"
        until_after = len(head) < len(cl.main) and cl.main[len(head)].text == "until" and (
            negative(head) or any(t.text in _POSTPONE for t in head[:2]))
        positive = until_after or not (negative(head) or failed)
        toks = cl.tokens
        # "Y only when/if X": X is a precondition of Y, so it comes first (the condition stays a condition too)
        only = [t.text for t in cl.condition[:2]] in (["only", "when"], ["only", "if"])
        if only and not cl.main:  # "Only if X, Y": like "After X, Y"
            segs.append(_Seg([], positive, failed, "clause", True, ci))
        cur = _Seg([], positive, failed, "after" if only and not cl.main else "clause", not cl.main, ci)
        i = 0
        while i < len(toks):
            if i == len(cl.main) and cl.main:
                segs.append(cur)
                cur = _Seg([], positive, failed, "after" if only else "cond", True, ci)
            mark, skip = _marker(toks, i, cur.tokens, until_after)
            if mark == "skip":
                i += skip
                continue
            if mark:
                segs.append(cur)
                cur = _Seg([], positive, failed, mark, cur.cond, ci)
                i += skip
                continue
            cur.tokens.append(toks[i])
            i += 1
        segs.append(cur)
    return segs


def _marker(toks: list[Token], i: int, before: list[Token], until_after: bool) -> tuple[str, int]:
    """The order marker at ``toks[i]`` (``before``: the tokens of the segment so far) and how many tokens it spans."""
    w = toks[i].text
    nxt = toks[i + 1].text if i + 1 < len(toks) else ""
    if w == "before" or (w == "prior" and nxt == "to") or (w == "ahead" and nxt == "of"):
        return "before", 1 if w == "before" else 2
    if before and w == "by" and [t.text for t in toks[i + 1:i + 3]] == ["the", "time"]:
        return "before", 3  # "X has to be done by the time you Y": no later than Y
    if before and w in _REQUIRE and nxt == "that":
        return "after", 2  # "closing the account requires that the balance has been paid": the balance first
    if w in ("precede", "precedes") or (w in _PRECONDITION and nxt in ("for", "of", "to")):
        return "before", 1 if w in ("precede", "precedes") else 2
    if w in ("after", "upon") or (w in ("follow", "follows") and _has_object(toks, i)) or (
            w == "until" and until_after):
        return "after", 1
    if w == "without" and before and nxt.endswith("ing") and nxt not in ("waiting", "awaiting"):
        return "after", 1  # "record calls without asking consent": asking first, negated by the clause's cue
    if w == "without" and nxt in ("waiting", "awaiting"):  # "ship without waiting for payment": ship first
        return "before", 3 if i + 2 < len(toks) and toks[i + 2].text in ("for", "until", "till") else 2
    if w in _WAIT and nxt in ("for", "until", "till"):  # "Y must wait for X"; "wait for X before Y": X's segment
        return ("skip" if not before else "after"), 2
    if not before and w in _LAST | {"subsequently", "next"}:  # "X; afterwards, Y": Y follows X
        return "then", 1
    if w == "and" and before and nxt and is_verb(nxt) and nxt not in ("and", "or"):
        return "conj", 1  # "issue the card and block the old one afterwards": two actions, no order yet
    if w in ("await", "awaits"):
        return "after", 1
    if w == "then" or (w == "followed" and nxt == "by") or (w == "and" and nxt == "then"):
        return "then", 1 if w == "then" else 2
    if w == "and" and before and before[-1].text == "first":
        return "and", 1
    if w == "to" and before and i + 1 < len(toks) and toks[i + 1].kind == "word" and is_verb(nxt) \
            and nxt not in _DETERMINERS and before[-1].text not in ("up", "prior", "come", "back"):
        return "purpose", 1
    return "", 1


def _has_object(toks: list[Token], i: int) -> bool:
    """Whether the verb at ``toks[i]`` has an object ("X follows the payment"): used alone, with only a time after
    it ("the contract may follow later in the month"), *follow* says its subject comes later (see ``_LAST``)."""
    rest = [t for t in toks[i + 1:] if t.kind in ("word", "ident")]
    return bool(rest) and rest[0].text not in _LAST | {"in", "on", "at", "within", "during", "soon", "shortly"}


def orders(sents: list[list[Token]]) -> list[Order]:
    """The orderings stated in a rule's sentences (see the module docstring)."""
    out: list[Order] = []
    all_segs: list[list[_Seg]] = [_segments(s) for s in sents]

    def add(first: Event | None, then: Event | None, positive: bool, failed: bool = False) -> None:
        if first is None or then is None or _same(first, then):
            return
        o = Order(first, then, positive, failed and not positive)
        if o not in out:
            out.append(o)

    flat = [(si, j, s) for si, segs in enumerate(all_segs) for j, s in enumerate(segs)]
    actions = [(si, j, s) for si, j, s in flat if not s.cond and s.boundary != "purpose" and _event(s.tokens)]
    for si, segs in enumerate(all_segs):
        for j, seg in enumerate(segs):
            prev = segs[j - 1] if j > 0 else None
            b = seg.boundary
            if b in ("before", "after") and prev is not None:
                earlier = [s for s in reversed(segs[:j]) if s.clause == seg.clause and _event(s.tokens)]
                # "wait for X to finish before Y": X; "make sure to X before Y": the purpose X
                back = next((s for s in earlier if s.boundary != "purpose"), earlier[0] if earlier else None)
                lead = next((s for s in reversed(segs[:j]) if not s.cond and s.boundary != "purpose"
                             and _event(s.tokens)), None) if back is None and b == "before" else None
                if lead is not None and lead.clause == seg.clause - 1:
                    # "X during the visit, ahead of Y": a trailing before-clause orders the clause it follows
                    add(lead.event("end"), seg.event("start"), lead.positive, lead.failed)
                    continue
                if back is None:  # "Before Y, X": X is the next clause
                    later = next((s for s in segs[j + 1:] if s.boundary == "clause" and not s.cond), None)
                    if later is None:
                        continue
                    x, y = later.event("start"), seg.event("end" if b == "after" else "start")
                    src = later
                elif b == "before":  # "A → B before C": B precedes C
                    x, y = back.event("end"), seg.event("start")
                    src = back
                else:  # "C after A → B": C follows B
                    x, y = back.event("start"), seg.event("end")
                    src = back
                if b == "before":
                    add(x, y, src.positive, src.failed)
                else:
                    add(y, x, src.positive, src.failed)
            elif b == "then":
                before = next((s for s in reversed(segs[:j]) if not s.cond and _event(s.tokens)), None) \
                    or _last_event_seg(all_segs, si)
                if before is not None:
                    add(before.event("end"), seg.event("start"), seg.positive and before.positive,
                        seg.failed or before.failed)
            if seg.positive and not seg.cond:
                chain = _chain(seg.tokens)
                for a in range(len(chain)):
                    for c in range(a + 1, len(chain)):
                        add(chain[a], chain[c], True)
    _pending_orders(all_segs, add)
    for si, j, seg in actions:
        words = [t.text for t in seg.tokens]
        nxt = all_segs[si][j + 1].boundary if j + 1 < len(all_segs[si]) else ""
        # "ask the manager to sign off on it later": a time said in the action's purpose is the action's
        tail = [t.text for s in _purposes(all_segs[si], j) for t in s.tokens]
        is_first = (words and words[-1] == "first") or nxt == "and" or _first_step(words) or (
            nxt not in ("before", "after") and _says_first(words))  # "notify immediately after X": not first
        is_last = _says_later(words + tail) or _at_the_end(words) or (words and words[-1] == "last")
        opening = j == 0 and words[:1] == ["first"] and len(words) > 1
        if not (is_first or is_last or opening):
            continue
        me = _event(seg.tokens)
        for si2, j2, other in actions:
            if (si2, j2) == (si, j):
                continue
            oe = _event(other.tokens)
            if is_first or opening:
                add(me, oe, seg.positive, seg.failed)
            if is_last:
                add(oe, me, seg.positive, seg.failed)
    return out


def _says_first(words: list[str]) -> bool:
    return bool(set(words) & _FIRST) or any(p in zip(words, words[1:]) for p in _FIRST_PAIRS)


def _first_step(words: list[str]) -> bool:
    """"X as the very first step", "X should be the first call": *first* before a noun of sequence (before any
    other noun it is an adjective: "during the first visit")."""
    return any(w == "first" and nxt in _STEP_NOUNS for w, nxt in zip(words, words[1:]))


def _says_later(words: list[str]) -> bool:
    """A later time: *afterwards*, *later*, *eventually* …, or "the following week", "next day"."""
    return bool(set(words) & _LAST) or any(w in _LATER_TIMES and nxt in _TIME_UNITS
                                           for w, nxt in zip(words, words[1:]))


def _purposes(segs: list[_Seg], j: int) -> list[_Seg]:
    """The purpose segments right after ``segs[j]`` ("ask the manager | to sign off on it later")."""
    out = []
    for s in segs[j + 1:]:
        if s.boundary != "purpose" or s.clause != segs[j].clause:
            break
        out.append(s)
    return out


def _pending_orders(all_segs: list[list[_Seg]], add: Callable[..., None]) -> None:
    """A condition that a step is not done yet ("while the payment is pending", "even if the form is unsigned")
    puts the clause's action before that step."""
    for si, segs in enumerate(all_segs):
        for j, seg in enumerate(segs):
            rel = next((k for k, t in enumerate(seg.tokens) if k and t.text in _RELATIVE), None)
            if not seg.cond and rel is not None and any(t.text in _PENDING for t in seg.tokens[rel:]):
                # "never reset the password of a caller whose identity is not yet confirmed": the action comes
                # before the step its relative clause says is not done yet
                # (its own "not" belongs to the relative clause: the polarity is the action's)
                add(_event(seg.tokens[:rel]), _event([t for t in seg.tokens[rel + 1:] if t.text not in _PENDING]),
                    not negative(seg.tokens[:rel]) and not seg.failed, seg.failed)
                continue
            if not seg.cond or not any(t.text in _PENDING for t in seg.tokens):
                continue
            step = _event([t for t in seg.tokens if t.text not in _PENDING])
            main = next((s for s in reversed(segs[:j]) if not s.cond and s.clause == seg.clause and _event(s.tokens)),
                        None) or next((s for s in segs[j + 1:] if not s.cond and _event(s.tokens)), None)
            if main is not None:
                add(main.event("end"), step, main.positive, main.failed)


def _last_event_seg(all_segs: list[list[_Seg]], si: int) -> _Seg | None:
    for segs in reversed(all_segs[:si]):
        for s in reversed(segs):
            if not s.cond and _event(s.tokens):
                return s
    return None


def _at_the_end(words: list[str]) -> bool:
    return any(words[i:i + 3] == ["at", "the", "end"] for i in range(len(words)))


def _same(a: Event, b: Event) -> bool:
    if a.ident and b.ident:
        return a.ident == b.ident
    return a.stems <= b.stems or b.stems <= a.stems


ORDER_WORDS = frozenset({"before", "after", "then", "until", "prior", "ahead", "followed"})


def directive(main: list[Token]) -> list[Token]:
    """The directive part of a clause: its tokens before the first order word."""
    cut = next((i for i, t in enumerate(main) if i > 0 and t.text in ORDER_WORDS), len(main))
    return main[:cut]


