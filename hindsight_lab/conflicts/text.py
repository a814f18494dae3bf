"""Text analysis for the offline contradiction detector: tokens, a light stemmer, tool names, sentences, clauses.

Everything here is general English: a suffix-stripping stemmer (``cancellations`` → ``cancel``, ``confirmation``
→ ``confirm``), tool identifiers (``snake_case``, ``camelCase``, or a word followed by *tool*), and the split of a
rule into sentences (``;``, ``.``, parentheses) and clauses (``,``), with each clause's conditional part (*if*,
*when*, *unless* …, and a leading *For …* scope) set apart from its main part.

Examples:
    >>> stem("Cancellations"), stem("cancelling"), stem("confirmation"), stem("refundable")
    ('cancel', 'cancel', 'confirm', 'refund')
    >>> [t.text for t in tokenize("Call get_reservation_details first")]
    ['call', 'get_reservation_details', 'first']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_TOKEN = re.compile(
    r"(?P<ident>[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]+)+)(?:\(\))?"
    r"|(?P<arrow>→|->|=>)"
    r"|(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"|(?P<word>[A-Za-z]+(?:'[a-z]+)?)"
    r"|(?P<punct>[,;:.!?$%+])")

#: Phrasal verbs written as one word, so that "log in" and "login" are the same event.
_PHRASES = ((re.compile(r"\blog[\s-]+in\b", re.I), "login"), (re.compile(r"\bsign[\s-]+in\b", re.I), "signin"),
            (re.compile(r"\blog[\s-]+out\b", re.I), "logout"), (re.compile(r"\bset[\s-]+up\b", re.I), "setup"),
            (re.compile(r"\blook\s+(?:it\s+|them\s+)?up\b", re.I), "lookup"),
            (re.compile(r"\bcheck[\s-]+in\b", re.I), "checkin"), (re.compile(r"n't\b"), " not"),
            (re.compile(r"\bcannot\b", re.I), "can not"), (re.compile(r"\be-mail", re.I), "email"),
            (re.compile(r"\bnon-\s*(?=[a-z])", re.I), "non"),  # "non-refundable" is one word, opposite "refundable"
            (re.compile(r"(?<=\d)\s*[–-]\s*(?=\d)"), " to "),  # "3-5 days", "3–5 days": a range
            # "as soon as X" and a conjunction "once X" are "after X"; a count "once" ("more than once", "once a
            # day", "retry once.") stays: the conjunction is followed by a clause, the count by a unit or nothing
            (re.compile(r"\bas\s+soon\s+as\b", re.I), "after"),
            (re.compile(r"(?<!at )\bthe\s+(?:moment|minute|instant|second)\s+(?=(?:that\s+)?(?:the|a|an|you|they|"
                        r"it|he|she|we|[a-z]+s)\b)", re.I), "after "),  # "the moment the customer asks": as soon as
            (re.compile(r"(?<!than )\bonce\b(?=\s+(?!(?:a|an|per|every|more|again|or|and|in|only|each|daily|weekly|"
                        r"monthly|yearly|before|after|then|within|for|at|to|is|are)\b)[a-z])", re.I), "after"),
            # vague conditions that restrict nothing: "only when needed", "if necessary", "where possible"
            (re.compile(r"\b(?:only\s+)?(?:when|if|as|where|whenever)\s+(?:it\s+is\s+|really\s+)?"
                        r"(?:needed|necessary|possible|required|applicable|appropriate)\b", re.I), ""))

STOPWORDS = frozenset("""
a an the this that these those it its it's they them their there here he she we you your our us i me my
is are was were be been being am do does did done doing has have had having can could should would may might must
shall will to of in on at by for with from as into onto about over under than so such very too also just only
and or but nor if when whenever while unless until once whether because since though although
what which who whom whose where why how all any each every either neither both some own same other another
call calls called calling use uses used using make makes made making get gets getting let lets
always usually often first then next afterwards afterward later finally before after prior ahead
task tasks thing things way ways step steps case cases time ever yet still already now
instead directly please sure one's etc via through come comes came coming
immediately upfront beforehand eventually subsequently retroactively
more most less least fewer many much few several up down out off between among across per within
""".split())

_NUMBER_WORDS = {w: float(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())} | {w: 10.0 * i for i, w in enumerate(
        "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)} | {
    "hundred": 100.0, "thousand": 1000.0, "dozen": 12.0, "once": 1.0, "twice": 2.0, "thrice": 3.0}

_SUFFIXES = ("ications", "ication", "ational", "ations", "ation", "tions", "tion", "sions", "sion", "ments", "ment",
             "ings", "ing", "edly", "ied", "ies", "ed", "able", "ible", "ness", "ly", "es", "s")
_DOUBLE = re.compile(r"([bdfglmnprt])\1$")

CONDITION_WORDS = frozenset({"if", "when", "whenever", "unless", "while", "provided"})


@lru_cache(maxsize=1)
def _irregular() -> dict[str, str]:
    """Irregular verb forms (``kept`` → ``keep``) from WordNet's ``verb.exc`` (``data/irregular.tsv``)."""
    path = Path(__file__).with_name("data") / "irregular.tsv"
    return dict(line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#"))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix-stripping stemmer (consistent, not linguistic): ``queries``/``querying`` → ``queri``;
    nominalisations meet their verbs (``verification``/``verify``, ``inspection``/``inspect``,
    ``approval``/``approve``, ``escalation``/``escalate``), and irregular forms their verb (``kept``/``keep``)."""
    w = word.lower()
    if "_" in w or len(w) <= 3 or not w.isalpha():
        return w
    w = _irregular().get(w, w)
    for suf in _SUFFIXES:
        if not w.endswith(suf) or len(w) - len(suf) < 3:
            continue
        if suf == "s" and w[-2] in "sui":  # "class", "bonus", "analysis"; but "photos", "scenarios"
            break
        if suf == "es" and w[-3] not in "sxzh":
            continue
        w = w[: -len(suf)] + ("i" if suf in ("ied", "ies", "ication", "ications") else "") + (
            suf[0] if suf in ("tions", "tion", "sions", "sion") else "")
        break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("y"):
        w = w[:-1] + "i"
    if len(w) > 4 and _DOUBLE.search(w):
        w = w[:-1]
    if len(w) >= 6 and w.endswith("at"):  # validate / validation, migrate / migration
        w = w[:-2]
    elif len(w) >= 6 and w.endswith("val"):  # approval / approve, removal / remove
        w = w[:-2]
    return w


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its lower-cased ``text``, ``kind`` (ident, arrow, num, word, punct), ``stem``, and whether it was
    written with a capital (``capital``: a name such as "Zendesk", when not the first word)."""

    text: str
    kind: str
    stem: str
    capital: bool = False

    @property
    def is_content(self) -> bool:
        """A word that says what the rule is about (not a stopword, not punctuation)."""
        return self.kind == "ident" or (self.kind == "word" and self.text not in STOPWORDS
                                        and self.text not in _NUMBER_WORDS)

    @property
    def number(self) -> float | None:
        if self.kind == "num":
            return float(self.text.replace(",", ""))
        return float(_NUMBER_WORDS[self.text]) if self.kind == "word" and self.text in _NUMBER_WORDS else None


_POSSESSIVE = re.compile(r"(?<=[a-z])'s\b|(?<=s)'(?=\s)", re.I)
#: Subject-auxiliary inversion after a fronted "only after/if/when X": "Only after X may you Y" is "only after X, Y".
_INVERSION = re.compile(r"(\bonly\s+(?:after|if|when|upon)\b[^,;.!?]*?)\s+((?:may|can|should|must|will|shall|do|"
                        r"does|is|are)\s+(?:you|we|they|he|she|it|i|the|an?|agents?|staff|anyone|someone)\b)", re.I)


def normalise(text: str) -> str:
    """Join phrasal verbs ("log in" → "login"), expand "n't", read "as soon as" and a conjunction "once" as
    "after", mark ranges ("3-5" → "3 to 5") and unify dashes."""
    text = _POSSESSIVE.sub("", text.replace("\u2019", "'"))  # "the customer's card": the customer card
    for pattern, repl in _PHRASES:
        text = pattern.sub(repl, text)
    text = text.replace("—", " ; ").replace("–", " ; ")
    return _INVERSION.sub(lambda m: f"{m.group(1)}, {m.group(2)}", text)


def tokenize(text: str, *, normalised: bool = False) -> list[Token]:
    """Tokens of ``text`` (already :func:`normalise` d or not); identifiers keep their case-insensitive form."""
    out = []
    for m in _TOKEN.finditer(text if normalised else normalise(text)):
        kind = m.lastgroup or "word"
        raw = m.group(kind)
        low = raw.lower() if kind != "ident" else _ident(raw)
        out.append(Token(low, kind, low if kind in ("ident", "punct", "arrow", "num") else stem(low),
                         kind == "word" and raw[:1].isupper()))
    return _join_particles(out)


@lru_cache(maxsize=1)
def phrasal_verbs() -> dict[str, frozenset[str]]:
    """``verb stem -> particles`` of the multi-word verbs in the opposites list (``leave`` → ``{out, off}``)."""
    out: dict[str, set[str]] = {}
    for line in _OPPOSITES.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        for lemma in line.split("\t")[:2]:
            parts = lemma.split("_")
            if len(parts) == 2 and parts[1] in ("out", "off", "down", "up", "away", "back"):
                out.setdefault(stem(parts[0]), set()).add(parts[1])
    for verb in _EXCLUDING:  # the exclusion verbs of .lexicon that are phrasal but have no opposite listed
        out.setdefault(stem(verb), set()).add("out")
    return {k: frozenset(v) for k, v in out.items()}



#: "keep the receipt out", "shut the caller out": WordNet's *keep_out* / *shut_out*, lemmas of *exclude*.
_EXCLUDING = ("keep", "shut")
#: The opposites list (:mod:`.lexicon`), whose multi-word verbs the tokenizer joins with their particle.
_OPPOSITES = Path(__file__).with_name("data") / "opposites.tsv"

_IRREGULAR = {"left": "leave", "took": "take", "taken": "take", "kept": "keep", "shut": "shut", "turned": "turn"}


def _join_particles(tokens: list[Token]) -> list[Token]:
    """A phrasal verb of the lexicon with its particle as one token, the particle up to three words later ("leave
    the receipt out" → ``leavout`` the receipt)."""
    table = phrasal_verbs()
    out = list(tokens)
    for i, t in enumerate(out):
        verb = stem(_IRREGULAR.get(t.text, t.text)) if t.kind == "word" else ""
        particles = table.get(verb)
        if not particles:
            continue
        for j in range(i + 1, min(i + 5, len(out))):
            if out[j].kind != "word":
                break
            after = out[j + 1].text if j + 1 < len(out) else ""
            if out[j].text in particles and after not in ("to", "than") and (
                    j == i + 1 or out[j - 1].text not in ("to", "of")):  # "up to 3" is a bound
                joined = verb + out[j].text
                out[i] = Token(joined, "word", joined)
                del out[j]
                break
    return out


def _ident(raw: str) -> str:
    """``getOrderDetails`` → ``get_order_details``; snake_case lower-cased."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", raw).lower()


def ident_parts(ident: str) -> set[str]:
    """Stems of an identifier's content parts: ``get_reservation_details`` → ``{reserv, detail}``."""
    return {stem(p) for p in ident.split("_") if p and p not in STOPWORDS and not p.isdigit()} - {"get", "set"}


def content(tokens: list[Token], *, parts: bool = True) -> frozenset[str]:
    """Content stems of ``tokens``; identifiers count whole and (``parts``) by their parts."""
    out: set[str] = set()
    for t in tokens:
        if t.kind == "ident":
            out.add(t.text)
            if parts:
                out |= ident_parts(t.text)
        elif t.is_content:
            out.add(t.stem)
    return frozenset(out)


def overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """``|a ∩ b| / min(|a|, |b|)`` (0 when either is empty)."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


# ---------------------------------------------------------------------------------------------- sentences, clauses
@dataclass(frozen=True, slots=True)
class Clause:
    """A comma-separated piece of a sentence: its ``main`` tokens and its conditional ``condition`` tokens."""

    main: list[Token]
    condition: list[Token]

    @property
    def tokens(self) -> list[Token]:
        return self.main + self.condition


def sentences(text: str) -> list[list[Token]]:
    """Token lists of the sentences of ``text``: split at ``;``, ``.``, ``!``, ``?``; each parenthesised part is
    a sentence of its own (innermost first)."""
    text = normalise(text)
    parts: list[str] = []
    inner = re.compile(r"\(([^()]*)\)")
    while True:
        found = inner.findall(text)
        if not found:
            break
        parts.extend(found)
        text = inner.sub(" ", text)
    parts.insert(0, text)
    out = []
    for part in parts:
        for piece in re.split(r"[;!?]|\.(?=\s|$)", part):
            toks = tokenize(piece, normalised=True)
            if any(t.kind != "punct" for t in toks):
                out.append(toks)
    return out


_SPLIT_WORDS = frozenset({"but", "however"})
_ORDER_ADVERBS = frozenset({"afterwards", "afterward", "then", "next", "later", "finally", "subsequently", "first",
                            "only"})


def _attach_adverbs(pieces: list[list[Token]]) -> list[list[Token]]:
    """A piece that is only an order adverb ("afterwards, share the records") belongs to the next piece."""
    out: list[list[Token]] = []
    carry: list[Token] = []
    for p in pieces:
        if p and all(t.text in _ORDER_ADVERBS for t in p):
            carry += p
            continue
        out.append(carry + p)
        carry = []
    if carry:
        out.append(carry)
    return out


def clauses(sentence: list[Token]) -> list[Clause]:
    """The clauses of a sentence (split at commas, *but*, *however*), each with its conditional part set apart.

    A clause that opens with a condition word (*if*, *when*, *unless* …) or with *for* (a scope such as "For
    refund tasks,") is all condition; otherwise its condition starts at the first condition word.
    """
    out: list[Clause] = []
    current: list[Token] = []
    pieces: list[list[Token]] = []
    for t in sentence:
        if (t.kind == "punct" and t.text in ",:") or (t.kind == "word" and t.text in _SPLIT_WORDS):
            pieces.append(current)
            current = []
        elif t.kind != "punct" or t.text in "$%+":
            current.append(t)
    pieces.append(current)
    pieces = _attach_adverbs(pieces)
    for i, toks in enumerate(p for p in pieces if p):
        first = toks[0].text
        if first in CONDITION_WORDS or (first == "for" and i == 0 and len(pieces) > 1) or \
                (first == "only" and len(toks) > 1 and toks[1].text in CONDITION_WORDS):
            out.append(Clause([], toks))
            continue
        cut = next((j for j, t in enumerate(toks) if j > 0 and t.kind == "word" and t.text in CONDITION_WORDS),
                   len(toks))
        if cut < len(toks) and toks[cut - 1].text == "only":
            cut -= 1
        out.append(Clause(toks[:cut], toks[cut:]))
    return out
