"""The memory server's own settings (``hindsight-lab serve``): tool names, input limits, the namespace lock, the
maintenance schedule and the bearer token's variable.

They say how the service runs, not what memory does, so they live with the server and not in
:class:`~hindsight_lab.config.LabConfig` (and ``export`` never writes them). A served config file is a LabConfig YAML
that may also hold a ``server:`` section: :func:`load_served` reads the file once into both, and sends dotted
overrides named ``server.<key>`` to the server's settings, the others to the LabConfig. :func:`served_yaml` writes
such a file.

Examples:
    >>> lab, settings = load_served(None, {"server.tool_prefix": "team_", "retrieval.top_k": 3})
    >>> settings.tool_prefix, lab.retrieval.top_k
    ('team_', 3)
    >>> ServerConfig().with_params({"lock_wait": 5})
    Traceback (most recent call last):
    ...
    hindsight_lab.errors.ConfigError: unknown config key 'server.lock_wait'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pydantic import Field, ValidationError

from ..config.base import Section, describe_validation_error, plain, read_yaml_mapping
from ..config.lab import LabConfig
from ..errors import ConfigError

SECTION = "server"
"""The key of the server's section in a served config file, and the prefix of its dotted overrides."""


class ServerConfig(Section):
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
    batch_embeddings: bool = True
    """Concurrent calls share model passes: a query or text that arrives while the model is busy is embedded with
    the others waiting, in the next pass (:class:`~hindsight_lab.embed.batching.BatchingEmbedder`); a lone call
    never waits. Searches embed their query before they wait for their namespace."""
    maintenance_interval_s: float = Field(3600.0, ge=0)
    """Seconds between runs of maintenance (decay, archive, conflicts) over every open namespace; the first run
    comes one interval after start; 0 turns the schedule off."""
    token_env: str = Field("HINDSIGHT_MCP_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Name of the environment variable that holds the bearer token of the HTTP transport (never the token
    itself). When it is set, every HTTP request needs ``Authorization: Bearer <token>``; a bind to a non-loopback
    address is refused without it."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, source: str = "config") -> "ServerConfig":
        """Validate a ``server:`` section; a bad field raises :class:`ConfigError` naming ``server.<field>`` and the
        source."""
        try:  # anything but a mapping (a list, a number) is refused by the validation, naming the section
            return cls.model_validate(dict(data) if isinstance(data, Mapping) else ({} if data is None else data))
        except ValidationError as exc:
            raise ConfigError(describe_validation_error(exc, source, prefix=f"{SECTION}.")) from None

    def with_params(self, params: Mapping[str, Any]) -> "ServerConfig":
        """A copy with overrides applied (keys as in the section, ``tool_prefix``), validated as a whole; an unknown
        key raises :class:`ConfigError` naming it."""
        data = self.model_dump(mode="python")
        for key, value in params.items():
            if key not in type(self).model_fields:
                raise ConfigError(f"unknown config key {f'{SECTION}.{key}'!r}")
            data[key] = value
        return type(self).from_dict(data, source="with_params")

    def to_dict(self) -> dict[str, Any]:
        """The section as a plain dict, in field order."""
        return plain(self.model_dump(mode="json"))

    @classmethod
    def describe(cls) -> dict[str, str]:
        """``server.<field>`` → its documentation."""
        return {f"{SECTION}.{name}": info.description or "" for name, info in cls.model_fields.items()}


def load_served(path: str | Path | None, overrides: Mapping[str, Any] | None = None
                ) -> tuple[LabConfig, ServerConfig]:
    """A served config file (default: the defaults) with dotted overrides: its ``server:`` section and the
    ``server.<key>`` overrides make the :class:`ServerConfig`, the rest the :class:`LabConfig`.

    Raises:
        ConfigError: the file or an override is invalid (the message names the file and the key).
    """
    data = dict((read_yaml_mapping(path, "config file") if path is not None else None) or {})
    source = str(path) if path is not None else "config"
    section = data.pop(SECTION, None)
    settings = ServerConfig.from_dict(section, source=source)
    lab = LabConfig.from_dict(data, source=source)
    lab_params: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        if key == SECTION:  # a whole section, as LabConfig.with_params took it: missing fields take defaults
            settings = ServerConfig.from_dict(value, source="with_params")
        elif key.startswith(f"{SECTION}."):
            settings = settings.with_params({key.removeprefix(f"{SECTION}."): value})
        elif key in ServerConfig.model_fields:
            raise ConfigError(f"unknown config key {key!r}; did you mean '{SECTION}.{key}'?")
        else:
            lab_params[key] = value
    return (lab.with_params(lab_params) if lab_params else lab), settings


def served_yaml(config: LabConfig, settings: ServerConfig, path: str | Path | None = None) -> str:
    """YAML of a served config file: ``config`` with ``settings`` as its ``server:`` section (before
    ``provenance``), also written to ``path`` when given. :func:`load_served` reads it back."""
    import yaml

    data = config.to_dict()
    provenance = data.pop("provenance", None)
    data[SECTION] = settings.to_dict()
    data["provenance"] = provenance  # last, where LabConfig.to_yaml writes it
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return text
