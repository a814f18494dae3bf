"""What a rule claims, read from its text with general cues: orderings (:mod:`.orders`), instruments (tools and
channels), negated and positive statements, and quantities (:mod:`.quantities`). :mod:`.detect` compares the
claims of two rules.

- **Instruments**: the tool a clause does its job *with*, *through*, *using*, *via*, *use X to*, *from the X tool*;
  else the one tool identifier its directive names ("call issue_refund to …"); and the contact channel it uses
  (*by e-mail*, *through the portal*, *phone the customer*: :data:`.lexicon.CHANNELS`). The purpose is the
  clause's other content words; an identifier's own words (``issue_refund``: *issue*, *refund*) are kept apart.
- **Statements**: each clause's main content and polarity (*not*, *never*, *no*, *skip*, *avoid*, *without*, the
  exclusion verbs *omit*, *exclude*, *leave out* …; the object of *instead of* / *rather than* is negated), with
  each content word's surface form (for opposites by affix; *must*, *have to*, *is required* add "mandatory") and
  its adjacent word pairs. Conditions (*if*, *when*,
  *unless* …, a leading *For …*) are kept apart: a negation inside a condition is not a directive.

Examples:
    >>> a = analyse("Call get_reservation_details before cancel_reservation.")
    >>> [(sorted(o.first.stems)[0], sorted(o.then.stems)[0], o.positive) for o in a.orders]
    [('detail', 'cancel', True)]
    >>> [sorted(i.tools) for i in analyse("Send the invoice by e-mail.").instruments]
    [['channel:email']]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

from .lexicon import CHANNELS, COPULAS, EXCLUSION_VERBS, NEGATION, adjective_of, bound_negated, is_verb, negative
from .orders import Event, Order, directive, orders
from .quantities import Quantity, adjacent, quantities, topic
from .text import STOPWORDS, Clause, Token, clauses, content, ident_parts, sentences, stem

__all__ = ["Analysis", "Condition", "Event", "Instrument", "Order", "Quantity", "Statement", "analyse"]

_NEG_OBJECT = (("instead", "of"), ("rather", "than"))
#: Deontic necessity (*must*, *have to*, *required to* …), read as the word "mandatory" so that its WordNet
#: opposite "optional" can meet it.
_MUST = frozenset({"must", "obligatory", "compulsory", "mandatory"})
_MUST_PAIRS = frozenset({("have", "to"), ("has", "to"), ("required", "to"), ("need", "to"), ("needs", "to"),
                         ("is", "required"), ("are", "required")})
_MANDATORY = stem("mandatory")
#: Verbs whose *to* complement carries the action: "ask the user to confirm" (complement-taking verbs of request).
_ASKING = frozenset({"ask", "request", "tell", "remind", "instruct", "require", "force", "urge", "encourage",
                     "invite", "expect", "get"})
_INSTRUMENT_PREP = frozenset({"with", "through", "using", "via"})
_CHANNEL_PREP = frozenset({"by", "via", "through", "over", "using", "with", "on", "in", "per", "to", "into", "at",
                           "use", "uses"})
_MEDIUM = frozenset(stem(w) for w in ("message", "messages", "call", "calls", "notification", "notifications"))
_TOOL_NOUNS = frozenset({"tool", "api", "endpoint", "function", "command", "system", "platform", "spreadsheet",
                         "database", "service", "console", "tracker", "workflow", "bot", "script"})
#: Capitalised words that are not names of tools.
_NOT_NAMES = frozenset("""monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december i""".split())
_NAME_PREP = _INSTRUMENT_PREP | {"in", "into", "on"}
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "its", "their", "our", "your", "any", "each", "all",
                          "every", "some"})


@dataclass(frozen=True, slots=True)
class Statement:
    """One clause: its content and focus (the words after a negation cue), polarity, whether its cue is an
    exclusion verb, the surface ``forms`` of its content words (``(stem, word)``), adjacent content ``pairs`` and
    its ``topic`` (:func:`.quantities.topic`); ``anchor`` is the time it holds from or to ("until X": ``("until",
    X)``; "after X", "once X": ``("after", X)``), if its clause says; ``head`` is the negated verb, the first
    content word after the cue when it is a verb ("never *disclose* the results")."""

    content: frozenset[str]
    focus: frozenset[str]
    negative: bool
    exclusion: bool = False
    forms: frozenset[tuple[str, str]] = frozenset()
    pairs: frozenset[tuple[str, str]] = frozenset()
    topic: str = ""
    anchor: tuple[str, frozenset[str]] = ("", frozenset())
    head: str = ""


@dataclass(frozen=True, slots=True)
class Instrument:
    """The tools (identifiers, ``channel:<class>``, or a word before *tool*) a clause works with, what for, and
    the words of the identifiers' names (``parts``, in name order: ``issue_refund`` → (issu, refund))."""

    tools: frozenset[str]
    purpose: frozenset[str]
    parts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition clause: its content words, whether it is negated (*unless* counts as a negation: "unless X"
    is "if not X"), and its quantities ("if the order is under $100")."""

    content: frozenset[str]
    negative: bool
    quantities: tuple[Quantity, ...] = ()


@dataclass(frozen=True, slots=True)
class Analysis:
    """Every claim of one rule text, and its content and condition words."""

    text: str
    orders: tuple[Order, ...] = ()
    statements: tuple[Statement, ...] = ()
    instruments: tuple[Instrument, ...] = ()
    quantities: tuple[Quantity, ...] = ()
    content: frozenset[str] = field(default_factory=frozenset)
    conditions: tuple[Condition, ...] = ()
    #: the content words of all its conditions (kept, not derived on each use: the checks read it in their loops)
    condition: frozenset[str] = field(default_factory=frozenset)


# ---------------------------------------------------------------------------------------------------- statements
def _statement(tokens: list[Token], negated: bool) -> Statement:
    cue = next((i for i, t in enumerate(tokens) if t.kind == "word" and t.text in NEGATION), None)
    focus = _clean(tokens[cue + 1:]) if cue is not None else _clean(tokens)
    exclusion = any(t.text in EXCLUSION_VERBS for t in tokens)
    kept = [t for t in tokens if t.text not in NEGATION and t.number is None]
    forms = {(t.stem, t.text) for t in kept if t.is_content and t.kind == "word"}
    # a manner adverb also stands for its adjective, whose opposite may be known ("automatically" / "manual")
    forms |= {(stem(adj), adj) for t in kept if t.kind == "word" and (adj := adjective_of(t.text))}
    words = [t.text for t in tokens]
    if any(w in _MUST for w in words) or any(p in zip(words, words[1:]) for p in _MUST_PAIRS):
        forms.add((_MANDATORY, "mandatory"))  # deontic necessity: "must attach X" / "attaching X is optional"
    return Statement(_clean(tokens), focus, negated, exclusion, frozenset(forms), adjacent(kept), topic(kept),
                     head=_negated_verb(tokens[cue + 1:] if cue is not None else []))


def _negated_verb(after: list[Token]) -> str:
    """The stem of the verb a negation cue denies: the first content word after it, if a verb; after a verb of
    asking ("never *ask* the user *to confirm* …") the verb of its *to* complement, which is what is denied."""
    words = [t for t in after if t.is_content and t.kind == "word"]
    if not words or not is_verb(words[0].text):
        return ""
    if words[0].text in _ASKING:
        at = after.index(words[0])
        nxt = next((k for k in range(at + 1, len(after) - 1) if after[k].text == "to"), None)
        if nxt is not None and is_verb(after[nxt + 1].text):
            return after[nxt + 1].stem
    return words[0].stem


def _statements(cl: Clause) -> list[Statement]:
    """The clause's statement, up to its first order word: "do not X before Y" negates an order, not Y."""
    main = directive(cl.main)
    if not main or (len(main) < len(cl.main) and negative(main)):
        return []  # "do not X before Y": an ordering (see .orders), not a statement about X
    if len(main) < len(cl.main) and cl.main[len(main)].text in ("until", "after", "before"):
        anchor = (cl.main[len(main)].text, _clean(cl.main[len(main) + 1:]))
        return [replace(s, anchor=anchor) for s in _statements(Clause(main, []))]
    words = [t.text for t in main]
    for pair in _NEG_OBJECT:
        for i in range(len(words) - 1):
            if (words[i], words[i + 1]) == pair:
                head, obj = main[:i], main[i + 2:]
                out = []
                if head:
                    out.append(_statement(head, negative(head)))
                if obj:
                    out.append(_statement(obj, not negative(obj)))
                return out
    return [_statement(main, negative(main))]


def _clean(tokens: list[Token]) -> frozenset[str]:
    return content([t for t in tokens if t.text not in NEGATION and t.number is None])


# ---------------------------------------------------------------------------------------------------- instruments
def _prep_tools(main: list[Token]) -> tuple[set[str], set[int]]:
    """Tools after *with/through/using/via/use/from/in/on* (an identifier, a word before *tool*, *system* …, or a
    capitalised name) and the token positions they take."""
    tools: set[str] = set()
    drop: set[int] = set()
    for i, t in enumerate(main):
        if t.text not in _NAME_PREP and t.text not in ("use", "uses", "from"):
            continue
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
        elif tok.kind == "word" and noun in _TOOL_NOUNS and tok.stem not in CHANNELS:
            tools.add(tok.stem)
            drop |= {i, j, j + 1}
        elif tok.kind == "word" and tok.capital and tok.text not in _NOT_NAMES and tok.stem not in CHANNELS:
            tools.add(tok.text)  # a product's name: "via PagerDuty", "in Zendesk"
            drop |= {i, j} | ({j + 1} if noun in _TOOL_NOUNS else set())
    return tools, drop


def _channels(main: list[Token]) -> tuple[set[str], set[int]]:
    """Contact channels: a channel noun after a preposition (*by e-mail*, *through the portal*) or as the verb
    (*e-mail the customer*); not one that modifies a noun (*e-mail address*, *phone number*)."""
    tools: set[str] = set()
    drop: set[int] = set()
    for i, t in enumerate(main):
        cls = CHANNELS.get(t.stem) if t.kind == "word" else None
        if cls is None:
            continue
        nxt = main[i + 1] if i + 1 < len(main) else None
        # an imperative ("e-mail receipts to the customer"), a gerund after a preposition ("by emailing payroll") or
        # a passive participle ("notices are emailed to the tenant")
        prev = main[i - 1].text if i > 0 else ""
        verb = (i == 0 and is_verb(t.text)) or (t.text.endswith("ing") and prev in _CHANNEL_PREP) or (
            t.text.endswith("ed") and prev in COPULAS)
        # "by text message", "by phone call": the channel names the medium of a message, not a kind of thing
        medium = nxt is not None and nxt.stem in _MEDIUM
        if not verb and not medium and nxt is not None and (nxt.is_content or nxt.kind == "ident"):
            continue
        k = _skip_back(main, i - 1)
        # "through the customer portal", "through the web portal" (a channel word of the same class)
        if k >= 0 and main[k].is_content and CHANNELS.get(main[k].stem, cls) == cls:
            k = _skip_back(main, k - 1)
        if i == 0 or verb or (k >= 0 and main[k].text in _CHANNEL_PREP) or t.text == "online":
            tools.add(f"channel:{cls}")
            drop.add(i)
    return tools, drop


def _skip_back(tokens: list[Token], k: int) -> int:
    while k >= 0 and tokens[k].text in _DETERMINERS:
        k -= 1
    return k


def _instruments(cl: Clause) -> list[Instrument]:
    main = cl.main
    if not main or negative(main):
        return []
    tools, drop = _prep_tools(main)
    if not tools:
        head = directive(main)
        idents = [k for k, t in enumerate(head) if t.kind == "ident"]
        if len(idents) == 1:
            tools, drop = {head[idents[0]].text}, {idents[0]}
    more, at = _channels(directive(main))
    tools |= more
    drop |= at
    if not tools:
        return []
    parts = tuple(stem(p) for name in sorted(tools) if "_" in name and not name.startswith("channel:")
                  for p in name.split("_") if p and p not in STOPWORDS and not p.isdigit() and p not in ("get", "set"))
    purpose = content([t for k, t in enumerate(main) if k not in drop and t.kind != "ident"])
    return [Instrument(frozenset(tools), purpose - {stem(n) for n in _TOOL_NOUNS}, parts)]


def _precondition(condition: list[Token]) -> bool:
    """Whether a condition is a precondition of the clause's action ("call X *only when* the charge has
    succeeded"): an ordering of two steps (see :mod:`.orders`), which says nothing about the situation the rule
    holds in, so it does not set two rules apart as a condition does."""
    return [t.text for t in condition[:2]] in (["only", "when"], ["only", "if"])


def _condition(tokens: list[Token]) -> Condition:
    neg = negative(tokens) != (tokens[0].text == "unless")
    return Condition(_clean(tokens), neg, tuple(quantities(tokens, bound_negated(tokens) != negative(tokens))))


# ---------------------------------------------------------------------------------------------------- analyse
@lru_cache(maxsize=16384)
def analyse(text: str) -> Analysis:
    """Every claim of a rule text (cached: the same text is analysed once)."""
    sents = sentences(text)
    statements: list[Statement] = []
    instruments: list[Instrument] = []
    found: list[Quantity] = []
    main: set[str] = set()
    conditions: list[Condition] = []
    for s in sents:
        parts = clauses(s)
        for k, cl in enumerate(parts):
            statements += _statements(cl)
            # "To cancel a subscription, call end_subscription": a tool's job may be said in a purpose clause
            around = frozenset().union(*(_clean(o.main) for o in parts[:k] + parts[k + 1:] if len(o.main) > 1
                                         and o.main[0].text == "to" and is_verb(o.main[1].text)))
            instruments += [i if i.purpose else replace(i, purpose=around - i.tools) for i in _instruments(cl)]
            found += quantities(cl.main, bound_negated(cl.main) != negative(cl.main))
            main |= _clean(cl.main)
            if cl.condition and not _precondition(cl.condition):
                conditions.append(_condition(cl.condition))
    return Analysis(text, tuple(orders(sents)), tuple(statements), tuple(instruments), tuple(found),
                    frozenset(main), tuple(conditions), frozenset().union(*(c.content for c in conditions)))
