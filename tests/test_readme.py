"""The README's commands are ones a user can type on a fresh checkout: each ``hindsight-lab`` line parses with the
real command line, every project file it names exists, every dataset it names is registered, and none points at
data beside the checkout (``../shared``) that an outside user does not have."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from hindsight_lab.cli import _build_parser
from hindsight_lab.datasets.registry import entries, groups

from support import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    """Every ``hindsight-lab …`` command of the README's bash blocks (continuations joined, comments dropped)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            for part in re.split(r"&&|;", line):
                part = part.strip()
                if part.startswith(".venv/bin/hindsight-lab "):
                    out.append(part[len(".venv/bin/hindsight-lab "):])
    return out


COMMANDS = _commands()
PLACEHOLDER = re.compile(r"^[A-Z_<]|\.\.\.|<")


def _project_file(ref: str) -> Path | None:
    """A path the README names inside the project (``experiments/…``, ``datasets/…``), else None."""
    return REPO / ref if ref.startswith(("experiments/", "datasets/", "notebooks/")) else None


def _check_data(ref: str) -> None:
    if "/" in ref or Path(ref).suffix:
        path = _project_file(ref)
        assert path is None or path.is_file(), f"README names {ref}, which is not in the project"
    elif not PLACEHOLDER.search(ref):
        assert ref in entries() or ref in groups(), f"README names dataset {ref!r}, which is not registered"


def test_readme_has_commands() -> None:
    assert len(COMMANDS) >= 25 and README.startswith("# hindsight_lab")
    first = re.search(r"```bash\n(.*?)```", README, flags=re.DOTALL)
    assert first and "hindsight-lab demo" in first[1] and "pytest" in first[1]  # the two commands open it


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_parses_and_names_what_exists(command: str) -> None:
    assert "../shared" not in command, "an outside user has no ../shared beside the checkout"
    argv = shlex.split(command)
    args = _build_parser().parse_args(argv)  # SystemExit (a failed test) on an unknown command or flag
    for name in ("dataset", "traces"):
        for ref in getattr(args, name, None) or []:
            _check_data(ref)
    for name in ("pairs", "sweep_dataset", "config", "spec"):
        ref = getattr(args, name, None)
        if isinstance(ref, str):
            _check_data(ref)
    if args.command == "datasets":
        for ref in getattr(args, "names", None) or []:
            _check_data(ref)
