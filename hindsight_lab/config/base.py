"""What every config section shares: the frozen ``Section`` model, the ``affects`` markers, YAML reading, dotted
keys, validation messages and the checks of environment-variable names.

A field that changes what memory writes, recalls or reflects carries ``affects`` (``WRITE``, ``RECALL``,
``REFLECT``) in its JSON-schema extra; ``LabConfig.behaviour_fields`` and ``export`` read that marker.

Examples:
    >>> flatten({"retrieval": {"weights": {"semantic": 0.5}}, "provenance": {"metrics": {"ndcg@5": 0.6}}})
    {'retrieval.weights.semantic': 0.5, 'provenance.metrics': {'ndcg@5': 0.6}}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ConfigError

WRITE, RECALL, REFLECT = "write", "recall", "reflect"


def affects(*what: str) -> dict[str, Any]:
    """The ``json_schema_extra`` of a behaviour field: what it affects (``WRITE``, ``RECALL``, ``REFLECT``)."""
    return {"affects": list(what)}


class Section(BaseModel):
    """Base of every config section: frozen, unknown keys refused, attribute docstrings as field descriptions."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any] | None:
    """The mapping at the top of a YAML file (None for an empty file); a missing file, bad YAML or another top-level
    type raises :class:`ConfigError` naming the file and ``what`` it should be."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except yaml.YAMLError as exc:  # one line: PyYAML's own message quotes the text around the mark over several
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        what = " ".join(p for p in (getattr(exc, "context", None), getattr(exc, "problem", None)) if p)
        raise ConfigError(f"{where}: not valid YAML: {' '.join((what or str(exc)).split())}") from None
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


SHOWN_ERRORS = 3
"""Most errors one message spells out (the rest are counted)."""
SHOWN_VALUE_CHARS = 80
"""Longest echo of a value given, cut with ``…``."""
_KEY_FIRST = re.compile(r"^([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*): (.*)$", re.DOTALL)


def describe_validation_error(exc: ValidationError, source: str, *, prefix: str = "") -> str:
    """One line for a pydantic validation: ``source: invalid config: dotted.key: what is wrong (got value)``, after
    ``source`` (a file name, ``with_params``); ``prefix`` goes before every key (a section validated on its own,
    e.g. ``server.``).

    At most :data:`SHOWN_ERRORS` errors are spelled out and the others counted; a value is echoed in at most
    :data:`SHOWN_VALUE_CHARS` characters; a whole section is never echoed — a check across fields (a model
    validator, whose input is the section) names its field first (``"retrieval.weights: at least one …"``), and
    that name becomes the key; an ``api_key_env`` value is never echoed.

    Examples:
        >>> from pydantic import BaseModel, Field
        >>> class Box(BaseModel):
        ...     size: int = Field(1, ge=1)
        >>> try:
        ...     Box.model_validate({"size": -1})
        ... except ValidationError as exc:
        ...     print(describe_validation_error(exc, "box.yaml"))
        box.yaml: invalid config: size: Input should be greater than or equal to 1 (got -1)
    """
    parts = []
    errors = exc.errors()
    for err in errors[:SHOWN_ERRORS]:
        loc = (prefix + ".".join(str(p) for p in err["loc"])).rstrip(".")
        msg = " ".join(err["msg"].removeprefix("Value error, ").split())  # one line, whatever a validator wrote
        given = err.get("input")
        whole = isinstance(given, (Mapping, BaseModel))  # the section itself: a check across its fields
        named = _KEY_FIRST.match(msg) if whole else None
        if named:  # the field the check names, relative to the section unless it is spelled out whole
            key, msg = named.group(1), named.group(2)
            loc = key if not loc or key.startswith(f"{loc}.") else f"{loc}.{key}"
        loc = loc or "<root>"
        if err["type"] == "extra_forbidden":
            parts.append(f"{loc}: unknown config key")
        elif loc.endswith("api_key_env"):  # never echo what may be a secret
            parts.append(f"{loc}: {msg} (the value given is not shown)")
        elif whole:
            parts.append(f"{loc}: {msg}")
        else:
            parts.append(f"{loc}: {msg} (got {_shown(given)})")
    if len(errors) > SHOWN_ERRORS:
        parts.append(f"and {len(errors) - SHOWN_ERRORS} more error(s)")
    return f"{source}: invalid config: " + "; ".join(parts)


def _shown(value: Any) -> str:
    """``repr(value)`` on one line, cut to :data:`SHOWN_VALUE_CHARS` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= SHOWN_VALUE_CHARS else text[:SHOWN_VALUE_CHARS - 1] + "…"


def plain(value: Any) -> Any:
    """``value`` with every mapping turned into a dict and every tuple into a list, nested (what YAML and JSON
    write)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mapping → ``{"dotted.key": leaf}``; ``metrics`` mappings (provenance) stay whole."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and key != "metrics":
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``data[a][b][c] = value`` for ``"a.b.c"``, creating (or dumping a model into) the dicts on the way."""
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {} if child is None else (child.model_dump() if isinstance(child, BaseModel) else child)
            node[part] = child
        node = child
    node[leaf] = value
