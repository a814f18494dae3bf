"""L1 working memory: the state of the one task in progress, destroyed when it ends (DESIGN §1)."""

from __future__ import annotations

from typing import Any, Iterator

from ..types import Kind, MemoryRecord


class WorkingMemory:
    """Key → value notes of the current task (intermediate results, tool returns, variables).

    Never stored: it lives inside ``MemorySystem.working_memory(task_id)`` and is injected first, as
    "current state", in every search made inside that block.

    Examples:
        >>> wm = WorkingMemory("t1"); wm["order"] = "#42 (paid)"; len(wm)
        1
    """

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self._items: dict[str, str] = {}

    def __setitem__(self, key: str, value: Any) -> None:
        self._items[str(key)] = str(value)

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def put(self, key: str, value: Any) -> None:
        self[key] = value

    def clear(self) -> None:
        self._items.clear()

    def records(self) -> list[MemoryRecord]:
        """The notes as L1 records, in insertion order (ids are stable within the task)."""
        return [MemoryRecord(id=f"work-{self.task_id}-{i}", kind=Kind.WORKING, content=f"{k}: {v}",
                             confidence=1.0)
                for i, (k, v) in enumerate(self._items.items())]
