"""Fixtures of the conflict tests."""

from __future__ import annotations

import pytest

from hindsight_lab.conflicts.detect import OfflineDetector


@pytest.fixture(scope="module")
def detector() -> OfflineDetector:
    """The offline contradiction detector with its defaults."""
    return OfflineDetector()
