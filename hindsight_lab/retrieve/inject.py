"""Rendering the injection block (article §4.4) and fitting it to the token budget.

Rules (L3, and L2 candidate rules) go to the system prompt as "general rules", episodes before the user query as
"similar past tasks", L1 working memory after the history as "current state". Every memory line carries its
source tag, e.g. ``[L3#a1b2c3]``. The budget counts every line and section header with the one token counter;
WordPiece tokens never span a line break, so the block's count is the sum of its parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..types import Kind, MemoryRecord

HEADERS = {"rules": "## General rules (from past experience)",
           "episodes": "## Similar past tasks",
           "state": "## Current state"}


def section_of(record: MemoryRecord) -> str:
    if record.kind in (Kind.RULE, Kind.CANDIDATE):
        return "rules"
    if record.kind is Kind.WORKING:
        return "state"
    return "episodes"


def render_line(record: MemoryRecord) -> str:
    """One injected line: tag, content, and for rules the counter-examples."""
    line = f"- {record.tag} {record.content.strip()}"
    if record.kind in (Kind.RULE, Kind.CANDIDATE) and record.counter_examples:
        line += " (does not hold when: " + "; ".join(c.strip() for c in record.counter_examples) + ")"
    return line


@dataclass(frozen=True, slots=True)
class Injection:
    """The rendered block, by section, with its token count."""

    rules: str
    episodes: str
    state: str
    tokens: int

    @property
    def text(self) -> str:
        """The three sections in prompt order: rules, past tasks, current state."""
        return "\n\n".join(part for part in (self.rules, self.episodes, self.state) if part)

    def __str__(self) -> str:
        return self.text


SECTIONS: tuple[str, ...] = tuple(HEADERS)
"""Section codes of :func:`keep_within_budget` (index into this tuple)."""


def fit_budget(records: Sequence[MemoryRecord], must: Sequence[bool], budget: int,
               count: Callable[[str], int]) -> tuple[list[int], list[int]]:
    """Indices of ``records`` (already in rank order) that fit ``budget``, and each one's line tokens.

    ``must`` records (L1 state, then triggered rules) are placed first; the others follow in rank order and the
    first one that does not fit ends the block. Section headers are charged when their section opens.
    Returns the kept indices in their original order and the token count of every record's line.
    """
    line_tokens = [count(render_line(r)) for r in records]
    if not records:
        return [], line_tokens
    header_tokens = np.array([count(HEADERS[name]) for name in SECTIONS])
    sections = np.array([[SECTIONS.index(section_of(r)) for r in records]])
    kept = keep_within_budget(np.array([line_tokens]), sections, np.array([must], dtype=bool),
                              header_tokens, budget)
    return np.flatnonzero(kept[0]).tolist(), line_tokens


def keep_within_budget(line_tokens: np.ndarray, sections: np.ndarray, must: np.ndarray, header_tokens: np.ndarray,
                       budget: int | np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """The budget rule of :func:`fit_budget` for many ranked lists at once (one per row; the sweep's evaluator).

    Args:
        line_tokens, sections, must: ``(C, k)``: per listed record, its line tokens, section code (index into
            :data:`SECTIONS`) and whether it is placed first.
        header_tokens: ``(3,)`` tokens of each section header.
        budget: tokens available to the block (one for all rows, or ``(C,)``).
        valid: ``(C, k)`` which slots hold a record (default all).

    Returns:
        ``(C, k)`` boolean mask of the kept records.
    """
    c, k = line_tokens.shape
    valid = np.ones((c, k), dtype=bool) if valid is None else valid
    first = np.argsort(~(must & valid), axis=1, kind="stable")  # placed first, then the rest, each in rank order
    rows = np.arange(c)
    used = np.zeros(c, dtype=np.int64)
    opened = np.zeros((c, len(SECTIONS)), dtype=bool)
    stopped = np.zeros(c, dtype=bool)
    kept = np.zeros((c, k), dtype=bool)
    for j in range(k):
        pos = first[:, j]
        sec = sections[rows, pos]
        cost = line_tokens[rows, pos] + np.where(opened[rows, sec], 0, header_tokens[sec])
        live = valid[rows, pos] & ~stopped
        fits = used + cost <= budget
        take = live & fits
        stopped |= live & ~fits & ~must[rows, pos]  # the budget wins over a guarantee; others end the block
        used += np.where(take, cost, 0)
        opened[rows[take], sec[take]] = True
        kept[rows, pos] = take
    return kept


def render(records: Sequence[MemoryRecord], count: Callable[[str], int],
           line_tokens: Sequence[int] | None = None) -> Injection:
    """Render records (in rank order) into the three sections.

    ``line_tokens`` (each record's line count, as :func:`fit_budget` returns them) saves counting again: the
    block's count is then the sum of its lines and section headers, which equals counting the whole text.
    """
    parts: dict[str, list[str]] = {"rules": [], "episodes": [], "state": []}
    for rec in records:
        parts[section_of(rec)].append(render_line(rec))
    texts = {name: (HEADERS[name] + "\n" + "\n".join(lines)) if lines else "" for name, lines in parts.items()}
    if line_tokens is None:
        tokens = sum(count(t) for t in texts.values() if t)
    else:
        tokens = sum(line_tokens) + sum(count(HEADERS[name]) for name, lines in parts.items() if lines)
    return Injection(texts["rules"], texts["episodes"], texts["state"], tokens)
