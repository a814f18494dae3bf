"""The reflector registry: a plain dict filled by ``@register("name")`` (STYLE: pluggable parts).

A run log stores a reflector as ``reflector.describe()`` → ``{"name": ..., "args": {...}}`` (no secrets), and
:func:`build` rebuilds it from that. Reflector modules are imported lazily, by name, so that choosing the heuristic
reflector never imports LiteLLM and vice versa.

Examples:
    >>> from hindsight_lab.config import ReflectConfig
    >>> "litellm" in available()
    True
    >>> make_reflector(ReflectConfig(reflector="litellm")).describe()["name"]
    'litellm'
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config import ReflectConfig
    from .protocol import Reflector

logger = logging.getLogger(__name__)

#: name → reflector class; filled by :func:`register` when a reflector module is imported.
REGISTRY: dict[str, type] = {}

#: name → the module that registers it (imported on first use).
MODULES: dict[str, str] = {"heuristic": "hindsight_lab.reflect.heuristic", "litellm": "hindsight_lab.reflect.llm"}

_T = TypeVar("_T", bound=type)


def register(name: str) -> Callable[[_T], _T]:
    """Class decorator: make a reflector buildable by ``name``.

    The class must provide ``from_config(cfg: ReflectConfig)`` and ``describe() -> {"name", "args"}``.
    Registering another class under a taken name is an error (re-importing the same module is not).
    """
    def deco(cls: _T) -> _T:
        old = REGISTRY.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ConfigError(f"reflector name {name!r} is already registered by {old.__module__}.{old.__qualname__}")
        for method in ("from_config", "describe", "reflect", "reflect_batch"):
            if not callable(getattr(cls, method, None)):
                raise TypeError(f"reflector {cls.__qualname__} registered as {name!r} has no {method}()")
        REGISTRY[name] = cls
        cls.registry_name = name  # type: ignore[attr-defined]
        return cls
    return deco


def _load(name: str) -> None:
    module = MODULES.get(name)
    if module is None or name in REGISTRY:
        return
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:  # the module exists but one of its own imports is missing
            raise
        logger.debug("reflector module %s is not there", module)


def available() -> list[str]:
    """Names of the reflectors that can be built, sorted (importing each known reflector module)."""
    for name in MODULES:
        _load(name)
    return sorted(REGISTRY)


def get(name: str) -> type:
    """The reflector class registered as ``name``."""
    _load(name)
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown reflector {name!r}: expected one of {available()} "
                          "(reflect.reflector in the config)") from None


def make_reflector(cfg: "ReflectConfig") -> "Reflector":
    """Build the reflector that ``cfg.reflector`` names, from the ``reflect`` config section."""
    return get(cfg.reflector).from_config(cfg)


def build(description: Mapping[str, Any]) -> "Reflector":
    """Rebuild a reflector from its run-log ``describe()`` output ``{"name": ..., "args": {...}}``."""
    if "name" not in description:
        raise ConfigError(f"a reflector description needs a 'name'; got keys {sorted(description)}")
    return get(str(description["name"]))(**dict(description.get("args") or {}))
