"""The systems a replay puts side by side (DESIGN §6), behind one small interface.

- ``none``: injects nothing.
- ``dense``: every episode stored (its L2 episode text, the same text hindsight stores), vector top-k — the
  "store everything" school.
- ``bm25``: the same texts, BM25 top-k (``bm25s``).
- ``dense+ok``, ``bm25+ok``: the same, holding only the episodes that succeeded — what a careful user keeps when
  the memory should show what worked (the ``outcome`` judging mode).
- ``hindsight``: this system, any config; after each episode, ``MemorySystem.reflect`` writes its record and
  reflects where a trigger fires.

All of them share the replay's ``top_k``, token budget, renderer and token counter: what they inject is rendered with
the same :func:`~hindsight_lab.retrieve.inject.render_line` and cut by the same
:func:`~hindsight_lab.retrieve.inject.fit_budget`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from ..config import LabConfig
from ..retrieve.inject import fit_budget
from ..trace.summary import episode_key, summarise
from ..trace import Episode
from ..types import Kind, MemoryRecord, SeededIds


BASELINE_KEY = "request_tools"
"""What the store-everything baselines index for each episode: the request and the names of the tools called.
Measured on the development replays against the stored summary (the first baselines' text), it served both
baselines better on tau-bench and on the tau2 cross-agent replays (see the README)."""
CONVERSATION_BASELINE_KEY = "summary"
"""What they index for a conversation turn (LoCoMo, which calls no tools): the stored summary, which served both
baselines better there than the turn's text alone (see the README)."""


@dataclass(frozen=True, slots=True)
class Injected:
    """One injected memory, as judged: its id, kind and the episodes it came from."""

    memory_id: str
    kind: str
    source_episode_ids: tuple[str, ...]
    tokens: int


class ReplaySystem(Protocol):
    name: str

    def recall(self, query: str, now: datetime) -> list[Injected]: ...

    def observe(self, episode: Episode, now: datetime) -> None: ...

    def maintain(self, now: datetime) -> None: ...

    def stored(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(memory_id, source_episode_ids)`` of every unarchived record (for oracle hit@k)."""

    def counts(self) -> dict[str, int]: ...

    def close(self) -> None: ...


class NoMemory:
    """The ``none`` baseline."""

    def __init__(self, name: str = "none") -> None:
        self.name = name

    def recall(self, query: str, now: datetime) -> list[Injected]:
        return []

    def observe(self, episode: Episode, now: datetime) -> None:
        pass

    def maintain(self, now: datetime) -> None:
        pass

    def stored(self) -> list[tuple[str, tuple[str, ...]]]:
        return []

    def counts(self) -> dict[str, int]:
        return {"L2": 0, "L3": 0}

    def recall_changes_state(self, span: timedelta) -> bool:
        """Whether a recall can change what later recalls return (never: it holds nothing)."""
        return False

    def close(self) -> None:
        pass


class _EpisodeTexts:
    """Shared by the store-everything baselines: one record per episode with hindsight's L2 episode text, found
    by its ``key`` text (an ``episode.key`` value); with ``successes_only``, only the episodes that succeeded."""

    def __init__(self, name: str, top_k: int, budget: int, count: Any, summary_chars: int,
                 key: str = BASELINE_KEY, successes_only: bool = False) -> None:
        self.name, self.top_k, self.budget, self.count, self.summary_chars = name, top_k, budget, count, summary_chars
        self.key, self.successes_only = key, successes_only
        self.records: list[MemoryRecord] = []

    def keeps(self, episode: Episode) -> bool:
        """Whether this baseline stores the episode."""
        return not self.successes_only or episode.outcome == "success"

    def _record(self, episode: Episode, now: datetime) -> MemoryRecord:
        return MemoryRecord(id=f"epis-{len(self.records):012x}", kind=Kind.EPISODE,
                            content=summarise(episode, self.summary_chars), key=episode_key(episode, self.key),
                            source_episode_ids=(episode.episode_id,), created_at=episode.started_at or now)

    def _inject(self, ranked: Sequence[int]) -> list[Injected]:
        recs = [self.records[i] for i in ranked[: self.top_k]]
        kept, tokens = fit_budget(recs, [False] * len(recs), self.budget, self.count)
        return [Injected(recs[i].id, "episode", recs[i].source_episode_ids, tokens[i]) for i in kept]

    def maintain(self, now: datetime) -> None:
        pass

    def stored(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(r.id, r.source_episode_ids) for r in self.records]

    def counts(self) -> dict[str, int]:
        return {"L2": len(self.records), "L3": 0}

    def recall_changes_state(self, span: timedelta) -> bool:
        """Whether a recall can change what later recalls return (never: recall only reads the records)."""
        return False

    def close(self) -> None:
        pass


class DenseTopK(_EpisodeTexts):
    """The ``dense`` baseline: exact cosine top-k over the embeddings of the stored episode texts."""

    def __init__(self, embedder: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.embedder = embedder
        self._vectors: list[np.ndarray] = []

    def recall(self, query: str, now: datetime) -> list[Injected]:
        if not self.records:
            return []
        sims = np.stack(self._vectors) @ self.embedder.embed_query(query)
        return self._inject(np.argsort(-sims, kind="stable"))

    def observe(self, episode: Episode, now: datetime) -> None:
        if not self.keeps(episode):
            return
        rec = self._record(episode, now)
        self.records.append(rec)
        self._vectors.append(self.embedder.embed([rec.embed_text])[0])


class BM25TopK(_EpisodeTexts):
    """The ``bm25`` baseline over the same texts (``bm25s``, Lucene variant, English stopwords)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._index: Any = None

    def recall(self, query: str, now: datetime) -> list[Injected]:
        import bm25s

        if not self.records:
            return []
        if self._index is None:
            self._index = bm25s.BM25()
            self._index.index(bm25s.tokenize([r.embed_text for r in self.records], show_progress=False),
                              show_progress=False)
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:
            return []
        k = min(self.top_k, len(self.records))
        docs, scores = self._index.retrieve(tokens, k=k, show_progress=False)
        return self._inject([int(d) for d, s in zip(docs[0], scores[0]) if s > 0])

    def observe(self, episode: Episode, now: datetime) -> None:
        if not self.keeps(episode):
            return
        self.records.append(self._record(episode, now))
        self._index = None  # bm25s indexes are static: rebuilt lazily at the next recall


class Hindsight:
    """This system on its own fresh store (with ``drop_store``, deleted when the system is closed)."""

    def __init__(self, mem: Any, name: str = "hindsight", top_k: int = 10, reflect: bool = True,
                 capture: bool = False, drop_store: bool = False) -> None:
        self.name, self.mem, self.top_k, self.reflect = name, mem, top_k, reflect
        self.drop_store = drop_store
        self.captured: list[Any] | None = [] if capture else None
        """With ``capture``: every recall's :class:`~hindsight_lab.retrieve.result.CandidateSet`, in call order
        (one per episode; what the sweep's evaluator caches)."""

    def recall(self, query: str, now: datetime) -> list[Injected]:
        res = self.mem.search(query, top_k=self.top_k, now=now, explain=self.captured is not None)
        if self.captured is not None:
            self.captured.append(res.candidates)
        return [Injected(h.id, h.record.kind.value, h.record.source_episode_ids, h.tokens) for h in res.hits]

    def observe(self, episode: Episode, now: datetime) -> None:
        if self.reflect:
            self.mem.reflect(episode, now=now)
        else:
            self.mem.write_episode(episode, now=now)

    def maintain(self, now: datetime) -> None:
        self.mem.maintain(now)

    def stored(self) -> list[tuple[str, tuple[str, ...]]]:
        return self.mem.stored_sources()

    def counts(self) -> dict[str, int]:
        st = self.mem.stats()
        return {"L2": st["L2"], "L3": st["L3"], "episodes": st["episodes"], "candidates": st["candidates"],
                "rules": st["rules"], "archived": st["archived"]}

    def close(self) -> None:
        self.mem.close()
        if self.drop_store:
            self.mem.store.drop()

    def recall_changes_state(self, span: timedelta) -> bool:
        """Whether, in a replay whose clock spans ``span``, a recall can change what later recalls return.

        A search writes only retrieval bookkeeping (``retrieval.track_retrievals``): ``last_retrieved_at`` and
        ``debug_trace``, never read by ranking, and ``last_triggered_at`` of every rule whose trigger matched. Of
        these, ``last_retrieved_at`` is read by ``decay.archive_unretrieved`` (off in replays unless retrieval
        effects are asked for) and ``last_triggered_at`` by rule decay, which can only act once a rule is
        ``min(decay.l3_decay_days, decay.l3_archive_days)`` old — never in a replay that spans less.
        """
        cfg = self.mem.config_
        if not cfg.retrieval.track_retrievals:
            return False
        if cfg.decay.archive_unretrieved:
            return True
        return span >= timedelta(days=min((*cfg.decay.l3_decay_days, cfg.decay.l3_archive_days)))

    def wrap_reflector(self, wrap: Callable[[Any], Any]) -> Any:
        """Replace this system's reflector by ``wrap(reflector)`` (e.g. one that journals its answers); returns
        the wrapper. Call before the first ``observe``."""
        wrapped = wrap(self.mem.reflector)
        self.mem.set_reflector(wrapped)
        return wrapped


def replay_config(cfg: LabConfig, *, top_k: int, token_budget: int, retrieval_effects: bool = False) -> LabConfig:
    """A config as a replay runs it: the shared top_k and budget; retrieval-driven effects (archiving what was
    not retrieved) off unless asked for (DESIGN §6)."""
    return cfg.with_params({"retrieval.top_k": top_k, "retrieval.token_budget": token_budget,
                            "decay.archive_unretrieved": bool(retrieval_effects and cfg.decay.archive_unretrieved)})


BASELINES = ("none", "dense", "bm25", "dense+ok", "bm25+ok")


def check_systems(names: Sequence[str], configs: Mapping[str, LabConfig] | None = None) -> None:
    """Every name is a baseline, ``hindsight`` or a key of ``configs``, and none is given twice.

    Raises:
        ConfigError: naming the unknown (or repeated) system and the known ones.
    """
    from ..errors import ConfigError

    known = list(BASELINES) + ["hindsight"] + sorted(configs or {})
    if isinstance(names, str) or not names:
        raise ConfigError(f"systems: expected a list of names from {known} (got {names!r})")
    for name in names:
        if name not in known:
            raise ConfigError(f"systems: unknown system {name!r}; expected names from {known}")
    if len(set(names)) < len(names):
        raise ConfigError(f"systems: a system is named twice in {list(names)}")


def build_systems(names: Sequence[str], *, config: LabConfig, embedder: Any, top_k: int, token_budget: int,
                  root: str | None = None, configs: Mapping[str, LabConfig] | None = None,
                  retrieval_effects: bool = False, capture: bool = False, baseline_key: str | None = None) -> list[ReplaySystem]:
    """Fresh systems for one replay. Names are ``none``, ``dense``, ``bm25``, ``hindsight`` or any name listed in
    ``configs`` (several hindsight configs side by side); each hindsight system gets its own store: an embedded
    Chroma folder under ``root``, or without ``root`` an in-memory Chroma store, deleted when the system is closed.
    With ``capture``, hindsight systems keep every recall's candidates (:attr:`Hindsight.captured`).
    ``baseline_key`` is the text ``dense`` and ``bm25`` index (an ``episode.key`` value; default
    :data:`BASELINE_KEY`). When the config's ``store.url`` is a Postgres URL, a hindsight system's store is a fresh
    namespace of that database instead.
    """

    from ..embed import TokenCounter
    from ..memory import MemorySystem
    from ..store import is_postgres_url

    counter = TokenCounter.for_embedder(embedder)
    shared = dict(top_k=top_k, budget=token_budget, count=counter.count,
                  summary_chars=config.episode.summary_max_chars, key=baseline_key or BASELINE_KEY)
    out: list[ReplaySystem] = []
    for name in names:
        if name == "none":
            out.append(NoMemory())
        elif name in ("dense", "dense+ok"):
            out.append(DenseTopK(embedder, name=name, successes_only=name.endswith("+ok"), **shared))
        elif name in ("bm25", "bm25+ok"):
            out.append(BM25TopK(name=name, successes_only=name.endswith("+ok"), **shared))
        elif name == "hindsight" or (configs and name in configs):
            cfg = replay_config((configs or {}).get(name, config), top_k=top_k, token_budget=token_budget,
                                retrieval_effects=retrieval_effects)
            mem = MemorySystem(cfg, store=_fresh_store(cfg, name, root), embedder=embedder,
                               ids=SeededIds(name)).open()
            out.append(Hindsight(mem, name=name, top_k=top_k, capture=capture,
                                 drop_store=root is None and not is_postgres_url(cfg.store.url)))
        else:
            check_systems([name], configs)  # raises: the name is unknown
    return out


def _fresh_store(cfg: LabConfig, name: str, root: str | None) -> Any:
    """A new, empty store for one hindsight system of a replay (in memory without ``root``)."""
    import uuid

    from ..store import is_postgres_url, store_for
    from ..store.chroma import ChromaStore

    tag = f"{name[:20]}-{uuid.uuid4().hex[:8]}"
    if is_postgres_url(cfg.store.url):
        return store_for(cfg.store.model_copy(update={"namespace": "replay-" + tag.replace("+", "-")}))
    if root is None:
        return ChromaStore.in_memory(tag)
    return ChromaStore(namespace=tag, path=f"{root}/{tag}")
