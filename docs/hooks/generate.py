"""mkdocs hook: the pages and tables that come from the code, made at build time so that they cannot go stale.

- ``cli.md``: every subcommand's usage and help, from the parsers of ``hindsight_lab.cli._build_parser()``.
- ``reference/config.md``: every ``LabConfig`` field with its default and its docstring (``LabConfig.describe()``).
- ``<!-- generated: datasets -->`` in a page: the registered datasets and groups (name, what, source, licence).
- In the API pages, the Sphinx roles the docstrings use (``:class:`~a.b.C` ``) shown as the code they name (``C``),
  not as a role followed by code.

The same functions serve ``tests/test_docs.py``, which checks that every subcommand and field has its entry.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any, Iterator

DATASETS_MARKER = "<!-- generated: datasets -->"
ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|ref):<code>(~?)([^<]+)</code>")
HELP_WIDTH = "100"


def _subcommands(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(full command, parser)`` for ``parser`` and every subcommand below it, in the order of their help."""
    yield prefix, parser
    for action in parser._actions:  # argparse keeps its subparsers here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub.prog.split()[-1] == name:  # aliases share a parser: list each once
                    yield from _subcommands(sub, f"{prefix} {name}")


def cli_page() -> str:
    """The command-line reference: each command's ``--help`` as the parser prints it."""
    os.environ.setdefault("COLUMNS", HELP_WIDTH)  # argparse wraps help to the terminal's width
    from hindsight_lab.cli import _build_parser

    lines = ["# Command line", "",
             "Generated from the parsers at build time (`docs/hooks/generate.py`): what `hindsight-lab COMMAND "
             "--help` prints.", ""]
    for command, parser in _subcommands(_build_parser(), "hindsight-lab"):
        depth = 2 if command.count(" ") <= 1 else 3
        lines += [f"{'#' * depth} `{command}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


def commands() -> list[str]:
    """Every command the CLI page documents (``hindsight-lab``, ``hindsight-lab replay``, …)."""
    from hindsight_lab.cli import _build_parser

    return [command for command, _ in _subcommands(_build_parser(), "hindsight-lab")]


def _cell(text: Any) -> str:
    text = re.sub(r"``([^`]+)``", r"`\1`", " ".join(str(text).split()))
    return text.replace("|", "\\|")


def config_page() -> str:
    """Every field of ``LabConfig``: its dotted name, its default and what it does."""
    from hindsight_lab import LabConfig

    docs, defaults = LabConfig.describe(), LabConfig().flat()
    lines = ["# Configuration", "",
             "Every field of `LabConfig`, generated at build time from the model (`LabConfig.describe()` and "
             "`LabConfig().flat()`), so the defaults here are the code's. Set a field in a YAML file "
             "(`LabConfig.from_yaml`, `--config FILE`) or by its dotted name (`cfg.with_params({...})`, "
             "`--set KEY=VALUE`). The class itself: [LabConfig](../api/config.md).", "",
             "| field | default | what it does |", "|---|---|---|"]
    for name, doc in docs.items():
        default = f"`{defaults[name]!r}`" if name in defaults else ""
        lines.append(f"| `{name}` | {_cell(default)} | {_cell(doc)} |")
    return "\n".join(lines) + "\n"


def datasets_table() -> str:
    """The registered datasets and groups."""
    from hindsight_lab.datasets.registry import entries, groups

    lines = ["| name | what | source (pinned commit) | licence |", "|---|---|---|---|"]
    for name, entry in entries().items():
        src = entry.source
        where = f"`{src.repo}` `{src.path}` at `{src.commit[:12]}`" if src and src.repo else (
            f"{src.note}" if src else "")
        if entry.sample_of:
            where = f"a few whole tasks of `{entry.sample_of}`, in `datasets/samples/`"
        lines.append(f"| `{name}` | {_cell(entry.title)} | {_cell(where)} | {_cell(entry.licence)} |")
    for name, members in groups().items():
        lines.append(f"| `{name}` | group, replayed as one history in this order: "
                     f"{', '.join(f'`{m}`' for m in members)} | | as its members |")
    return "\n".join(lines)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "cli.md", content=cli_page()))
    files.append(File.generated(config, "reference/config.md", content=config_page()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return markdown.replace(DATASETS_MARKER, datasets_table()) if DATASETS_MARKER in markdown else markdown


def _role(match: re.Match) -> str:
    name = match[2].lstrip(".")
    return f"<code>{name.rsplit('.', 1)[-1] if match[1] else name}</code>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return ROLE.sub(_role, html)
