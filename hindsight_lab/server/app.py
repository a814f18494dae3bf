"""The MCP server: four tools over a :class:`~hindsight_lab.server.pool.MemoryPool` (DESIGN §8).

``memory_write``, ``memory_search``, ``memory_reflect`` and ``memory_feedback``, each named with the configured
prefix (``server.tool_prefix``, e.g. ``hindsight_memory_search``), each with typed inputs, a structured output
(the models of :mod:`hindsight_lab.server.models`) and an optional ``namespace``. Bad input — a field that fails
the input schema, one over a size limit (:mod:`hindsight_lab.server.limits`), an unknown memory id — comes back
to the client as a tool error (``is_error``) naming the field; the server stays up.

This module imports the ``mcp`` SDK: import it only when serving. (No ``from __future__ import annotations``
here: the SDK reads the tools' annotations to build their schemas.)

Examples:
    >>> settings = ServerConfig()
    >>> pool = MemoryPool(LabConfig().with_params({"store.path": "s"}), settings).open()  # doctest: +SKIP
    >>> server = build_server(pool, settings)  # doctest: +SKIP
    >>> server.run("stdio")  # doctest: +SKIP
"""

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Callable, Iterator, Literal

from pydantic import Field

from .. import __version__
from ..errors import HindsightLabError
from ..trace import Episode
from .config import ServerConfig
from .limits import Limits
from .models import (
    FeedbackOut,
    ReflectOut,
    SearchOut,
    TriggerIn,
    WriteOut,
    feedback_out,
    reflect_out,
    search_out,
    write_out,
)
from .pool import MemoryPool

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

logger = logging.getLogger(__name__)

TOOLS = ("memory_write", "memory_search", "memory_reflect", "memory_feedback")

INSTRUCTIONS = """\
Reflective ("hindsight") memory of past tasks. Before a task, call {memory_search} with what the user asked and put
injection.rules into the system prompt and injection.episodes before the user's message. After the task, call
{memory_reflect} with the finished episode (instruction, steps, outcome): it is stored, and where a trigger rule
fires a reusable rule is distilled from it. {memory_write} stores a rule you already know; {memory_feedback} says
whether a memory helped (up) or misled (down). Every tool takes an optional namespace: one memory per namespace."""

Namespace = Annotated[str | None, Field(
    description="one memory per namespace (letters, digits, '_' and '-'); default: the server's namespace")]
TaskType = Annotated[str | None, Field(description="task type, e.g. 'issue_refund'; default: inferred or none")]
Domain = Annotated[str | None, Field(description="domain the memory belongs to, e.g. 'airline'")]


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Library errors (bad input, unknown id, store trouble) become tool errors the client reads."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except HindsightLabError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 (a client must learn the cause, not "Error executing tool")
        logger.exception("tool call failed")
        raise ToolError(f"internal error: {type(exc).__name__}: {exc}") from None


def tool_names(prefix: str) -> dict[str, str]:
    """``{"memory_search": "<prefix>memory_search", ...}``."""
    return {name: f"{prefix}{name}" for name in TOOLS}


def build_server(pool: MemoryPool, settings: ServerConfig) -> "MCPServer":
    """The MCP server with the four tools on an open pool, named with ``settings.tool_prefix`` and bound by its
    input limits."""
    from mcp.server.mcpserver import MCPServer

    limits = Limits(settings)
    names = tool_names(settings.tool_prefix)
    server = MCPServer("hindsight-lab", version=__version__, instructions=INSTRUCTIONS.format(**names),
                       log_level="INFO")
    for make in (_write_tool, _search_tool, _reflect_tool, _feedback_tool):
        fn = make(pool, limits)
        server.add_tool(fn, name=names[fn.__name__])
    return server


# One factory per tool: the tool is a closure over the pool and the limits; the SDK builds its input schema from
# the tool's annotations and its description from its docstring.
def _write_tool(pool: MemoryPool, limits: Limits) -> Callable[..., WriteOut]:
    def memory_write(
        content: Annotated[str, Field(description="the rule or judgement to remember")],
        layer: Annotated[Literal["L2", "L3"], Field(
            description="L2: a candidate rule, promoted after confirmations; L3: a rule (needs counter_examples)")
        ] = "L2",
        task_type: TaskType = None,
        domain: Domain = None,
        confidence: Annotated[float, Field(ge=0, le=1, description="how sure, 0 to 1")] = 0.5,
        counter_examples: Annotated[list[str] | None, Field(
            description="cases where the rule does not hold")] = None,
        trigger: Annotated[TriggerIn | None, Field(
            description="keywords that make the rule recalled whatever its similarity")] = None,
        source_episode_id: Annotated[str | None, Field(description="the episode the rule came from")] = None,
        namespace: Namespace = None,
    ) -> WriteOut:
        """Store a rule. Near-duplicates merge (dedup on write); a candidate confirmed by three different
        episodes with counter-examples is promoted to L3."""
        with _tool_errors():
            limits.text("content", content, "max_content_chars")
            limits.short(task_type=task_type, domain=domain, source_episode_id=source_episode_id)
            limits.items("counter_examples", counter_examples)
            if trigger is not None:
                for key in ("any", "all", "task_types"):
                    limits.items(f"trigger.{key}", getattr(trigger, key))
            fields = {"layer": layer, "task_type": task_type, "domain": domain, "confidence": confidence,
                      "counter_examples": list(counter_examples or []),
                      "trigger": trigger.model_dump() if trigger is not None else None,
                      "source_episode_ids": [source_episode_id] if source_episode_id else []}
            ns, res = pool.run(namespace, lambda mem: (mem.config_.store.namespace, mem.write(content, **fields)))
            return write_out(ns, res)

    return memory_write


def _search_tool(pool: MemoryPool, limits: Limits) -> Callable[..., SearchOut]:
    def memory_search(
        query: Annotated[str, Field(description="what the agent sees at task start, e.g. the user's request")],
        task_type: TaskType = None,
        top_k: Annotated[int | None, Field(ge=1, description="most memories returned; default: the config's")
                         ] = None,
        domain: Annotated[str | None, Field(description="keep only memories of this domain (or of none)")] = None,
        namespace: Namespace = None,
    ) -> SearchOut:
        """Recall memories for a task: ranked hits with their source tags, recall paths and score breakdown, and
        the rendered block to inject (rules for the system prompt, similar past tasks before the query)."""
        with _tool_errors():
            limits.text("query", query, "max_query_chars")
            limits.short(task_type=task_type, domain=domain)
            limits.top_k(top_k)
            vector = pool.embed_query(query)  # before the namespace's turn: shares a pass with concurrent queries
            ns, res = pool.run(namespace, lambda mem: (mem.config_.store.namespace, mem.search(
                query, task_type=task_type, domain=domain, top_k=top_k, query_embedding=vector)), search=True)
            return search_out(ns, res)

    return memory_search


def _reflect_tool(pool: MemoryPool, limits: Limits) -> Callable[..., ReflectOut]:
    def memory_reflect(
        episode: Annotated[Episode, Field(description="the finished task run in the trace format")],
        task_type: TaskType = None,
        namespace: Namespace = None,
    ) -> ReflectOut:
        """After a task: store the episode as one L2 record and, where a trigger rule fires (a strategy failure,
        a deviating success, a task type's 3rd occurrence, user feedback), distil a reusable rule from it."""
        with _tool_errors():
            limits.episode(episode.model_dump(mode="json"))
            limits.short(task_type=task_type, episode_id=episode.episode_id)
            ns, out = pool.run(namespace, lambda mem: (mem.config_.store.namespace,
                                                       mem.reflect(episode, task_type=task_type)))
            return reflect_out(ns, out)

    return memory_reflect


def _feedback_tool(pool: MemoryPool, limits: Limits) -> Callable[..., FeedbackOut]:
    def memory_feedback(
        memory_id: Annotated[str, Field(description="id of a memory returned by search or write")],
        signal: Annotated[Literal["up", "down", "correction"], Field(
            description="up: it helped; down: it misled (a second down deletes it); correction: a down with text")],
        text: Annotated[str | None, Field(description="what was wrong, for a correction")] = None,
        namespace: Namespace = None,
    ) -> FeedbackOut:
        """Say whether a memory helped: up raises its confidence, down lowers it, a second down deletes it."""
        with _tool_errors():
            limits.short(memory_id=memory_id)
            limits.text("text", text, "max_content_chars")
            ns, rec = pool.run(namespace, lambda mem: (mem.config_.store.namespace,
                                                       mem.feedback(memory_id, signal, text)))
            return feedback_out(ns, memory_id, signal, rec)

    return memory_feedback
