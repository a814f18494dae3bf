"""The house rules of ARCHITECTURE.md, kept by the suite so that later work keeps them.

- the import contracts in pyproject.toml (``[tool.importlinter]``): no import circles, no private module of another
  package imported, the engine (memory, retrieve, reflect, store, conflicts) imports none of the rooms built on it,
  conflicts and reflect know no memory system — checked by import-linter;
- metrics imports nothing of the package;
- no module over 300 lines of code (docstrings, comments and blank lines not counted), no function over 80 lines;
- nothing outside ``hindsight_lab/cli`` parses arguments or prints to stdout.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from support import REPO

PACKAGE = REPO / "hindsight_lab"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 80


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def code_lines(source: str) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring.

    >>> code_lines('\"\"\"Doc.\"\"\"\\n\\n# note\\nx = 1  # one\\n')
    1
    """
    tree = ast.parse(source)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docstrings)
    return len(lines)


def test_import_contracts_hold() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.fail("lint-imports (import-linter, a dev dependency) is not installed next to the test interpreter")
    run = subprocess.run([str(exe), "--no-cache", "--config", str(REPO / "pyproject.toml")], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_metrics_import_nothing_of_the_package() -> None:
    outside = []
    for path in (PACKAGE / "metrics").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level > 1 or (node.module or "").startswith("hindsight")):
                outside.append(f"{_rel(path)}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(a.name.startswith("hindsight_lab") for a in node.names):
                outside.append(f"{_rel(path)}:{node.lineno}")
    assert not outside, f"metrics must stay pure: {outside}"


def test_no_module_over_300_lines_of_code() -> None:
    big = {_rel(p): n for p in MODULES if (n := code_lines(p.read_text(encoding="utf-8"))) > MAX_MODULE_LINES}
    assert not big, f"split these by concept: {big}"


def test_no_function_over_80_lines() -> None:
    long = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    long.append(f"{_rel(path)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long


def test_only_the_command_line_parses_arguments_or_prints() -> None:
    found = []
    for path in MODULES:
        if (PACKAGE / "cli") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
                found.append(f"{_rel(path)}:{node.lineno} imports argparse")
            elif isinstance(node, ast.ImportFrom) and node.module == "argparse":
                found.append(f"{_rel(path)}:{node.lineno} imports argparse")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print" \
                    and not any(k.arg == "file" for k in node.keywords):
                found.append(f"{_rel(path)}:{node.lineno} prints to stdout")
    assert not found, found


def test_the_size_rule_counts_code_only() -> None:
    # negative control: the counter sees code, and a module of 301 code lines would fail the rule
    assert code_lines("x = 1\n" * 301) == 301 > MAX_MODULE_LINES
    assert code_lines('"""A\nlong\ndocstring."""\n# a comment\n\n') == 0
