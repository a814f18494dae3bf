"""The LiteLLM reflector: any LiteLLM model string (a hosted provider, Ollama, a local OpenAI-compatible server).

Configured by ``LabConfig.reflect.llm``, separately from the agent's own model (article §3.4). It sees the compressed
episode plus related earlier episodes (:mod:`hindsight_lab.reflect.prompts`) and its answer is parsed and validated
by :mod:`hindsight_lab.reflect.schema`. It never raises for a bad answer or a failing provider: the result is then a
:class:`~hindsight_lab.reflect.schema.Rejection` with its reason and the run goes on. It raises only for what no
retry can fix on this machine: litellm not installed (``MissingDependencyError``) or ``api_key_env`` naming a
variable that is not set (``ReflectorError``).

Fitting the model. Every request is sized to the model's context before it is sent (:mod:`.budget`): related
episodes are dropped, then the episode's text cut, before an episode is given up as ``prompt_too_long``; episodes
share a call only while it fits. The model is asked only for the judgement (:data:`~hindsight_lab.reflect.prompts.
JUDGEMENT_FIELDS`): the episode's task_type, outcome and id are the system's, filled in on validation. Structured
output (``output``): ``auto`` asks for a JSON schema (llama.cpp's server, vLLM and OpenAI take it), and a provider that
refuses it (a 4xx, or a 5xx, naming the response format: llama-cpp-python's server answers 500) is asked with
``json_object`` carrying the schema next (llama-cpp-python's form: its grammar then holds the answer to the schema),
then with plain ``json_object``, then with plain text — a downgrade the reflector remembers.

Time. ``timeout_s`` is the budget of one reflection (of a batch call: per episode in it), retries included: each
attempt gets what is left of it, and a timeout is never retried (against a slow local model another attempt only
multiplies the wait). HTTP 5xx, 408, 429 (honouring ``Retry-After``, capped at ``max_retry_after_s``) and refused
connections are retried, up to ``max_retries`` times with exponential backoff, while the budget lasts; a prompt over
the context window and any other 4xx are not (:mod:`.faults`).

Batches. :meth:`LiteLLMReflector.reflect_batch` asks for ``{"reflections": [...]}``; reflections are mapped back by
``episode_id`` (else by position), and an episode the answer leaves out is rejected ``missing_field``. An answer that
cannot be parsed at all sends each of its episodes again in its own call; a batch call that fails rejects every
episode in it.

Usage. Every logical call appends to :attr:`LiteLLMReflector.calls` a dict with ``model``, ``prompt_tokens``,
``completion_tokens``, ``cost_usd`` (None for an unpriced local model), ``latency_s`` (retries and backoff
included), ``attempts``, ``status`` ("ok" or the fault's class name), ``batch_size``, ``output``, ``episode_ids``
(of the call's episodes) and ``prompt_tokens_estimated`` (the prompt's tokens as :mod:`.budget` counts them, to set
against the server's ``prompt_tokens``); :meth:`usage_summary` totals them.

Examples:
    >>> from hindsight_lab.config import ReflectConfig
    >>> r = LiteLLMReflector.from_config(ReflectConfig(reflector="litellm"))
    >>> r.describe()["args"]["model"]
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Any, Callable, Mapping, Sequence

from ..config import ReflectConfig, ReflectionRulesConfig, shown_env_name
from ..errors import ConfigError, ReflectorError
from ..store.guard import public_url
from .budget import Fitted, context_tokens, count_tokens, fit_one, pack
from .compress import CompressedEpisode
from .faults import Fault, classify, litellm_module
from ..retrieve.paths import normalise
from .prompts import (EXAMPLE_RULE, REFLECTION_JSON_SCHEMA, batch_json_schema, build_batch_messages,
                      build_messages)
from .registry import register
from .answers import assign, parse_batch, read_usage
from .schema import Reflection, Rejection, validate_reflection

logger = logging.getLogger(__name__)

Item = tuple[CompressedEpisode, Sequence[CompressedEpisode]]
Result = Reflection | Rejection

OUTPUTS = ("json_schema", "json_object_schema", "json_object", "text")
"""Structured-output requests, from the most constrained down; ``auto`` starts at the first. ``json_object_schema``
is ``{"type": "json_object", "schema": …}``, the form llama-cpp-python's server takes (it refuses ``json_schema``)."""
_REASONS = {"context_window": "prompt_too_long", "timeout": "timed_out"}


@dataclasses.dataclass(slots=True)
class Answer:
    """What one logical call came back with: the text, or the fault that ended it."""

    content: str | None = None
    finish_reason: str | None = None
    fault: Fault | None = None


@register("litellm")
class LiteLLMReflector:
    """Reflect with any LiteLLM model, sized to its context, within a time budget, in batches, with usage.

    Args:
        model: LiteLLM model string, e.g. ``openai/gpt-4o-mini`` or ``openai/x`` with ``api_base``.
        api_base: base URL of an OpenAI-compatible server; None for the provider's default.
        api_key_env: name of the environment variable holding the API key; None lets LiteLLM use its defaults.
        temperature: sampling temperature.
        max_tokens: completion token limit per reflection (times the episodes of a batch call).
        timeout_s: time budget of one reflection, retries included (a batch call: per episode).
        max_retries: retries after a failed call (5xx, 408, 429, connection error) within the budget.
        backoff_s: first backoff delay, doubled after each retry.
        batch_size: most episodes per call in :meth:`reflect_batch`.
        output: ``auto``, ``json_schema``, ``json_object_schema``, ``json_object`` or ``text`` (see the module
            docstring).
        json_mode: False sends no ``response_format`` at all (the earlier switch; ``output: text`` says the same).
        context_tokens: the model's context window; None: what LiteLLM knows of the model, else 4,096.
        rules: validation bounds (``ReflectionRulesConfig`` or its dict form); None for the defaults.
        max_chars: bound on each rendered episode (``reflect.compress.max_chars``) before any shrinking.
        max_retry_after_s: cap on a server's ``Retry-After``.
        sleep: the function that waits between retries (tests inject a recorder).

    Examples:
        >>> r = LiteLLMReflector(model="openai/x", api_base="http://127.0.0.1:8000/v1", max_retries=1)
        >>> r.describe()["args"]["api_base"]
        'http://127.0.0.1:8000/v1'
    """

    registry_name = "litellm"

    def __init__(self, model: str = "openai/gpt-4o-mini", *, api_base: str | None = None,
                 api_key_env: str | None = None, temperature: float = 0.0, max_tokens: int = 800,
                 timeout_s: float = 30.0, max_retries: int = 2, backoff_s: float = 1.0, batch_size: int = 4,
                 output: str = "auto", json_mode: bool = True, context_tokens: int | None = None,
                 rules: ReflectionRulesConfig | Mapping[str, Any] | None = None, max_chars: int = 2000,
                 max_retry_after_s: float = 30.0, sleep: Callable[[float], None] | None = None) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.batch_size = batch_size
        self.output = output
        self.json_mode = json_mode
        self.context_tokens = context_tokens
        self.rules = rules
        self.max_chars = max_chars
        self.max_retry_after_s = max_retry_after_s
        self.sleep = sleep
        self.calls: list[dict[str, Any]] = []

    @classmethod
    def from_config(cls, cfg: ReflectConfig, **kwargs: Any) -> "LiteLLMReflector":
        """Build from the ``reflect`` section (``llm`` settings, ``rules``, ``compress.max_chars``)."""
        llm = cfg.llm
        args: dict[str, Any] = dict(model=llm.model, api_base=llm.api_base, api_key_env=llm.api_key_env,
                                    temperature=llm.temperature, max_tokens=llm.max_tokens, timeout_s=llm.timeout_s,
                                    max_retries=llm.max_retries, backoff_s=llm.backoff_s, batch_size=llm.batch_size,
                                    output=llm.output, json_mode=llm.json_mode, context_tokens=llm.context_tokens,
                                    rules=cfg.rules, max_chars=cfg.compress.max_chars)
        args.update(kwargs)
        return cls(**args)

    def describe(self) -> dict[str, Any]:
        """``{"name", "args"}`` for run logs; ``registry.build`` rebuilds the reflector from it. No secrets."""
        return {"name": self.registry_name, "args": {
            "model": self.model, "api_base": public_url(self.api_base), "api_key_env": self.api_key_env,
            "temperature": self.temperature, "max_tokens": self.max_tokens, "timeout_s": self.timeout_s,
            "max_retries": self.max_retries, "backoff_s": self.backoff_s, "batch_size": self.batch_size,
            "output": self.output, "json_mode": self.json_mode, "context_tokens": self.context_tokens,
            "rules": self._rules().model_dump(mode="json"), "max_chars": self.max_chars,
            "max_retry_after_s": self.max_retry_after_s}}

    # -- public API ------------------------------------------------------------------------------------------
    def reflect(self, episode: CompressedEpisode, related: Sequence[CompressedEpisode]) -> Result:
        """Reflect on one compressed episode, given related earlier ones."""
        return self.reflect_batch([(episode, related)])[0]

    def reflect_batch(self, items: Sequence[Item]) -> list[Result]:
        """Reflect on several episodes, as many per call as fit (at most ``batch_size``); in the order given."""
        self._check()
        context = context_tokens(self.model, self.context_tokens)
        out: list[Result | None] = [None] * len(items)
        fitted: list[Fitted] = []
        for i, (ep, related) in enumerate(items):
            f, tokens = fit_one(ep, related, model=self.model, context=context, max_tokens=self.max_tokens,
                                max_chars=self.max_chars)
            if f is None:
                out[i] = Rejection("prompt_too_long", f"{tokens} prompt tokens with no related episode and the text "
                                   f"cut to its shortest: over the context of {context} tokens less "
                                   f"{self.max_tokens} for the answer (reflect.llm.context_tokens, max_tokens)",
                                   "", ep.episode_id)
            else:
                fitted.append(f)
        position = {id(f): i for i, f in zip((i for i, r in enumerate(out) if r is None), fitted)}
        for group in pack(fitted, model=self.model, context=context, max_tokens=self.max_tokens,
                          batch_size=self.batch_size):
            for f, result in zip(group, self._call(group)):
                out[position[id(f)]] = result
        return [r for r in out if r is not None]

    def complete(self, messages: list[dict[str, str]], max_tokens: int, *, batch_size: int = 1,
                 schema: Mapping[str, Any] | None = None, episode_ids: Sequence[str] = ()) -> Answer:
        """One logical call within the time budget; records usage; never raises for a provider fault."""
        litellm = litellm_module()
        api_key = self._api_key()
        sleep = self.sleep or time.sleep
        estimated = count_tokens(self.model, messages)  # before the clock starts: not the server's time
        t0 = time.perf_counter()
        deadline = t0 + float(self.timeout_s) * batch_size
        attempts = retries = 0
        delay = float(self.backoff_s)
        record: dict[str, Any] = {"model": self.model, "prompt_tokens": None, "completion_tokens": None,
                                  "cost_usd": None, "latency_s": 0.0, "attempts": 0, "status": "ok",
                                  "batch_size": batch_size, "output": None, "episode_ids": list(episode_ids),
                                  "prompt_tokens_estimated": estimated}
        answer = Answer()
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                answer.fault = Fault("Timeout", f"the reflection's budget of {self.timeout_s * batch_size:g} s "
                                     "ran out (reflect.llm.timeout_s)", retry=False, cause="timeout")
                record["status"] = "Timeout"
                break
            attempts += 1
            kwargs: dict[str, Any] = dict(model=self.model, messages=messages, temperature=self.temperature,
                                          max_tokens=max_tokens, timeout=remaining, num_retries=0, max_retries=0)
            if self.api_base:
                kwargs["api_base"] = self.api_base
            if api_key:
                kwargs["api_key"] = api_key
            fmt = self._response_format(schema)
            record["output"] = self._output()
            if fmt is not None:
                kwargs["response_format"] = fmt
            try:
                response = litellm.completion(**kwargs)
            except Exception as exc:  # noqa: BLE001 - every provider fault becomes a Rejection
                fault = classify(exc, api_key)
                if fault.cause == "response_format" and self._downgrade():
                    continue
                wait = delay if fault.retry_after is None else min(fault.retry_after, self.max_retry_after_s)
                if fault.retry and retries < self.max_retries and time.perf_counter() + wait < deadline:
                    logger.info("reflector call failed (%s, attempt %d/%d); retrying in %.2fs", fault.kind,
                                retries + 1, self.max_retries + 1, wait)
                    retries, delay = retries + 1, delay * 2
                    if wait > 0:
                        sleep(wait)
                    continue
                what = f"after {attempts} attempts" if retries else "(not retried)"
                if fault.cause == "timeout":
                    what = f"after {time.perf_counter() - t0:.1f} s of a {self.timeout_s * batch_size:g} s budget"
                answer.fault = dataclasses.replace(fault, detail=f"{fault.kind} {what}: {fault.detail}")
                record["status"] = fault.kind
                logger.warning("reflector call failed %s: %s", what, fault.detail)
                break
            read_usage(litellm, response, record)
            choice = response.choices[0] if getattr(response, "choices", None) else None
            answer.content = getattr(getattr(choice, "message", None), "content", None)
            answer.finish_reason = getattr(choice, "finish_reason", None)
            break
        record["attempts"] = attempts
        record["latency_s"] = time.perf_counter() - t0
        self.calls.append(record)
        return answer

    def usage_summary(self) -> dict[str, Any]:
        """Totals over :attr:`calls` (``cost_usd`` sums the known costs; None when no call had one)."""
        costs = [c["cost_usd"] for c in self.calls if c["cost_usd"] is not None]
        return {
            "model": self.model,
            "calls": len(self.calls),
            "failed_calls": sum(c["status"] != "ok" for c in self.calls),
            "attempts": sum(c["attempts"] for c in self.calls),
            "episodes": sum(c["batch_size"] for c in self.calls),
            "prompt_tokens": sum(c["prompt_tokens"] or 0 for c in self.calls),
            "completion_tokens": sum(c["completion_tokens"] or 0 for c in self.calls),
            "cost_usd": float(sum(costs)) if costs else None,
            "calls_without_cost": len(self.calls) - len(costs),
            "latency_s": float(sum(c["latency_s"] for c in self.calls)),
        }

    # -- internals -------------------------------------------------------------------------------------------
    def _call(self, group: list[Fitted]) -> list[Result]:
        """One call for a group of fitted episodes, its answer validated per episode."""
        ids = [f.episode.episode_id for f in group]
        if len(group) == 1:
            f = group[0]
            answer = self.complete(build_messages(f.episode, f.related, f.chars), self.max_tokens,
                                   schema=REFLECTION_JSON_SCHEMA, episode_ids=ids)
            if answer.fault is not None:
                return [self._failed(answer.fault, ids[0])]
            return [self._validate(answer.content or "", f.episode, answer)]
        answer = self.complete(build_batch_messages([f.item() for f in group]), self.max_tokens * len(group),
                               batch_size=len(group), schema=batch_json_schema(ids), episode_ids=ids)
        if answer.fault is not None:
            return [self._failed(answer.fault, eid) for eid in ids]
        entries = parse_batch(answer.content or "")
        if entries is None:  # an unreadable batch answer: each episode once more in its own call
            logger.warning("batch answer for %d episodes could not be parsed; reflecting on each separately",
                           len(group))
            return [self._call([f])[0] for f in group]
        assigned = assign(entries, ids)
        return [self._validate(assigned[i], f.episode, answer) if i in assigned else
                Rejection("missing_field", f"the batch answer has no reflection for episode {f.episode.episode_id!r}",
                          (answer.content or "")[:2000], f.episode.episode_id)
                for i, f in enumerate(group)]

    def _validate(self, raw: Any, episode: CompressedEpisode, answer: Answer) -> Result:
        """Validate with the fields the system knows filled in: the episode's task_type and outcome."""
        result = validate_reflection(raw, self._rules(), episode_id=episode.episode_id,
                                     known={"task_type": episode.task_type, "outcome": episode.outcome})
        if isinstance(result, Rejection) and result.reason == "invalid_json" and answer.finish_reason == "length":
            return dataclasses.replace(result, detail=result.detail + " (the answer was cut at max_tokens: "
                                       "raise reflect.llm.max_tokens)")
        if isinstance(result, Reflection) and normalise(result.reusable_rule) == normalise(EXAMPLE_RULE):
            return Rejection("rule_too_generic", "reusable_rule is the prompt's worked example, copied: it says "
                             "nothing of this episode", result.reusable_rule, episode.episode_id)
        return result

    @staticmethod
    def _failed(fault: Fault, episode_id: str) -> Rejection:
        return Rejection(_REASONS.get(fault.cause, "reflector_error"), fault.detail, "", episode_id)

    def _output(self) -> str:
        """The structured-output request in use (``auto`` starts at the most constrained one)."""
        if not self.json_mode:
            return "text"
        return getattr(self, "output_", None) or (OUTPUTS[0] if self.output == "auto" else self.output)

    def _response_format(self, schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        mode = self._output()
        if mode == "json_schema" and schema is not None:
            name = "reflections" if "reflections" in schema.get("properties", {}) else "reflection"
            return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
        if mode == "json_object_schema" and schema is not None:
            return {"type": "json_object", "schema": dict(schema)}
        return None if mode == "text" else {"type": "json_object"}

    def _downgrade(self) -> bool:
        """After a refusal of the structured-output request: ask with the next, looser one (remembered)."""
        mode = self._output()
        if mode == "text":
            return False
        self.output_ = OUTPUTS[OUTPUTS.index(mode) + 1]
        logger.info("%s refused response_format %s; asking with %s from now on", self.model, mode, self.output_)
        return True

    def _rules(self) -> ReflectionRulesConfig:
        if self.rules is None:
            return ReflectionRulesConfig()
        if isinstance(self.rules, ReflectionRulesConfig):
            return self.rules
        return ReflectionRulesConfig.model_validate(dict(self.rules))

    def _check(self) -> None:
        """Validate the parameters at first use (STYLE: nothing is validated in ``__init__``)."""
        if getattr(self, "checked_", False):
            return
        problems = []
        if not isinstance(self.model, str) or not self.model.strip():
            problems.append(f"model must be a LiteLLM model string, got {self.model!r}")
        for name, low in (("max_retries", 0), ("batch_size", 1), ("max_tokens", 1), ("max_chars", 200)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                problems.append(f"{name} must be an integer >= {low}, got {value!r}")
        for name in ("timeout_s", "backoff_s", "max_retry_after_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0 or (name == "timeout_s" and value == 0):
                problems.append(f"{name} must be a number {'> 0' if name == 'timeout_s' else '>= 0'}, got {value!r}")
        if self.output not in ("auto", *OUTPUTS):
            problems.append(f"output must be one of {['auto', *OUTPUTS]}, got {self.output!r}")
        if self.context_tokens is not None and (not isinstance(self.context_tokens, int)
                                                or self.context_tokens <= self.max_tokens):
            problems.append(f"context_tokens must be an integer above max_tokens ({self.max_tokens}), got "
                            f"{self.context_tokens!r}")
        if problems:
            raise ConfigError("LiteLLMReflector: " + "; ".join(problems) + " (reflect.llm in the config)")
        self._rules()
        self.checked_ = True

    def _api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ReflectorError("reflect.llm.api_key_env names the environment variable "
                                 f"{shown_env_name(self.api_key_env)}, which is not set or empty: export it, or set "
                                 "api_key_env to null for a server that needs no key")
        return key
