"""Reflection: compression of an episode, when to reflect, which reflections are rejected, and the reflector
(heuristic, or LiteLLM with its model settings)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .base import REFLECT, Section, affects, env_var_name


class CompressConfig(Section):
    """Episode → compressed trajectory, the only view of an episode a reflector gets (article §3.4, §8.1)."""

    max_tool_calls: int = Field(30, ge=1, json_schema_extra=affects(REFLECT))
    """Tool calls kept (first and last halves when longer; the gap is marked)."""
    max_arg_chars: int = Field(32, ge=4, json_schema_extra=affects(REFLECT))
    """Characters kept of each argument value."""
    max_errors: int = Field(5, ge=0, json_schema_extra=affects(REFLECT))
    """Errors kept, each with the step that raised it."""
    max_chars: int = Field(2000, ge=200, json_schema_extra=affects(REFLECT))
    """Length bound of the compressed text."""


class ReflectTriggersConfig(Section):
    """When to reflect: rules, never an LLM call (DESIGN §4, article §3.1)."""

    every_episode: bool = Field(False, json_schema_extra=affects(REFLECT))
    """Reflect on every episode, ignoring the rules below: the "reflect on everything" ablation that selective
    reflection is measured against."""
    on_strategy_failure: bool = Field(True, json_schema_extra=affects(REFLECT))
    """Reflect on a failure caused by strategy (failure_cause "strategy", or unknown with a tool error or a
    wrong final state)."""
    on_deviating_success: bool = Field(True, json_schema_extra=affects(REFLECT))
    """Reflect on a success whose tool path differs from the usual successful path of its task_type."""
    nth_occurrence: int = Field(3, ge=0, json_schema_extra=affects(REFLECT))
    """Reflect on the n-th occurrence of a task_type not yet reflected on (0: off)."""
    on_feedback: bool = Field(True, json_schema_extra=affects(REFLECT))
    """Reflect when the episode carries explicit user feedback."""
    skip_repeat_failure_days: float = Field(7.0, ge=0, json_schema_extra=affects(REFLECT))
    """Skip a failure whose signature (task_type + failing step) was reflected on within this many days (0: off)."""
    skip_single_turn: bool = Field(True, json_schema_extra=affects(REFLECT))
    """Never reflect on a single-turn question (no tool call, at most one user message)."""
    skip_external_failure: bool = Field(True, json_schema_extra=affects(REFLECT))
    """Never reflect on a failure caused outside the agent (failure_cause "external")."""


class ReflectionRulesConfig(Section):
    """Validation bounds of a reflection; a rejected reflection never becomes a candidate."""

    min_rule_chars: int = Field(20, ge=1, json_schema_extra=affects(REFLECT))
    """Shorter reusable_rule texts are rejected as too generic."""
    max_rule_chars: int = Field(400, ge=20, json_schema_extra=affects(REFLECT))
    """Longer reusable_rule texts are rejected as too long."""
    min_rule_words: int = Field(5, ge=1, json_schema_extra=affects(REFLECT))
    """Rules with fewer words are rejected as too generic."""
    generic_phrases: tuple[str, ...] = Field(
        ("be careful", "double check", "pay attention", "do better", "try harder", "be more careful",
         "think carefully", "follow the policy", "follow instructions"),
        json_schema_extra=affects(REFLECT))
    """A rule that is only one of these phrases (after normalisation) is rejected as too generic."""
    require_counter_examples: bool = Field(True, json_schema_extra=affects(REFLECT))
    """Reject a reflection whose counter_examples is empty (article §8.5)."""


class LLMReflectorConfig(Section):
    """The LiteLLM reflector: any LiteLLM model string, configured separately from the agent's own model."""

    model: str = Field("openai/gpt-4o-mini", json_schema_extra=affects(REFLECT))
    """LiteLLM model string, e.g. ``openai/gpt-4o-mini``, ``ollama/llama3.1``, ``openai/x`` with ``api_base``."""
    api_base: str | None = Field(None, json_schema_extra=affects(REFLECT))
    """Base URL of an OpenAI-compatible server (local servers, Ollama); None: the provider's default."""
    api_key_env: str | None = Field(None, json_schema_extra=affects(REFLECT))
    """Name of the environment variable that holds the API key (the key itself never goes in a config)."""

    _name = field_validator("api_key_env")(lambda cls, v: env_var_name(v))
    temperature: float = Field(0.0, ge=0, le=2, json_schema_extra=affects(REFLECT))
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
    output: Literal["auto", "json_schema", "json_object_schema", "json_object", "text"] = "auto"
    """Structured output: ``auto`` asks for a JSON schema and steps down to ``json_object`` with the schema (what
    llama-cpp-python's server takes), plain ``json_object``, then plain text, when the server refuses it; or one of
    them, fixed."""
    context_tokens: int | None = Field(None, ge=256)
    """The model's context window in tokens (prompt and answer); None: what LiteLLM knows of the model, else 4,096.
    Prompts are shrunk to fit it (related episodes first, then the episode's text)."""
    json_mode: bool = True
    """False sends no ``response_format`` at all (the same as ``output: text``)."""


class ReflectConfig(Section):
    """Reflection: triggers, compression, validation and the reflector (DESIGN §4)."""

    reflector: Literal["heuristic", "litellm"] = Field("heuristic", json_schema_extra=affects(REFLECT))
    """Which reflector: ``heuristic`` (offline, deterministic, the default) or ``litellm``."""
    related_k: int = Field(5, ge=0, json_schema_extra=affects(REFLECT))
    """Nearest earlier episodes (by instruction embedding, not the rerank) shown to the reflector."""
    compress: CompressConfig = CompressConfig()
    """How an episode is compressed before any reflector sees it."""
    triggers: ReflectTriggersConfig = ReflectTriggersConfig()
    """When to reflect."""
    rules: ReflectionRulesConfig = ReflectionRulesConfig()
    """When a reflection is rejected."""
    llm: LLMReflectorConfig = LLMReflectorConfig()
    """Settings of the LiteLLM reflector."""

