"""The demo story (``hindsight-lab demo`` and ``notebooks/01_quickstart.ipynb``): hand-written episodes are written
to memory one by one, each with the reflection a reviewer wrote for it; the same rule confirmed by three different
episodes is promoted to L3; then a query with lexical lures is answered with its score breakdown."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..datasets.jsonl import read_jsonl
from ..errors import HindsightLabError
from ..memory import MemorySystem
from ..retrieve.result import SearchResult
from ..trace import Episode

DEMO_QUERY = "Pull last quarter's East China sales figures."
DEMO_REFUND_QUERY = "A customer asks for a refund on order 9911."


def demo_episodes_path() -> Path:
    """``datasets/demo/episodes.jsonl`` of the project checkout."""
    path = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "episodes.jsonl"
    if not path.is_file():
        raise HindsightLabError(f"demo episodes not found at {path.name}: install the project from its checkout "
                                "(pip install -e .) so the datasets/ folder is next to the package")
    return path


@dataclass(frozen=True)
class DemoRun:
    """What the demo did: one event per write, and the two searches."""

    events: list[dict[str, Any]]
    search: SearchResult
    refund_search: SearchResult
    stats: dict[str, Any]
    now: datetime | None  # the clock of the two searches (a day after the last episode)

    def events_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.events, columns=["episode", "write", "action", "id", "layer", "hit_count",
                                                  "sources", "confidence", "promoted"])


def run_demo(mem: MemorySystem, episodes: list[Episode] | None = None) -> DemoRun:
    """Write the demo episodes and their reflections, then run the two demo searches."""
    episodes = episodes if episodes is not None else list(read_jsonl(demo_episodes_path()))
    events: list[dict[str, Any]] = []
    last = None
    for ep in episodes:
        now = ep.started_at
        rec = mem.write_episode(ep, now=now)
        events.append({"episode": ep.episode_id, "write": "episode", "action": "created", "id": rec.id,
                       "layer": rec.layer.value, "hit_count": rec.hit_count, "sources": 1,
                       "confidence": rec.confidence, "promoted": False})
        reflection = (ep.meta or {}).get("reflection")
        if reflection:
            res = mem.write(reflection["reusable_rule"], confidence=reflection["confidence"],
                            counter_examples=reflection.get("counter_examples", []),
                            trigger=reflection.get("trigger"), domain=ep.domain,
                            task_type=reflection.get("task_type"),
                            source_episode_ids=[ep.episode_id], now=now)
            events.append({"episode": ep.episode_id, "write": "rule", "action": res.action, "id": res.record.id,
                           "layer": res.record.layer.value, "hit_count": res.record.hit_count,
                           "sources": len(set(res.record.source_episode_ids)),
                           "confidence": round(res.record.confidence, 3), "promoted": res.promoted})
        last = now
    when = (last + timedelta(days=1)) if last else None
    search = mem.search(DEMO_QUERY, now=when)
    refund = mem.search(DEMO_REFUND_QUERY, now=when)
    return DemoRun(events, search, refund, mem.stats(), when)
