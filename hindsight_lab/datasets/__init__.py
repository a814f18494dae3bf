"""Adapters from recorded traces into the trace format (DESIGN §5)."""

from .jsonl import read_jsonl

__all__ = ["read_jsonl"]
