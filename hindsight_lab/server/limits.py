"""Input size limits of the MCP tools (``server.*``: :class:`~hindsight_lab.server.config.ServerConfig`).

Every check raises :class:`~hindsight_lab.errors.ValidationError` naming the field, its size, the limit and the
config key that sets it, before anything reaches memory. The values themselves are never echoed.

Examples:
    >>> from hindsight_lab.server.config import ServerConfig
    >>> Limits(ServerConfig(max_query_chars=10)).text("query", "refund order 1234", "max_query_chars")
    Traceback (most recent call last):
    ...
    hindsight_lab.errors.ValidationError: query: 17 characters, over the limit of 10 (server.max_query_chars)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import ValidationError

if TYPE_CHECKING:
    from .config import ServerConfig


class Limits:
    """The checks, bound to one :class:`~hindsight_lab.server.config.ServerConfig`."""

    def __init__(self, config: "ServerConfig") -> None:
        self.config = config

    def text(self, field: str, value: str | None, key: str) -> None:
        """``value`` (when given) is at most ``server.<key>`` characters."""
        limit = getattr(self.config, key)
        if value is not None and len(value) > limit:
            raise ValidationError(f"{field}: {len(value)} characters, over the limit of {limit} (server.{key})")

    def short(self, **fields: str | None) -> None:
        """Short fields (task_type, domain, ids, namespace) are at most ``server.max_field_chars``."""
        for name, value in fields.items():
            self.text(name, value, "max_field_chars")

    def items(self, field: str, values: Iterable[str] | None) -> None:
        """A list has at most ``server.max_list_items`` items, each at most ``server.max_field_chars``."""
        values = list(values or [])
        limit = self.config.max_list_items
        if len(values) > limit:
            raise ValidationError(f"{field}: {len(values)} items, over the limit of {limit} (server.max_list_items)")
        for i, value in enumerate(values):
            self.text(f"{field}[{i}]", value, "max_field_chars")

    def top_k(self, top_k: int | None) -> None:
        limit = self.config.max_top_k
        if top_k is not None and top_k > limit:
            raise ValidationError(f"top_k: {top_k} is over the limit of {limit} (server.max_top_k)")

    def episode(self, data: dict[str, Any]) -> None:
        """An episode has at most ``server.max_episode_steps`` steps and ``server.max_episode_chars`` of JSON."""
        steps = len(data.get("steps") or [])
        if steps > self.config.max_episode_steps:
            raise ValidationError(f"episode.steps: {steps} steps, over the limit of {self.config.max_episode_steps} "
                                  "(server.max_episode_steps)")
        size = len(json.dumps(data, ensure_ascii=False, default=str))
        if size > self.config.max_episode_chars:
            raise ValidationError(f"episode: {size} characters of JSON, over the limit of "
                                  f"{self.config.max_episode_chars} (server.max_episode_chars)")
