"""Quantities a rule states, normalised to intervals: numbers in digits or words, bounds, ranges, durations, money
and percentages, sufficiency and necessity.

- **Numbers**: digits, number words (*one* … *nineteen*, the tens, *hundred*, *thousand*, compounds such as
  *twenty-four*), *a dozen*, *a couple of*, *a single*, *half*, *once* / *twice* / *thrice* (a number of times),
  and *a*/*an* before a unit of time ("within a week").
- **Bounds** before the number (*at most, up to, no more than, not more than, a maximum of, capped at, limited to,
  within, no later than, less than, under, below, at least, no fewer than, a minimum of, more than, over, above,
  beyond, exceeding, exactly; *only* and *just* restrict, so they bound above: "only once" is at most once), after
  it (*or more, or fewer, or less, or longer, or later, and up, at most, at least, max*, ``+``) and the verbs
  *exceed* / *surpass* (more than); a negated clause turns a bound over ("never exceed 3", "never more than once":
  at most).
- **Ranges**: *between N and M*, *from N to M*, *N to M*, ``N-M``, *N or M*: the interval [N, M].
- **Limit nouns**: *the limit / cap / maximum / deadline / window / quota is N* is at most N; *the minimum / floor
  is N*, at least N.
- **Sufficiency and necessity**: *N X is enough / suffices / is sufficient* allows no requirement above N (≤ N);
  *N X are required / needed / necessary / mandatory* requires at least N (≥ N).
- **Units**: durations are converted to days (*second* … *year*, a month as a twelfth of a year), money (``$``,
  *dollars*, *USD*, ``€``, ``£``) and percentages are one unit each; units in full and abbreviated are one (*kg* /
  *kilograms*), nouns of repetition (*attempts*, *retries*) count times, a partitive counts what follows *of* (*two
  forms of ID*: ID); any other unit is the content words that
  follow the number.

Examples:
    >>> from hindsight_lab.conflicts.text import tokenize
    >>> q = quantities(tokenize("Refunds are possible within two weeks"))[0]
    >>> (q.low, q.high, q.bound, sorted(q.unit))
    (-inf, 14.0, 'le', ['duration'])
    >>> q = quantities(tokenize("one form of ID is enough"))[0]
    >>> (q.high, q.bound), sorted(q.unit)
    ((1.0, 'le'), ['id'])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .lexicon import is_verb, verb_form
from .text import STOPWORDS, Token, content, stem

_ONES = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                    "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split(), 0)
         if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000}
_TIMES = {"once": 1, "twice": 2, "thrice": 3}
#: Units of time in days (a month as a twelfth of 365 days; equal within 2 %: see :func:`compatible_bounds`).
_DURATION = {stem(w): d for w, d in (("second", 1 / 86400), ("sec", 1 / 86400), ("minute", 1 / 1440),
                                     ("min", 1 / 1440), ("hour", 1 / 24), ("hr", 1 / 24), ("h", 1 / 24),
                                     ("day", 1), ("night", 1), ("week", 7), ("fortnight", 14), ("month", 365 / 12),
                                     ("year", 365))}
_MONEY = frozenset({"$", "dollar", "dollars", "usd", "eur", "euro", "euros", "gbp", "pound", "pounds", "€", "£"})
_PERCENT = frozenset({"%", "percent", "pct"})
_BEFORE = {
    # "only once", "just two attempts": a restriction, so an upper bound (less is allowed, more is not)
    "le": ("at most", "up to", "no more than", "not more than", "maximum of", "a maximum of", "maximum", "max",
           "capped at", "cap of", "a cap of", "limited to", "limit of", "a limit of", "within", "no later than",
           "not later than", "no longer than", "not longer than", "no over", "as many as", "as much as",
           "as long as", "only", "just"),
    "lt": ("less than", "fewer than", "under", "below", "shorter than", "earlier than", "sooner than", "newer than",
           "before", "younger than"),
    "ge": ("at least", "no fewer than", "no less than", "not less than", "not fewer than", "minimum of",
           "a minimum of", "minimum", "min", "no sooner than", "no earlier than", "not before", "as few as",
           "as little as"),
    "gt": ("more than", "over", "above", "beyond", "exceeding", "exceeds", "exceed", "surpass", "surpassing",
           "greater than", "longer than", "later than", "in excess of", "older than", "after"),
    "eq": ("exactly", "precisely"),
}
_BEFORE_KEYS = {tuple(p.split()): b for b, phrases in _BEFORE.items() for p in phrases}
_AFTER = {("or", "more"): "ge", ("or", "fewer"): "le", ("or", "less"): "le", ("or", "longer"): "ge",
          ("or", "later"): "ge", ("or", "over"): "ge", ("or", "above"): "ge", ("or", "under"): "le",
          ("or", "below"): "le", ("or", "earlier"): "le", ("and", "up"): "ge", ("and", "above"): "ge",
          ("at", "most"): "le", ("at", "least"): "ge", ("max",): "le", ("maximum",): "le", ("min",): "ge",
          ("minimum",): "ge", ("+",): "ge"}
_SUFFICE = frozenset({"enough", "sufficient", "suffice", "suffices"})
_NEED = frozenset({"required", "require", "requires", "needed", "need", "needs", "necessary", "mandatory"})
#: Nouns that name a bound: "the limit is 3", "a 14-day window", "the minimum is 2".
_LIMIT_NOUNS = frozenset({"limit", "limits", "cap", "caps", "maximum", "ceiling", "deadline", "window", "allowance",
                          "quota", "minimum", "floor"})
#: Words that state the bound, not what it bounds.
_NOT_CONTEXT = _SUFFICE | _NEED | _LIMIT_NOUNS | {w for phrase in _BEFORE_KEYS for w in phrase} | {
    w for key in _AFTER for w in key} | {"no", "not", "never", "exceed", "exceeds", "exceeding"}
_FLIP = {"gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}
_UNIT_SKIP = frozenset({"the", "a", "an", "of", "in", "on", "at", "to", "for", "per", "and", "or", "more", "less",
                        "fewer", "each", "every", "additional", "extra", "further", "separate", "different"})
_UNIT_WORDS = frozenset({"call", "calls", "time", "times", "step", "steps", "day", "days", "minute", "minutes",
                         "hour", "hours", "week", "weeks", "month", "months", "year", "years"})
_TIME = stem("time")
#: Units written in full and abbreviated (the SI brochure's symbols, and the binary prefixes of bytes).
_UNIT_NAMES = {stem(w): a for w, a in (("kilogram", "kg"), ("kilogramme", "kg"), ("gram", "g"), ("gramme", "g"),
                                       ("kilometer", "km"), ("kilometre", "km"), ("meter", "m"), ("metre", "m"),
                                       ("centimeter", "cm"), ("centimetre", "cm"), ("liter", "l"), ("litre", "l"),
                                       ("kilobyte", "kb"), ("megabyte", "mb"), ("gigabyte", "gb"),
                                       ("terabyte", "tb"), ("kilowatt", "kw"))}
#: Nouns that count repetitions of an action, like *once* / *twice* / *N times*.
_REPEAT = frozenset(stem(w) for w in ("attempt", "attempts", "try", "tries", "retry", "retries", "round", "rounds",
                                      "time", "times"))
#: Nouns of a partitive construction, which count what follows *of* ("two forms of ID", "a piece of luggage").
_PARTITIVE = frozenset(stem(w) for w in ("form", "forms", "piece", "pieces", "item", "items", "copy", "copies",
                                         "unit", "units", "kind", "kinds", "type", "types", "pair", "pairs"))
#: Units that say how much but not of what: money, a share, a duration, a number of times.
GENERIC_UNITS = frozenset({"money", "percent", "duration", _TIME})


#: Words after which a verb form is a verb: modals and auxiliaries, *to*, and adverbs of frequency.
_BEFORE_VERB = frozenset({"can", "could", "may", "might", "must", "should", "shall", "will", "would", "to", "do",
                          "does", "never", "always", "only", "just", "please", "not", "also", "then", "first"})


def _verbs(tokens: list[Token]) -> frozenset[str]:
    """The stems of the words used as verbs, told by their place: a verb form that opens the clause (an
    imperative), or follows a modal, *to* or an adverb of frequency; or, before any of those, an inflected form
    right after its subject ("the return window closes"), but not a plural after a verb ("accept courier
    parcels"). Many nouns are also (rare) verbs in WordNet ("parcel", "letter"): the place tells them apart."""
    found: set[str] = set()
    for k, t in enumerate(tokens):
        if t.kind != "word" or not verb_form(t.text):
            continue
        prev = tokens[k - 1] if k else None
        if prev is None or prev.text in _BEFORE_VERB or (
                not found and t.text.endswith(("s", "ed")) and prev.kind == "word" and prev.is_content
                and not verb_form(prev.text)):
            found.add(t.stem)
    return frozenset(found)



@dataclass(frozen=True, slots=True)
class Quantity:
    """An interval ``[low, high]`` of some ``unit`` in a clause about ``context`` (``bound``: le, lt, ge, gt, eq,
    range); ``pairs`` are its clause's adjacent content words, to tell "economy passengers" from "business
    passengers", and ``topic`` its first content word (see :func:`topic`)."""

    low: float
    high: float
    bound: str
    unit: frozenset[str]
    context: frozenset[str]
    pairs: frozenset[tuple[str, str]] = frozenset()
    topic: str = ""
    verbs: frozenset[str] = frozenset()


def _number(tokens: list[Token], i: int) -> tuple[float, int] | None:
    """The number starting at ``tokens[i]`` and how many tokens it spans."""
    w = tokens[i].text
    nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
    if tokens[i].kind == "num":  # "10,000", "10k", "2 million"
        scale = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6}.get(nxt, 1.0)
        return float(w.replace(",", "")) * scale, 1 if scale == 1.0 else 2
    if w in _TIMES:
        return float(_TIMES[w]), 1
    if w in ("a", "an"):
        if nxt in ("dozen", "single", "couple"):
            return {"dozen": 12.0, "single": 1.0, "couple": 2.0}[nxt], 3 if nxt == "couple" and i + 2 < len(
                tokens) and tokens[i + 2].text == "of" else 2
        if stem(nxt) in _DURATION or nxt in ("hundred", "thousand"):
            return 1.0, 1
        return None
    if w == "single":
        return 1.0, 1
    if w == "half":
        return 0.5, 2 if nxt in ("a", "an") else 1
    value, n = 0.0, 0
    while i + n < len(tokens):
        x = tokens[i + n].text
        if x in _TENS and value % 100 == 0:
            value += _TENS[x]
        elif x in _ONES and value % 10 == 0:
            value += _ONES[x]
        elif x in _SCALES and n:
            value = max(value, 1) * _SCALES[x]
        else:
            break
        n += 1
    return (value, n) if n else None


def _bound_before(words: list[str], i: int) -> str:
    for n in (4, 3, 2, 1):
        key = tuple(words[max(0, i - n):i])
        if len(key) == n and key in _BEFORE_KEYS:
            return _BEFORE_KEYS[key]
    return "eq"


def _bound_after(words: list[str], at: int, bound: str) -> tuple[str, int]:
    for key, b in _AFTER.items():
        if tuple(words[at:at + len(key)]) == key:
            return b, at + len(key)
    return bound, at


def _unit(tokens: list[Token], start: int) -> tuple[set[str], int]:
    """The unit words from ``tokens[start]`` (up to three content words) and where they end."""
    unit: set[str] = set()
    j = start
    while j < len(tokens) and j < start + 5 and len(unit) < 3:
        tok = tokens[j]
        if tok.kind == "word" and tok.text in _UNIT_SKIP and not unit:
            j += 1
            continue
        if tok.text in _MONEY or tok.text in _PERCENT:
            return ({"money"} if tok.text in _MONEY else {"percent"}), j + 1
        if tok.text == "of" and unit and unit <= _PARTITIVE:
            unit = set()  # "two forms of photo ID", "three pieces of luggage": what is counted follows "of"
            j += 1
            continue
        if not (tok.kind == "ident" or tok.kind == "word" and tok.text not in STOPWORDS
                or tok.text in _UNIT_WORDS) or tok.text in _ONES:
            break
        unit.add(tok.stem)
        j += 1
    return unit, j


def quantities(main: list[Token], negated: bool = False) -> list["Quantity"]:
    """The quantities of a clause's main tokens (``negated``: the clause is negated, which turns bounds over)."""
    words = [t.text for t in main]
    text = set(words)
    out: list[Quantity] = []
    i = 0
    while i < len(main):
        found = _number(main, i)
        if found is None or (words[i] == "one" and i + 1 < len(words) and words[i + 1] in ("of", "another", "or")):
            i += 1
            continue
        value, span = found
        money = i > 0 and words[i - 1] in _MONEY
        at = i - 1 if money else i
        if at > 1 and words[at - 1] in ("a", "an"):
            at -= 1  # "up to a 30-day supply", "more than a two-week stay": the bound stands before the article
        bound = _bound_before(words, at)
        high = value
        end = i + span
        between = i > 0 and words[i - 1] == "between"
        if end + 1 < len(main) and words[end] in ("to", "and", "or") and (words[end] != "and" or between):
            second = _number(main, end + 1)
            if second is not None:
                high, end, bound = max(value, second[0]), end + 1 + second[1], "range"
                value = min(value, second[0])
        bound, end = _bound_after(words, end, bound)
        unit, unit_end = _unit(main, end)
        bound, unit_end = _bound_after(words, unit_end, bound)  # "15% or more", "3 days or longer"
        if words[i] in _TIMES:
            unit = {_TIME}
        elif unit & _REPEAT:  # "three delivery attempts", "two more retries": a number of times
            unit = (unit - _REPEAT) | {_TIME}
        unit = {_UNIT_NAMES.get(u, u) for u in unit}
        if money:
            unit = {"money"}
        if not unit:
            i = end
            continue
        factor = next((_DURATION[u] for u in sorted(unit) if u in _DURATION), None)
        if factor is not None:  # "two weeks", "48 hours", "5 business days": a duration in days
            value, high, unit = value * factor, high * factor, {"duration"}
        if bound == "eq" and text & _LIMIT_NOUNS:  # "the return window is two weeks"
            bound = "ge" if text & {"minimum", "floor"} else "le"
        if bound == "eq" and text & _SUFFICE:
            bound = "le"
        elif bound == "eq" and text & _NEED:
            bound = "ge"
        if negated:
            if bound not in _FLIP:
                i = end
                continue
            bound = _FLIP[bound]
        low, top = {"le": (-math.inf, high), "lt": (-math.inf, high), "ge": (value, math.inf),
                    "gt": (value, math.inf), "eq": (value, high), "range": (value, high)}[bound]
        kept = [t for k, t in enumerate(main) if t.number is None and t.text not in _NOT_CONTEXT
                and not end <= k < unit_end]
        ctx = content(kept) - unit
        verbs = _verbs(main) & ctx
        # the unit's own words are no modifiers that set cases apart ("a 30-day supply" / "a two-week supply")
        own = {t.stem for t in main[end:unit_end]}
        pairs = frozenset(p for p in adjacent(main) if not own & set(p))
        out.append(Quantity(low, top, bound, frozenset(unit), ctx, pairs, topic(main), verbs))
        i = max(unit_end, end, i + 1)
    return out


def adjacent(tokens: list[Token]) -> frozenset[tuple[str, str]]:
    """Adjacent content words ``(modifier, head)`` of a clause ("business class passengers": (class, passeng),
    (busi, class)); nothing may stand between them."""
    return frozenset((a.stem, b.stem) for a, b in zip(tokens, tokens[1:])
                     if a.is_content and b.is_content and a.kind == b.kind == "word")


def topic(tokens: list[Token]) -> str:
    """What a clause is about, roughly: its first content word, after the verb of an imperative ("Refunds are …":
    refund; "Allow three attempts": attempt)."""
    words = [t for t in tokens if t.kind in ("word", "ident") and t.is_content and t.number is None
             and t.text not in _NOT_CONTEXT and t.stem not in _PARTITIVE and _number([t], 0) is None]
    if words and tokens and words[0] is tokens[0] and is_verb(words[0].text):
        words = words[1:]
    return words[0].stem if words else ""


def _comparisons(qx: Quantity):
    """``lt`` and ``eq`` on values of ``qx``'s unit (durations equal within 2 %: a year is 12 months and 365 days;
    a month 30 or 31 days)."""
    tol = 0.02 if "duration" in qx.unit else 0.0

    def lt(a: float, b: float) -> bool:
        return a < b and not (math.isfinite(a) and math.isfinite(b) and b - a <= tol * max(abs(a), abs(b)))

    def eq(a: float, b: float) -> bool:
        return not lt(a, b) and not lt(b, a)

    return lt, eq


def disjoint(qx: Quantity, qy: Quantity) -> bool:
    """Whether two intervals of the same unit share no value ("under $500" / "$500 or more")."""
    lt, eq = _comparisons(qx)
    return lt(qx.high, qy.low) or lt(qy.high, qx.low) or (
        eq(qx.high, qy.low) and (qx.bound == "lt" or qy.bound == "gt")) or (
        eq(qy.high, qx.low) and (qy.bound == "lt" or qx.bound == "gt"))


def compatible_bounds(qx: Quantity, qy: Quantity) -> bool:
    """Whether two quantities of the same thing can both hold: their intervals meet, and two bounds of the same
    kind (two upper bounds, two ranges, two exact values) are the same."""
    _lt, eq = _comparisons(qx)
    kinds = {qx.bound, qy.bound}
    same_kind = len(kinds) == 1 or kinds <= {"le", "lt"} or kinds <= {"ge", "gt"}
    return not disjoint(qx, qy) and not (same_kind and not (eq(qx.low, qy.low) and eq(qx.high, qy.high)))


def number_value(token: Token) -> float | None:
    """The value of a one-token number (digits, a number word, *once*/*twice*)."""
    found = _number([token], 0)
    return found[0] if found else None
