"""The MCP memory server's own settings (``hindsight-lab serve``)."""

from __future__ import annotations

from pydantic import Field

from .base import Section


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
    maintenance_interval_s: float = Field(3600.0, ge=0)
    """Seconds between runs of maintenance (decay, archive, conflicts) over every open namespace; the first run
    comes one interval after start; 0 turns the schedule off."""
    token_env: str = Field("HINDSIGHT_MCP_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Name of the environment variable that holds the bearer token of the HTTP transport (never the token
    itself). When it is set, every HTTP request needs ``Authorization: Bearer <token>``; a bind to a non-loopback
    address is refused without it."""

