"""What a rule claims, read from its text with general cues: orderings, instruments (tools), negated and positive
statements, and quantities. :mod:`~hindsight_lab.conflicts.detect` compares the claims of two rules.

- **Orderings**: ``X before Y``, ``Before Y, X``, ``X after Y``, ``X, then Y``, ``X first`` (before every other
  action of the rule), ``Y afterwards`` / ``at the end`` (after every other), ``X must come after Y``, ``X must
  precede Y``, ``X followed by Y``, and tool chains ``A → B → C``. An ordering is negative in a clause that is
  negated or says the action failed ("T failed when called after P"); a chain in such a clause claims nothing
  (it reports a path, not which step was wrong).
- **Instruments**: the tool a clause does its job *with*, *through*, *using*, *via*, *use X to*, *from the X tool*,
  and the purpose (the clause's other content words).
- **Statements**: each clause's main content and polarity (*not*, *never*, *no*, *skip*, *avoid*, *without* …;
  the object of *instead of* / *rather than* is negated). Conditions (*if*, *when*, *unless* …, a leading *For …*)
  are kept apart: a negation inside a condition is not a directive.
- **Quantities**: a number (digits or words, *once*, *twice*) with its bound (*at most*, *up to*, *at least*,
  *more than*, *or more* …, flipped by a negated clause: "never more than once" is ≤ 1), its unit (the words that
  follow) and the clause's other content words.

Examples:
    >>> a = analyse("Call get_reservation_details before cancel_reservation.")
    >>> [(sorted(o.first.stems)[0], sorted(o.then.stems)[0], o.positive) for o in a.orders]
    [('detail', 'cancel', True)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from .text import Clause, Token, clauses, content, ident_parts, sentences, stem

NEGATION = frozenset({"not", "never", "no", "cannot", "skip", "avoid", "without", "refrain", "omit", "exclude",
                      "forbid",
                      "forbidden", "prohibit", "prohibited", "neither", "nor", "nothing", "none"})
_NEG_OBJECT = (("instead", "of"), ("rather", "than"))
FAILURE = frozenset({"fail", "failed", "fails", "failure", "rejected", "refused", "errored"})
_INSTRUMENT_PREP = frozenset({"with", "through", "using", "via"})
_TOOL_NOUNS = frozenset({"tool", "api", "endpoint", "function", "command", "portal"})
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "its", "their", "our", "your", "any", "each", "all",
                          "every", "some"})
_LAST = frozenset({"afterwards", "afterward", "later", "finally"})
_LOWER = {("at", "most"): "le", ("up", "to"): "le", ("no", "more", "than"): "le", ("not", "more", "than"): "le",
          ("maximum", "of"): "le", ("maximum",): "le", ("max",): "le", ("fewer", "than"): "lt",
          ("less", "than"): "lt", ("under",): "lt", ("within",): "le", ("at", "least"): "ge",
          ("no", "fewer", "than"): "ge", ("no", "less", "than"): "ge", ("minimum", "of"): "ge",
          ("minimum",): "ge", ("min",): "ge", ("more", "than"): "gt", ("over",): "gt", ("exceeding",): "gt",
          ("exactly",): "eq", ("only",): "eq"}
_AFTER_BOUND = {("or", "more"): "ge", ("or", "fewer"): "le", ("or", "less"): "le", ("at", "most"): "le",
                ("at", "least"): "ge"}
_UNIT_SKIP = _DETERMINERS | {"of", "in", "on", "at", "to", "for", "per", "and", "or", "more", "less", "fewer"}
_TIME = stem("time")
_UNIT_WORDS = frozenset({"call", "calls", "time", "times", "step", "steps", "day", "days"})


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


@dataclass(frozen=True, slots=True)
class Statement:
    """One clause: its content and focus (the words after a negation cue), polarity and condition."""

    content: frozenset[str]
    focus: frozenset[str]
    negative: bool


@dataclass(frozen=True, slots=True)
class Instrument:
    """The tools a clause works with and what for."""

    tools: frozenset[str]
    purpose: frozenset[str]


@dataclass(frozen=True, slots=True)
class Quantity:
    """An interval ``[low, high]`` (open ends where strict) of some ``unit`` in a clause about ``context``."""

    low: float
    high: float
    bound: str  # le, lt, ge, gt, eq
    unit: frozenset[str]
    context: frozenset[str]


@dataclass(frozen=True, slots=True)
class Analysis:
    """Every claim of one rule text, and its content and condition words."""

    text: str
    orders: tuple[Order, ...] = ()
    statements: tuple[Statement, ...] = ()
    instruments: tuple[Instrument, ...] = ()
    quantities: tuple[Quantity, ...] = ()
    content: frozenset[str] = field(default_factory=frozenset)
    condition: frozenset[str] = field(default_factory=frozenset)


# ---------------------------------------------------------------------------------------------------- helpers
_COMPARATIVES = frozenset({"more", "fewer", "less", "later", "earlier", "longer", "greater"})


def _negations(tokens: list[Token]) -> int:
    """Negation cues, not counting bounds such as "no more than" or "not later than"."""
    return sum(t.kind == "word" and t.text in NEGATION
               and not (i + 1 < len(tokens) and tokens[i + 1].text in _COMPARATIVES) for i, t in enumerate(tokens))


def _negative(main: list[Token]) -> bool:
    return _negations(main) % 2 == 1


def _failed(main: list[Token]) -> bool:
    return any(t.kind == "word" and t.text in FAILURE for t in main)


def _words(tokens: list[Token]) -> list[str]:
    return [t.text for t in tokens]


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
        head = _head(cl.main)  # "search X only after Y returns nothing" is a positive directive
        failed = _failed(head)
        positive = not (_negative(head) or failed)
        toks = cl.tokens
        cur = _Seg([], positive, failed, "clause", not cl.main, ci)
        i = 0
        while i < len(toks):
            if i == len(cl.main) and cl.main:
                segs.append(cur)
                cur = _Seg([], positive, failed, "cond", True, ci)
            w = toks[i].text
            nxt = toks[i + 1].text if i + 1 < len(toks) else ""
            mark, skip = "", 1
            if w == "before" or (w == "prior" and nxt == "to") or (w == "ahead" and nxt == "of"):
                mark, skip = "before", 1 if w == "before" else 2
            elif w == "after":
                mark = "after"
            elif w == "then":
                mark = "then"
            elif w == "followed" and nxt == "by":
                mark, skip = "then", 2
            elif w in ("precede", "precedes"):
                mark = "before"
            elif w in ("follow", "follows"):
                mark = "after"
            elif w == "and" and nxt == "then":
                mark, skip = "then", 2
            elif w == "and" and cur.tokens and cur.tokens[-1].text == "first":
                mark = "and"
            elif w == "to" and cur.tokens and i + 1 < len(toks) and toks[i + 1].kind == "word" \
                    and nxt not in _DETERMINERS and cur.tokens[-1].text not in ("up", "prior", "come", "back"):
                mark = "purpose"
            if mark:
                segs.append(cur)
                cur = _Seg([], positive, failed, mark, cur.cond, ci)
                i += skip
                continue
            cur.tokens.append(toks[i])
            i += 1
        segs.append(cur)
    return segs


def _orders(sents: list[list[Token]]) -> list[Order]:
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
                back = next((s for s in reversed(segs[:j]) if s.clause == seg.clause and _event(s.tokens)), None)
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
    for si, j, seg in actions:
        words = _words(seg.tokens)
        is_first = (words and words[-1] == "first") or (j + 1 < len(all_segs[si])
                                                         and all_segs[si][j + 1].boundary == "and")
        is_last = bool(set(words) & _LAST) or _at_the_end(words) or (words and words[-1] == "last")
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


# ---------------------------------------------------------------------------------------------------- statements
_ORDER_WORDS = frozenset({"before", "after", "then", "until", "prior", "ahead", "followed"})


def _head(main: list[Token]) -> list[Token]:
    """The directive part of a clause: its tokens before the first order word."""
    cut = next((i for i, t in enumerate(main) if i > 0 and t.text in _ORDER_WORDS), len(main))
    return main[:cut]


def _statements(cl: Clause) -> list[Statement]:
    """The clause's statement, up to its first order word: "do not X before Y" negates an order, not Y."""
    main = _head(cl.main)
    if not main or (len(main) < len(cl.main) and _negative(main)):
        return []  # "do not X before Y": an ordering (see _orders), not a statement about X
    words = _words(main)
    for pair in _NEG_OBJECT:
        for i in range(len(words) - 1):
            if (words[i], words[i + 1]) == pair:
                head, obj = main[:i], main[i + 2:]
                out = []
                if head:
                    out.append(Statement(_clean(head), _clean(head), _negative(head)))
                if obj:
                    out.append(Statement(_clean(obj), _clean(obj), not _negative(obj)))
                return out
    cue = next((i for i, t in enumerate(main) if t.kind == "word" and t.text in NEGATION), None)
    focus = _clean(main[cue + 1:]) if cue is not None else _clean(main)
    return [Statement(_clean(main), focus, _negative(main))]


def _clean(tokens: list[Token]) -> frozenset[str]:
    return content([t for t in tokens if t.text not in NEGATION and t.number is None])


# ---------------------------------------------------------------------------------------------------- instruments
def _instruments(cl: Clause) -> list[Instrument]:
    main = cl.main
    if not main or _negative(main):
        return []
    tools: set[str] = set()
    drop: set[int] = set()
    for i, t in enumerate(main):
        w = t.text
        if w in _INSTRUMENT_PREP or w in ("use", "uses", "from"):
            j = i + 1
            while j < len(main) and main[j].text in _DETERMINERS:
                j += 1
            if j >= len(main):
                continue
            tok = main[j]
            noun = main[j + 1].text if j + 1 < len(main) else ""
            if tok.kind == "ident":
                tools.add(tok.text)
                drop |= {i, j} | ({j + 1} if noun in _TOOL_NOUNS else set())
            elif tok.kind == "word" and noun in _TOOL_NOUNS:
                tools.add(tok.stem)
                drop |= {i, j, j + 1}
    if not tools:
        return []
    purpose = content([t for k, t in enumerate(main) if k not in drop and t.kind != "ident"])
    return [Instrument(frozenset(tools), purpose - {stem(n) for n in _TOOL_NOUNS})]


# ---------------------------------------------------------------------------------------------------- quantities
def _quantities(cl: Clause) -> list[Quantity]:
    main = cl.main
    out: list[Quantity] = []
    negated = _negative(main)
    words = _words(main)
    for i, t in enumerate(main):
        value = t.number
        if value is None or (t.kind == "word" and t.text == "one" and i + 1 < len(words)
                             and words[i + 1] in ("of", "another")):
            continue
        bound = "eq"
        for n in (3, 2, 1):
            key = tuple(words[max(0, i - n):i])
            if len(key) == n and key in _LOWER:
                bound = _LOWER[key]
                break
        unit_start = i + 1
        for n in (2,):
            key = tuple(words[i + 1:i + 1 + n])
            if key in _AFTER_BOUND:
                bound, unit_start = _AFTER_BOUND[key], i + 1 + n
        unit: set[str] = {_TIME} if t.text in ("once", "twice", "thrice") else set()
        for tok in main[unit_start:unit_start + 4]:
            if tok.kind == "word" and tok.text in _UNIT_SKIP and not unit:
                continue
            if not (tok.is_content or tok.text in _UNIT_WORDS) or tok.number is not None or len(unit) >= 3:
                break
            unit.add(tok.stem)
        if not unit:
            continue
        if negated:
            flipped = {"gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}.get(bound)
            if flipped is None:
                continue
            bound = flipped
        low, high = {"le": (-math.inf, value), "lt": (-math.inf, value), "ge": (value, math.inf),
                     "gt": (value, math.inf), "eq": (value, value)}[bound]
        context = _clean(main) - unit
        out.append(Quantity(low, high, bound, frozenset(unit), context))
    return out


# ---------------------------------------------------------------------------------------------------- analyse
@lru_cache(maxsize=16384)
def analyse(text: str) -> Analysis:
    """Every claim of a rule text (cached: the same text is analysed once)."""
    sents = sentences(text)
    statements: list[Statement] = []
    instruments: list[Instrument] = []
    quantities: list[Quantity] = []
    main: set[str] = set()
    cond: set[str] = set()
    for s in sents:
        for cl in clauses(s):
            statements += _statements(cl)
            instruments += _instruments(cl)
            quantities += _quantities(cl)
            main |= _clean(cl.main)
            cond |= _clean(cl.condition)
    return Analysis(text, tuple(_orders(sents)), tuple(statements), tuple(instruments), tuple(quantities),
                    frozenset(main), frozenset(cond))
