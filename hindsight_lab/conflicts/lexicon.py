"""General word knowledge for the offline detector: opposites, exclusion verbs, phrasal verbs, light verbs and
communication channels. Nothing here is written for particular rule pairs.

Sources:

- **Opposites** (``data/opposites.tsv``): the antonyms of Princeton WordNet 3.0 for verbs and adjectives — direct
  antonym pairs, every lemma of a verb synset against the lemmas of its antonym synset, and a satellite adjective
  against the antonym of its head (WordNet's indirect antonyms: ``mandatory`` ~ ``obligatory`` ↔ ``optional``),
  common senses only (the first three of a word; a direct antonym pair, which WordNet's lexicographers set word
  to word, the first four: ``hide`` / ``show``, ``allow`` / ``deny``). Built by ``scripts/build_opposites.py`` from the WordNet database files; licence in
  ``data/WORDNET_LICENSE``.
- **Negative affixes** (a morphological rule, as English grammars describe them, e.g. Quirk et al., *A
  Comprehensive Grammar of the English Language*, App. I.21–I.24): ``un-``, ``non-``, ``dis-`` before any stem, the
  Latinate ``in-``/``im-``/``il-``/``ir-`` before an adjective in *-able/-ible/-ent/-ant/-ive/-al/-ate/-ete*, and
  *-less* against *-ful*: ``refundable`` ↔ ``nonrefundable``, ``eligible`` ↔ ``ineligible``.
- **Phrasal verbs** (``leave_out``, ``turn_down``, ``shut_down`` …): the multi-word verb lemmas of the same WordNet
  list; a separated particle ("leave the receipt out") is joined to its verb as English allows up to a short object.
- **Same action** (``data/verbs.tsv``): two verbs name the same action when one is a synonym or a direct hypernym
  of the other in the first two WordNet senses of each (``update`` ~ ``modify``, ``retrieve`` ~ ``fetch``,
  ``refund`` ~ ``reimburse``); opposites never count as the same action.
- **Exclusion verbs** (*omit, exclude, leave out, leave off, withhold*, and *keep out*, *shut out*, the other
  lemmas of WordNet's first sense of *exclude*): verbs whose WordNet gloss is "not include / prevent from being
  included"; a clause with one denies its object, like *not*.
- **Light verbs** (*issue, make, do, perform, process, handle, run, execute, submit, create, give, take*): the
  verbs that carry little meaning of their own before an action noun (Jespersen's "light verbs"), so that the
  tools ``issue_refund`` and ``refund_payment`` both name the action *refund*.
- **Channels**: the contact channels of schema.org's ``ContactPoint`` / ``ServiceChannel`` (phone, SMS, e-mail,
  fax, post, web/online/portal/app, in person), each a class of synonymous nouns.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .text import Token, stem

_DATA = Path(__file__).with_name("data") / "opposites.tsv"
_VERBS = Path(__file__).with_name("data") / "verbs.tsv"

EXCLUSION_VERBS = frozenset({"omit", "omits", "omitted", "omitting", "exclude", "excludes", "excluded", "excluding",
                             "leavout", "leavoff", "withhold", "withholds", "withheld", "keepout", "shutout"})
LIGHT_VERBS = frozenset(stem(w) for w in ("issue", "make", "do", "perform", "process", "handle", "run", "execute",
                                          "submit", "create", "give", "take", "send", "trigger", "initiate", "file"))
#: Copular and complex-transitive verbs, which link a thing to a state rather than act on it ("the card *stays*
#: active", "*leave* the door unlocked", "*mark* the claim as approved"): the current and resulting copulas and the
#: verbs with an object complement of English grammars (Quirk et al., *A Comprehensive Grammar of the English
#: Language*, §16.21–16.22, 16.43). Beside a predicate and its opposite they say nothing of their own.
COPULAS = frozenset({"be", "is", "are", "was", "were", "been", "being", "remain", "remains", "stay", "stays",
                     "become", "becomes", "get", "gets", "turn", "turns", "go", "goes", "keep", "keeps", "leave",
                     "leaves", "make", "makes", "mark", "marks", "set", "sets", "consider", "considers", "appear",
                     "appears", "seem", "seems"})
#: schema.org ContactPoint / ServiceChannel channels, each with its synonyms (stems).
CHANNELS: dict[str, str] = {stem(w): cls for cls, words in {
    "phone": ("phone", "telephone", "hotline", "voice"),
    "sms": ("sms", "text", "texts"),
    "email": ("email", "mail", "e-mail", "emails", "mailbox"),
    "fax": ("fax",),
    "post": ("post", "postal", "letter", "courier"),
    "web": ("portal", "website", "web", "online", "app", "dashboard", "form", "chat"),
    "in_person": ("branch", "counter", "desk", "person", "office"),
}.items() for w in words}
# "mail" alone is e-mail in support writing; "postal mail" / "by post" is post.

_NEG_PREFIXES = ("non", "un", "dis")
_LATINATE = ("in", "im", "il", "ir")
_LATINATE_ADJ = re.compile(r"(?:able|ible|ent|ant|ive|al|ate|ete|ed|ic)$")


@lru_cache(maxsize=1)
def _opposites() -> dict[str, dict[str, str]]:
    """``stem -> {stem of an opposite: "v" or "a"}`` (a phrasal lemma as its verb's stem and particle: ``leave_out`` →
    ``leavout``, as :func:`~.text.tokenize` joins it)."""
    table: dict[str, dict[str, str]] = {}
    for line in _DATA.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        a, b, pos, _relation = line.split("\t")
        sa, sb = _key(a), _key(b)
        if sa != sb:  # a verb pair wins over an adjective pair of the same stems ("open"/"close")
            for x, y in ((sa, sb), (sb, sa)):
                if table.setdefault(x, {}).get(y) != "v":
                    table[x][y] = pos
    return table


def _key(lemma: str) -> str:
    verb, _, particle = lemma.partition("_")
    return stem(verb) + particle.replace("_", "") if particle else stem(lemma)


@lru_cache(maxsize=1)
def _verb_senses() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """``verb stem -> (its synsets, their direct hypernyms)``, merged over the verbs of one stem."""
    table: dict[str, tuple[set[str], set[str]]] = {}
    for line in _VERBS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        verb, own, hyper = line.split("\t")
        entry = table.setdefault(stem(verb), (set(), set()))
        entry[0].update(own.split(","))
        entry[1].update(h for h in hyper.split(",") if h)
    return {k: (frozenset(a), frozenset(b)) for k, (a, b) in table.items()}


@lru_cache(maxsize=262144)
def same_action(a: str, b: str) -> bool:
    """Whether verb stems ``a`` and ``b`` name the same action (equal, synonyms, or one the other's hypernym).

    Examples:
        >>> same_action(stem("update"), stem("modify")), same_action(stem("search"), stem("cancel"))
        (True, False)
    """
    if a == b:
        return True
    senses = _verb_senses()
    if a not in senses or b not in senses or opposite(a, b):
        return False
    (own_a, up_a), (own_b, up_b) = senses[a], senses[b]
    return bool(own_a & own_b or own_a & up_b or own_b & up_a)


def is_verb(word: str) -> bool:
    """Whether ``word`` (lower case, as written) is the base form of a WordNet verb: an imperative opens with one."""
    return word in _verb_lemmas()


def manner_adverb(word: str) -> bool:
    """Whether ``word`` is an adverb formed with *-ly* ("remotely", "automatically"): not a verb ("apply"), and
    long enough not to be one of the short adjectives in *-ly* ("early", "daily")."""
    return word.endswith("ly") and len(word) > 6 and not verb_form(word)


def adjective_of(adverb: str) -> str:
    """The adjective a manner adverb is formed from, when the opposites know it (*automatically* → *automatic*,
    *manually* → *manual*: the suffixes *-ly*, *-ally* after *-ic*, and *-ly* for *-le*), else ``""``."""
    if not manner_adverb(adverb):
        return ""
    for adj in (adverb[:-4] if adverb.endswith("ically") else "", adverb[:-2], adverb[:-1] + "e"):
        if adj and _key(adj) in _opposites():
            return adj
    return ""


def verb_form(word: str) -> bool:
    """Whether ``word`` can be a form of a WordNet verb: its base, or the base with *-s*, *-es*, *-ed*, *-ing*
    ("closes", "accepted", "storing")."""
    if is_verb(word):
        return True
    for suffix, back in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2 and is_verb(word[: -len(suffix)] + back):
            return True
    return False


@lru_cache(maxsize=1)
def _verb_lemmas() -> frozenset[str]:
    return frozenset(line.split("\t", 1)[0] for line in _VERBS.read_text(encoding="utf-8").splitlines()
                     if not line.startswith("#"))


def _affixed(a: str, b: str) -> bool:
    """Whether word ``b`` is ``a`` with a negative affix (words, not stems: ``eligible`` / ``ineligible``)."""
    if len(a) < 4:
        return False
    for p in _NEG_PREFIXES:
        if b == p + a:
            return True
    if _LATINATE_ADJ.search(a):
        return any(b == p + a for p in _LATINATE)
    return a.endswith("ful") and b == a[:-3] + "less"


@lru_cache(maxsize=262144)
def opposite(a: str, b: str, word_a: str = "", word_b: str = "") -> str:
    """Whether stems ``a`` and ``b`` (of words ``word_a``, ``word_b``) are opposites: ``"v"`` for verbs (a
    predicate and its opposite), ``"a"`` for adjectives and negative affixes (which may also tell two cases apart:
    "domestic" / "international" parcels), ``""`` when they are not.

    Examples:
        >>> opposite(stem("accept"), stem("rejected")), opposite(stem("mandatory"), stem("optional"))
        ('v', 'a')
        >>> opposite("refund", "nonrefund", "refundable", "nonrefundable"), opposite(stem("send"), stem("email"))
        ('a', '')
    """
    if a == b:
        return ""
    found = _opposites().get(a, {}).get(b)
    if found:
        return found
    wa, wb = word_a or a, word_b or b
    if _affixed(wa, wb) or _affixed(wb, wa) or any(a == p + b or b == p + a for p in _NEG_PREFIXES if
                                                   min(len(a), len(b)) >= 4):  # stems: "encrypt" / "unencrypt"
        return "a"
    return ""


@lru_cache(maxsize=262144)
def opposite_or_synonym(a: str, b: str, word_a: str = "", word_b: str = "") -> str:
    """:func:`opposite`, or a verb opposite of a synonym (:func:`same_action`) of the other: ``deny`` is the
    opposite of ``grant``, a synonym of ``approve``... only when WordNet says so for both links."""
    found = opposite(a, b, word_a, word_b)
    if found:
        return found
    for c, kind in _opposites().get(a, {}).items():
        if kind == "v" and c != b and same_action(c, b):
            return "v"
    for c, kind in _opposites().get(b, {}).items():
        if kind == "v" and c != a and same_action(c, a):
            return "v"
    return ""


# ------------------------------------------------------------------------------------------------------ polarity
NEGATION = frozenset({"not", "never", "no", "cannot", "skip", "avoid", "without", "refrain", "forbid", "forbidden",
                      "prohibit", "prohibited", "neither", "nor", "nothing", "none"}) | EXCLUSION_VERBS
FAILURE = frozenset({"fail", "failed", "fails", "failure", "rejected", "refused", "errored"})
_WAITING = frozenset({"waiting", "awaiting"})  # "without waiting for X" orders, it does not negate
_COMPARATIVES = frozenset({"more", "fewer", "less", "later", "earlier", "longer", "greater", "sooner"})


def _bounding(tokens: list[Token], i: int) -> bool:
    """Whether the negation cue at ``i`` turns a bound over rather than the clause: "no more than", "never send
    more than 2", "must not exceed"."""
    ahead = [t.text for t in tokens[i + 1:i + 6]]
    if ahead[:1] and ahead[0] in _COMPARATIVES:
        return True
    return any(w in _COMPARATIVES and nxt == "than" for w, nxt in zip(ahead, ahead[1:])) or any(
        w.startswith("exceed") or w.startswith("surpass") for w in ahead[:3])


def negations(tokens: list[Token], *, bounds: bool = False) -> int:
    """Negation cues of the clause (``bounds``: only those that turn a bound over); a cue that opens a bound
    phrase ("no more than", "not later than") is the bound itself and counts for neither."""
    return sum(t.kind == "word" and t.text in NEGATION and _bounding(tokens, i) == bounds
               and not (i + 1 < len(tokens) and tokens[i + 1].text in _COMPARATIVES | _WAITING)
               for i, t in enumerate(tokens))


def negative(tokens: list[Token]) -> bool:
    """Whether a clause is negated (an odd number of cues: "never skip X" asserts X); a cue on a bound ("never more
    than twice") negates the bound, not the clause."""
    return negations(tokens) % 2 == 1


def bound_negated(tokens: list[Token]) -> bool:
    """Whether a clause's bounds are turned over ("never more than once": at most once)."""
    return negations(tokens, bounds=True) % 2 == 1


def failed_clause(tokens: list[Token]) -> bool:
    """Whether a clause reports a failure ("T failed when called after P")."""
    return any(t.kind == "word" and t.text in FAILURE for t in tokens)
