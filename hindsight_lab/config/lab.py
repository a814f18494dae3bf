"""`LabConfig`: the one configuration of hindsight_lab, made of the sections of this package.

It is both the parameter space a sweep explores and the artifact production runs: a frozen pydantic model with
``extra="forbid"``, a docstring on every field (it becomes the field's description), and a marker on every field
that changes what memory writes, recalls or reflects (``affects``). ``export`` writes exactly those marked fields,
plus the optional ``provenance`` block.

Examples:
    >>> cfg = LabConfig().with_params({"retrieval.weights.semantic": 0.6, "retrieval.top_k": 10})
    >>> cfg.retrieval.weights.semantic, cfg.flat()["retrieval.top_k"]
    (0.6, 10)
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ValidationError, model_validator

from ..errors import ConfigError
from .base import Section, describe_validation_error, flatten, plain, read_yaml_mapping, set_dotted
from .conflicts import ConflictsConfig
from .lifecycle import DecayConfig, DedupConfig, EpisodeConfig, FeedbackConfig, PromotionConfig
from .reflect import ReflectConfig
from .retrieval import RetrievalConfig
from .store import EmbedderConfig, StoreConfig

SCHEMA_VERSION = 1

SERVER_MOVED = ("server settings now belong to hindsight_lab.server.config.ServerConfig; hindsight-lab serve reads "
                "the section from the same file")
"""Why LabConfig refuses a ``server`` key and drops a ``server`` section (it used to hold the server's settings)."""


class Provenance(Section):
    """Where an exported config came from. No machine paths, no secrets."""

    run_id: str | None = None
    """MLflow run id of the sweep trial."""
    dataset_sha256: str | None = None
    """Hash of the dataset the config was tuned on."""
    metrics: dict[str, float] = {}
    """Headline metrics of the tuned config."""
    package_version: str | None = None
    """hindsight_lab version that produced it."""


class LabConfig(Section):
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
    provenance: Provenance | None = None
    """Where this config came from (set by export)."""

    @model_validator(mode="after")
    def _some_weight(self) -> "LabConfig":
        w = self.retrieval.weights
        if not any(getattr(w, name) for name in type(w).model_fields if name != "redundancy"):
            raise ValueError("retrieval.weights: at least one positive term weight is needed")
        return self

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, source: str = "config") -> "LabConfig":
        """Validate a nested mapping; a bad field raises :class:`ConfigError` naming it and the source.

        A ``server`` section (where LabConfig used to hold the server's settings) is ignored with a
        ``DeprecationWarning``: :func:`hindsight_lab.server.config.load_served` reads it.
        """
        return cls._validated(data, source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "LabConfig":
        """Load a YAML file (as written by :meth:`to_yaml` or ``export``)."""
        return cls._validated(read_yaml_mapping(path, "config file"), str(path))

    @classmethod
    def _validated(cls, data: Mapping[str, Any] | None, source: str) -> "LabConfig":
        data = dict(data or {})
        if "server" in data:  # for one release; then it is an unknown key like any other
            del data["server"]
            warnings.warn(f"{source}: its server section is ignored: {SERVER_MOVED}", DeprecationWarning,
                          stacklevel=3)  # the caller of from_dict / from_yaml
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(describe_validation_error(exc, source)) from None

    def to_dict(self, *, only_behaviour: bool = False) -> dict[str, Any]:
        """Nested plain dict (tuples as lists). ``only_behaviour`` keeps only fields marked ``affects``, plus
        ``schema_version`` and ``provenance``."""
        data = plain(self.model_dump(mode="json"))
        if not only_behaviour:
            return data
        keep = set(self.behaviour_fields())
        out: dict[str, Any] = {"schema_version": self.schema_version}
        for dotted, value in flatten(data).items():
            if dotted in keep:
                set_dotted(out, dotted, value)
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
            if key.split(".")[0] == "server":  # not ignored: the caller would believe the setting is in effect
                raise ConfigError(f"{key}: {SERVER_MOVED}: give it to the server as ServerConfig, or as "
                                  f"hindsight-lab serve --set {key}=...")
            if key not in known:
                close = [k for k in sorted(known) if k.split(".")[-1] == key.split(".")[-1]]
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown config key {key!r}{hint}")
            set_dotted(data, key, value)
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

