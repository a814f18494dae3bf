"""Prompts that fit the model: the reflector's requests are sized to the model's context before they are sent.

A local model often runs with a 4k–8k context; a tau-bench episode with its related episodes and a long system
prompt came to 4,885 prompt tokens, and with 3,200 completion tokens of a batch of four every call failed with a
context-window error. Here the prompt budget of a call of ``n`` episodes is ``context − n × max_tokens − margin``,
the context being ``reflect.llm.context_tokens``, else what LiteLLM knows of the model, else 4,096. An episode that
does not fit loses related episodes first, then its text is cut shorter (down to :data:`MIN_CHARS`); one that still
does not fit is not sent (``prompt_too_long``). Episodes go into one call only while the call fits.

Tokens are counted with LiteLLM's counter for the model (tiktoken's for a model it does not know) plus
:data:`SAFETY` for tokenizers that split text finer.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Sequence

from .compress import CompressedEpisode
from .faults import litellm_module
from .prompts import build_batch_messages, build_messages

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_CONTEXT", "Fitted", "MIN_CHARS", "context_tokens", "count_tokens", "fit_one", "pack"]

DEFAULT_CONTEXT = 4096
"""The context of a model LiteLLM does not know and the config does not give."""
MIN_CHARS = 400
"""The shortest an episode's text is cut to before it is given up on."""
SAFETY = 1.15
MARGIN = 64


@dataclass(frozen=True)
class Fitted:
    """An episode as it will be sent: with the related episodes and the text bound that fit."""

    episode: CompressedEpisode
    related: tuple[CompressedEpisode, ...]
    chars: int

    def item(self) -> tuple[CompressedEpisode, tuple[CompressedEpisode, ...], int]:
        return self.episode, self.related, self.chars


def context_tokens(model: str, configured: int | None) -> int:
    """The model's context: the configured one, else LiteLLM's model info, else :data:`DEFAULT_CONTEXT`."""
    if configured:
        return int(configured)
    try:
        info = litellm_module().get_model_info(model)
    except Exception:  # noqa: BLE001 - a model LiteLLM has not mapped (every local server's)
        return DEFAULT_CONTEXT
    return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT)


def count_tokens(model: str, messages: list[dict[str, str]]) -> int:
    """Prompt tokens of ``messages`` (rounded up by :data:`SAFETY`)."""
    try:
        n = litellm_module().token_counter(model=model, messages=messages)
    except Exception:  # noqa: BLE001 - no tokenizer at hand: about three characters a token
        n = sum(len(m["content"]) for m in messages) / 3
    return math.ceil(n * SAFETY)


def budget(context: int, max_tokens: int, n: int) -> int:
    """Prompt tokens a call of ``n`` episodes may spend."""
    return context - n * max_tokens - MARGIN


def fit_one(episode: CompressedEpisode, related: Sequence[CompressedEpisode], *, model: str, context: int,
            max_tokens: int, max_chars: int) -> tuple[Fitted | None, int]:
    """The episode shrunk until its prompt fits a call of its own, and that prompt's tokens; None if it cannot."""
    rel, chars = tuple(related), max_chars
    limit = budget(context, max_tokens, 1)
    while True:
        tokens = count_tokens(model, build_messages(episode, rel, chars))
        if tokens <= limit:
            return Fitted(episode, rel, chars), tokens
        if rel:
            rel = rel[:-1]
        elif chars > MIN_CHARS:
            chars = max(MIN_CHARS, chars * 2 // 3)
        else:
            return None, tokens


def pack(fitted: Sequence[Fitted], *, model: str, context: int, max_tokens: int, batch_size: int
         ) -> list[list[Fitted]]:
    """Consecutive episodes grouped into calls of at most ``batch_size`` that each fit the context."""
    calls: list[list[Fitted]] = []
    for f in fitted:
        current = calls[-1] if calls else None
        if current and len(current) < batch_size and _fits([*current, f], model, context, max_tokens):
            current.append(f)
        else:
            calls.append([f])
    return calls


def _fits(group: list[Fitted], model: str, context: int, max_tokens: int) -> bool:
    messages = build_batch_messages([f.item() for f in group])
    return count_tokens(model, messages) <= budget(context, max_tokens, len(group))

