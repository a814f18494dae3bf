"""The optional LiteLLM contradiction judge (``conflicts.judge: litellm``), configured like the reflection LLM
(``conflicts.llm``: any LiteLLM model string, ``api_base``, ``api_key_env`` naming the key's variable).

Every call goes through :class:`~hindsight_lab.reflect.llm.LiteLLMReflector`'s call path, so faults are handled the
same way: LiteLLM's own retries off, a time budget per pair (``timeout_s``, retries included; a timeout is never
retried), bounded retries with exponential backoff on 5xx, 408, 429 (``Retry-After`` honoured) and refused
connections, no retry on other 4xx, ``json_object`` output stepped down to plain text if the provider refuses it,
usage recorded per call (:attr:`LiteLLMJudge.calls`, :meth:`usage_summary`). A pair the judge cannot
answer — a provider fault after its retries, or an answer that is not the expected JSON — keeps the offline
detector's verdict, marked in ``Verdict.source`` (``offline (judge failed: …)``); the pass never stops for it.
Only what no retry can fix raises: litellm missing (``MissingDependencyError``), ``api_key_env`` naming an unset
variable (``ReflectorError``), invalid settings (``ConfigError``).

Examples:
    >>> from hindsight_lab.config import ConflictsConfig
    >>> LiteLLMJudge.from_config(ConflictsConfig(judge="litellm")).describe()["args"]["model"]
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any, Callable, Mapping

from ..config import shown_env_name
from ..errors import ReflectorError
from .detect import KINDS, OfflineDetector, Verdict

SYSTEM = (
    "You compare two rules that an AI agent learned from its own past tasks and decide whether they contradict "
    "each other: whether following one in the same situation would break the other (opposite orders of steps, "
    "different tools for the same job, one forbids what the other requires, incompatible numbers). Paraphrases, "
    "refinements, rules for different situations or task types, and related but compatible advice do not "
    "contradict. Answer with one JSON object only: {\"conflict\": true or false, \"kind\": one of \"order\", "
    "\"tool\", \"negation\", \"quantity\", \"other\" or null, \"reason\": one short sentence}.")


def build_messages(a: str, b: str, task_type: str | None = None) -> list[dict[str, str]]:
    """The chat messages for one pair."""
    user = f"Rule A: {a.strip()}\nRule B: {b.strip()}"
    if task_type:
        user += f"\nTask type of both rules: {task_type}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_answer(content: str) -> Verdict | None:
    """The verdict in a judge's answer, or None when it is not ``{"conflict": bool, ...}``."""
    from ..reflect.schema import extract_json

    try:
        data = extract_json(content or "")
    except ValueError:
        return None
    if not isinstance(data, Mapping) or not isinstance(data.get("conflict"), bool):
        return None
    kind = data.get("kind")
    kind = kind if isinstance(kind, str) and kind in (*KINDS, "other") else None
    reason = data.get("reason")
    return Verdict(data["conflict"], kind if data["conflict"] else None,
                   " ".join(str(reason).split())[:300] if reason else "", "litellm")


class LiteLLMJudge:
    """Judge rule pairs with any LiteLLM model; falls back to ``fallback`` (the offline detector) per pair.

    Args:
        model, api_base, api_key_env, temperature, max_tokens, timeout_s, max_retries, backoff_s, json_mode: as in
            ``conflicts.llm`` (see :class:`~hindsight_lab.config.LLMJudgeConfig`).
        fallback: the verdict source for a pair the model cannot answer (default :class:`OfflineDetector`).
        sleep: the function that waits between retries (tests inject a recorder).
    """

    name = "litellm"

    def __init__(self, model: str = "openai/gpt-4o-mini", *, api_base: str | None = None,
                 api_key_env: str | None = None, temperature: float = 0.0, max_tokens: int = 200,
                 timeout_s: float = 30.0, max_retries: int = 2, backoff_s: float = 1.0, json_mode: bool = True,
                 fallback: Any = None, sleep: Callable[[float], None] | None = None) -> None:
        from ..reflect.llm import LiteLLMReflector  # its call path: the same fault handling and usage records

        self.client_ = LiteLLMReflector(
            model, api_base=api_base, api_key_env=api_key_env, temperature=temperature, max_tokens=max_tokens,
            timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s, batch_size=1, json_mode=json_mode,
            sleep=sleep)
        self.fallback = fallback

    @classmethod
    def from_config(cls, cfg: Any, **kwargs: Any) -> "LiteLLMJudge":
        """Build from the ``conflicts`` section (its ``llm`` settings)."""
        llm = cfg.llm
        args: dict[str, Any] = dict(model=llm.model, api_base=llm.api_base, api_key_env=llm.api_key_env,
                                    temperature=llm.temperature, max_tokens=llm.max_tokens, timeout_s=llm.timeout_s,
                                    max_retries=llm.max_retries, backoff_s=llm.backoff_s, json_mode=llm.json_mode)
        args.update(kwargs)
        return cls(**args)

    def describe(self) -> dict[str, Any]:
        """``{"name", "args"}`` for run logs (no secrets)."""
        client = self.client_
        args = {k: v for k, v in client.describe()["args"].items()
                if k not in ("rules", "max_chars", "batch_size")}
        return {"name": self.name, "args": args}

    @property
    def calls(self) -> list[dict[str, Any]]:
        """One entry per logical call (model, tokens, cost, latency, attempts, status)."""
        return self.client_.calls

    def usage_summary(self) -> dict[str, Any]:
        summary = self.client_.usage_summary()
        summary["pairs"] = summary.pop("episodes")
        return summary

    def judge(self, a: str, b: str, task_type: str | None = None) -> Verdict:
        """The model's verdict on rules ``a`` and ``b``; the fallback's when the model cannot answer."""
        client = self.client_
        if client.api_key_env and not os.environ.get(client.api_key_env):
            raise ReflectorError("conflicts.llm.api_key_env names the environment variable "
                                 f"{shown_env_name(client.api_key_env)}, which is not set or empty: export it, or "
                                 "set api_key_env to null for a server "
                                 "that needs no key")
        client._check()  # the reflector's validation of the settings (ConfigError naming the bad one)
        answer = client.complete(build_messages(a, b, task_type), client.max_tokens)
        if answer.fault is None:
            verdict = parse_answer(answer.content or "")
            if verdict is not None:
                return verdict
            why = "judge answer unreadable: " + json.dumps((answer.content or "")[:80])
        else:
            why = "judge failed: " + answer.fault.detail[:120]
        fallback = self.fallback or OfflineDetector()
        return replace(fallback.judge(a, b), source=f"offline ({why})")
