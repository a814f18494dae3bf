"""The LiteLLM reflector: any LiteLLM model string (a hosted provider, Ollama, a local OpenAI-compatible server).

Configured by ``LabConfig.reflect.llm``, separately from the agent's own model (article §3.4). It sees the compressed
episode plus related earlier episodes (:mod:`hindsight_lab.reflect.prompts`) and its answer is parsed and validated
by :mod:`hindsight_lab.reflect.schema`. It never raises for a bad answer or a failing provider: the result is then a
:class:`~hindsight_lab.reflect.schema.Rejection` and the run goes on. It raises only for what no retry can fix on
this machine: litellm not installed (``MissingDependencyError``) or ``api_key_env`` naming a variable that is not set
(``ReflectorError``).

Faults. LiteLLM's own retries are switched off (``num_retries=0, max_retries=0``); this class retries by itself, up
to ``max_retries`` times with exponential backoff (``backoff_s``, doubled after each retry; ``sleep`` is injectable),
on HTTP 5xx, 408, 429 (honouring ``Retry-After``, capped at ``max_retry_after_s``), timeouts and connection errors.
Any other 4xx is not retried. One exception: when ``json_mode`` is on and the provider answers 400 about
``response_format``, the call is repeated once without it and the reflector remembers not to send it again.
What LiteLLM 1.x raises here (measured against a stdlib server, ``openai/`` provider): HTTP 500 →
``litellm.InternalServerError``, 503 → ``litellm.ServiceUnavailableError``, 429 → ``litellm.RateLimitError``, a read
timeout → ``litellm.Timeout``, a refused connection → ``litellm.InternalServerError`` (status 500, with
``openai.APIConnectionError`` in its cause chain), and a missing API key → ``litellm.InternalServerError`` (status
500, but no HTTP answer at all) — so faults are classified from the exception's cause chain and whether an HTTP
answer came back, not from the exception class alone.

Batches. :meth:`LiteLLMReflector.reflect_batch` sends ``batch_size`` episodes per call and asks for
``{"reflections": [...]}``; reflections are mapped back by ``episode_id`` (else by their position), and an episode
the answer leaves out is rejected ``missing_field``. When a batch answer cannot be parsed at all, each of its
episodes is reflected on once more in its own call (the fallback is logged and shows in ``calls``); when the batch
call itself fails after its retries, every episode in it is rejected ``reflector_error`` (more calls to a failing
provider would not help).

Usage. Every logical call (retries included) appends to :attr:`LiteLLMReflector.calls` a dict with ``model``,
``prompt_tokens``, ``completion_tokens``, ``cost_usd`` (LiteLLM's ``response_cost``, else ``completion_cost``, else
None), ``latency_s`` (wall time of the call including retries and backoff), ``attempts`` (HTTP requests made),
``status`` ("ok" or the exception class name) and ``batch_size``; :meth:`usage_summary` totals them.

Examples:
    >>> from hindsight_lab.config import ReflectConfig
    >>> r = LiteLLMReflector.from_config(ReflectConfig(reflector="litellm"))
    >>> r.describe()["args"]["model"]
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

import dataclasses
import email.utils
import logging
import os
import time
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from .._env import set_offline_defaults
from ..config import ReflectConfig, ReflectionRulesConfig, shown_env_name
from ..errors import ConfigError, MissingDependencyError, ReflectorError
from .compress import CompressedEpisode
from .prompts import build_batch_messages, build_messages
from .registry import register
from .schema import Reflection, Rejection, extract_json, validate_reflection

logger = logging.getLogger(__name__)

Item = tuple[CompressedEpisode, Sequence[CompressedEpisode]]
Result = Reflection | Rejection

_RETRY_STATUS = frozenset({408, 429})


def _litellm() -> Any:
    """Import litellm lazily, after the offline defaults (its import otherwise fetches a cost map)."""
    set_offline_defaults()
    try:
        import litellm
    except ImportError as exc:
        raise MissingDependencyError("the litellm reflector needs the `litellm` package: pip install litellm") from exc
    # LiteLLM prints a "Give Feedback / Get Help" banner to stdout on every exception; the library does not print.
    litellm.suppress_debug_info = True
    return litellm


@dataclasses.dataclass(frozen=True, slots=True)
class _Fault:
    kind: str  # exception class name, e.g. "RateLimitError"
    detail: str
    retry: bool
    retry_after: float | None = None
    status: int | None = None
    response_format: bool = False  # a 400 that complains about response_format


@dataclasses.dataclass(slots=True)
class _Answer:
    content: str | None = None
    finish_reason: str | None = None
    fault: _Fault | None = None


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out and len(out) < 10:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _headers(exc: BaseException) -> Mapping[str, str]:
    for candidate in (getattr(exc, "litellm_response_headers", None),
                      getattr(getattr(exc, "response", None), "headers", None)):
        if candidate:
            return candidate
    return {}


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date); None if absent or unreadable."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - time.time(), 0.0)


def _classify(exc: BaseException, secret: str | None) -> _Fault:
    """Decide whether a failed call is worth retrying (see the module docstring for what LiteLLM raises)."""
    import httpx
    import openai

    kind = type(exc).__name__
    detail = " ".join(str(exc).split())[:500]
    if secret:
        detail = detail.replace(secret, "***")
    chain = _chain(exc)
    if any(isinstance(e, (openai.APITimeoutError, httpx.TimeoutException, TimeoutError)) for e in chain):
        return _Fault(kind, detail, retry=True)
    if any(isinstance(e, httpx.UnsupportedProtocol) for e in chain):  # a malformed api_base: no retry helps
        return _Fault(kind, detail, retry=False)
    if any(isinstance(e, (openai.APIConnectionError, httpx.TransportError, ConnectionError)) for e in chain):
        return _Fault(kind, detail, retry=True)
    status: int | None = None
    for e in chain:  # the status of a real HTTP answer, if one came back
        if type(e).__module__.startswith("litellm"):
            continue  # LiteLLM's own exceptions subclass openai.APIStatusError even when nothing was sent
        if isinstance(e, openai.APIStatusError):
            status = e.status_code
            break
        if isinstance(e, httpx.HTTPStatusError):
            status = e.response.status_code
            break
    if status is None and getattr(exc, "litellm_response_headers", None) is not None:
        status = getattr(exc, "status_code", None)
    litellm = _litellm()
    if status is None and isinstance(exc, litellm.RateLimitError):
        status = 429
    if status is None:
        # No HTTP answer and no transport error: a client-side failure (e.g. missing credentials) that LiteLLM
        # reports as a 500; retrying cannot fix it.
        return _Fault(kind, detail, retry=False)
    retry_after = _retry_after(_headers(exc)) if status in (429, 503) else None
    bad_format = status == 400 and "response_format" in detail.lower()
    return _Fault(kind, detail, retry=status >= 500 or status in _RETRY_STATUS, retry_after=retry_after,
                  status=status, response_format=bad_format)


def _public_url(url: str | None) -> str | None:
    """A URL without user info, query or fragment (which may carry credentials)."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@register("litellm")
class LiteLLMReflector:
    """Reflect with any LiteLLM model; bounded retries, batch reflection, per-call usage.

    Args:
        model: LiteLLM model string, e.g. ``openai/gpt-4o-mini`` or ``openai/x`` with ``api_base``.
        api_base: base URL of an OpenAI-compatible server; None for the provider's default.
        api_key_env: name of the environment variable holding the API key; None lets LiteLLM use its defaults.
        temperature: sampling temperature.
        max_tokens: completion token limit per reflection (times the batch size for a batch call).
        timeout_s: timeout of one HTTP call.
        max_retries: retries after a failed call (5xx, 408, 429, timeout, connection error).
        backoff_s: first backoff delay, doubled after each retry.
        batch_size: episodes per call in :meth:`reflect_batch`.
        json_mode: send ``response_format={"type": "json_object"}``.
        rules: validation bounds (``ReflectionRulesConfig`` or its dict form); None for the defaults.
        max_chars: bound on each rendered episode (``reflect.compress.max_chars``).
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
                 json_mode: bool = True, rules: ReflectionRulesConfig | Mapping[str, Any] | None = None,
                 max_chars: int = 2000, max_retry_after_s: float = 30.0,
                 sleep: Callable[[float], None] | None = None) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.batch_size = batch_size
        self.json_mode = json_mode
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
                                    json_mode=llm.json_mode, rules=cfg.rules, max_chars=cfg.compress.max_chars)
        args.update(kwargs)
        return cls(**args)

    def describe(self) -> dict[str, Any]:
        """``{"name", "args"}`` for run logs; ``registry.build`` rebuilds the reflector from it. No secrets."""
        return {"name": self.registry_name, "args": {
            "model": self.model, "api_base": _public_url(self.api_base), "api_key_env": self.api_key_env,
            "temperature": self.temperature, "max_tokens": self.max_tokens, "timeout_s": self.timeout_s,
            "max_retries": self.max_retries, "backoff_s": self.backoff_s, "batch_size": self.batch_size,
            "json_mode": self.json_mode, "rules": self._rules().model_dump(mode="json"),
            "max_chars": self.max_chars, "max_retry_after_s": self.max_retry_after_s}}

    # -- public API ------------------------------------------------------------------------------------------
    def reflect(self, episode: CompressedEpisode, related: Sequence[CompressedEpisode]) -> Result:
        """Reflect on one compressed episode, given related earlier ones."""
        self._check()
        messages = build_messages(episode, related, self.max_chars)
        answer = self._complete(messages, self.max_tokens, batch_size=1)
        return self._single_result(answer, episode.episode_id)

    def reflect_batch(self, items: Sequence[Item]) -> list[Result]:
        """Reflect on several episodes, ``batch_size`` per call; results in the order of ``items``."""
        self._check()
        items = list(items)
        out: list[Result] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start:start + self.batch_size]
            out.extend(self._reflect_chunk(chunk))
        return out

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
                                 "api_key_env to null for a server "
                                 "that needs no key")
        return key

    def _complete(self, messages: list[dict[str, str]], max_tokens: int, *, batch_size: int) -> _Answer:
        """One logical call with bounded retries; records usage; never raises for a provider fault."""
        litellm = _litellm()
        api_key = self._api_key()
        sleep = self.sleep or time.sleep
        json_mode = self.json_mode and getattr(self, "json_mode_supported_", True)
        t0 = time.perf_counter()
        attempts = retries = 0
        delay = float(self.backoff_s)
        record: dict[str, Any] = {"model": self.model, "prompt_tokens": None, "completion_tokens": None,
                                  "cost_usd": None, "latency_s": 0.0, "attempts": 0, "status": "ok",
                                  "batch_size": batch_size}
        answer = _Answer()
        while True:
            attempts += 1
            kwargs: dict[str, Any] = dict(model=self.model, messages=messages, temperature=self.temperature,
                                          max_tokens=max_tokens, timeout=self.timeout_s, num_retries=0,
                                          max_retries=0)
            if self.api_base:
                kwargs["api_base"] = self.api_base
            if api_key:
                kwargs["api_key"] = api_key
            if json_mode:
                kwargs["response_format"] = {"type": "json_object"}
            try:
                response = litellm.completion(**kwargs)
            except Exception as exc:  # noqa: BLE001 - every provider fault becomes a Rejection
                fault = _classify(exc, api_key)
                if json_mode and fault.response_format:
                    logger.info("%s rejected response_format; retrying without it from now on", self.model)
                    json_mode = False
                    self.json_mode_supported_ = False
                    continue
                if fault.retry and retries < self.max_retries:
                    wait = delay if fault.retry_after is None else min(fault.retry_after, self.max_retry_after_s)
                    logger.info("reflector call failed (%s, attempt %d/%d); retrying in %.2fs", fault.kind,
                                retries + 1, self.max_retries + 1, wait)
                    retries += 1
                    delay *= 2
                    if wait > 0:
                        sleep(wait)
                    continue
                what = "after %d attempts" % attempts if fault.retry else "(not retried)"
                answer.fault = dataclasses.replace(fault, detail=f"{fault.kind} {what}: {fault.detail}")
                record["status"] = fault.kind
                logger.warning("reflector call failed %s: %s", what, fault.detail)
                break
            self._read_usage(litellm, response, record)
            choice = response.choices[0] if getattr(response, "choices", None) else None
            message = getattr(choice, "message", None)
            answer.content = getattr(message, "content", None)
            answer.finish_reason = getattr(choice, "finish_reason", None)
            break
        record["attempts"] = attempts
        record["latency_s"] = time.perf_counter() - t0
        self.calls.append(record)
        return answer

    @staticmethod
    def _read_usage(litellm: Any, response: Any, record: dict[str, Any]) -> None:
        usage = getattr(response, "usage", None)
        record["prompt_tokens"] = getattr(usage, "prompt_tokens", None)
        record["completion_tokens"] = getattr(usage, "completion_tokens", None)
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if cost is None:
            try:
                cost = litellm.completion_cost(completion_response=response)
            except Exception:  # noqa: BLE001 - an unmapped model (local servers) has no known price
                cost = None
        record["cost_usd"] = float(cost) if cost is not None else None

    def _single_result(self, answer: _Answer, episode_id: str) -> Result:
        if answer.fault is not None:
            return Rejection("reflector_error", answer.fault.detail, "", episode_id)
        result = validate_reflection(answer.content or "", self._rules(), episode_id=episode_id)
        return self._explain_truncation(result, answer)

    @staticmethod
    def _explain_truncation(result: Result, answer: _Answer) -> Result:
        if isinstance(result, Rejection) and result.reason == "invalid_json" and answer.finish_reason == "length":
            return dataclasses.replace(result, detail=result.detail + " (the answer was cut at max_tokens: "
                                       "raise reflect.llm.max_tokens)")
        return result

    def _reflect_chunk(self, chunk: list[Item]) -> list[Result]:
        if len(chunk) == 1:
            return [self.reflect(*chunk[0])]
        ids = [ep.episode_id for ep, _ in chunk]
        messages = build_batch_messages(chunk, self.max_chars)
        answer = self._complete(messages, self.max_tokens * len(chunk), batch_size=len(chunk))
        if answer.fault is not None:
            return [Rejection("reflector_error", answer.fault.detail, "", eid) for eid in ids]
        entries = self._parse_batch(answer.content or "")
        if entries is None:
            # Fallback (documented): an unparsable batch answer → one call per episode, once.
            logger.warning("batch answer for %d episodes could not be parsed; reflecting on each separately",
                           len(chunk))
            return [self.reflect(ep, rel) for ep, rel in chunk]
        assigned = self._assign(entries, ids)
        rules = self._rules()
        out: list[Result] = []
        for i, eid in enumerate(ids):
            entry = assigned.get(i)
            if entry is None:
                out.append(Rejection("missing_field", f"the batch answer has no reflection for episode {eid!r}",
                                     (answer.content or "")[:2000], eid))
            else:
                out.append(self._explain_truncation(validate_reflection(entry, rules, episode_id=eid), answer))
        return out

    @staticmethod
    def _parse_batch(content: str) -> list[Any] | None:
        """The list of reflections of a batch answer, or None when it cannot be read as one."""
        try:
            data = extract_json(content)
        except ValueError:
            return None
        if isinstance(data, Mapping):
            data = data.get("reflections")
        return list(data) if isinstance(data, list) else None

    @staticmethod
    def _assign(entries: list[Any], ids: list[str]) -> dict[int, Any]:
        """Map answer entries to episode positions: by ``episode_id`` first, then by position for the rest.

        An ``episode_id`` that is not one of ``ids`` but a number 1…n is taken as the episode's number in the
        prompt. An entry whose slot is already taken is dropped.
        """
        index = {eid: i for i, eid in enumerate(ids)}
        assigned: dict[int, Any] = {}
        unmatched: list[tuple[int, Any]] = []
        for pos, entry in enumerate(entries):
            raw_id = entry.get("episode_id") if isinstance(entry, Mapping) else None
            slot = index.get(str(raw_id)) if raw_id is not None else None
            if slot is None and raw_id is not None and str(raw_id).strip().isdigit():
                number = int(str(raw_id).strip())
                slot = number - 1 if 1 <= number <= len(ids) else None
            if slot is not None and slot not in assigned:
                assigned[slot] = entry
            else:
                unmatched.append((pos, entry))
        for pos, entry in unmatched:
            if pos < len(ids) and pos not in assigned:
                assigned[pos] = entry
        return assigned
