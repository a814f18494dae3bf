"""`LabConfig` and its sections: how hindsight memory writes, recalls and reflects.

- :mod:`~hindsight_lab.config.lab`: :class:`LabConfig` (construction, YAML, dotted overrides, introspection) and
  :class:`Provenance`.
- :mod:`~hindsight_lab.config.store`: the embedding model, the store, the HNSW index.
- :mod:`~hindsight_lab.config.lifecycle`: episode records, dedup, promotion, feedback, decay.
- :mod:`~hindsight_lab.config.retrieval`: recall paths, rerank weights, the task-type classifier, injection.
- :mod:`~hindsight_lab.config.reflect`: compression, triggers, validation rules, the reflector and its LLM.
- :mod:`~hindsight_lab.config.conflicts`: the conflict pass and its LLM judge.
- :mod:`~hindsight_lab.config.base`: the section base, ``affects`` markers, YAML and dotted-key helpers.

Examples:
    >>> from hindsight_lab.config import LabConfig
    >>> cfg = LabConfig().with_params({"retrieval.weights.semantic": 0.6, "retrieval.top_k": 10})
    >>> cfg.retrieval.weights.semantic, cfg.flat()["retrieval.top_k"]
    (0.6, 10)
"""

from __future__ import annotations

from .base import (
    RECALL,
    REFLECT,
    WRITE,
    Section,
    affects,
    describe_validation_error,
    env_var_name,
    read_yaml_mapping,
    shown_env_name,
)
from .conflicts import ConflictsConfig, LLMJudgeConfig
from .lab import SCHEMA_VERSION, SERVER_MOVED, LabConfig, Provenance
from .lifecycle import DecayConfig, DedupConfig, EpisodeConfig, FeedbackConfig, PromotionConfig
from .reflect import (
    CompressConfig,
    LLMReflectorConfig,
    ReflectConfig,
    ReflectionRulesConfig,
    ReflectTriggersConfig,
)
from .retrieval import ClassifierConfig, RetrievalConfig, WeightsConfig
from .store import EmbedderConfig, HnswConfig, StoreConfig

__all__ = [
    "RECALL", "REFLECT", "SCHEMA_VERSION", "WRITE",
    "ClassifierConfig", "CompressConfig", "ConflictsConfig", "DecayConfig", "DedupConfig", "EmbedderConfig",
    "EpisodeConfig", "FeedbackConfig", "HnswConfig", "LLMJudgeConfig", "LLMReflectorConfig", "LabConfig",
    "PromotionConfig", "Provenance", "ReflectConfig", "ReflectTriggersConfig", "ReflectionRulesConfig",
    "RetrievalConfig", "SERVER_MOVED", "Section", "StoreConfig", "WeightsConfig",
    "affects", "describe_validation_error", "env_var_name", "read_yaml_mapping", "shown_env_name",
]

