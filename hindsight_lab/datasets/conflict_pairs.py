"""Hand-labelled rule pairs (the ``conflict-pairs`` datasets): one JSON object per line, ``{id, task_type, rule_a,
rule_b, conflict: bool, kind}``. The whole file is validated before anything is returned; a bad line raises
:class:`~hindsight_lab.errors.TraceFormatError` naming the file, the line and the field. The pairs are judged by
:mod:`hindsight_lab.conflicts.pairs`.
"""

from __future__ import annotations

from pathlib import Path

from ..conflicts.pairs import LabelledPair
from ..errors import TraceFormatError
from ..jsonio.reading import json_lines

__all__ = ["load_pairs"]

_REQUIRED = {"id": str, "rule_a": str, "rule_b": str, "conflict": bool}
_OPTIONAL = {"task_type": str, "kind": str}


def load_pairs(path: str | Path) -> list[LabelledPair]:
    """Read and validate a pairs file (every line, before returning any)."""
    path = Path(path)
    out: list[LabelledPair] = []
    seen: dict[str, int] = {}
    for n, data in json_lines(path, "pairs"):
        if not isinstance(data, dict):
            raise TraceFormatError(f"expected a JSON object, got {type(data).__name__}", path=str(path), line=n)
        for name, typ in _REQUIRED.items():
            if name not in data:
                raise TraceFormatError("missing required field", path=str(path), line=n, field=name)
            if not isinstance(data[name], typ) or (typ is str and not data[name].strip()):
                raise TraceFormatError(f"expected a {'non-empty string' if typ is str else 'boolean'}, got "
                                       f"{data[name]!r}", path=str(path), line=n, field=name)
        for name, typ in _OPTIONAL.items():
            if data.get(name) is not None and not isinstance(data[name], typ):
                raise TraceFormatError(f"expected a string or null, got {data[name]!r}", path=str(path), line=n,
                                       field=name)
        if data["id"] in seen:
            raise TraceFormatError(f"duplicate id {data['id']!r} (first on line {seen[data['id']]})",
                                   path=str(path), line=n, field="id")
        seen[data["id"]] = n
        out.append(LabelledPair(data["id"], data.get("task_type"), data["rule_a"], data["rule_b"], data["conflict"],
                                data.get("kind")))
    if not out:
        raise TraceFormatError("no pairs in the file", path=str(path))
    return out
