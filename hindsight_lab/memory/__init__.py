"""The memory system (DESIGN §1–2): :class:`MemorySystem` and the rooms it is built from — writes, dedup, merge and
promotion (``writes``), decay, archive and the conflict pass (``maintain``), later evidence against stored successes
(``evidence``), retrieval bookkeeping (``retrievals``), L1 working memory (``working``), decay rules (``decay``),
validated write input (``inputs``), the reflection port (``port``), JSONL export and import (``export``), the
list and inspect views (``listing``)."""

from .maintain import MaintenanceReport
from .system import MemorySystem

__all__ = ["MaintenanceReport", "MemorySystem"]
