"""The docs site's generated parts come from the code (docs/hooks/generate.py): the command-line page has every
subcommand's help from the real parsers, the configuration page every LabConfig field with the code's default, the
datasets table every registered dataset. mkdocs itself builds the site in .ci/run (`mkdocs build --strict`); these
checks need no mkdocs."""

from __future__ import annotations

import importlib.util
import re

import yaml

from hindsight_lab import LabConfig
from hindsight_lab.datasets.registry import entries, groups

from support import REPO

_spec = importlib.util.spec_from_file_location("generate", REPO / "docs" / "hooks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)
MKDOCS = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # no custom tags in it


def test_cli_page_has_every_subcommand_from_the_parsers() -> None:
    from hindsight_lab.cli import _build_parser

    page = generate.cli_page()
    commands = generate.commands()
    top = next(a for a in _build_parser()._actions if a.dest == "command")
    assert {f"hindsight-lab {name}" for name in top.choices} <= set(commands)
    assert {"hindsight-lab datasets fetch", "hindsight-lab memories import"} <= set(commands)
    for command in commands:
        assert f"`{command}`" in page, command
    assert "usage: hindsight-lab replay" in page and "--no-mlflow" in page  # the parser's own help


def test_config_page_has_every_field_and_the_codes_default() -> None:
    page = generate.config_page()
    defaults = LabConfig().flat()
    for name in LabConfig.describe():
        assert f"| `{name}` |" in page, name
    assert f"| `retrieval.top_k` | `{defaults['retrieval.top_k']!r}` |" in page


def test_datasets_table_has_every_dataset_and_group_and_the_page_asks_for_it() -> None:
    table = generate.datasets_table()
    for name in [*entries(), *groups()]:
        assert f"| `{name}` |" in table, name
    assert generate.DATASETS_MARKER in (REPO / "docs" / "datasets.md").read_text()


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    return [p for item in node for p in _nav_pages(item)]


def test_every_page_is_in_the_nav_and_every_nav_page_exists_or_is_generated() -> None:
    nav = _nav_pages(MKDOCS["nav"])
    generated = {"cli.md", "reference/config.md"}
    for page in nav:
        assert page in generated or (REPO / "docs" / page).is_file(), page
    on_disk = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").glob("**/*.md")
               if not {"hooks", "notebooks"} & set(p.relative_to(REPO / "docs").parts[:-1])}
    assert on_disk <= set(nav), sorted(on_disk - set(nav))
    notebooks = {f"notebooks/{p.name}" for p in (REPO / "notebooks").glob("*.ipynb")}
    assert notebooks <= set(nav), sorted(notebooks - set(nav))  # every notebook is rendered into the site


def test_the_site_builds_offline() -> None:
    # no font or asset is fetched at build time: material's fonts off, no privacy (download) plugin
    assert MKDOCS["theme"]["font"] == "false"
    plugins = [next(iter(p)) if isinstance(p, dict) else p for p in MKDOCS["plugins"]]
    assert not {"privacy", "material/privacy", "social", "material/social"} & set(plugins), plugins
    jupyter = next(p for p in MKDOCS["plugins"] if isinstance(p, dict) and "mkdocs-jupyter" in p)["mkdocs-jupyter"]
    assert jupyter["execute"] == "false"  # rendered with their committed outputs, not run again
    pins = re.findall(r'"(mkdocs[\w-]*)==', (REPO / "pyproject.toml").read_text())
    assert set(pins) >= {"mkdocs", "mkdocs-material", "mkdocstrings", "mkdocstrings-python", "mkdocs-jupyter"}
