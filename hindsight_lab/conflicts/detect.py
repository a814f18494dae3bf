"""The offline contradiction detector: two rules contradict when their claims (:mod:`.claims`) do.

Checks, in order (the first that fires gives the verdict's ``kind``):

- **order**: one rule puts X before Y, the other Y before X (or says X-before-Y fails). Actions match when they
  are the same tool, or share at least half of the smaller one's content words, and the match is unambiguous.
- **negation**: a negated clause of one rule (its words after the cue among them) is mostly contained in a positive
  clause of the other (``min_overlap`` of its content words, at least two, or a shared tool name).
- **tool**: both rules name the tool they do a job with, the tools differ, and the jobs share ``min_overlap`` of
  their content words.
- **quantity**: the same unit in clauses about the same thing has incompatible values (disjoint intervals, or
  the same kind of bound with another number); when both clauses carry words the other lacks ("economy" against
  "business class"), they are taken to be about different cases.

Conditions (*if*, *when*, *For … tasks*) must be compatible: when both rules have one they must share more than half
of the smaller one's content words, and no two of them about the same thing may pick out different cases (one
negated, or quantities with no value in common); a rule without a condition holds in the other's case too. A
precondition ("only when X") is an ordering, not a condition.

Examples:
    >>> d = OfflineDetector()
    >>> d.judge("Call lookup_order before issue_refund.", "Call issue_refund first, then lookup_order.").kind
    'order'
    >>> d.judge("Use get_flight_status for delays.", "Give delay times in local time.").conflict
    False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .claims import Analysis, Condition, Event, Instrument, Statement, analyse
from .lexicon import COPULAS, LIGHT_VERBS, manner_adverb, opposite, opposite_or_synonym, same_action
from .quantities import GENERIC_UNITS, compatible_bounds, disjoint
from .text import overlap

KINDS: tuple[str, ...] = ("order", "negation", "tool", "quantity")


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether two rules contradict, the kind of contradiction, a short reason, and who decided (``source``).
    ``refuted`` is ``"a"`` or ``"b"`` when the other rule reports that rule's own claim failing (a run that did
    what it says failed): evidence against it, which resolution counts (:mod:`.resolve`)."""

    conflict: bool
    kind: str | None = None
    reason: str = ""
    source: str = "offline"
    refuted: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"conflict": self.conflict, "kind": self.kind, "reason": self.reason, "source": self.source,
                "refuted": self.refuted}


def _match(a: Event, b: Event) -> float:
    """How far two actions are the same (0 when one does the opposite of the other: "keep X open" / "close X")."""
    if a.ident and b.ident:
        return 1.0 if a.ident == b.ident else 0.0
    if any(opposite(u, v) for u in a.stems - b.stems for v in b.stems - a.stems):
        return 0.0
    return soft_overlap(a.stems, b.stems)


def _name(e: Event) -> str:
    return e.ident or " ".join(sorted(e.stems)[:4])


class OfflineDetector:
    """Contradiction checks on the text of two rules; deterministic, no network.

    Args:
        min_overlap: share of the smaller side's content words the other must hold for a negation, tool or
            quantity contradiction (and for actions to match in an ordering, at least 0.5).
        checks: which checks run (default every one of :data:`KINDS`).
    """

    name = "offline"

    def __init__(self, min_overlap: float = 0.6, checks: tuple[str, ...] = KINDS) -> None:
        self.min_overlap = min_overlap
        self.checks = checks

    @classmethod
    def from_config(cls, cfg: Any) -> "OfflineDetector":
        return cls(min_overlap=cfg.min_overlap)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "args": {"min_overlap": self.min_overlap, "checks": list(self.checks)}}

    def judge(self, a: str, b: str, task_type: str | None = None) -> Verdict:
        """The verdict on rule texts ``a`` and ``b`` (symmetric; ``task_type`` is not needed offline)."""
        if " ".join(a.lower().split()) == " ".join(b.lower().split()):
            return Verdict(False, None, "same text")
        x, y = analyse(a), analyse(b)
        if not self._conditions_compatible(x, y):
            return Verdict(False, None, "different conditions")
        for kind in self.checks:
            reason = getattr(self, f"_{kind}")(x, y) or getattr(self, f"_{kind}")(y, x)
            if reason:
                refuted = "a" if self._refutes(y, x) else "b" if self._refutes(x, y) else None
                return Verdict(True, kind, reason, refuted=refuted)
        return Verdict(False, None, "no contradicting claim")

    @staticmethod
    def _refutes(x: Analysis, y: Analysis) -> bool:
        """Whether ``x`` reports an order of ``y`` failing (not merely advising another one)."""
        for p in x.orders:
            if p.failed and any(o.positive and _match(p.first, o.first) >= 0.5 and _match(p.then, o.then) >= 0.5
                                and _match(p.first, o.first) > _match(p.first, o.then) for o in y.orders):
                return True
        return False

    # ------------------------------------------------------------------ checks (each one direction)
    def _conditions_compatible(self, x: Analysis, y: Analysis) -> bool:
        """Rules under different conditions are compatible: when both have one, they must share more than half of
        the smaller one's words ("the user is angry" ≠ "the user asks …"). A rule without a condition holds in
        every case, the other's included, so a condition on one side only sets nothing apart."""
        cx, cy = x.condition, y.condition
        if cx and cy:
            return soft_overlap(cx, cy) > 0.5 and not any(
                _cases_apart(c, d) for c in x.conditions for d in y.conditions)
        return True

    @staticmethod
    def _order(x: Analysis, y: Analysis) -> str:
        for o in x.orders:
            if not o.positive:
                continue
            for p in y.orders:
                same_first, same_then = _match(p.first, o.first), _match(p.then, o.then)
                cross_first, cross_then = _match(p.first, o.then), _match(p.then, o.first)
                if p.positive and cross_first >= 0.5 and cross_then >= 0.5 and cross_first > same_first \
                        and cross_then > same_then:
                    return f"{_name(o.first)} before {_name(o.then)} vs {_name(p.first)} before {_name(p.then)}"
                if not p.positive and same_first >= 0.5 and same_then >= 0.5 and same_first > cross_first \
                        and same_then > cross_then:
                    return f"{_name(o.first)} before {_name(o.then)} vs the same order negated or failing"
        return ""

    def _negation(self, x: Analysis, y: Analysis) -> str:
        for neg in (s for s in x.statements if s.negative and s.content):
            for pos in (s for s in y.statements if not s.negative):
                # a word shared as itself or as a WordNet synonym ("never *allowed* in the cabin" / "*permit* pets in
                # the cabin")
                shared = neg.content & (pos.content | y.condition) | {
                    w for w in neg.content - pos.content if any(same_action(w, o) for o in pos.content - neg.content)}
                strong = any("_" in w for w in shared)
                if not (neg.focus & shared) or not _asserts(neg.head, pos.content | y.condition):
                    continue  # "never disclose the results" / "keep the results private": another predicate
                # "leave the receipt out" against "attach the receipt": the exclusion verb is the predicate, so
                # its object alone is enough when all of it is shared
                whole = neg.exclusion and shared == neg.content
                if (len(shared) >= 2 or strong or whole) and len(shared) / len(neg.content) >= self.min_overlap:
                    return "negated in one, asserted in the other: " + " ".join(sorted(shared)[:6])
        return self._opposites(x, y)

    def _opposites(self, x: Analysis, y: Analysis) -> str:
        """A predicate and its opposite (:func:`.lexicon.opposite`) with the same polarity, about the same thing
        (the rest shared, no other modifier of the same word on each side)."""
        for sx in x.statements:
            for sy in (s for s in y.statements if s.negative == sx.negative):
                if _other_topics(sx.topic, sy.topic, x, y) or _other_times(sx.anchor, sy.anchor):
                    continue
                for u, wu in sx.forms:
                    for v, wv in sy.forms:
                        kind = "" if u in sy.content or v in sx.content else opposite_or_synonym(u, v, wu, wv)
                        if not kind:
                            continue
                        # a copula or a manner adverb beside the predicate says nothing of its own: "leave the van
                        # unlocked" / "lock the van remotely"
                        rest_x, rest_y = sx.content - {u} - _incidental(sx), sy.content - {v} - _incidental(sy)
                        shared = rest_x & rest_y
                        close = overlap(rest_x, rest_y)
                        if not shared or close < 0.5 or (rest_x - rest_y and rest_y - rest_x and close < 0.75):
                            continue  # "attach the receipt" / "attaching a photo … optional": other objects
                        if kind == "a" and any((u, h) in sx.pairs and (v, h) in sy.pairs for h in shared):
                            continue  # "domestic refunds" / "international refunds": two cases, not a claim
                        pairs_x = frozenset(p for p in sx.pairs if u not in p)
                        pairs_y = frozenset(p for p in sy.pairs if v not in p)
                        if not _modified_apart(pairs_x, pairs_y, rest_x, rest_y):
                            return f"{wu} vs {wv}: " + " ".join(sorted(shared)[:5])
        return ""

    def _tool(self, x: Analysis, y: Analysis) -> str:
        for ix in x.instruments:
            for iy in y.instruments:
                if ix.tools & iy.tools:
                    continue
                shared = ix.purpose & iy.purpose
                # a channel is often the verb itself ("e-mail the receipt"), leaving one word of purpose
                least = 1 if all(t.startswith("channel:") for t in ix.tools | iy.tools) else 2
                enough = min(self.min_overlap, 0.5 * least)
                if (len(shared) >= least and soft_overlap(ix.purpose, iy.purpose) >= enough) or _same_step(ix, iy):
                    return (f"{'/'.join(sorted(ix.tools))} vs {'/'.join(sorted(iy.tools))} for "
                            + " ".join(sorted(shared or set(ix.parts) & set(iy.parts))[:5]))
        return ""

    def _quantity(self, x: Analysis, y: Analysis) -> str:
        for qx in x.quantities:
            for qy in y.quantities:
                if overlap(qx.unit, qy.unit) < 0.5:
                    continue
                cx, cy = qx.context, qy.context
                if not (qx.unit | qy.unit) & GENERIC_UNITS:
                    # a unit that names a thing ("three replicas", "two alternative flights", "25 kg") says what
                    # is counted; the verbs around it ("offer" / "present", "run" / "are enough") do not set
                    # two clauses apart. A generic unit (money, time, a share) needs them: "refund up to $50" is
                    # not "charge at least $75"
                    cx, cy = cx - qx.verbs, cy - qy.verbs
                close = soft_overlap(cx, cy) if cx and cy else 1.0
                # both say things the other does not ("between search calls" / "between free bags"): apart
                if cx and cy and (close < self.min_overlap or (cx - cy and cy - cx and close < 0.75)
                                  or _modified_apart(qx.pairs, qy.pairs, cx, cy)
                                  or _other_topics(qx.topic, qy.topic, x, y)):
                    continue
                if not compatible_bounds(qx, qy):
                    return f"{_fmt(qx)} vs {_fmt(qy)} {' '.join(sorted(qx.unit))}"
        return ""


def soft_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """:func:`.text.overlap` where a word also matches a WordNet synonym or hypernym (:func:`.lexicon.same_action`):
    "keep logs" / "retain logs"."""
    if not a or not b:
        return 0.0
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    return sum(w in big or any(same_action(w, o) for o in big - small) for w in small) / len(small)


def _incidental(s: Statement) -> frozenset[str]:
    """The stems of a statement's copulas and manner adverbs (:data:`.lexicon.COPULAS`,
    :func:`.lexicon.manner_adverb`), and of *even* / *still*."""
    return frozenset(st for st, w in s.forms if w in COPULAS or w in ("even", "still") or manner_adverb(w))


def _cases_apart(c: Condition, d: Condition) -> bool:
    """Whether two conditions about the same thing pick out different cases: one negated and the other not ("if the
    deposit is paid" / "if the deposit is not paid"), or quantities of one unit with no value in common ("for
    orders under $100" / "for orders of $100 or more")."""
    if soft_overlap(c.content, d.content) <= 0.5:
        return False
    return c.negative != d.negative or any(overlap(q.unit, r.unit) >= 0.5 and disjoint(q, r)
                                           for q in c.quantities for r in d.quantities)


def _asserts(verb: str, words: frozenset[str]) -> bool:
    """Whether a positive clause of ``words`` asserts the negated ``verb`` (itself, the same action, or a light
    verb, which says little of its own: "do not *send* the invoice by e-mail" / "e-mail the invoice")."""
    return not verb or verb in LIGHT_VERBS or any(verb == w or same_action(verb, w) for w in words)


def _other_times(ax: tuple[str, frozenset[str]], ay: tuple[str, frozenset[str]]) -> bool:
    """Whether two statements hold at different times: "keep it open until X" and "close it after X" (one period
    ends where the other begins), or "after X" and "after Y" with X and Y unlike. ("Until X" against "after Y"
    overlap, so they may clash.)"""
    (mx, wx), (my, wy) = ax, ay
    if not (mx and my):
        return False
    same_moment = overlap(wx, wy) >= 0.6
    return (same_moment and mx != my) or (not same_moment and mx == my)


def _other_topics(tx: str, ty: str, x: Analysis, y: Analysis) -> bool:
    """Whether two clauses are about different things: neither's topic word appears anywhere in the other rule
    ("Refunds are allowed within 30 days" / "Exchanges are allowed within 60 days")."""
    return bool(tx and ty and tx not in y.content | y.condition and ty not in x.content | x.condition)


def _modified_apart(px: frozenset[tuple[str, str]], py: frozenset[tuple[str, str]], cx: frozenset[str],
                    cy: frozenset[str]) -> bool:
    """Whether the two clauses put different modifiers before the same word ("economy passengers" / "business
    class passengers"): they speak of different cases."""
    heads_x = {h: m for m, h in px if m not in cy}
    return any(h in heads_x and m not in cx and m != heads_x[h] for m, h in py)


def _action(parts: tuple[str, ...]) -> tuple[str, frozenset[str]]:
    """The action a tool name says (its first word that is not a light verb) and its other words (the object):
    ``issue_refund`` → (refund, {}), ``refund_payment`` → (refund, {payment})."""
    words = list(parts)
    while len(words) > 1 and words[0] in LIGHT_VERBS:
        words.pop(0)
    return (words[0], frozenset(words[1:])) if words else ("", frozenset())


def _same_step(ix: Instrument, iy: Instrument) -> bool:
    """Two tools for the same step: their names say the same action (equal, WordNet synonyms or hypernym) on
    compatible objects (``update_address`` / ``modify_shipping_address``, ``issue_refund`` / ``refund_payment``)."""
    if not ix.parts or not iy.parts or len(ix.tools) != 1 or len(iy.tools) != 1:
        return False
    (ax, ox), (ay, oy) = _action(ix.parts), _action(iy.parts)
    obj_x, obj_y = ix.parts[ix.parts.index(ax) + 1:], iy.parts[iy.parts.index(ay) + 1:]
    if not same_action(ax, ay):
        return False
    if obj_x and obj_y and obj_x[-1] != obj_y[-1]:
        # the head of a compound is its last word: reservation_baggages / reservation_flights are two things,
        # unless each rule names the other's object as what the job is about ("unlock locked accounts with
        # unlock_user" / "unlock_account lets the user sign in"): then the names differ, the job does not
        job_x = (ix.purpose | set(ix.parts)) - {ax}
        job_y = (iy.purpose | set(iy.parts)) - {ay}
        return obj_x[-1] in job_y and obj_y[-1] in job_x and overlap(job_x, job_y) >= 0.5
    # search_direct_flight / search_onestop_flight: other kinds of the same thing, two steps
    return not _modified_apart(frozenset(zip(obj_x, obj_x[1:])), frozenset(zip(obj_y, obj_y[1:])), ox, oy)


def _fmt(q: Any) -> str:
    if q.bound == "range":
        return f"{q.low:g}–{q.high:g}"
    sym = {"le": "≤", "lt": "<", "ge": "≥", "gt": ">", "eq": "="}[q.bound]
    value = q.high if q.bound in ("le", "lt", "eq") else q.low
    return f"{sym}{value:g}"
