"""How a stored or asked request is worded for the task-type classifier (:mod:`.classify`): names, places, numbers
and e-mail addresses masked (:func:`mask_entities`), a task type's tools as words (:func:`describe_tools`), and the
words by which a request differs from another about its instance (:func:`contrast_text`).

Examples:
    >>> mask_entities("Refund order 4821 for Alice Chen (alice@example.com) in Denver.")
    'Refund order <num> for <name> <name> (<email>) in <name>.'
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_WITH_DIGIT = re.compile(r"\b\w*\d\w*\b")
_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_NAME_PART = re.compile(r"[A-Za-z]+|\d+")


def mask_entities(text: str) -> str:
    """Replace e-mail addresses, tokens with a digit (ids, amounts, dates) and capitalised words that do not start
    a sentence (names, places) by placeholders."""
    text = _WITH_DIGIT.sub("<num>", _EMAIL.sub("<email>", text))

    def name(m: re.Match[str]) -> str:
        word, before = m.group(), text[max(0, m.start() - 20):m.start()].rstrip()
        starts_sentence = (not before and m.start() < 20) or before[-1:] in (".", "!", "?", ":", ";", '"')
        return "<name>" if word[0].isupper() and not starts_sentence and word != "I" else word

    return _WORD.sub(name, text)


def describe_tools(tools: Iterable[str]) -> str:
    """The words of tool names, each tool once, in sorted order: how ``embedding`` describes a task type.

    Examples:
        >>> describe_tools(["lookup_order", "issue_refund", "lookup_order", "getShipmentStatus"])
        'get shipment status issue refund lookup order'
    """
    words = []
    for name in sorted(set(tools), key=str.lower):
        spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
        words.append(" ".join(w.lower() for w in _NAME_PART.findall(spaced)))
    return " ".join(w for w in words if w)


_TOKEN = re.compile(r"<\w+>|[A-Za-z][\w'’-]*")


def contrast_text(masked: str, others: Sequence[str]) -> str:
    """The words of a masked request by which it differs from another masked request about its instance: those
    missing from at least one of ``others``, in the request's order ("" when every other says them all, as a
    retry does).

    Examples:
        >>> q = mask_entities("Set up an exchange on order 27214, the green grinder that Dmitri Novak bought.")
        >>> contrast_text(q, [mask_entities("Please cancel order 27214, the green grinder that Dmitri Novak bought.")])
        'Set up an exchange on'
        >>> contrast_text(q, [q])
        ''
    """
    vocabularies = [{w.lower() for w in _TOKEN.findall(o)} for o in others]
    return " ".join(w for w in _TOKEN.findall(masked) if any(w.lower() not in v for v in vocabularies))
