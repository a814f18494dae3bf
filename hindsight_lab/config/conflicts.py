"""The conflict pass of maintenance and its optional LiteLLM contradiction judge."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .base import WRITE, Section, affects, env_var_name


class LLMJudgeConfig(Section):
    """The optional LiteLLM contradiction judge: the reflector's model-config style, its own model and limits."""

    model: str = Field("openai/gpt-4o-mini", json_schema_extra=affects(WRITE))
    """LiteLLM model string, e.g. ``openai/gpt-4o-mini``, ``ollama/llama3.1``, ``openai/x`` with ``api_base``."""
    api_base: str | None = Field(None, json_schema_extra=affects(WRITE))
    """Base URL of an OpenAI-compatible server (local servers, Ollama); None: the provider's default."""
    api_key_env: str | None = Field(None, json_schema_extra=affects(WRITE))
    """Name of the environment variable that holds the API key (the key itself never goes in a config)."""

    _name = field_validator("api_key_env")(lambda cls, v: env_var_name(v))
    temperature: float = Field(0.0, ge=0, le=2, json_schema_extra=affects(WRITE))
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


class ConflictsConfig(Section):
    """The conflict pass of maintenance (article §7.2): cluster L3 rules and L2 candidates, find contradictions,
    supersede a clearly stronger and newer rule's rival, flag close pairs so both are shown as conflicting."""

    enabled: bool = Field(True, json_schema_extra=affects(WRITE))
    """Run the conflict pass (and the duplicate merge) in ``maintain``."""
    metric: Literal["cosine", "euclidean"] = Field("cosine", json_schema_extra=affects(WRITE))
    """HDBSCAN metric: ``cosine`` (``algorithm="generic"``) or ``euclidean`` on L2-normalised vectors."""
    min_cluster_size: int = Field(2, ge=2, json_schema_extra=affects(WRITE))
    """HDBSCAN ``min_cluster_size``: the smallest group of rules that counts as a cluster."""
    min_samples: int = Field(1, ge=1, json_schema_extra=affects(WRITE))
    """HDBSCAN ``min_samples``: larger values call more rules noise."""
    cluster_selection_epsilon: float = Field(0.0, ge=0, json_schema_extra=affects(WRITE))
    """HDBSCAN ``cluster_selection_epsilon`` (in the metric's distance): clusters closer than this are merged."""
    cluster_pairs: int = Field(20, ge=0, json_schema_extra=affects(WRITE))
    """Each rule is compared with at most this many of the most similar rules of its own cluster."""
    neighbours: int = Field(5, ge=0, json_schema_extra=affects(WRITE))
    """Each rule, noise included, is also compared with this many nearest rules whatever their cluster, so no
    pair escapes the check by falling outside a cluster."""
    min_similarity: float = Field(0.5, ge=-1, le=1, json_schema_extra=affects(WRITE))
    """Pairs less similar than this (cosine) are not compared."""
    same_task_type: bool = Field(True, json_schema_extra=affects(WRITE))
    """Compare only rules of the same task_type when both have one, or whose checks guard the same step (a claim
    about what comes before a step, which every run reaching it verifies whatever its type)."""
    judge: Literal["offline", "litellm"] = Field("offline", json_schema_extra=affects(WRITE))
    """Who decides whether a pair contradicts: the offline detector (orderings, tools, negation, quantities) or
    the LiteLLM judge (``conflicts.llm``; a pair it cannot answer keeps the offline verdict)."""
    min_overlap: float = Field(0.6, gt=0, le=1, json_schema_extra=affects(WRITE))
    """Offline detector: share of one clause's content words the other rule must hold for a negation, tool or
    quantity contradiction."""
    supersede_margin: float = Field(0.1, ge=0, le=1, json_schema_extra=affects(WRITE))
    """The newer rule supersedes the older one when its strength (confidence × hits / (hits + evidence_prior))
    exceeds the older one's by at least this; otherwise both are kept and flagged as conflicting."""
    evidence_prior: float = Field(1.0, ge=0, json_schema_extra=affects(WRITE))
    """Pseudo-count that shrinks the strength of rules confirmed by few episodes (0: strength = confidence)."""
    min_newer_days: float = Field(0.0, ge=0, json_schema_extra=affects(WRITE))
    """The superseding rule must have been confirmed (else created) more than this many days after the other."""
    merge_duplicates: bool = Field(True, json_schema_extra=affects(WRITE))
    """Merge pairs at or above ``dedup.similarity`` that do not contradict and escaped dedup on write (e.g.
    imported records), as dedup on write would have."""
    block_contradicting_merge: bool = Field(True, json_schema_extra=affects(WRITE))
    """Dedup on write never merges a rule into one it contradicts (opposite orders embed close together)."""
    llm: LLMJudgeConfig = LLMJudgeConfig()
    """Settings of the LiteLLM judge."""

