"""The scripted agent of the live environment: it reads the tool orders a text states (:func:`read_hints`) — the
same reading for every system's memories — and plans its state-changing calls from the first one about its own
task (:func:`plan_calls`).

Examples:
    >>> read_hints("For refund tasks, call lookup_order → verify_identity → issue_refund in this order.")[-1]
    Hint(before='verify_identity', after='issue_refund')
    >>> read_hints("Task: refund 4 | tools: lookup_order → issue_refund | error at issue_refund | outcome: failure")
    []
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ...datasets.synthetic import READ_ONLY_TOOLS, TASK_TYPES, TaskType

ALL_TOOLS: frozenset[str] = frozenset(t for tt in TASK_TYPES.values() for t in tt.tools)
"""Every tool name of the catalogue: the words the agent recognises as tools."""


class Hint(NamedTuple):
    """``before`` must be called before ``after``; ``after == "*"``: before any state-changing call."""

    before: str
    after: str


_NEGATIVE = re.compile(r"\b(fail\w*|errors?|did not|didn't|not complete|does not hold|refused|rejected|never|"
                       r"don't|do not|avoid|wrong|not for|unsuccessful)\b", re.I)
_FAILED_RUN = re.compile(r"\boutcome:\s*(failure|partial)\b", re.I)
_PAREN = re.compile(r"\(([^()]*)\)")
_CLAUSE = re.compile(r"[;|\n]|(?<=[.!?])\s+")
_LIST_HEADER = re.compile(r"\b(?:does not hold when|exceptions?|counter-?examples?)\s*:", re.I)
_CHAIN = re.compile(r"^\s*(?:→|->|=>|,?\s*then|,?\s*and then)\s*$", re.I)
_BEFORE = re.compile(r"\b(before|then|prior to|first)\b", re.I)
_AFTER = re.compile(r"\bafter\b", re.I)
_FIRST_OF_ALL = re.compile(r"^\s*(?:first\b|before\s+(?![A-Za-z]\w*_))", re.I)


def _clauses(line: str) -> list[str]:
    """Parenthesised parts (innermost first) become clauses of their own; the rest is split at ``;``, ``|`` and
    sentence ends."""
    parts: list[str] = []
    while True:
        inner = _PAREN.findall(line)
        if not inner:
            break
        parts += inner
        line = _PAREN.sub(" ", line)
    return [c for part in [line, *parts] for c in _CLAUSE.split(_LIST_HEADER.sub(";", part)) if c.strip()]


def _pairs(clause: str, tools: frozenset[str]) -> list[Hint]:
    found = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[A-Za-z][\w]*", clause) if m.group(0) in tools]
    out: list[Hint] = []
    chain: list[str] = []
    for k, (start, end, name) in enumerate(found):
        if k == 0:
            chain = [name]
        else:
            between = clause[found[k - 1][1]:start]
            if _CHAIN.match(between):
                chain.append(name)
            else:
                out += _chain_pairs(chain)
                chain = [name]
                prev = found[k - 1][2]
                if _AFTER.search(between):
                    out.append(Hint(name, prev))
                elif _BEFORE.search(between):
                    out.append(Hint(prev, name))
        if _FIRST_OF_ALL.match(clause[end:]) and name not in READ_ONLY_TOOLS:
            out.append(Hint(name, "*"))
    return out + _chain_pairs(chain)


def _chain_pairs(chain: list[str]) -> list[Hint]:
    return [Hint(a, b) for i, a in enumerate(chain) for b in chain[i + 1:] if a != b]


def read_hints(text: str, tools: frozenset[str] = ALL_TOOLS) -> list[Hint]:
    """Every tool order a text states, in text order; the same reading for every system's memories.

    A clause states an order with an arrow chain (``a → b → c``), ``a before b``, ``a then b`` or ``b after a``;
    ``a first`` / ``a before <something that is not a tool>`` says that ``a`` comes before any state change.
    Clauses that speak of failure (``failed``, ``error``, ``does not hold``, ``not for`` …) state nothing, and the
    tool path of a run whose ``outcome:`` is a failure is not a hint: only orders that worked, or are prescribed,
    count. Parenthesised parts (e.g. a rule's counter-examples) are read as clauses of their own, and a list
    header such as ``does not hold when:`` only separates the items after it, each read on its own.

    Examples:
        >>> read_hints("Identity first: verify_identity before touching money.")
        [Hint(before='verify_identity', after='*')]
        >>> read_hints("issue_refund after verify_identity")
        [Hint(before='verify_identity', after='issue_refund')]
        >>> read_hints("x failed (does not hold when: another run succeeded with hold_slot → confirm_booking)")
        [Hint(before='hold_slot', after='confirm_booking')]
    """
    out: list[Hint] = []
    for line in text.splitlines() or [text]:
        failed_run = bool(_FAILED_RUN.search(line))
        for clause in _clauses(line):
            if _NEGATIVE.search(clause) or (failed_run and re.match(r"\s*tools:", clause)):
                continue
            out += _pairs(clause, tools)
    return out


class Plan(NamedTuple):
    """The state-changing calls the agent will make, and why."""

    calls: tuple[str, ...]
    source: str  # "hint", "explore" or "default"
    hint: Hint | None = None


def plan_calls(task: TaskType, text: str, *, explore: bool, order_draw: float) -> Plan:
    """What the scripted agent does for ``task`` after reading ``text``.

    - ``explore`` (a seeded draw, the same for every system): it ignores memory and tries both of its tools in a
      random order (``order_draw < 0.5``: prerequisite first).
    - else the first hint in ``text`` about its own tools gives their order; a hint that its prerequisite comes
      before some other state-changing tool (or before ``"*"``) means: prerequisite first.
    - else its default path: the main action alone, which skips the prerequisite (the trap).

    Examples:
        >>> t = TASK_TYPES["password_reset"]
        >>> p = plan_calls(t, "call lookup_order → verify_identity → issue_refund", explore=False, order_draw=0.9)
        >>> p.calls, p.source, p.hint
        (('verify_identity', 'reset_password'), 'hint', Hint(before='verify_identity', after='issue_refund'))
        >>> plan_calls(t, "", explore=False, order_draw=0.9).calls
        ('reset_password',)
    """
    pre, act = task.steps
    if explore:
        return Plan((pre, act) if order_draw < 0.5 else (act, pre), "explore")
    own = {pre, act}
    for hint in read_hints(text):
        if hint.before in own and hint.after in own:
            return Plan((hint.before, hint.after), "hint", hint)
        if hint.before == pre and (hint.after == "*" or (hint.after not in READ_ONLY_TOOLS and hint.after != pre)):
            return Plan((pre, act), "hint", hint)
    return Plan((act,), "default")
