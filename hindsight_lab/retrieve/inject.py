"""Rendering the injection block (article §4.4) and fitting it to the token budget.

Rules (L3, and L2 candidate rules) go to the system prompt as "general rules", episodes before the user query as
"similar past tasks", L1 working memory after the history as "current state". Every memory line carries its
source tag, e.g. ``[L3#a1b2c3]``. The budget counts every line and section header with the one token counter;
WordPiece tokens never span a line break, so the block's count is the sum of its parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

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


def fit_budget(records: Sequence[MemoryRecord], must: Sequence[bool], budget: int,
               count: Callable[[str], int]) -> tuple[list[int], list[int]]:
    """Indices of ``records`` (already in rank order) that fit ``budget``, and each one's line tokens.

    ``must`` records (L1 state, then triggered rules) are placed first; the others follow in rank order and the
    first one that does not fit ends the block. Section headers are charged when their section opens.
    Returns the kept indices in their original order and the token count of every record's line.
    """
    line_tokens = [count(render_line(r)) for r in records]
    header_tokens = {name: count(text) for name, text in HEADERS.items()}
    used, opened, kept = 0, set(), []

    def cost(i: int) -> int:
        sec = section_of(records[i])
        return line_tokens[i] + (0 if sec in opened else header_tokens[sec])

    for i in [i for i, m in enumerate(must) if m] + [i for i, m in enumerate(must) if not m]:
        c = cost(i)
        if used + c > budget:
            if must[i]:
                continue  # the budget wins over a guarantee; a shorter forced record may still fit
            break
        used += c
        opened.add(section_of(records[i]))
        kept.append(i)
    return sorted(kept), line_tokens


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
