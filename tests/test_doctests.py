"""The examples in the package's docstrings run (STYLE: public objects carry a short ``Examples`` block; the pure
metrics and the rerank are doctested). Each module is one test."""

from __future__ import annotations

import doctest
import importlib

import pytest

from support import REPO

MODULES = sorted(".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                 for p in (REPO / "hindsight_lab").rglob("*.py") if p.name != "__main__.py")


# the examples that load the real model (seconds each) are slow; the others take milliseconds
SLOW_MODULES = {"hindsight_lab.embed.sentence_transformers"}


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_MODULES else m
                                  for m in MODULES])
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (run it with -s)"
