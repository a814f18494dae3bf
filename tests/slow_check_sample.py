"""Run only by tests/test_slow_check.py (the file name is not collected by the suite): one quick test without the
slow mark that takes 0.3 s, one with it."""

import time

import pytest


def test_unmarked_that_takes_a_while() -> None:
    time.sleep(0.3)


@pytest.mark.slow
def test_marked_that_takes_a_while() -> None:
    time.sleep(0.3)
