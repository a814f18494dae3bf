"""A rule's checkable form: what the code, not a model, can verify about a later run.

Most rules a reflector proposes are about tool order — "before issue_refund, call lookup_order and check_policy".
Such a rule carries a :class:`Check`: the tools in the order the rule asks for, the last of them the step the rule
guards. A later run **reaches** the step when it calls that tool; it **followed** the rule when the other tools
were called, in that order, before its first call of the step. Runs that never reach the step say nothing about the
rule. A rule without a check (advice no code can verify, such as "verify the arguments") is never verified by
outcomes: it keeps its reflector's confidence and is never promoted on evidence.

Examples:
    >>> c = Check(("get_order", "check_policy", "issue_refund"))
    >>> c.target, c.reaches(["get_order", "issue_refund"]), c.followed(["get_order", "check_policy", "issue_refund"])
    ('issue_refund', True, True)
    >>> c.followed(["check_policy", "get_order", "issue_refund"]), c.followed(["get_order", "issue_refund"])
    (False, False)
    >>> Check.from_dict({"kind": "order", "tools": ["a", "b"]}).to_dict()
    {'kind': 'order', 'tools': ['a', 'b']}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

KINDS: tuple[str, ...] = ("order",)
"""The checkable forms a rule may carry (one today: a tool order before a step)."""


@dataclass(frozen=True, slots=True)
class Check:
    """``tools``: the order the rule asks for; the last tool is the step it guards (at least two tools)."""

    tools: tuple[str, ...]
    kind: str = "order"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"check.kind: expected one of {KINDS} (got {self.kind!r})")
        if len(self.tools) < 2 or len(set(self.tools)) != len(self.tools) or not all(
                isinstance(t, str) and t.strip() for t in self.tools):
            raise ValueError(f"check.tools: expected two or more distinct tool names (got {list(self.tools)!r})")

    @property
    def target(self) -> str:
        """The step the rule guards."""
        return self.tools[-1]

    def reaches(self, called: Sequence[str]) -> bool:
        """Whether a run that called ``called`` (in order) reached the step."""
        return self.target in called

    def followed(self, called: Sequence[str]) -> bool:
        """Whether the run called the rule's other tools, in order, before its first call of the step."""
        if self.target not in called:
            return False
        before = iter(called[:list(called).index(self.target)])
        return all(tool in before for tool in self.tools[:-1])  # an ordered subsequence: ``in`` consumes

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tools": list(self.tools)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Check":
        """From ``{"kind": "order", "tools": [...]}``; a malformed one raises ``ValueError`` naming the field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"check: expected an object with kind and tools (got {type(data).__name__})")
        tools = data.get("tools")
        if not isinstance(tools, (list, tuple)):
            raise ValueError(f"check.tools: expected a list of tool names (got {tools!r})")
        return cls(tuple(tools), str(data.get("kind", "order")))

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> "Check | None":
        """The check stored in a record's ``attrs`` (None when there is none, or it does not parse)."""
        try:
            return cls.from_dict(data) if data else None
        except ValueError:
            return None
